"""The loads and deferred stores of one batch of programs, and the rules that keep them the loop's.

Triton's loop runs program 0 to the end, then program 1, ...: a program sees every write of the
programs before it, and its own earlier writes. A batch runs the programs side by side, so its
stores wait here (``store``) and are written when the batch ends (``commit``), in the loop's
order: by program, then by the order the program made them. That is exact for the stores. A load
is exact when it reads nothing written in the batch before it, in that order (``conflict``); where
one does, the batch is not committed and the loop runs its programs instead, unless each program
reads back only its own writes (``own_writes``: the batch runs again, writing through).

Each record is an executed ``tl.load`` or ``tl.store`` of every program in the batch
(``records``). Where every record is rows (``records.Rows``), ``records.rows_conflict`` decides on
the rows' bytes alone, and each store is one strided copy; otherwise the rules below run on the
records' addresses.
"""

import numpy as np

from . import memory
from ..interpreter.bounds import check as _check_bounds, check_rows as _check_rows
from .records import READ_AFTER_WRITE as _READ_AFTER_WRITE, TWO_SIZES, Record as _Record, Rows as _Rows, \
    bytes_meet_across_widths, rows_apply, rows_conflict, spans_meeting

__all__ = ["StoreLog", "groups_conflict", "commit_groups"]

#: A cluster of writes is marked where its span is at most this many times its elements.
_COMPACT = 4

#: The most elements a chunk's groups may move in records that are not rows for ``groups_conflict``
#: to decide them element by element (each one a row of ``records.rows_conflict``: a sort of them all).
_MOST_GROUPED = 1 << 20


