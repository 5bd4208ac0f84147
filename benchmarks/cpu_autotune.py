"""What autotuning on the CPU costs under the switch, and what the switch costs per launch.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/cpu_autotune.py

All in one process, measured side by side, round by round (medians of CPU time):
- first launch of a 4-Config autotuned kernel under "first" / a launch of a 1-Config one (target <= 1.05);
- the same with bare Triton and a benchmarker that runs nothing: Triton's own bookkeeping, the floor;
- the same under "all" / bare Triton's own tuning path over the same kernel, with a benchmarker that
  only runs each Config once, as "all" does (target <= 1.02: what kwshim adds per Config run);
- the same under "verify" / that reference (reported);
- a second bare autotuner / that reference: the noise floor of the two figures above;
- a launch of an undecorated kernel with the switch on / the same launch bare (target <= 1.01).
Every tuning launch uses a new key, so each one really tunes.
"""

import contextlib
import gc
import inspect
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
BATCH = 10  #: tuning launches per sample of the autotune figures


def body(out_ptr, n, X: tl.constexpr):
    tl.store(out_ptr, n * 0 + X * 0 + 7)  # every Config and every key stores the same: "verify" passes


def autotuned(configs):
    return triton.autotune(configs=configs, key=["n"])(triton.jit(body))


def cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


FOUR = [triton.Config({"X": x}, num_warps=2 ** x) for x in range(4)]


def first_ratio():
    """Policy ``first``: the first launch of a 4-Config kernel / a launch of a 1-Config one."""
    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate(autotune="first"):
        four, one = autotuned(FOUR), autotuned([triton.Config({"X": 0}, num_warps=1)])
        ratios = [cpu(lambda: four[(1,)](out, n)) / cpu(lambda: one[(1,)](out, n)) for n in range(ROUNDS)]
    return statistics.median(ratios)


def run_nothing(kernel_call, *args, quantiles=None, **kwargs):
    """A benchmarker that runs nothing: what is left is Triton's own tuning bookkeeping."""
    return [0.0, 0.0, 0.0]


@contextlib.contextmanager
def module_benchmarker(bench):
    """2.2-3.1: bare Autotuners benchmark with the module's ``do_bench``; ``bench`` stands in for it
    within the block (later releases take ``do_bench`` per Autotuner: nothing to swap)."""
    from triton.runtime import autotuner

    saved = vars(autotuner).get("do_bench")
    if saved is not None:
        autotuner.do_bench = bench
    try:
        yield
    finally:
        if saved is not None:
            autotuner.do_bench = saved


def bookkeeping_ratio():
    """Bare Triton, no kwshim: the first launch of a 4-Config kernel whose benchmarker runs nothing /
    a launch of a 1-Config one. The floor under the ``first`` row: Triton's own key, pruning,
    choice and hooks, which kwshim leaves in charge."""
    out = torch.zeros(1, dtype=torch.int32)
    try:
        with module_benchmarker(run_nothing):
            fn = triton.jit(body)
            four = bare_autotuned(fn, FOUR, run_nothing)
            one = bare_autotuned(fn, [triton.Config({"X": 0}, num_warps=1)], run_nothing)
            return statistics.median(cpu(lambda: four[(1,)](out, n)) / cpu(lambda: one[(1,)](out, n))
                                     for n in range(ROUNDS))
    except Exception as exc:  # 2.3 and 3.2: bare autotuned launches fail on the interpreter
        return f"n/a ({type(exc).__name__}: bare autotuned launches fail on this release)"


def run_once(kernel_call, *args, quantiles=None, **kwargs):
    """The reference benchmarker: it only runs the Config once (what 'all' does on the CPU)."""
    kernel_call()
    return [0.0, 0.0, 0.0]


def bare_autotuned(fn, configs, bench=None):
    """With no kwshim at all: Triton's own Autotuner over ``fn``, benchmarking with ``bench``
    (``run_once`` unless given)."""
    from triton.runtime import autotuner

    if "do_bench" in inspect.signature(autotuner.Autotuner.__init__).parameters:
        return autotuner.Autotuner(fn, fn.arg_names, configs, ["n"], None, None, do_bench=bench or run_once)
    return triton.autotune(configs=configs, key=["n"])(fn)  # 2.2-3.1: the module's do_bench (module_benchmarker)


def policy_ratio(policy, control=False):
    """Tuning launches of a 4-Config kernel under ``policy`` / the same under bare Triton's own
    tuning path with a benchmarker that only runs each Config once: what kwshim adds per Config
    run. ``control``: a second bare autotuner in place of kwshim's, the noise floor of the figure.

    Both autotuners share one kernel object (two jitted copies differ by up to 5% on their own);
    each sample is a batch of BATCH tuning launches, each with a new key, bare then kwshim's, with
    the set-up frozen out of the garbage collector."""
    out = torch.zeros(1, dtype=torch.int32)

    def bare_batch(kernel, keys):
        with module_benchmarker(run_once):
            for n in keys:
                kernel[(1,)](out, n)

    try:
        fn = triton.jit(body)
        reference = bare_autotuned(fn, FOUR)
        if control:
            other = bare_autotuned(fn, FOUR)

            def measured(keys):
                return cpu(lambda: bare_batch(other, keys))
        else:
            with kwshim.activate(autotune=policy):
                tuned = triton.autotune(configs=FOUR, key=["n"])(fn)

            def measured(keys):
                with kwshim.activate(autotune=policy):  # switching on and off is not timed
                    return cpu(lambda: [tuned[(1,)](out, n) for n in keys])

        bare_batch(reference, range(-BATCH, 0))  # warm both paths
        measured(range(-BATCH, 0))
        gc.collect()
        gc.freeze()
        ratios = []
        for start in range(0, ROUNDS * BATCH, BATCH):  # new keys each batch: every launch tunes
            keys = range(start, start + BATCH)
            bare = cpu(lambda: bare_batch(reference, keys))
            ratios.append(measured(keys) / bare)
        return statistics.median(ratios)
    except Exception as exc:  # 2.3 and 3.2: bare autotuned launches fail on the interpreter
        return f"n/a ({type(exc).__name__}: bare autotuned launches fail on this release)"
    finally:
        gc.unfreeze()


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
    first = first_ratio()
    print(f"first launch, 4 Configs, policy 'first' / 1 single-Config launch      : {first:.3f}  (target <= 1.05)")
    floor = bookkeeping_ratio()
    floor = f"{floor:.3f}" if isinstance(floor, float) else floor
    print(f"the same, bare Triton with a benchmarker that runs nothing            : {floor}  (the floor under 'first')")
    rows = (("policy 'all'   ", "all", False, "(target <= 1.02)"),
            ("policy 'verify'", "verify", False, "(reported)"),
            ("bare, control  ", "all", True, "(the noise floor: 1.00 +- this machine's noise)"))
    for label, policy, control, target in rows:
        ratio = policy_ratio(policy, control)
        ratio = f"{ratio:.3f}" if isinstance(ratio, float) else ratio
        print(f"tuning launch, 4 Configs, {label} / bare Triton, run-once bench: {ratio}  {target}")
    switch = switch_launch_ratio()
    print(f"undecorated kernel, switch on / bare                                   : {switch:.3f}  (target <= 1.01)")


if __name__ == "__main__":
    main()
