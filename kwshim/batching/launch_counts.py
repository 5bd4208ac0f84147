"""What ran batched and what ran the loop, launch by launch: the counts the pytest door's summary reads.

Only launches of two or more programs count (a batch can speed nothing else), under ``batched`` and
``check``; ``check`` counts, too, the launches it ran batched and compared with the loop bit for bit.
"""

import threading
from typing import Dict

__all__ = ["count", "not_counted", "checked", "too_large_to_check", "batched_launches", "launch_record",
           "merge_records", "REASONS", "launched", "total"]

_LOCK = threading.Lock()
#: kernel function -> [launches batched, launches that ran the loop, replayed a trace, compared by check,
#: too large for check to compare]
_LAUNCHES: Dict[object, list] = {}
#: kernel function -> why its last batch fell back: ``programs``' own dict, read for the record.
REASONS: Dict[object, str] = {}


#: Every interpreted launch through the grid seam in this process, of one program or many: what the
#: pytest door reads to tell a test that launched no kernel.
total = 0


def launched() -> None:
    """One more interpreted launch (``total``)."""
    global total
    total += 1


def count(fn, batched, replayed=False) -> None:
    """One launch of two or more programs of ``fn``: batched (and whether it replayed a trace), or the loop."""
    with _LOCK:
        counts = _counts(fn)
        counts[0 if batched else 1] += 1
        counts[2] += replayed


def not_counted(fn, batched, replayed=False) -> None:
    """A launch of one program, which the counts leave out (they are of launches a batch can speed)."""


def checked(fn) -> None:
    """A launch of ``fn`` that ``grid="check"`` ran batched and found the loop's bits."""
    with _LOCK:
        _counts(fn)[3] += 1


def too_large_to_check(fn) -> None:
    """A launch of ``fn`` whose tensors were too large for ``grid="check"`` to copy: it ran the loop alone."""
    with _LOCK:
        _counts(fn)[4] += 1


def _counts(fn) -> list:
    """``fn``'s counts (``_LAUNCHES``), made where it has none; under ``_LOCK``."""
    return _LAUNCHES.setdefault(fn, [0, 0, 0, 0, 0])


def batched_launches(fn) -> int:
    """How many launches of ``fn`` ran batched so far."""
    with _LOCK:
        return _LAUNCHES.get(fn, (0,))[0]


def launch_record() -> Dict[str, dict]:
    """{kernel name: {"batched": launches, "replayed": of those, launches that replayed a trace,
    "looped": launches, "checked": launches compared with the loop, "too_large": launches check ran the
    loop alone for, "reason": why it fell back or None}}, for the launches of two or more programs in
    this process."""
    with _LOCK:
        records = [{getattr(fn, "__qualname__", repr(fn)):
                    {"batched": batched_count, "replayed": replayed, "looped": looped, "checked": compared,
                     "too_large": large, "reason": REASONS.get(fn)}}
                   for fn, (batched_count, looped, replayed, compared, large) in _LAUNCHES.items()]
    return merge_records(records)


def merge_records(records) -> Dict[str, dict]:
    """``launch_record``s (of kernels of one name, of processes) as one."""
    merged: Dict[str, dict] = {}
    for record in records:
        for name, entry in record.items():
            into = merged.setdefault(name, {"batched": 0, "replayed": 0, "looped": 0, "checked": 0, "too_large": 0,
                                            "reason": None})
            for key in ("batched", "replayed", "looped", "checked", "too_large"):
                into[key] += entry.get(key, 0)
            into["reason"] = into["reason"] or entry["reason"]
    return merged