class StoreLog:
    """The records of one batch: loads to check, stores to write."""

    write_through = False  #: stores written as they are made (``own_writes.WriteThroughLog``): loads copy

    def __init__(self, programs):
        self.programs = programs  # in the batch
        self.loads, self.stores, self.atomics = [], [], []
        self._ordered = False  # two stores reach one address: commit orders the elements
        self._marks = None  # the writes marked on their addresses, where they could be
        self._rows_apart = False  # rows decided the batch: no two programs' stores meet (``rows_conflict``)
        self._views = []  # loaded values that are views of the memory (``memory.read_rows``)

    def _step(self):
        return len(self.loads) + len(self.stores) + len(self.atomics)

    def load(self, addresses, mask, width=8):
        """The load's record (whose ``increasing()`` the gather reads, computed once for both) of
        ``width``-byte elements."""
        record = _Record(addresses, None, mask, self._step(), self.programs, width=width)
        _check_bounds(addresses, width, "read", rising=record.increasing())  # the gather reads it too
        self.loads.append(record)
        return record

    def _own(self, values):
        """``values``, copied where they may be memory a load viewed: the commit may write there
        before it writes them (``a = load(p); b = load(q); store(p, b); store(q, a)``)."""
        return values.copy() if any(np.may_share_memory(values, view) for view in self._views) else values

    def store(self, addresses, values, mask):
        record = _Record(addresses, self._own(values), mask, self._step(), self.programs)
        _check_bounds(addresses, values.dtype.itemsize, "write", rising=record.increasing())  # the commit reads it
        self.stores.append(record)

    def load_rows(self, starts, length, width, view=None, owners=None, pitch=None):
        """A load of ``length`` elements of ``width`` bytes, ``pitch`` bytes apart, from each start
        (int64 byte addresses, one per program, or one for all; or, with ``owners``, one per row,
        ``owners`` the program of each); ``view``: the values, where they are a view of the memory."""
        record = _Rows(starts, length, width, None, self._step(), self.programs, owners, pitch)
        self.loads.append(record)
        if view is not None:
            self._views.append(view)
        return record

    def store_rows(self, starts, rows, owners=None, pitch=None):
        """A store of each row of ``rows`` (programs or 1, length; the values' bits) from its start, its
        elements ``pitch`` bytes apart (with ``owners``, the program of each row: one start and one
        row of values each)."""
        _check_rows(starts, rows.shape[1], rows.dtype.itemsize, pitch, "write")
        rows = self._own(rows)
        if owners is None:
            programs = max(starts.size, rows.shape[0])
            if starts.shape != (programs,):  # (``np.broadcast_to`` costs 3 µs where nothing is broadcast)
                starts = np.broadcast_to(starts, (programs,))
            if rows.shape[0] != programs:
                rows = np.broadcast_to(rows, (programs, rows.shape[1]))
        self.stores.append(_Rows(starts, rows.shape[1], rows.dtype.itemsize, rows, self._step(), self.programs,
                                 owners, pitch))

    def atomic(self, addresses, values, mask, apply, kind):
        """An atomic read-modify-write whose returned value the kernel does not use: applied at
        ``commit`` by ``apply`` (the interpreter's own), in the loop's order."""
        _check_bounds(addresses, values.dtype.itemsize, "atomic")
        self.atomics.append(_Record(addresses, self._own(values), mask, self._step(), self.programs, apply, kind))

    def largest(self):
        """The most elements one record moved (the chunk size follows it)."""
        return max((record.moved() for record in self.loads + self.stores + self.atomics), default=0)

    def conflict(self):
        """Why committing would not leave the loop's bits, or None."""
        self._rows_apart = False
        if not self.atomics and rows_apply(self.loads + self.stores):
            decided, reason = rows_conflict(self.loads, self.stores)
            if decided:
                self._rows_apart = reason is None
                return reason
        reason = self._atomics_conflict()
        if reason is not None:
            return reason
        writes = self.stores + self.atomics
        stores = self.stores
        if len({store.width for store in stores}) > 1:  # by bytes: the marks below match element addresses
            for store, other in spans_meeting(stores, stores, _byte_span):
                if other.width < store.width and _bytes_meet(store, other):  # each pair once: it is symmetric
                    return TWO_SIZES
        marks = self._marks = _Marks.of(writes)
        if marks is None or marks.mixed:
            reason = self._stores_conflict()
            if reason is not None:
                return reason
        elif marks.stores_overlap:  # two stores of one element size (no atomic meets a store: checked above)
            self._ordered = True
        widths = {write.width for write in writes}  # another width's bytes: the rules below match element addresses
        other_widths = [load for load in self.loads if widths - {load.width}]
        for load, write in spans_meeting(other_widths, writes, _byte_span):
            if load.width != write.width and _bytes_meet(load, write):
                return _READ_AFTER_WRITE
        if marks is not None:
            return _READ_AFTER_WRITE if any(marks.read_after_write(load) for load in self.loads) else None
        for load, store in spans_meeting(self.loads, writes):
            if store.same_elements(load):  # each program its own elements: only its own order counts
                if store.step < load.step:
                    return _READ_AFTER_WRITE
                continue
            first, last = _storers_and_loaders(store, load)
            if ((first < last) | ((first == last) & (store.step < load.step))).any():
                return _READ_AFTER_WRITE
        return None

    def _stores_conflict(self):
        """Two stores of one element size that reach one address: then ordered element by element at
        ``commit`` (two of two sizes that meet were refused in ``conflict``, by their bytes). One sort
        of every store's addresses tells it, where a test of every pair of stores took a loop's
        hundreds of records squared."""
        sizes = {}
        for record in self.stores:
            if record.addresses.size:
                addresses = record.addresses if record.increasing() else np.unique(record.addresses)
                sizes.setdefault(record.values.dtype.itemsize, []).append(addresses)
        for addresses in sizes.values():
            if len(addresses) > 1:
                every = np.sort(np.concatenate(addresses))
                if (every[1:] == every[:-1]).any():  # two records' (each record's addresses are distinct)
                    self._ordered = True
        return None

    def _atomics_conflict(self):
        """Atomics of two kinds (operation, type), or an atomic and a store, that reach one address."""
        atomics = self.atomics
        for i, record in enumerate(atomics):
            others = [a for a in atomics[:i] if a.kind != record.kind] + self.stores
            for other in others:
                if _meet(record, other):
                    return "an atomic and a store (or another kind of atomic) reach one address"
        return None

    def undo(self):
        """Nothing is written before ``commit``: nothing to put back."""

    def commit(self, native_store):
        """Write the stores as the loop would have (``native_store(addresses, values)`` writes in
        array order: the interpreter's own loop, where a NumPy scatter cannot), then apply the
        atomics of each kind in the loop's order."""
        self._commit_stores(native_store)
        kinds = {}
        for record in self.atomics:
            kinds.setdefault(record.kind, []).append(record)
        for records in kinds.values():
            addresses, values = _in_loop_order(records)
            records[0].apply(addresses, values)

    def _commit_stores(self, native_store):
        if self._rows_apart:  # stores meet only within a program: each is one strided copy, in step order
            for record in self.stores:
                if not isinstance(record, _Rows) or not memory.write_rows(record.starts, record.rows, record.pitch):
                    _scatter(record.addresses, record.values, record.increasing(), native_store)
            return
        if not self._ordered:
            for record in self.stores:
                _scatter(record.addresses, record.values, record.increasing(), native_store)
            return
        if self._marks is not None and not self._marks.mixed:
            self._marks.commit_last_writers(native_store)
            return
        sizes = {}  # stores of two element sizes never reach one address (``conflict``): each size apart
        for record in self.stores:
            sizes.setdefault(record.values.dtype.itemsize, []).append(record)
        for records in sizes.values():
            native_store(*_in_loop_order(records))


