"""Per-launch cost in CPU instructions (repeatable, unlike time on a shared machine), by callgrind.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/instructions.py

Runs this file under ``valgrind --tool=callgrind`` with N1 and N2 launches of one kernel, bare,
under ``@kwsafe`` and with the switch on, in two forms: positional (``k[g](out, 4, 2)``) and
keywords with launch options (``k[g](out, A=4, B=2, num_warps=4, num_stages=2)``); the difference
of the totals divided by N2 - N1 is the instructions per launch, start-up cancelled. The set-up
objects are frozen out of the garbage collector (``gc.freeze()``) and 200 launches are counted:
fewer, or no freeze, and full collections swing the figures by about 5%. Prints each figure and
its ratio to bare (budget: 1.01). ``compile`` is the switch with ``compile="check"``: its first launch
compiles the kernel for the H200, and each later one only looks the specialization up (a compile
would be hundreds of millions of instructions).

Then the same for tuning launches (``cpu_autotune.py``'s 4-Config kernel, a new key each launch):
bare Triton's own tuning path with a benchmarker that runs each Config once, against the switch's
default policy ``all`` (budget: 1.02), T1 and T2 tuning launches.
"""

import gc
import os
import re
import subprocess
import sys
import tempfile

N1, N2 = 50, 250
T1, T2 = 10, 40  #: tuning launches (each is five launches)


FORMS = ("positional", "keywords+options")


def launches(mode, form, count):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch
    import triton
    import triton.language as tl

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import kwshim

    globals()["tl"] = tl  # the interpreter looks up triton.language in the kernel's module globals

    @triton.jit
    def one_element(out_ptr, A: tl.constexpr, B: tl.constexpr):
        tl.store(out_ptr, A * 10 + B)

    # Every mode builds the same objects (kwshim's probes of the installed Triton and one
    # kernel's launch paths), so that what differs is the launch path alone, not how many live
    # objects each of the interpreter's garbage collections walks.
    kernel = kwshim.kwsafe(one_element)
    if mode != "kwsafe":
        kernel = one_element
    kwshim.activate().deactivate()
    if mode == "switch":
        kwshim.activate()
    elif mode == "compile":
        kwshim.activate(compile="check")
    out = torch.zeros(1, dtype=torch.int32)
    kernel[(1,)](out, 4, 2)  # the first launch builds what later launches reuse
    gc.collect()
    gc.freeze()
    if form == "positional":
        for _ in range(count):
            kernel[(1,)](out, 4, 2)
    else:
        for _ in range(count):
            kernel[(1,)](out, A=4, B=2, num_warps=4, num_stages=2)


def tuning_launches(mode, count):
    """``count`` tuning launches (a new key each) of a 4-Config autotuner, bare Triton with a
    benchmarker that runs each Config once, or under the switch's default policy "all"."""
    import torch
    import triton
    from triton.runtime import autotuner

    import kwshim
    from cpu_autotune import FOUR, bare_autotuned, body, run_once

    fn = triton.jit(body)
    if mode == "switch":
        kwshim.activate()
        kernel = triton.autotune(configs=FOUR, key=["n"])(fn)
    else:
        kwshim.activate().deactivate()
        kernel = bare_autotuned(fn, FOUR)
        if "do_bench" in vars(autotuner):  # 2.2-3.1: the module's benchmarker
            autotuner.do_bench = run_once
    out = torch.zeros(1, dtype=torch.int32)
    for n in range(-3, 0):  # the first launches build what later launches reuse
        kernel[(1,)](out, n)
    gc.collect()
    gc.freeze()
    for n in range(count):
        kernel[(1,)](out, n)


def measure(mode, form, count):
    with tempfile.TemporaryDirectory() as folder:
        output = os.path.join(folder, "callgrind.out")
        # One hash seed for every run: string hashing otherwise reshuffles dicts from run to run,
        # which moves the counts by about 1%.
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={output}", sys.executable,
                        os.path.abspath(__file__), mode, form, str(count)], check=True, capture_output=True,
                       env=dict(os.environ, PYTHONHASHSEED="0"))
        with open(output) as handle:
            return int(re.search(r"^summary: (\d+)", handle.read(), re.M).group(1))


def main():
    import triton

    print(f"Triton {triton.__version__}: instructions per launch, {N2 - N1} launches, set-up frozen")
    for form in FORMS:
        per_launch = {mode: (measure(mode, form, N2) - measure(mode, form, N1)) / (N2 - N1)
                      for mode in ("bare", "kwsafe", "switch", "compile")}
        for mode, count in per_launch.items():
            print(f"  {form:17s} {mode:7s} {count:12.0f}  ratio to bare {count / per_launch['bare']:.4f}")
    print(f"Tuning launches of 4 Configs, {T2 - T1} launches: bare Triton with a run-once benchmarker, "
          "and the switch's 'all' (budget: 1.02)")
    per_tuning = {mode: (measure(mode, "tuning", T2) - measure(mode, "tuning", T1)) / (T2 - T1)
                  for mode in ("bare", "switch")}
    for mode, count in per_tuning.items():
        print(f"  {'tuning':17s} {mode:7s} {count:12.0f}  ratio to bare {count / per_tuning['bare']:.4f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "tuning":
        os.environ.setdefault("TRITON_INTERPRET", "1")
        sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(__file__)]
        tuning_launches(sys.argv[1], int(sys.argv[3]))
    elif len(sys.argv) == 4:
        launches(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
