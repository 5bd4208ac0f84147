"""A large fp32 block's element-wise arithmetic, computed when first read, in one pass.

Compiled Triton computes a kernel's element-wise arithmetic in registers: ``silu(a) * b`` reads ``a``
and ``b`` once. The interpreter's builder makes an array per operation, a pass over memory each (0.9
ms for 2048 x 1024 fp32 on one core here), and a product that compiled Triton contracts into an fma
(``x * y + z``, ``tl.sum(x * x)``: ``gpu_arithmetic``, ``lane_order``) is computed though the GPU
never rounds it.

Here fp32 ``+``, ``-``, ``*``, ``/``, negation, the fmas they contract into, and ``tl.exp`` and
``tl.exp2`` (the ``ex2.approx`` models), on blocks of ``compiled.COMPILED_FROM`` elements or more,
make a handle (``deferred``) that holds an expression: its operands' arrays (the leaves) and the
operations. Reading its ``data`` computes the expression: with ``kwshim[fast]``, where it holds two
operations or more (or an exponential), as one compiled loop over the block (made for the
expression's form, 0.1-0.4 s once per machine: numba's disk cache keeps it), else operation by
operation in NumPy.
Each operation is the builder's own, so the bits are: NumPy's ``add``, ``subtract``, ``multiply``
and ``divide`` (IEEE's, each rounded to fp32), the fma rounded once, the GPU's negation as ``0 - x``
(``gpu_builder``). A NaN's sign and payload are not IEEE's to fix, and a compiler may rewrite an
operation on one (``-fma(x, y, z)`` as ``fma(-x, y, -z)``): a compiled result holding a NaN is
computed again in NumPy, operation by operation, as before. The exponentials are a polynomial in
the loop (``compiled_loops.ex2``), which rounds as NumPy's ``exp2`` does or gives NaN where it
cannot be sure, so that expression is NumPy's too. A product read only by fmas is never
computed: an fma reads its factors' expressions, and the lane-order sum of products its factors'
arrays (``factors``). Measured on Liger's swiglu forward (2048 x 1024, ``make speed``): 2.2 times the
NumPy floor with ``tl.exp`` ending the expression, 1.0 times with it inside.

The leaves cannot change before the read: nothing writes into a handle's data, and stores wait in the
batch's store log until every step of the batch has run. An expression grows to ``_MOST_OPERATIONS``
at most (a loop that updates a block keeps adding to it): beyond, its operands are computed first.
"""

import functools
import sys

import numpy as np

from . import approximations, compiled
from .fma import fma

__all__ = ["chainable", "deferred", "shape", "element_type", "made_as", "factors"]

_INTERPRETER = "triton.runtime.interpreter"
_FP32 = np.dtype(np.float32)
#: The most operations one expression holds: its compiled form stays small, and so does its count.
_MOST_OPERATIONS = 12


class _Expression:
    """Operations (``tree``: ``("leaf", i)``, or an operation's name and its operands' trees) on the
    arrays ``leaves``."""
    __slots__ = ("tree", "leaves", "size")

    def __init__(self, tree, leaves, size):
        self.tree, self.leaves, self.size = tree, leaves, size


def chainable(*handles):
    """Whether an operation on ``handles`` may be deferred: fp32 operands (of one type: no conversion
    to model) of a large block, none a tensor core's result (whose layout the result keeps,
    ``lane_order.keeps_layout``)."""
    if all(getattr(h, "_expression", None) is None and h.data.size < compiled.COMPILED_FROM for h in handles):
        return False  # a small block, the most common question, asked first (a large one is rarely broadcast)
    return not any(element_type(h) != _FP32 or hasattr(h, "kwshim_tensor_cores") for h in handles)


