"""A tuning round and the CPU's benchmarker: what stands in for ``do_bench`` under each policy.

A round is one tuning of one autotuner for one key. Rounds stack per thread (an autotuner's hook
may launch another autotuner). ``cpu_bench`` runs the Config once (``all``/``verify``) and returns
its CPU time, ordered by position, so that the Autotuner's own ``min`` picks the first surviving
Config, deterministically; ``first`` runs nothing.
"""

import threading
import time
from typing import Any, Optional

from .. import compat

__all__ = ["Timing", "Round", "rounds", "cpu_bench", "module_bench", "untuned", "timed", "failed_static_assert"]


class Timing(float):
    """A CPU time in ms that orders by position: the Autotuner's ``min`` then picks Config 0."""

    def __new__(cls, ms, order):
        value = super().__new__(cls, ms)
        value.order = order
        return value

    def __eq__(self, other):
        return self.order == other.order if isinstance(other, Timing) else float.__eq__(self, other)

    def __lt__(self, other):
        return self.order < other.order if isinstance(other, Timing) else float.__lt__(self, other)

    def __le__(self, other):
        return self.order <= other.order if isinstance(other, Timing) else float.__le__(self, other)

    def __gt__(self, other):
        return self.order > other.order if isinstance(other, Timing) else float.__gt__(self, other)

    def __ge__(self, other):
        return self.order >= other.order if isinstance(other, Timing) else float.__ge__(self, other)

    __hash__ = float.__hash__


class Round:
    """One tuning of one autotuner for one key (``verification`` is set under ``verify``)."""

    def __init__(self, autotuner, settings, compiled=False):
        self.autotuner, self.settings = autotuner, settings
        self.first = settings.autotune == "first"
        self.accepted = False  #: ``first``: a Config the compile check let through was seen
        self.compiled = compiled  #: a compiled autotuner under ``verify``: Triton's benchmarker times
        self.order = 0  #: the position of the next Config benchmarked
        self.verification: Any = None
        self.real_bench: Any = None  #: compiled: the benchmarker the autotuner would have used

    def next_order(self):
        order = self.order
        self.order = order + 1
        return order


_local = threading.local()


def rounds() -> list:
    """This thread's stack of rounds, innermost last."""
    found = getattr(_local, "rounds", None)
    if found is None:
        found = _local.rounds = []
    return found


#: The timings of Configs that ``first`` does not run, by position (shared: they never change).
_UNTUNED = tuple((Timing(0.0, order),) * 3 for order in range(256))


def untuned(order):
    """What ``_bench`` returns under ``first`` for the Config at ``order``: nothing ran."""
    return _UNTUNED[order] if order < len(_UNTUNED) else (Timing(0.0, order),) * 3


def cpu_bench(kernel_call, quantiles=None, **ignored):
    """The benchmarker of interpreted autotuners (``all``/``verify``; ``first`` never benchmarks):
    run the Config once, and return its CPU time, ordered by position. For a compiled autotuner
    under ``verify``: check the Config from the snapshot, then time it with Triton's own benchmarker."""
    stack = rounds()
    if not stack:
        return _gpu_bench(kernel_call, quantiles, **ignored)
    current = stack[-1]
    if current.compiled:
        if current.verification is not None:
            current.verification.check_config(kernel_call)
        real = current.real_bench or (lambda call, quantiles=None, **kw: _gpu_bench(call, quantiles, **kw))
        return real(kernel_call, quantiles=quantiles, **ignored)
    order = current.next_order()
    if current.verification is None:
        elapsed = timed(kernel_call)
    else:
        elapsed = current.verification.run_config(kernel_call)
    timing = Timing(elapsed, order)
    return [timing] * len(quantiles) if quantiles else timing


def timed(kernel_call) -> float:
    """Run ``kernel_call`` once; its CPU time in ms."""
    start = time.perf_counter()
    kernel_call()
    return (time.perf_counter() - start) * 1000.0


def _gpu_bench(kernel_call, quantiles, **kwargs):
    """Outside a kwshim round (a compiled autotuner): what Triton itself would benchmark with."""
    compat.import_triton()
    from triton.runtime import driver

    bench = getattr(driver.active, "get_benchmarker", None)
    if bench is not None:
        return bench()(kernel_call, quantiles=quantiles, **kwargs)
    from triton.testing import do_bench

    return do_bench(kernel_call, quantiles=quantiles, **kwargs)


def module_bench(original):
    """2.2-3.1: the module's own ``do_bench``/``do_bench_cudagraph``, which ``_bench`` calls: kwshim's
    inside a round, Triton's outside (and, for a compiled round, what times the Config)."""

    def bench(kernel_call, *args, quantiles=None, **kwargs):
        stack = rounds()
        if stack:
            if stack[-1].compiled and stack[-1].real_bench is None:
                stack[-1].real_bench = lambda call, quantiles=None, **kw: original(call, *args, quantiles=quantiles,
                                                                                   **kwargs)
            return cpu_bench(kernel_call, quantiles=quantiles)
        return original(kernel_call, *args, quantiles=quantiles, **kwargs)

    bench.__wrapped__ = original
    return bench


def failed_static_assert(exc: Optional[BaseException]) -> bool:
    """True when ``exc`` comes from a failed ``tl.static_assert`` in the interpreter, which compiled
    Triton reports at compilation (``CompileTimeAssertionFailure``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, AssertionError):
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            if tb is not None and tb.tb_frame.f_code.co_name == "_new_static_assert":
                return True
        exc = exc.__cause__ or exc.__context__
    return False
