"""The parity suite's kernels come from its generator (``parity/generate.py``)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_libdevice_kernels_are_what_the_generator_writes():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "parity", "generate.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