def groups_conflict(logs, groups):
    """Why committing the logs of a chunk's groups of programs (``groups[i]``: the chunk's places of
    ``logs[i]``'s programs, each group run against the memory before the chunk: ``program_groups``)
    would not leave the loop's bits, or None. Decided as for one batch of the chunk, on rows
    (``records.rows_conflict``, every program numbered by its place): records that are not rows
    count as a row per element where they move at most ``_MOST_GROUPED`` elements in all (a
    token-parallel kernel's loads and stores of a few elements each). Where rows cannot decide, or
    a group made atomics or a store of every program, a reason too."""
    records = [record for log in logs for record in log.loads + log.stores]
    few = sum(record.moved() for record in records) <= _MOST_GROUPED
    if any(log.atomics for log in logs) or not (rows_apply(records) or few):
        return "not decided on rows"
    loads, stores = [], []
    for log, places in zip(logs, groups):
        loads += [_Renumbered(record, places) for record in log.loads]
        stores += [_Renumbered(record, places) for record in log.stores]
    if any(store.record.every for store in stores):
        return "not decided on rows"
    decided, reason = rows_conflict(loads, stores)
    return reason if decided else "not decided on rows"


def commit_groups(logs, native_store):
    """Write the stores of a chunk's groups, where ``groups_conflict`` found that no two programs'
    stores meet: each one strided copy (or scatter), log by log. A store's values that are memory a
    load viewed are the storing program's own load, so its own log copied them (``StoreLog._own``)."""
    for log in logs:
        log._rows_apart = True
        log._commit_stores(native_store)


class _Renumbered:
    """A record whose programs are numbered by their places in a chunk (``places``), for
    ``records.rows_conflict``: a load of every program of its group is its group's last program's (the
    programs before it read it earlier: a write it meets conflicts where ``rows_conflict`` says so for
    that program)."""

    __slots__ = ("record", "places", "every", "step", "width")

    def __init__(self, record, places):
        self.record, self.places, self.every = record, places, 0
        self.step, self.width = record.step, record.width

    def rows_count(self):
        return self.record.rows_count()

    def bounds(self):
        low, high, programs = self.record.bounds()
        if self.record.every:
            return low, high, np.full(low.size, self.places[-1])
        return low, high, self.places[programs]