def deferred(operation, *operands, scalar, product=False):
    """The handle of ``operation`` (``"add"``, ``"sub"``, ``"mul"``, ``"div"``, ``"neg0"``: ``0 -
    x``, ``"fma"``, ``"exp"``, ``"exp2"``: the ``ex2.approx`` models) of ``operands``, each a handle
    or ``("neg", handle)`` (exactly negated), computed when its data is first read; ``product``: a
    product an add may contract with (``factors``)."""
    expressions = [_negated(_expression(o[1])) if isinstance(o, tuple) else _expression(o) for o in operands]
    leaves, trees = [], []
    for expression in expressions:
        index = {}
        for number, leaf in enumerate(expression.leaves):
            found = next((i for i, kept in enumerate(leaves) if kept is leaf), None)
            if found is None:
                found = len(leaves)
                leaves.append(leaf)
            index[number] = found
        trees.append(_renumbered(expression.tree, index))
    expression = _Expression((operation, *trees), tuple(leaves), 1 + sum(e.size for e in expressions))
    made = _deferred_class(sys.modules[_INTERPRETER].TensorHandle)(expression, scalar)
    if product:
        made.kwshim_factor_handles = operands
    return made


def factors(handle):
    """The factors of a product ``deferred`` made (or ``create_fmul``'s ``kwshim_factors``), as
    handles: what an fma contracting with it reads; None for anything else."""
    return getattr(handle, "kwshim_factor_handles", None)


def shape(handle):
    """``handle.data.shape``, not computing a deferred handle."""
    expression = getattr(handle, "_expression", None)
    return handle.kwshim_shape if expression is not None else handle.data.shape


def element_type(handle):
    """``handle.data.dtype``, not computing a deferred handle (None where data is not an array)."""
    if getattr(handle, "_expression", None) is not None:
        return _FP32
    return getattr(handle.data, "dtype", None)


def made_as(handle):
    """The class that makes a handle like ``handle`` from data (a deferred handle's: the release's
    ``TensorHandle``)."""
    return handle.__class__.__base__ if hasattr(handle, "kwshim_shape") else handle.__class__


def _expression(handle):
    expression = getattr(handle, "_expression", None)
    if expression is not None and expression.size < _MOST_OPERATIONS:
        return expression
    return _Expression(("leaf", 0), (handle.data,), 0)  # an array, or an expression too large: computed


def _negated(expression):
    return _Expression(("neg", expression.tree), expression.leaves, expression.size + 1)


def _renumbered(tree, index):
    if tree[0] == "leaf":
        return ("leaf", index[tree[1]])
    return (tree[0],) + tuple(_renumbered(operand, index) for operand in tree[1:])


def _evaluate(expression):
    """The expression's fp32 array: one compiled pass where numba is, else NumPy's operations."""
    with np.errstate(all="ignore"):  # inf and NaN as IEEE's, quietly, as the builder's own
        if compiled.engine() == "numba" and (expression.size > 1 or expression.tree[0] in _COMPILED_ALONE):
            result, nan = _compiled_pass(expression)
            if result is not None and not nan:
                return result
            # a NaN's sign and payload: LLVM may rewrite an operation on a NaN (-fma(x, y, z) as
            # fma(-x, y, -z)), and the loop's bits are NumPy's, operation by operation; an ex2 not
            # sure of its rounding is a NaN too (``compiled_loops.ex2``)
        return _in_numpy(expression.tree, expression.leaves)


