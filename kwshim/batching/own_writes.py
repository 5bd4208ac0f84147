"""A batch whose programs read back what they wrote themselves: its stores written as they are made.

A batch's stores wait in its ``StoreLog`` until it ends, so a program that loads what it stored
earlier in the launch reads the memory from before the batch; the log says so (``READ_AFTER_WRITE``)
and the loop ran the launch. flash-linear-attention's recurrent backward kernels do this in every
program: a loop stores ``dk`` row by row, a barrier, a second loop loads the rows back.

Where no store of the batch meets a load or a store of another program (``programs_apart``, by the
bytes each record spans), the programs' order among themselves cannot change what any of them
reads, and a program's own order is its steps': the batch runs again (its trace replayed) with a
``WriteThroughLog``, which writes each store when it is made, in step order, so that each program
reads its own earlier writes as in the loop. Its loads copy (``rows.load``: a view of the memory
would change under a later store), and each store first keeps the bytes it overwrites. Where the
run ends otherwise (its loads went elsewhere this time, an atomic, an exception), ``undo`` puts
those bytes back, last first, and the loop runs, as before. The kernel's later launches start so.
"""

import sys

import numpy as np

from . import memory
from .records import READ_AFTER_WRITE, Rows
from .store_log import StoreLog, _scatter as scatter

__all__ = ["programs_apart", "conflict", "WriteThroughLog"]

_INTERPRETER = "triton.runtime.interpreter"


def programs_apart(log):
    """Whether no store of ``log`` shares a byte with a load or store of another program, and it
    made no atomic. Safe, not exact: the records' byte ranges (a row's, or, for a row whose elements
    are apart, each element's) are clustered where they overlap, and a cluster holding a store must
    be one program's (a record every program moved is all of theirs)."""
    if log.atomics:
        return False
    lows, highs, owners, stored = [], [], [], []
    for record, is_store in [(load, False) for load in log.loads] + [(store, True) for store in log.stores]:
        if isinstance(record, Rows) and record.pitch != record.width:  # a row's span holds others' elements
            low = record.addresses.view(np.int64)
            high, programs = low + record.width, record.programs(first=True)
        else:
            low, high, programs = record.bounds()
        if not len(low):
            continue
        lows.append(np.asarray(low, np.int64))
        highs.append(np.asarray(high, np.int64))
        owners.append(np.full(len(low), -1) if record.every else np.asarray(programs, np.int64))
        stored.append(np.full(len(low), is_store))
    if not lows:
        return True
    order = np.argsort(np.concatenate(lows), kind="stable")
    lows, highs = np.concatenate(lows)[order], np.concatenate(highs)[order]
    owners, stored = np.concatenate(owners)[order], np.concatenate(stored)[order]
    reach = np.maximum.accumulate(highs)
    starts = np.flatnonzero(np.r_[True, lows[1:] >= reach[:-1]])  # each cluster of overlapping ranges
    first, last = np.minimum.reduceat(owners, starts), np.maximum.reduceat(owners, starts)
    return not (np.logical_or.reduceat(stored, starts) & ((first != last) | (first < 0))).any()


def conflict(log):
    """Why committing ``log`` would not leave the loop's bits, or None (``StoreLog.conflict``). A log
    that wrote its stores already is undone where its programs met: it may read back its own writes
    alone."""
    if not log.write_through:
        return log.conflict()
    if programs_apart(log):
        return None
    log.undo()
    return READ_AFTER_WRITE


class WriteThroughLog(StoreLog):
    """A ``StoreLog`` that writes each store when it is made (see the module)."""

    write_through = True

    def __init__(self, programs, native_store):
        super().__init__(programs)
        self._native_store = native_store
        self._overwritten = []  # (addresses, the bytes there before, whether they rise), store by store

    def store(self, addresses, values, mask):
        super().store(addresses, values, mask)
        self._write(self.stores[-1])

    def store_rows(self, starts, rows, owners=None, pitch=None):
        super().store_rows(starts, rows, owners, pitch)
        self._write(self.stores[-1])

    def _write(self, record):
        addresses, values, rising = record.addresses, record.values, record.increasing()
        before = memory.gather(addresses, values.dtype, rising)
        if before is None:  # misaligned: the interpreter's own load
            native = sys.modules[_INTERPRETER]._interpreter
            before = native.load(addresses, np.ones(addresses.shape, bool), np.zeros(addresses.shape, values.dtype),
                                 values.dtype)
        self._overwritten.append((addresses, before, rising))
        if not (isinstance(record, Rows) and memory.write_rows(record.starts, record.rows, record.pitch)):
            scatter(addresses, values, rising, self._native_store)

    def commit(self, native_store):
        """Nothing left to write (a log with an atomic is never apart: never committed)."""

    def undo(self):
        """Put back what the stores overwrote, the last store first."""
        while self._overwritten:
            scatter(*self._overwritten.pop(), self._native_store)