class _Marks:
    """The batch's writes marked on their addresses, one array per cluster of overlapping spans: for
    each element, the first program that writes it and that program's first step. A load then
    conflicts, in one gather, where that program is before the loader, or is the loader, earlier.
    ``of`` gives None where the writes cannot be marked so (an address twice in one record, spans
    much larger than the elements, addresses off the element grid): the pairwise checks run instead."""

    _NOBODY = np.iinfo(np.int32).max

    def __init__(self):
        self.clusters = []  # (low, high, unit, first program, first step, the records in step order, where each falls)
        self.stores_overlap = False  # a store reaches an address a write before it reached
        self.mixed = False  # ... in a cluster of two element sizes: the pairwise checks tell which

    @classmethod
    def of(cls, records):
        records = [r for r in records if r.addresses.size]
        if not all(r.increasing() for r in records):
            return None
        marks = cls()
        for low, high, members in _clusters(records):
            low, high = int(low), int(high)
            unit = min(r.values.dtype.itemsize for r in members)
            size = int(high - low) // unit + 1
            if size > max(_COMPACT * sum(r.addresses.size for r in members), 1 << 16):
                return None
            first_program = np.full(size, cls._NOBODY, np.int32)
            first_step = np.zeros(size, np.int32)
            sizes = {r.values.dtype.itemsize for r in members}
            wheres = [record.where(low, unit) for record in members]
            if any(where is None for where in wheres):
                return None
            for record, where in zip(members, wheres):
                programs = record.programs(first=True)
                current = first_program[where]
                if record.apply is None and (current != cls._NOBODY).any():
                    marks.stores_overlap = True
                    marks.mixed = marks.mixed or len(sizes) > 1
                earlier = programs < current  # records come in step order: an equal program was earlier
                first_step[where] = np.where(earlier, record.step, first_step[where])
                first_program[where] = np.where(earlier, programs, current)
            marks.clusters.append((low, high, unit, first_program, first_step, members, wheres))
        return marks

    def read_after_write(self, load):
        """Whether ``load`` reads an element that a program before its own, or its own earlier, wrote."""
        span, programs = load.span(), None
        for low, high, unit, first_program, first_step, _, _ in self.clusters:
            if span is None or _apart(span, (low, high)):
                continue
            if programs is None:  # computed once, for the first cluster the load reaches
                programs = load.programs(first=False)
            run = load.run(low, unit)
            if run is not None:  # one element after another: the part inside the cluster, sliced
                start, stop = max(run.start, 0), min(run.stop, first_program.size)
                offsets, loaders = slice(start, stop), programs[start - run.start:stop - run.start]
            else:
                addresses = load.addresses
                offsets = addresses - addresses.dtype.type(low)
                inside = (addresses >= low) & (addresses <= high) & (offsets % unit == 0)
                offsets, loaders = offsets[inside] // unit, programs[inside]
            writer = first_program[offsets]
            if ((writer < loaders) | ((writer == loaders) & (first_step[offsets] < load.step))).any():
                return True
        return False

    def commit_last_writers(self, native_store):
        """Leave each address with the value of its last writer in the loop's order (the latest
        program; of its stores, the latest), without sorting the writes: each cluster's stores are
        written whole in step order (rows one copy each), then each address whose last writer in
        step order is not its last in the loop's is written again, with the loop's last value."""
        for low, high, unit, _, _, members, all_wheres in self.clusters:
            stores, wheres = [], []
            for record, where in zip(members, all_wheres):
                if record.apply is None:
                    stores.append(record)
                    wheres.append(where)
            for record in stores:  # in step order
                _scatter(record.addresses, record.values, record.increasing(), native_store)
            if len(stores) < 2:
                continue
            size = int(high - low) // unit + 1
            last_program, last_store = np.full(size, -1, np.int64), np.full(size, -1, np.int32)
            step_last = np.full(size, -1, np.int32)
            for index, (record, where) in enumerate(zip(stores, wheres)):
                programs, current = record.programs(first=False), last_program[where]
                later = programs >= current  # an equal program: this store is its later one
                last_store[where] = np.where(later, index, last_store[where])
                last_program[where] = np.where(later, programs, current)
                step_last[where] = index
            if np.array_equal(last_store, step_last):
                continue
            for index, (record, where) in enumerate(zip(stores, wheres)):
                again = (last_store[where] == index) & (step_last[where] != index)
                if again.any():
                    _scatter(record.addresses[again], record.values[again], record.increasing(), native_store)