def _compiled_pass(expression):
    """``(result, whether it holds a NaN)``: the expression computed by a compiled loop over its
    block as rows (its last axis) that reads each leaf as it varies: element by element, one value a
    row, one a column, or one in all (each C-contiguous, so that LLVM computes many at once)."""
    shape = np.broadcast_shapes(*(leaf.shape for leaf in expression.leaves))
    if len(shape) == 0 or 0 in shape:
        return None, False
    rows, columns = int(np.prod(shape[:-1])), shape[-1]
    kinds, operands = [], []
    for leaf in expression.leaves:
        leaf = np.broadcast_to(leaf, shape)
        across_rows = all(stride == 0 or size == 1 for stride, size in zip(leaf.strides[:-1], shape[:-1]))
        along_row = leaf.strides[-1] == 0 or columns == 1
        if across_rows and along_row:
            kinds.append("scalar")
            operands.append(np.float32(leaf[(0,) * len(shape)]))
        elif along_row:
            kinds.append("rows")
            operands.append(np.ascontiguousarray(leaf[..., 0]).reshape(-1))
        elif across_rows:
            kinds.append("columns")
            operands.append(np.ascontiguousarray(leaf[(0,) * (len(shape) - 1)]))
        else:
            kinds.append("full")
            operands.append(np.ascontiguousarray(leaf).reshape(rows, columns))
    out = np.empty((rows, columns), np.float32)
    operands = [compiled.read_only(operand) if isinstance(operand, np.ndarray) else operand for operand in operands]
    nan = _compiled(expression.tree, tuple(kinds))(out, *operands)
    return out.reshape(shape), nan


_ZERO = np.float32(0)


def _in_numpy(tree, leaves):
    operation = tree[0]
    if operation == "leaf":
        return leaves[tree[1]]
    operands = [_in_numpy(operand, leaves) for operand in tree[1:]]
    if operation == "fma":
        return fma(*operands).astype(np.float32, copy=False)
    if operation == "neg0":
        return np.subtract(_ZERO, operands[0])
    if operation in _COMPILED_ALONE:  # the ex2.approx models, whose module builds on this one
        return getattr(approximations, _COMPILED_ALONE[operation])(*operands)
    return _NUMPY[operation](*operands)


_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "neg": np.negative}
#: Operations a compiled loop computes faster than NumPy even alone, and their NumPy code's name in
#: ``approximations``: ``tl.exp`` and ``tl.exp2`` on 2M elements in 2.0-2.2 ms, against 2.7-3.5 ms.
_COMPILED_ALONE = {"exp": "exp_approximation", "exp2": "exp2_approximation"}
_SOURCE = {"add": "({} + {})", "sub": "({} - {})", "mul": "({} * {})", "div": "({} / {})", "neg": "(-{})",
           "neg0": "(zero - {})", "fma": "fused({}, {}, {})", "exp": "ex2_of_exp({})", "exp2": "ex2_flushed({})"}


def _source(tree):
    if tree[0] == "leaf":
        return f"@{tree[1]}@"
    return _SOURCE[tree[0]].format(*(_source(operand) for operand in tree[1:]))


@functools.lru_cache(maxsize=512)
def _compiled(tree, kinds):
    """A compiled loop computing ``tree`` (``compiled_loops.element_wise``), made once per form and
    process (compiled once per machine): each operation on fp32 values, rounded to fp32, as NumPy's."""
    from . import compiled_loops

    return compiled_loops.element_wise(_source(tree), kinds)


@functools.lru_cache(maxsize=None)
def _deferred_class(handle_class):
    """A subclass of the release's ``TensorHandle`` (a dataclass on 3.4+, a plain class before; both
    hold ``data``, ``dtype`` and ``attr``) whose ``data`` is its expression, computed when first read."""

    class Deferred(handle_class):
        def __init__(self, expression, scalar):  # not the base's: it reads data
            self._expression, self._data = expression, None
            self.dtype, self.attr = scalar, {}
            self.kwshim_shape = np.broadcast_shapes(*(leaf.shape for leaf in expression.leaves))

        @property
        def data(self):
            if self._data is None:
                self._data, self._expression = _evaluate(self._expression), None
            return self._data

        @data.setter
        def data(self, value):
            self._data, self._expression = value, None

        @property
        def kwshim_factors(self):  # a product's factors as arrays (``lane_order.sum_of_products``)
            handles = getattr(self, "kwshim_factor_handles", None)
            if handles is None:
                raise AttributeError("kwshim_factors")
            return tuple(h.data for h in handles)

    Deferred.__qualname__ = Deferred.__name__ = "Deferred"
    return Deferred
