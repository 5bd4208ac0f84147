"""What autotuning on the CPU costs under the switch, and what the switch costs per launch.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/cpu_autotune.py

All in one process, measured side by side, round by round (medians of CPU time):
- first launch of a 4-Config autotuned kernel under "first" / a launch of a 1-Config one (target <= 1.05);
- the same under "all" / five launches of the 1-Config one (target <= 1.05);
- the same under "verify" / five launches (reported);
- a launch of an undecorated kernel with the switch on / the same launch bare (target <= 1.01).
Every tuning launch uses a new key, so each one really tunes.
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kwshim  # noqa: E402

ROUNDS = int(os.environ.get("KWSHIM_BENCH_ROUNDS", "31"))


def body(out_ptr, n, X: tl.constexpr):
    tl.store(out_ptr, n + X * 0)  # every Config stores the same: "verify" passes


def autotuned(configs):
    return triton.autotune(configs=configs, key=["n"])(triton.jit(body))


def cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def tuning_ratio(policy, reference_launches):
    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate(autotune=policy):
        four = autotuned([triton.Config({"X": x}, num_warps=2 ** x) for x in range(4)])
        one = autotuned([triton.Config({"X": 0}, num_warps=1)])
        ratios = []
        for n in range(ROUNDS):
            tuned = cpu(lambda: four[(1,)](out, n))  # a new key: a first launch, tuned

            def reference():
                for _ in range(reference_launches):
                    one[(1,)](out, n)

            single = cpu(reference)
            ratios.append(tuned / single)
    return statistics.median(ratios)


def triton_bookkeeping_ratio():
    """For reference, with no kwshim at all: Triton's own tuning path (key, pruning, the choice,
    its hooks) with a benchmarker that runs nothing, first launch of 4 Configs / 1-Config launch.
    kwshim's ``first`` cannot cost less than this part, which it does not replace."""
    import inspect

    from triton.runtime import autotuner

    def no_bench(kernel_call, *args, quantiles=None, **kwargs):
        return [0.0, 0.0, 0.0]

    def bare(configs):
        fn = triton.jit(body)
        if "do_bench" in inspect.signature(autotuner.Autotuner.__init__).parameters:
            return autotuner.Autotuner(fn, fn.arg_names, configs, ["n"], None, None, do_bench=no_bench)
        return triton.autotune(configs=configs, key=["n"])(fn)

    saved = vars(autotuner).get("do_bench")
    if saved is not None:
        autotuner.do_bench = no_bench  # 2.2-3.1 read the module's own; put back below
    try:
        out = torch.zeros(1, dtype=torch.int32)
        four = bare([triton.Config({"X": x}, num_warps=2 ** x) for x in range(4)])
        one = bare([triton.Config({"X": 0}, num_warps=1)])
        ratios = []
        for n in range(ROUNDS):
            tuned = cpu(lambda: four[(1,)](out, n))
            ratios.append(tuned / cpu(lambda: one[(1,)](out, n)))
        return statistics.median(ratios)
    except Exception as exc:  # 2.3 and 3.2: bare autotuned launches fail on the interpreter
        return f"n/a ({type(exc).__name__}: bare autotuned launches fail on this release)"
    finally:
        if saved is not None:
            autotuner.do_bench = saved


def switch_launch_ratio():
    out = torch.zeros(1, dtype=torch.int32)

    @triton.jit
    def plain(out_ptr, value):
        tl.store(out_ptr, value)

    plain[(1,)](out, 1)  # warm both paths
    ratios = []
    for _ in range(ROUNDS):
        bare = statistics.median(cpu(lambda: plain[(1,)](out, 2)) for _ in range(5))
        with kwshim.activate():
            switched = statistics.median(cpu(lambda: plain[(1,)](out, 2)) for _ in range(5))
        ratios.append(switched / bare)
    return statistics.median(ratios)


def main():
    print(f"Triton {triton.__version__}, {ROUNDS} rounds, medians of CPU-time ratios")
    first = tuning_ratio("first", 1)
    print(f"first launch, 4 Configs, policy 'first' / 1 single-Config launch : {first:.3f}  (target <= 1.05)")
    floor = triton_bookkeeping_ratio()
    floor = f"{floor:.3f}" if isinstance(floor, float) else floor
    print(f"  for reference, bare Triton's tuning path, no-op benchmarker     : {floor}")
    every = tuning_ratio("all", 5)
    print(f"first launch, 4 Configs, policy 'all'   / 5 single-Config launches: {every:.3f}  (target <= 1.05)")
    verify = tuning_ratio("verify", 5)
    print(f"first launch, 4 Configs, policy 'verify'/ 5 single-Config launches: {verify:.3f}  (reported)")
    switch = switch_launch_ratio()
    print(f"undecorated kernel, switch on / bare                               : {switch:.3f}  (target <= 1.01)")


if __name__ == "__main__":
    main()
