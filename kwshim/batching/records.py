"""What one executed ``tl.load`` or ``tl.store`` of a batch moved (``store_log`` keeps them), and
the rule that decides a batch of rows on their starts alone.

A ``Record`` holds the addresses of its unmasked elements (programs first, in C order, so the
programs are non-decreasing), for a store its values' bits, and its step, the count of records
before it. ``Rows`` is the record of a load or store whose pointers are each program's row from its
own start (``interpreter/rows``): it keeps the starts, and makes the addresses only where a rule
needs them.
"""

import bisect
import itertools

import numpy as np

from .rows import addresses as row_addresses

__all__ = ["READ_AFTER_WRITE", "TWO_SIZES", "Record", "Rows", "rows_apply", "rows_conflict",
           "bytes_meet_across_widths", "spans_meeting"]

READ_AFTER_WRITE = "a program reads what another program (or itself, earlier) wrote in the launch"


class Record:
    """``every``: the addresses had no program axis (size 1): every program of the batch moved them."""

    __slots__ = ("addresses", "values", "mask", "step", "every", "_increasing", "_span", "_programs", "apply", "kind",
                 "width")

    def __init__(self, addresses, values, mask, step, programs, apply=None, kind=None, width=8):
        self.addresses, self.values, self.mask, self.step = addresses, values, mask, step
        self.every = programs if mask.shape[0] == 1 and programs > 1 else 0
        self._increasing = self._span = self._programs = None
        self.apply, self.kind = apply, kind  # an atomic's: ``apply(addresses, values)`` in array order
        self.width = width if values is None else values.dtype.itemsize  # bytes per element (a load's: given)

    def increasing(self):
        """Whether the addresses rise strictly (each once: row-major blocks, one program's after another's)."""
        if self._increasing is None:
            addresses = self.addresses
            self._increasing = bool(addresses.size < 2 or (addresses[1:] > addresses[:-1]).all())
        return self._increasing

    def programs(self, first):
        """The program of each address: the first (or, ``first`` False, the last) that moved it."""
        if self.every:
            return np.full(self.addresses.size, 0 if first else self.every - 1)
        if self._programs is None:  # the same first and last: each address once per program
            mask = self.mask
            if mask.size and mask.size == self.addresses.size:  # every element moved: as many per program
                programs = np.arange(mask.shape[0], dtype=np.int32)
                each = mask.size // mask.shape[0]
                self._programs = programs if each == 1 else np.repeat(programs, each)  # a scalar's: one
            else:
                counts = self.counts()
                self._programs = np.repeat(np.arange(counts.size, dtype=np.int32), counts)
        return self._programs

    def counts(self):
        """How many addresses each program moved."""
        mask = self.mask
        return mask.reshape(mask.shape[0], -1).sum(axis=1) if mask.ndim > 1 else mask.astype(np.intp)

    def same_elements(self, other):
        """Whether ``other`` moved exactly these addresses, each once and by the same program (an
        in-place update: a load, then a store to the same elements)."""
        return (not self.every and not other.every and self.addresses.size == other.addresses.size
                and self.increasing() and other.increasing() and np.array_equal(self.addresses, other.addresses)
                and np.array_equal(self.counts(), other.counts()))

    def run(self, low, unit):
        """The slice of a marks array of ``unit``-byte elements from ``low`` that these addresses are,
        where they rise one element at a time from an address on its grid (a row-major block), else
        None."""
        addresses = self.addresses
        if self.increasing() and addresses.size:
            first, last = int(addresses[0]), int(addresses[-1])
            if last - first == (addresses.size - 1) * unit and (first - low) % unit == 0:
                begin = (first - low) // unit
                return slice(begin, begin + addresses.size)
        return None

    def where(self, low, unit):
        """Where these addresses fall in a marks array of ``unit``-byte elements from ``low``: a slice
        (``run``: no index array to make), else the index of each; None where one is off the grid."""
        run = self.run(low, unit)
        if run is not None:
            return run
        offsets = self.addresses - self.addresses.dtype.type(low)
        return None if (offsets % unit).any() else offsets // unit

    def span(self):
        """(lowest, highest) address, or None: computed once, as records are compared pairwise."""
        if self._span is None and self.addresses.size:
            addresses = self.addresses
            self._span = (addresses[0], addresses[-1]) if self.increasing() else (addresses.min(), addresses.max())
        return self._span

    def moved(self):
        """How many elements the record moved."""
        return self.addresses.size

    def rows_count(self):
        """How many rows ``bounds`` gives (an element each, for a record that is not rows)."""
        return self.addresses.size

    def bounds(self):
        """Each element's bytes, [start, end), and its program (the first that moved it)."""
        low = self.addresses.view(np.int64)
        return low, low + self.width, self.programs(first=True)


