"""For the tests' subprocesses: the test run's PYTHONPATH (which selects the Triton under test),
made absolute, so that a subprocess running in another directory finds the same packages."""

import os


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
