"""For the tests' subprocesses: the test run's PYTHONPATH (which selects the Triton under test),
made absolute, so that a subprocess running in another directory finds the same packages."""

import functools
import os
import subprocess
import sys


def inherited_pythonpath():
    return [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment(**extra):
    """The environment for a subprocess: this checkout first on PYTHONPATH, then the test run's
    (the Triton under test), TRITON_INTERPRET unset unless given."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *inherited_pythonpath()])
    env.update(extra)
    return env


@functools.lru_cache(maxsize=None)
def dynamo_runs():
    """Whether torch.compile runs beside this Triton, without kwshim (torch 2.13's Dynamo does not
    import beside Triton 2.x: no ``triton.backends``); asked in a process of its own."""
    code = "import torch; print(torch.compile(lambda x: x + 1, backend='eager')(torch.zeros(1)).item())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment()).stdout.strip() == "1.0"
