"""For the tests' subprocesses: the test run's PYTHONPATH (which selects the Triton under test),
made absolute, so that a subprocess running in another directory finds the same packages."""

import os


def inherited_pythonpath():
    return [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
