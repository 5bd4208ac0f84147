"""A fresh runner's first run against a warm one: Liger-Kernel's own tests (the first 3 of each of
a few of its files) under ``pytest --kwshim --kwshim-device cuda``, run in a new process with
numba's disk cache empty (a fresh CI machine: ``NUMBA_CACHE_DIR`` a new directory), then again in a
new process with that cache filled. Side by side: the wall times, their ratio, and what kwshim's
summary says numba compiled. Liger from ``make suites``' checkout.

    PYTHONPATH=.triton/3.9.0 .venv/bin/python benchmarks/cold_start.py [--page docs/evidence/speed.md]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGER = os.path.join(ROOT, ".suites", "liger_kernel-0.8.5")
FILES = ["test_rms_norm.py", "test_layer_norm.py", "test_cross_entropy.py", "test_swiglu.py", "test_geglu.py",
         "test_softmax.py", "test_fused_linear_cross_entropy.py", "test_dyt.py"]


def run(cache):
    """(wall seconds, pytest's last line, kwshim's numba line) of one run with ``cache`` as numba's."""
    inherited = [os.path.abspath(path) for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, KWSHIM_SUITES_PER_FILE="3", TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([*inherited, ROOT, os.path.join(ROOT, "measure"),
                                           os.path.join(LIGER, "src")]))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "first_tests",
                           "--kwshim", "--kwshim-device", "cuda", *(f"test/transformers/{name}" for name in FILES)],
                          cwd=LIGER, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    if not lines or " passed" not in lines[-1]:
        raise SystemExit(f"kwshim: the Liger run failed, nothing to compare:\n{done.stdout[-1500:]}"
                         f"{done.stderr[-1500:]}")
    compiled = next((line for line in lines if "numba compiled" in line), "numba compiled nothing")
    return seconds, lines[-1], compiled


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", help="rewrite the table between this page's cold-start markers")
    arguments = parser.parse_args()
    if not os.path.isdir(LIGER):
        raise SystemExit(f"kwshim: {LIGER} is missing: `make suites` (or `make speed`) checks Liger out first")
    with tempfile.TemporaryDirectory() as cache:
        fresh = run(cache)
        warm = run(cache)
    found = re.search(r"compiled (\d+) of kwshim's loops in this run \(([\d.]+) s\)", fresh[2])
    rows = ["| run | wall time | pytest | numba |", "| --- | --- | --- | --- |",
            f"| fresh (numba's cache empty) | {fresh[0]:.0f} s | {fresh[1].strip('= ')} | "
            f"{f'{found.group(1)} loops compiled in {found.group(2)} s' if found else fresh[2]} |",
            f"| warm (the same cache, a new process) | {warm[0]:.0f} s | {warm[1].strip('= ')} | "
            f"{'nothing compiled' if 'numba compiled' not in warm[2] else warm[2]} |",
            f"| fresh / warm | {fresh[0] / warm[0]:.2f}x | | |"]
    print("\n".join(rows))
    if arguments.page:
        sys.path.insert(0, os.path.join(ROOT, "measure"))
        import evidence

        heading = (f"{evidence.stamp('make speed')} Liger-Kernel 0.8.5, the first 3 tests of {len(FILES)} of its "
                   f"files ({', '.join(FILES)}), `pytest --kwshim --kwshim-device cuda`, one process each, one after "
                   "the other.")
        evidence.rewrite(arguments.page, "cold-start", heading + "\n\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
