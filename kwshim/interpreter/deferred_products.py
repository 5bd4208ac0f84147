"""Products computed when first read: a block's ``x * y`` whose every use may be a fused multiply-add.

Compiled Triton contracts an add of a product the kernel just computed (``x * y + z``,
``tl.sum(x * x)``) into fmas (``gpu_arithmetic``, ``lane_order``), which read the factors, not the
rounded product. Where those are the product's only uses, the GPU never rounds it, and the CPU need
not compute it either: a whole-block multiply is a full pass over memory (0.9 ms for 2048 x 1024
fp32 on one core here), as much as any of the kernel's own passes.

``deferred`` makes the handle of such a product: its ``data`` is computed at its first read, by the
builder's own multiply (the same call, so the same bits), and kept. Its factors cannot change in
between: nothing writes into a handle's data, and stores wait in the batch's store log until every
step of the batch has run. The handle knows its shape and element type without computing
(``shape``, ``element_type``), which is all a contraction asks of it.
"""

import functools
import sys

import numpy as np

__all__ = ["deferred", "deferrable", "shape", "element_type", "made_as"]

_INTERPRETER = "triton.runtime.interpreter"

#: The fewest elements worth deferring: a smaller block's product costs less than keeping it aside.
DEFERRED_FROM = 2 ** 15

_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def deferrable(lhs, rhs):
    """Whether ``lhs * rhs`` (handles) may be deferred: fp32 or fp64 factors of one type (the
    product's type, with no conversion to model), of a large block, neither a tensor core's result
    (whose layout the product keeps, ``lane_order.keeps_layout``)."""
    left, right = lhs.data, rhs.data
    if left.dtype != right.dtype or left.dtype not in _TYPES or max(left.size, right.size) < DEFERRED_FROM:
        return False
    return not (hasattr(lhs, "kwshim_tensor_cores") or hasattr(rhs, "kwshim_tensor_cores"))


def deferred(multiply, lhs, rhs):
    """The handle of ``multiply()`` (a handle of ``lhs * rhs``), computed at the first read of its
    ``data``."""
    made = _deferred_class(sys.modules[_INTERPRETER].TensorHandle)
    return made(multiply, np.broadcast_shapes(lhs.data.shape, rhs.data.shape), lhs.data.dtype, lhs.dtype.scalar)


def shape(handle):
    """``handle.data.shape``, not computing a deferred product."""
    return getattr(handle, "kwshim_shape", None) or handle.data.shape


def element_type(handle):
    """``handle.data.dtype``, not computing a deferred product (None where data is not an array)."""
    known = getattr(handle, "kwshim_element_type", None)
    return known if known is not None else getattr(handle.data, "dtype", None)


def made_as(handle):
    """The class that makes a handle like ``handle`` from data (a deferred product's: the release's
    ``TensorHandle``)."""
    return handle.__class__.__base__ if hasattr(handle, "kwshim_element_type") else handle.__class__


@functools.lru_cache(maxsize=None)
def _deferred_class(handle_class):
    """A subclass of the release's ``TensorHandle`` (a dataclass on 3.4+, a plain class before; both
    hold ``data``, ``dtype`` and ``attr``) whose ``data`` is computed when first read."""

    class DeferredProduct(handle_class):
        def __init__(self, multiply, shape, element_type, scalar):  # not the base's: it reads data
            self._multiply, self._data = multiply, None
            self.dtype, self.attr = scalar, {}
            self.kwshim_shape, self.kwshim_element_type = tuple(shape), element_type

        @property
        def data(self):
            if self._data is None:
                self._data, self._multiply = self._multiply().data, None
            return self._data

        @data.setter
        def data(self, value):
            self._data, self._multiply = value, None

    DeferredProduct.__qualname__ = DeferredProduct.__name__ = "DeferredProduct"
    return DeferredProduct
