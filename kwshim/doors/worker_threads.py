"""torch's CPU threads in a pytest-xdist worker: the machine's cores shared among the workers.

torch gives every process as many threads as the machine has cores. Under ``pytest -n 2`` on two
cores each worker's matmuls then run two threads beside the other worker's two, and they wait on
each other: Liger's 160 largest ``test_dpo_loss.py`` tests (torch code around its losses) took
346 s so and 193 s with one thread a worker. A GPU suite's torch code is the CPU's whole load here,
so under ``--kwshim`` each worker takes its share of the cores. A user's own ``OMP_NUM_THREADS``
(or ``torch.set_num_threads`` in a conftest, which comes later) wins.
"""

import os
from typing import Any, MutableMapping, Optional

#: what pytest-xdist sets in each worker's environment before the worker's pytest starts
WORKER_COUNT = "PYTEST_XDIST_WORKER_COUNT"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def share_cores(environ: MutableMapping[str, str] = os.environ, cores: Optional[int] = None,
                loaded: Any = None) -> Optional[int]:
    """In an xdist worker, give torch ``cores // workers`` threads (at least one) and return that
    count; None outside a worker, or where ``OMP_NUM_THREADS`` is set. ``loaded``: torch, where it
    was imported before (the variable comes too late for it)."""
    count = environ.get(WORKER_COUNT)
    if not count or not count.isdigit() or int(count) < 1 or "OMP_NUM_THREADS" in environ:
        return None
    threads = max(1, (cores or _cores()) // int(count))
    environ["OMP_NUM_THREADS"] = str(threads)  # read by torch (and MKL) when they load
    if loaded is not None:
        loaded.set_num_threads(threads)
    return threads
