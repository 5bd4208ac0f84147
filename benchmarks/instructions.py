"""Per-launch cost in CPU instructions (repeatable, unlike time on a shared machine), by callgrind.

    TRITON_INTERPRET=1 PYTHONPATH=.triton/3.0.0 .venv/bin/python benchmarks/instructions.py

Runs this file under ``valgrind --tool=callgrind`` with N1 and N2 launches of one kernel, bare,
under ``@kwsafe`` and with the switch on; the difference of the totals divided by N2 - N1 is the
instructions per launch, start-up cancelled. Prints each mode's figure and its ratio to bare.
"""

import os
import re
import subprocess
import sys
import tempfile

N1, N2 = 50, 250


def launches(mode, count):
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
    for _ in range(count):
        kernel[(1,)](out, 4, 2)


def measure(mode, count):
    with tempfile.TemporaryDirectory() as folder:
        output = os.path.join(folder, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={output}", sys.executable,
                        os.path.abspath(__file__), mode, str(count)], check=True, capture_output=True)
        with open(output) as handle:
            return int(re.search(r"^summary: (\d+)", handle.read(), re.M).group(1))


def main():
    per_launch = {mode: (measure(mode, N2) - measure(mode, N1)) / (N2 - N1) for mode in ("bare", "kwsafe", "switch")}
    import triton

    print(f"Triton {triton.__version__}: instructions per launch, {N2 - N1} launches")
    for mode, count in per_launch.items():
        print(f"  {mode:7s} {count:12.0f}  ratio to bare {count / per_launch['bare']:.4f}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        launches(sys.argv[1], int(sys.argv[2]))
    else:
        main()