class Rows(Record):
    """A record of rows: each program moved ``length`` consecutive elements of ``width`` bytes from its
    own start (``base + pid * stride + tl.arange``, masked by ``arange < n`` or not at all), or, with
    ``owners``, each row from its own start, moved by the program ``owners`` names (a block of rows
    per program, in program order). Kept as the starts alone; the addresses, values and mask the
    other records hold are made only where a rule needs them (``rows_conflict`` decides most batches
    on the starts)."""

    def __init__(self, starts, length, width, rows, step, programs, owners=None, pitch=None):
        self.starts, self.length, self.width, self.rows = starts, length, width, rows
        self.pitch = pitch or width  # bytes from one element of a row to the next
        self.step, self.every = step, (programs if starts.size == 1 and programs > 1 and owners is None else 0)
        self._increasing = self._span = self._programs = None
        self.apply = self.kind = None
        self._made = None
        self.owners, self.batch = owners, programs  # the program of each row (None: row i is program i's)

    def _make(self):
        if self._made is None:
            values = None if self.rows is None else np.ascontiguousarray(self.rows).reshape(-1)
            self._made = (row_addresses(self.starts, self.length, self.width, self.pitch), values,
                          np.ones((self.starts.size, self.length), dtype=bool))
        return self._made

    addresses = property(lambda self: self._make()[0])
    values = property(lambda self: self._make()[1])
    mask = property(lambda self: self._make()[2])

    def counts(self):
        if self.owners is None:
            return np.full(self.starts.size, self.length, dtype=np.intp)
        return np.bincount(self.owners, minlength=self.batch).astype(np.intp) * self.length

    def programs(self, first):
        if self.owners is None:
            return super().programs(first)
        return np.repeat(self.owners, self.length)

    def span(self):
        if self._span is None:
            self._span = (np.uint64(self.starts.min()), np.uint64(self.starts.max() + (self.length - 1) * self.pitch))
        return self._span

    def moved(self):
        return self.starts.size * self.length

    def rows_count(self):
        return self.starts.size

    def bounds(self):
        """Each row's bytes, [start, end), and its program (a row whose elements are apart spans the
        bytes between them too: the rule is then safe, not exact)."""
        owners = np.arange(self.starts.size) if self.owners is None else self.owners
        return self.starts, self.starts + (self.length - 1) * self.pitch + self.width, owners


#: The most stores' rows one load's row may meet before the rows' rule leaves the batch to the others.
_MOST_MET = 16


TWO_SIZES = "stores of two element sizes reach one address"


def bytes_meet_across_widths(lows, highs, widths):
    """Whether two byte ranges [low, high) of different element widths overlap (each width's ranges
    sorted by their lows, with the running highest end, searched for every other width's ranges)."""
    kinds = np.unique(widths)
    for width in kinds[:-1]:
        mine = widths == width
        order = np.argsort(lows[mine], kind="stable")
        own_lows, running_high = lows[mine][order], np.maximum.accumulate(highs[mine][order])
        other_lows, other_highs = lows[~mine], highs[~mine]
        before = np.searchsorted(own_lows, other_highs, side="left")  # own ranges starting before each ends
        if ((before > 0) & (running_high[np.maximum(before - 1, 0)] > other_lows)).any():
            return True
    return False


