"""A Python ``range`` whose bounds differ between the programs of a batch (``program_axis``).

Triton's loop gives each program a ``range`` of Python ints: ``for row in range(row_start, row_end)``
with ``row_start = pid * rows_per_program`` is a different range in every program. A batch runs
such a loop once for all its programs, in lockstep, where every program makes the same number of
trips; its index is then a per-program ``LoopIndex``. Where the trip counts differ, ``Diverged``
splits the batch into runs of programs that agree (``grid``), as for any other ``if`` or ``while``.
``range_entries`` puts it in place for a batch: as the kernel's ``range`` and as ``tl.range``.

A ``LoopIndex`` is an int32 value, as a Python int in [-2**31, 2**31) becomes when it meets a
tensor. Where the loop's index is a Python int, arithmetic on it with ints is Python's; from 3.2 an
assignment makes it an int32 tensor, whose arithmetic is Triton's. The two agree while every operand
and result is in int32 and floor and truncating division agree: a ``LoopIndex`` computes there, and
falls back anywhere else (or on floats), so it needs to know neither.
"""

import builtins
import functools
import operator
import sys

import numpy as np

from . import loop_replay, replay
from .program_axis import Diverged, Fallback

__all__ = ["program_range", "range_entries"]

_INTERPRETER = "triton.runtime.interpreter"
_BUILTIN_RANGE = builtins.range
_INT32 = (-2 ** 31, 2 ** 31)


def program_range(*args):
    """``range(*args)``: Python's where every program has the same bounds, else the programs'
    indices together (a generator of ``LoopIndex``), or ``Diverged`` on the trip counts."""
    if len(args) > 3:
        return _BUILTIN_RANGE(*args)  # Python's error
    if _bounds_agree(args):
        return loop_replay.iterate(_BUILTIN_RANGE(*args))
    trips = _lockstep(args)[2]
    _lockstep_trips(args, trips)
    return _each_index(args, trips)


def _bounds_agree(args):
    return all(v is None or (v == v[0]).all() for v in (_program_values(arg) for arg in args))


def _lockstep(args):
    """(start, step, trips) of a range whose bounds differ between programs: start per program,
    step and trips shared (``Diverged`` where they are not, ``Fallback`` where an index leaves int32)."""
    values = [_program_values(arg) for arg in args]
    bounds = [v if v is not None else np.array([operator.index(_unwrap(arg))], np.int64)
              for v, arg in zip(values, args)]
    if len(bounds) == 1:
        bounds.insert(0, np.zeros(1, np.int64))
    start, stop, step = (bounds + [np.ones(1, np.int64)])[:3]
    if not (step == step[0]).all():
        raise Diverged(step)
    step = int(step[0])
    if step == 0:
        raise Fallback("range() with a step of 0")  # the loop raises Python's error
    trips = np.maximum(0, (stop - start + step - (1 if step > 0 else -1)) // step)
    if not (trips == trips[0]).all():
        raise Diverged(np.broadcast_to(trips, np.broadcast_shapes(trips.shape, start.shape, stop.shape)))
    trips = int(trips[0])
    ends = (start, start + (trips - 1) * step)
    if trips and (min(e.min() for e in ends) < _INT32[0] or max(e.max() for e in ends) >= _INT32[1]):
        raise Fallback("a loop index outside int32")  # the loop's int is another type there
    return start, step, trips


@replay.recorded
def _lockstep_trips(args, trips):
    """The lockstep range's trip count, as a step of a trace: a replay whose bounds agree between
    programs (the body would run Python's ``range``) or make another count of trips misses."""
    if _bounds_agree(args) or _lockstep(args)[2] != trips:
        raise replay.Miss()


def _each_index(args, trips):
    for trip in _BUILTIN_RANGE(trips):
        yield _lockstep_index(args, trip)


@replay.recorded
def _lockstep_index(args, trip):
    """The programs' index at the ``trip``-th trip of a lockstep range (a step of a trace)."""
    start, step, _ = _lockstep(args)
    return _loop_index_class().of(start + trip * step)


def tl_range(arg1, arg2=None, step=None, **kwargs):
    """``tl.range`` in a batch: the interpreter's (its pipelining hints are ignored), on ``program_range``."""
    start, end = (0, arg1) if arg2 is None else (arg1, arg2)
    return program_range(start, end, 1 if step is None else step)


def range_entries(fn):
    """``(owner, name, value)`` that put ``program_range`` in place for a batch of ``fn``: as ``range``
    in its globals (where they hold none of their own), and as ``tl.range``, again each time the
    interpreter patches ``triton.language`` (for every jitted function the kernel calls)."""
    import triton.language as tl

    namespace = vars(sys.modules[_INTERPRETER])
    entries = [(tl, "range", tl_range), (tl.core, "range", tl_range)]
    kernel_globals = getattr(fn, "__globals__", None)
    if isinstance(kernel_globals, dict) and "range" not in kernel_globals:
        entries.append((kernel_globals, "range", program_range))
    original = namespace.get("_patch_lang_core")
    if original is not None:
        def patch_lang_core(lang, *args, **kwargs):
            result = original(lang, *args, **kwargs)
            lang.range = tl_range  # the batch's Patch restores the interpreter's afterwards
            return result

        entries.append((namespace, "_patch_lang_core", patch_lang_core))
    return tuple(entries)


def _unwrap(value):
    import triton.language as tl

    return value.value if isinstance(value, tl.constexpr) else value


def _program_values(arg):
    """A scalar tensor's values (int64, one per program, or one for all), or None for a non-tensor."""
    import triton.language as tl

    if not isinstance(arg, tl.core.tensor):
        return None
    data = arg.handle.data
    rows = data.reshape(data.shape[0], -1) if data.ndim else data.reshape(1, 1)
    if rows.shape[1] != 1 or not np.issubdtype(rows.dtype, np.integer):
        raise Fallback("range() over a block or a float")
    return rows[:, 0].astype(np.int64)


def _python_int(value):
    """``value`` as the int a Python int meets in the loop (bool and constexpr included), or None."""
    value = _unwrap(value)
    return int(value) if isinstance(value, int) else None


def _checked(result):
    if result.min() < _INT32[0] or result.max() >= _INT32[1]:
        raise Fallback("a loop index's arithmetic leaves int32")
    return _loop_index_class().of(result)


def _int_operation(function, reverse=False):
    """A binary operator of ``LoopIndex``: with an int, exact where Python and Triton agree; with a
    tensor, Triton's, in the written order."""

    def method(self, other):
        import triton.language as tl

        number = _python_int(other)
        if number is None:
            if isinstance(_unwrap(other), tl.core.tensor):
                tensor_method = getattr(tl.core.tensor, function.__name__)
                return tensor_method(_unwrap(other), self) if reverse else tensor_method(self, _unwrap(other))
            raise Fallback("a loop index in arithmetic with a float")
        if not _INT32[0] <= number < _INT32[1]:
            raise Fallback("a loop index in arithmetic with an int outside int32")
        return _int_arithmetic(self, number, function.__name__, reverse)

    return method


@replay.recorded
def _int_arithmetic(index, number, name, reverse):
    """``index`` (a ``LoopIndex``) and the int ``number`` under the operator ``name``, as Python's ints
    would give it (a step of a trace)."""
    function = _BINARIES[name]
    mine = index.handle.data.astype(np.int64)
    lhs, rhs = (np.int64(number), mine) if reverse else (mine, np.int64(number))
    if function.agree is not None and not function.agree(lhs, rhs):
        raise Fallback("a loop index in arithmetic where Python and Triton differ")
    return _checked(function.numpy(lhs, rhs))


def _comparison(function):
    def method(self, other):
        import triton.language as tl

        number = _python_int(other)
        if number is None:
            return getattr(tl.core.tensor, function)(self, _unwrap(other))
        return _int_comparison(self, number, function)

    return method


@replay.recorded
def _int_comparison(index, number, name):
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]
    result = getattr(operator, name)(index.handle.data.astype(np.int64), number)
    return tl.core.tensor(interpreter.TensorHandle(result, tl.int1), tl.int1)