def _clusters(records):
    """(low, high, records) for each set of records whose spans overlap, directly or in a chain."""
    clusters = []
    for record in sorted(records, key=lambda r: r.span()[0]):
        low, high = record.span()
        if clusters and low <= clusters[-1][1]:
            clusters[-1][1] = max(clusters[-1][1], high)
            clusters[-1][2].append(record)
        else:
            clusters.append([low, high, [record]])
    for low, high, members in clusters:
        members.sort(key=lambda r: r.step)
    return clusters


def _scatter(addresses, values, rising, native_store):
    """Write ``values`` at ``addresses`` (each once): one NumPy scatter, or the native loop."""
    if not memory.scatter(addresses, values, rising):
        native_store(addresses, values)


def _in_loop_order(records):
    """The addresses and values of ``records`` (one element size) by program, then step."""
    records = [record for record in records if record.addresses.size] or records[:1]
    programs = np.concatenate([record.programs(first=False) for record in records])
    steps = np.concatenate([np.full(record.addresses.size, record.step) for record in records])
    order = np.lexsort((steps, programs))  # stable: within a record, the native loop's order
    return (np.concatenate([record.addresses for record in records])[order],
            np.concatenate([record.values for record in records])[order])


def _meet(record, other):
    """Whether two records reach one address (of two element widths: one byte)."""
    if record.width != other.width:
        return not _apart(_byte_span(record), _byte_span(other)) and _bytes_meet(record, other)
    if _apart(record.span(), other.span()):
        return False
    return bool(np.intersect1d(record.addresses, other.addresses).size)


def _byte_span(record):
    """(lowest, highest) byte the record reaches: its span runs to its last element's start only."""
    span = record.span()
    return None if span is None else (span[0], span[1] + np.uint64(record.width - 1))


def _bytes_meet(record, other):
    """Whether any element of ``record`` shares a byte with one of ``other`` (of another width)."""
    lows = np.concatenate([record.addresses.view(np.int64), other.addresses.view(np.int64)])
    widths = np.concatenate([np.full(record.addresses.size, record.width), np.full(other.addresses.size, other.width)])
    return bytes_meet_across_widths(lows, lows + widths, widths)


def _apart(span, other):
    return span is None or other is None or span[1] < other[0] or other[1] < span[0]


def _storers_and_loaders(store, load):
    """For each address both records reach: the first program that stores it, the last that loads it."""
    if store.increasing() and load.increasing():  # each address once in each: match them by search
        stored, loaded = store.addresses, load.addresses
        at = np.minimum(np.searchsorted(stored, loaded), stored.size - 1)
        hit = stored[at] == loaded
        return store.programs(first=True)[at[hit]], load.programs(first=False)[hit]
    loaded, last_loader = _per_address(load.addresses, load.programs(first=False), last=True)
    stored, first_storer = _per_address(store.addresses, store.programs(first=True), last=False)
    _, at_load, at_store = np.intersect1d(loaded, stored, assume_unique=True, return_indices=True)
    return first_storer[at_store], last_loader[at_load]


def _per_address(addresses, programs, last):
    """The distinct addresses, and for each the last (or first) program at it."""
    order = np.lexsort((programs, addresses))
    addresses, programs = addresses[order], programs[order]
    starts = np.flatnonzero(np.r_[True, addresses[1:] != addresses[:-1]])
    if not last:
        return addresses[starts], programs[starts]
    return addresses[starts], programs[np.r_[starts[1:], addresses.size] - 1]