#: The most elements a record that is not rows may move for ``rows_conflict`` to take it (element by element).
FEWEST_ROWS_MIX = 4096


def rows_apply(records):
    """Whether ``rows_conflict`` takes these records: some rows, and the rest small; or a few elements
    in all (a small launch's scalar loads and stores, each element a row: decided in Python lists,
    where marking them costs NumPy's per-call overhead a dozen times over)."""
    if all(not isinstance(r, Rows) for r in records):
        return sum(r.moved() for r in records) <= _FEW
    return all(isinstance(r, Rows) or r.moved() <= FEWEST_ROWS_MIX for r in records)


def rows_conflict(loads, stores):
    """(decided, reason) for a batch of rows (and small records, element by element), by the bytes each
    program's row spans: decided where the stores whose bytes meet are one program's (committed in
    step order, the loop's order for them; a store of every program to one row is not) and each
    load's row meets few; then a load conflicts where it meets a row an earlier program stored, or
    its own program stored at an earlier step. Bytes, not element addresses: a narrower load of a
    wider store's bytes meets it too."""
    if not stores:
        return True, None
    if sum(store.rows_count() for store in stores) <= _FEW and sum(load.rows_count() for load in loads) <= _FEW:
        return _few_rows_conflict(loads, stores)
    return _many_rows_conflict(loads, stores)


def _many_rows_conflict(loads, stores):
    """``rows_conflict`` on NumPy arrays."""
    lows, highs, programs, steps = [], [], [], []
    for store in stores:
        if store.every:
            return False, None
        low, high, program = store.bounds()
        lows.append(low)
        highs.append(high)
        programs.append(program)
        steps.append(np.full(low.size, store.step))
    widths = np.concatenate([np.full(low.size, store.width) for store, low in zip(stores, lows)])
    lows, highs = np.concatenate(lows), np.concatenate(highs)
    order = np.argsort(lows, kind="stable")
    lows, highs, widths = lows[order], highs[order], widths[order]
    programs, steps = np.concatenate(programs)[order], np.concatenate(steps)[order]
    reach = np.maximum.accumulate(highs)  # the furthest byte any store row starting so far reaches
    if (reach[:-1] > lows[1:]).any():  # stores' bytes meet
        if bytes_meet_across_widths(lows, highs, widths):
            return True, TWO_SIZES
        cluster_starts = np.flatnonzero(np.r_[True, lows[1:] >= reach[:-1]])
        if (np.minimum.reduceat(programs, cluster_starts) != np.maximum.reduceat(programs, cluster_starts)).any():
            return False, None  # two programs' stores meet: the loop's order is the general path's to give
    for load in loads:
        low, high, loaders = load.bounds()
        first = np.searchsorted(reach, low, side="right")  # the first store row reaching past the load's start
        met = np.searchsorted(lows, high, side="left") - first
        most = int(met.max()) if met.size else 0
        if most > _MOST_MET:
            return False, None
        for k in range(most):
            hit = np.flatnonzero(met > k)
            at = first[hit] + k
            really = highs[at] > low[hit]  # a row between may end before the load starts
            hit, at = hit[really], at[really]
            writer, step = programs[at], steps[at]
            if load.every:  # every program reads the row: all but the last come after some writer
                if ((writer < load.every - 1) | (step < load.step)).any():
                    return True, READ_AFTER_WRITE
            elif ((writer < loaders[hit]) | ((writer == loaders[hit]) & (step < load.step))).any():
                return True, READ_AFTER_WRITE
    return True, None


#: At most this many store rows, and load rows, are decided in Python lists (``_few_rows_conflict``):
#: a small launch's handful of rows costs NumPy's per-call overhead two dozen times over.
_FEW = 32


