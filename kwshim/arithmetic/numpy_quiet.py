"""NumPy's floating-point warnings off: once per launch, and free inside it.

A GPU overflows to inf, divides by zero and makes NaN quietly; NumPy warns for each. A launch turns
the warnings off once (``launch``), and the arithmetic that may meet them inside asks ``quiet``:
inside a launch that costs nothing, where ``np.errstate`` costs a few microseconds each time (a
small launch makes dozens). Outside a launch (a test calling a conversion directly) ``quiet`` is
``np.errstate``. NumPy's error state is per thread, and so is the launch's mark.
"""

import contextlib
import threading

import numpy as np

__all__ = ["launch", "quiet"]

_STATE = threading.local()
_NOTHING = contextlib.nullcontext()
#: What a launch ignores: every ``quiet`` asks a part of it.
_LAUNCH = {"over": "ignore", "invalid": "ignore", "divide": "ignore"}


@contextlib.contextmanager
def launch():
    """Overflow, invalid values and division by zero ignored for the block, as on a GPU."""
    outer = getattr(_STATE, "on", False)
    with np.errstate(**_LAUNCH):
        _STATE.on = True
        try:
            yield
        finally:
            _STATE.on = outer


def quiet(**ignored):
    """``np.errstate(**ignored)`` (each ``"ignore"``, a part of what a launch ignores), or nothing
    to do inside a launch, which ignores them already."""
    if getattr(_STATE, "on", False):
        return _NOTHING
    return np.errstate(**ignored)
