"""Reductions and scans in a batch: the interpreter's reduce and scan classes one axis further in.

The interpreter computes ``tl.sum``, ``tl.max``, ``tl.argmin``, ``tl.cumsum``, ... in its
``ReduceOps`` and ``ScanOps`` classes, with NumPy on a whole axis. In a batch every value carries a
leading program axis (``program_axis``), so each axis moves one further in, and ``axis=None`` (a
program's whole block) becomes every axis but the first. A combine function of the kernel's own
runs element by element in the interpreter: the batch falls back there.
"""

import functools
import sys

import numpy as np

from ..arithmetic import deferred_arithmetic, gpu_arithmetic
from .program_axis import Fallback

__all__ = ["reduce_scan_entries"]

_INTERPRETER = "triton.runtime.interpreter"


def _block_result(data, dtype):
    """A ``tl.tensor`` of ``data`` (programs first): a scalar where nothing follows the program axis."""
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]
    data = np.asarray(data).astype(interpreter._get_np_dtype(dtype), copy=False)
    block_type = _block_type(dtype, data.shape[1:]) if data.ndim > 1 else dtype
    return tl.core.tensor(interpreter.TensorHandle(data, dtype.scalar), block_type)


@functools.lru_cache(maxsize=256)
def _block_type(dtype, shape):
    """``tl.block_type(dtype, shape)``, made once per type and shape (each costs 3-6 µs, a small
    launch's reduction a tenth of its time); the front end only reads a type."""
    import triton.language as tl

    return tl.block_type(dtype, list(shape))


#: The combine functions the interpreter's reduce and scan classes compute with NumPy on a whole
#: axis (any other runs element by element: the batch falls back).
_NATIVE_REDUCTIONS = ("_argmin_combine_tie_break_left", "_argmin_combine_tie_break_fast",
                      "_argmax_combine_tie_break_left", "_argmax_combine_tie_break_fast",
                      "_elementwise_max", "_elementwise_min", "_sum_combine")
_NATIVE_SCANS = ("_sum_combine", "_prod_combine")


def _with_program_axis(base, native, kind):
    """``base`` (the interpreter's reduce or scan class, or kwshim's refining one) computing its own
    NumPy reductions one axis further in (``axis=None``: each program's whole block), its results
    typed without the program axis."""
    import triton.language as tl

    combines = tuple(getattr(tl.standard, name) for name in native if hasattr(tl.standard, name))

    def apply_impl(self, input):
        if not any(self.combine_fn is combine or self.combine_fn == combine for combine in combines):
            raise Fallback(f"a {kind} with a combine function of the kernel's own")
        axis = self.axis
        if axis is None:
            input = tuple(tl.core.tensor(_rows_of(t.handle), t.type) for t in input)
        self.axis = 1 if axis is None else axis + 1
        self.kwshim_program_axis = True  # the GPU's sums (gpu_builder) read a row per program
        try:
            result = base.apply_impl(self, input)
        finally:
            self.axis = axis
            self.kwshim_program_axis = False
        if axis is None and getattr(self, "keep_dims", False):
            ndim = len(input[0].type.shape)
            results = result if isinstance(result, (tuple, list)) else (result,)
            shaped = [_block_result(r.handle.data.reshape((-1,) + (1,) * ndim), r.dtype) for r in results]
            return shaped[0] if not isinstance(result, (tuple, list)) else type(result)(shaped)
        return result

    def to_tensor(self, ret, dtype):
        return _block_result(ret, dtype)

    return type(base.__name__, (base,), {"apply_impl": apply_impl, "to_tensor": to_tensor, "__module__": __name__})


def _rows_of(handle):
    """``handle`` (programs, ...) as (programs, its block's elements), for a reduction of the whole
    block; a product just computed keeps its factors, so that its sum contracts into fmas as the
    loop's does (``gpu_reductions``)."""
    data = handle.data
    rows = deferred_arithmetic.made_as(handle)(data.reshape(data.shape[0], -1), handle.dtype)
    factors = getattr(handle, "kwshim_factors", None) if gpu_arithmetic.fusion_enabled() else None
    if factors is not None:  # what a sum contracting it reads (``gpu_reductions``), only under fusion
        rows.kwshim_factors = tuple(np.broadcast_to(f, data.shape).reshape(rows.data.shape) for f in factors)
    return rows


def _reduce_class(base):
    return _with_program_axis(base, _NATIVE_REDUCTIONS, "reduction")


def _scan_class(base):
    return _with_program_axis(base, _NATIVE_SCANS, "scan")


def reduce_scan_entries():
    """``(owner, name, value)``: the interpreter's reduce and scan classes now in place, with a program axis."""
    namespace = vars(sys.modules[_INTERPRETER])
    entries = []
    for name, make in (("ReduceOps", _reduce_class), ("ScanOps", _scan_class)):
        if name in namespace:
            entries.append((namespace, name, _cached(make, namespace[name])))
    return tuple(entries)


@functools.lru_cache(maxsize=None)
def _cached(make, base):
    return make(base)