@replay.recorded
def _unary(index, name):
    """``-``, ``abs`` or ``~`` of a ``LoopIndex`` (a step of a trace)."""
    return _checked(_UNARIES[name](index.handle.data.astype(np.int64)))


_UNARIES = {"neg": np.negative, "abs": np.abs, "invert": np.invert}


class _Binary:
    def __init__(self, name, numpy, agree):
        self.__name__, self.numpy, self.agree = name, numpy, agree


def _floor_is_truncation(lhs, rhs):
    """Python's ``//`` and ``%`` floor, Triton's truncate: they agree where the remainder is 0 or has
    the dividend's sign (and nothing is divided by 0, which the loop raises on)."""
    return bool(np.all(rhs != 0)) and bool(np.all(np.fmod(lhs, rhs) == np.mod(lhs, rhs)))


def _short_shift(lhs, rhs):
    return bool(np.all((rhs >= 0) & (rhs < 32)))


_BINARY = (("add", np.add, None), ("sub", np.subtract, None), ("mul", np.multiply, None),
           ("floordiv", np.floor_divide, _floor_is_truncation), ("mod", np.mod, _floor_is_truncation),
           ("and", np.bitwise_and, None), ("or", np.bitwise_or, None), ("xor", np.bitwise_xor, None),
           ("lshift", np.left_shift, _short_shift), ("rshift", np.right_shift, _short_shift))
_BINARIES = {f"__{name}__": _Binary(f"__{name}__", function, agree) for name, function, agree in _BINARY}


@functools.lru_cache(maxsize=None)
def _loop_index_class():
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]

    class LoopIndex(tl.core.tensor):
        """A ``for`` loop's index in a batch: one int32 per program (see the module)."""

        @classmethod
        def of(cls, values):
            return cls(interpreter.TensorHandle(np.asarray(values).astype(np.int32), tl.int32), tl.int32)

        def __neg__(self):
            return _unary(self, "neg")

        def __pos__(self):
            return self

        def __abs__(self):
            return _unary(self, "abs")

        def __invert__(self):
            return _unary(self, "invert")

        def __truediv__(self, other):
            raise Fallback("a loop index in true division or a power")

        __rtruediv__ = __pow__ = __rpow__ = __truediv__

        __hash__ = tl.core.tensor.__hash__

    for name, _, _ in _BINARY:
        binary = _BINARIES[f"__{name}__"]
        setattr(LoopIndex, f"__{name}__", _int_operation(binary))
        setattr(LoopIndex, f"__r{name}__", _int_operation(binary, reverse=True))
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(LoopIndex, f"__{name}__", _comparison(f"__{name}__"))
    return LoopIndex
