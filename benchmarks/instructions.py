"""Per-launch cost in CPU instructions (repeatable, unlike time on a shared machine), by callgrind.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/instructions.py

Runs this file under ``valgrind --tool=callgrind`` with N1 and N2 launches of one kernel, bare,
under ``@kwsafe`` and with the switch on, in two forms: positional (``k[g](out, 4, 2)``) and
keywords with launch options (``k[g](out, A=4, B=2, num_warps=4, num_stages=2)``); the difference
of the totals divided by N2 - N1 is the instructions per launch, start-up cancelled. The set-up
objects are frozen out of the garbage collector (``gc.freeze()``) and 200 launches are counted:
fewer, or no freeze, and full collections swing the figures by about 5%. Prints each figure and
its ratio to bare (budget: 1.01).
"""

import gc
import os
import re
import subprocess
import sys
import tempfile

N1, N2 = 50, 250


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
                      for mode in ("bare", "kwsafe", "switch")}
        for mode, count in per_launch.items():
            print(f"  {form:17s} {mode:7s} {count:12.0f}  ratio to bare {count / per_launch['bare']:.4f}")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        launches(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