def _few_rows_conflict(loads, stores):
    """``rows_conflict`` for a few rows, step for step the same rule on Python lists (``bisect`` for
    ``np.searchsorted``, a stable ``sort`` for the stable ``argsort``): the same answer."""
    entries = []
    for store in stores:
        if store.every:
            return False, None
        low, high, program = store.bounds()
        entries.extend((lo, hi, store.width, p, store.step) for lo, hi, p in zip(low.tolist(), high.tolist(),
                                                                                 program.tolist()))
    if not entries:  # every store masked out: nothing a load could meet
        return True, None
    entries.sort(key=lambda entry: entry[0])
    lows, highs, widths, programs, steps = (list(column) for column in zip(*entries))
    reach = list(itertools.accumulate(highs, max))
    if any(reach[i] > lows[i + 1] for i in range(len(lows) - 1)):  # stores' bytes meet
        if _few_bytes_meet_across_widths(lows, highs, widths):
            return True, TWO_SIZES
        cluster = [programs[0]]
        for i in range(1, len(lows) + 1):
            if i == len(lows) or lows[i] >= reach[i - 1]:  # a cluster ends
                if min(cluster) != max(cluster):
                    return False, None
                cluster = []
            if i < len(lows):
                cluster.append(programs[i])
    for load in loads:
        low, high, loaders = (column.tolist() for column in load.bounds())
        first = [bisect.bisect_right(reach, lo) for lo in low]
        met = [bisect.bisect_left(lows, hi) - f for hi, f in zip(high, first)]
        if max(met, default=0) > _MOST_MET:
            return False, None
        for row, (lo, begin, count) in enumerate(zip(low, first, met)):
            for at in range(begin, begin + count):
                if highs[at] <= lo:  # a row between may end before the load starts
                    continue
                writer, step = programs[at], steps[at]
                if load.every:  # every program reads the row: all but the last come after some writer
                    if writer < load.every - 1 or step < load.step:
                        return True, READ_AFTER_WRITE
                elif writer < loaders[row] or writer == loaders[row] and step < load.step:
                    return True, READ_AFTER_WRITE
    return True, None


def _few_bytes_meet_across_widths(lows, highs, widths):
    """``bytes_meet_across_widths`` on lists."""
    kinds = sorted(set(widths))
    for width in kinds[:-1]:
        own = sorted(((lo, hi) for lo, hi, w in zip(lows, highs, widths) if w == width), key=lambda pair: pair[0])
        own_lows, running_high = [lo for lo, _ in own], list(itertools.accumulate((hi for _, hi in own), max))
        for lo, hi, w in zip(lows, highs, widths):
            if w != width:
                before = bisect.bisect_left(own_lows, hi)  # own ranges starting before this one ends
                if before > 0 and running_high[before - 1] > lo:
                    return True
    return False


#: How many records ``spans_meeting`` compares with all the others at once (a boolean each pair).
_SPANS_AT_ONCE = 1024


def spans_meeting(records, others, span_of=lambda record: record.span()):
    """The pairs ``(record, other)`` whose spans meet (``span_of``: the elements' by default), record
    by record and each record's in the order of ``others``: every pair's spans compared in NumPy,
    where a loop's hundreds of records made the pairs a Python loop (a tenth of a
    flash-linear-attention test)."""
    def bounds(items):
        spans = [(item, span_of(item)) for item in items]
        kept = [(item, span) for item, span in spans if span is not None]
        return ([item for item, _ in kept], np.array([span[0] for _, span in kept], np.uint64),
                np.array([span[1] for _, span in kept], np.uint64))

    records, lows, highs = bounds(records)
    others, other_lows, other_highs = bounds(others)
    if not records or not others:
        return
    for start in range(0, len(records), _SPANS_AT_ONCE):
        end = start + _SPANS_AT_ONCE
        meet = (lows[start:end, None] <= other_highs) & (other_lows <= highs[start:end, None])
        for row, column in zip(*(found.tolist() for found in np.nonzero(meet))):
            yield records[start + row], others[column]
