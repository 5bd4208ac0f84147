"""A chunk whose programs diverge in a few values runs as groups of programs that agree.

A batch splits where Python control flow differs between its programs (``Diverged``): it runs the
leading run of programs that agree, then the rest. That suits programs whose value changes once or
twice along the chunk. A varlen kernel interleaves them: flash-linear-attention's
``chunk_global_cumsum_vector_kernel`` loops over its sequence's chunks, with the sequence in the grid's
second axis, so along Triton's order (x outermost) the trip count changes every 4 programs and takes
5 values in all. Runs of 4 cost a split each, and the launch fell back to the loop.

Here each value's programs run as one batch (``numbers``, rising), every group against the memory before
the chunk: stores wait in each group's ``StoreLog``. Together they are the chunk's batch, so they are
committed only where that batch would have been, as one: ``store_log.groups_conflict`` decides it on
rows, each program numbered by its place in the chunk, and ``store_log.commit_groups`` writes them.
Records that are not rows (a token-parallel kernel's loads and stores of a few elements) are decided
element by element, each a row of its own, up to ``store_log._MOST_GROUPED`` elements. Each group tries
the trace recorded for its value first (``replay.traces``' hint): a kernel's groups each need their
own. Anything else (a group diverging again, records that rows cannot decide, a conflict) leaves the
chunk to its runs of programs that agree, one batch each (``too_split`` says when the loop is faster),
as before: nothing was written.
"""

import threading

import numpy as np

from . import store_log

__all__ = ["run", "forget", "too_split"]

_FREE_SPLITS = 8
_SHORTEST_RUN = 4

#: Kernels whose chunk could not run as groups once: they split into leading runs from then on.
_NOT_GROUPED: set = set()
_LOCK = threading.Lock()


def forget(fn):
    """Try groups again for ``fn`` (``programs.forget``)."""
    with _LOCK:
        _NOT_GROUPED.discard(fn)


def run(fn, values, first, count, batch, native_store):
    """The chunk of ``count`` programs from ``first``, run as groups of programs whose ``values`` (each
    program's, of ``Diverged``) agree, and committed: (whether a group replayed a trace, the most elements
    one record moved); None where it did not run so (nothing written)."""
    with _LOCK:
        if fn in _NOT_GROUPED:
            return None
    groups = _groups(values, count)
    if groups is None:
        return None
    logs, replayed = [], False
    for positions in groups:
        try:
            log, replayed_now = batch(first, positions.size, numbers=first + positions, hint=_hint(values, positions))
        except Exception:  # diverging again, or anything a batch cannot do: the leading run decides
            return _not_grouped(fn)
        logs.append(log)
        replayed = replayed or replayed_now
    if store_log.groups_conflict(logs, groups) is not None:
        return _not_grouped(fn)
    store_log.commit_groups(logs, native_store)
    return replayed, max(log.largest() for log in logs)


def _hint(values, positions):
    """The group's value, as ``replay.traces`` tells the trace recorded for it (a Python scalar)."""
    return np.asarray(values).reshape(-1)[positions[0]].item()


def _not_grouped(fn):
    with _LOCK:
        _NOT_GROUPED.add(fn)
    return None


def _groups(values, count):
    """The chunk's positions of each value's programs, in the order the values first appear; None where
    the leading runs split as few times (values that change at most twice as often as they are many),
    or the values are not one per program (or hold a NaN)."""
    values = np.asarray(values).reshape(-1)
    if values.size != count or values.dtype.kind not in "biu":
        return None
    runs = 1 + int(np.count_nonzero(values[1:] != values[:-1]))
    kinds, firsts, which = np.unique(values, return_index=True, return_inverse=True)
    if runs <= 2 * kinds.size:
        return None
    return [np.flatnonzero(which == kind) for kind in np.argsort(firsts, kind="stable")]


def too_split(splits, done):
    """Whether a launch splits so often that its runs average fewer than ``_SHORTEST_RUN`` programs
    (each run costs a batch): then the loop is faster."""
    return splits > _FREE_SPLITS and done < _SHORTEST_RUN * splits
