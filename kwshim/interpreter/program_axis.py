"""Many programs of one launch run as one: every block value carries a leading program axis.

A batched run computes the programs ``first .. first + count - 1`` of a launch in one call of the
kernel's Python body. Every ``TensorHandle`` holds ``(programs, *block shape)`` data, where
``programs`` is ``count`` for a value that differs between programs (what ``tl.program_id`` feeds)
and 1 for one that does not (a constant, ``tl.arange``): NumPy broadcasting pairs the two, so the
element-wise builder methods need nothing. What sees shapes is shifted by one axis here:
``tl.program_id``, ranges, splats, broadcasts, reshapes, transposes, concatenation, joins, loads,
stores, reductions and scans (the reduce and scan classes), and ``tensor.T``.

The sequential loop is the reference, bit for bit, so a batch never guesses:

- stores are deferred (``StoreLog``) and written in program order when the batch ends; a load of an
  address that an earlier program, or the same program earlier, stores to, or two store statements
  writing one address, makes the batch fall back: the programs run one by one from the state
  before the batch, whose writes were never made;
- what a batch cannot run as the loop would raises ``Fallback`` with the reason: a Python ``if``,
  ``while`` or ``range`` on a value that differs between programs, atomics, ``device_print``, a
  failing ``device_assert``, inline assembly, block pointers and tensor descriptors, a reduction
  or scan with a combine function of the kernel's own, and every builder method not named here.
"""

import functools
import sys

import numpy as np

__all__ = ["Fallback", "StoreLog", "batched_builder_class", "reduce_scan_entries", "tensor_entries"]

_INTERPRETER = "triton.runtime.interpreter"


class Fallback(Exception):
    """The batch cannot give the sequential loop's bits; ``reason`` says why, for the kernel to remember."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class StoreLog:
    """The stores and loads of one batch: stores are written at ``commit``, in program order; loads
    are checked against them (``conflict``)."""

    def __init__(self):
        self.stores = []  # (builder method, handles, addresses, programs, step)
        self.loads = []  # (addresses, programs, step)
        self.step = 0

    def load(self, addresses, programs):
        self.step += 1
        self.loads.append((addresses, programs, self.step))

    def store(self, write, handles, addresses, programs):
        self.step += 1
        self.stores.append((write, handles, addresses, programs, self.step))

    def conflict(self):
        """Why the deferred stores would differ from the loop's, or None: two store statements
        writing one address, or a load of an address that an earlier program (or the same program,
        earlier) stores to. Addresses are the elements' first bytes; two records whose address
        ranges are apart are not compared further."""
        stores = [(addresses, programs, step, _span(addresses)) for _, _, addresses, programs, step in self.stores]
        for i, (addresses, _, _, span) in enumerate(stores):
            for other, _, _, other_span in stores[:i]:
                if _overlap(span, other_span) and np.intersect1d(addresses, other).size:
                    return "two store statements write one address"
        for addresses, programs, step in self.loads:
            span = _span(addresses)
            for s_addresses, s_programs, s_step, s_span in stores:
                if not _overlap(span, s_span):
                    continue
                loaded, last_loader = _per_address(addresses, programs, np.max)
                stored, first_storer = _per_address(s_addresses, s_programs, np.min)
                _, at_load, at_store = np.intersect1d(loaded, stored, assume_unique=True, return_indices=True)
                first, last = first_storer[at_store], last_loader[at_load]
                if ((first < last) | ((first == last) & (s_step < step))).any():
                    return "a program reads what another program (or itself, earlier) wrote in the launch"
        return None

    def commit(self):
        """Write the deferred stores: statement by statement, each in program order (the last program wins)."""
        for write, handles, _, _, _ in self.stores:
            write(*handles)


def _span(addresses):
    return (addresses.min(), addresses.max()) if addresses.size else None


def _overlap(span, other):
    return span is not None and other is not None and span[0] <= other[1] and other[0] <= span[1]


def _per_address(addresses, programs, extreme):
    """The distinct addresses, and for each the ``extreme`` (np.min, np.max) of the programs at it."""
    order = np.lexsort((programs, addresses))
    addresses, programs = addresses[order], programs[order]
    starts = np.flatnonzero(np.r_[True, addresses[1:] != addresses[:-1]])
    if extreme is np.min:
        return addresses[starts], programs[starts]
    return addresses[starts], programs[np.r_[starts[1:], addresses.size] - 1]


def _programs_of(data):
    """The program (counted in the batch) of every element of ``data``, whose first axis is the programs'."""
    return np.broadcast_to(np.arange(data.shape[0]).reshape((-1,) + (1,) * (data.ndim - 1)), data.shape)


def _common(*arrays):
    """The arrays broadcast to one shape, contiguous (what the native loads and stores take)."""
    return [np.ascontiguousarray(a) for a in np.broadcast_arrays(*arrays)]


@functools.lru_cache(maxsize=None)
def batched_builder_class(base):
    """A subclass of the builder class ``base`` computing many programs at once (the batch is the
    builder object's ``kwshim_batch``: program ids, count and ``StoreLog``)."""
    interpreter = sys.modules[_INTERPRETER]
    TensorHandle = interpreter.TensorHandle

    def refuse(reason):
        def method(self, *args, **kwargs):
            raise Fallback(reason)
        return method

    def handle(data, like):
        return TensorHandle(data, like.dtype.scalar)

    class BatchedBuilder(base):
        """``base``, every value with a leading program axis."""

        def create_get_program_id(self, axis):
            return TensorHandle(self.kwshim_batch.program_ids[axis], interpreter.tl.int32)

        def create_make_range(self, *args):
            made = base.create_make_range(self, *args)
            return handle(made.data[None], made)

        def create_splat(self, *args):
            arg = next(a for a in args if isinstance(a, TensorHandle))
            shape = next(a for a in args if not isinstance(a, TensorHandle))
            shape = tuple(getattr(shape, "shape", shape))
            rows = arg.data.reshape(arg.data.shape[0], -1)[:, 0]
            data = np.empty((rows.shape[0],) + shape, dtype=interpreter._get_np_dtype(arg.dtype))
            data[...] = rows.reshape((-1,) + (1,) * len(shape))
            return handle(data, arg)

        def create_unsplat(self, arg):
            return handle(np.ascontiguousarray(arg.data.reshape(arg.data.shape[0], -1)[:, 0]), arg)

        def create_expand_dims(self, arg, axis):
            return handle(np.expand_dims(arg.data, axis + 1 if axis >= 0 else axis), arg)

        def create_broadcast(self, arg, shape):
            data = arg.data
            if data.ndim == 1:  # a scalar's programs
                data = data.reshape((-1,) + (1,) * len(shape))
            return handle(np.broadcast_to(data, (data.shape[0],) + tuple(shape)), arg)

        def create_reshape(self, arg, shape, *rest):
            return handle(arg.data.reshape((arg.data.shape[0],) + tuple(shape)), arg)

        def create_trans(self, arg, perm=None):
            if perm is None:
                raise Fallback("a transpose without its permutation")
            return handle(np.transpose(arg.data, (0,) + tuple(p + 1 for p in perm)), arg)

        def create_cat(self, lhs, rhs):
            return handle(np.concatenate(_paired(lhs.data, rhs.data), axis=1), lhs)

        def create_join(self, lhs, rhs):
            lhs_data, rhs_data = _paired(lhs.data, rhs.data)
            return handle(np.stack([lhs_data, rhs_data], axis=-1), lhs)

        def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
            batch = self.kwshim_batch
            if other is None:
                ptr_data, mask_data = _common(ptrs.data, mask.data)
            else:
                ptr_data, mask_data, other_data = _common(ptrs.data, mask.data, other.data)
                other = TensorHandle(other_data, other.dtype.scalar)
            batch.log.load(ptr_data[mask_data], _programs_of(ptr_data)[mask_data])
            return base.create_masked_load(self, TensorHandle(ptr_data, ptrs.dtype.scalar),
                                           TensorHandle(mask_data, mask.dtype.scalar), other, *args, **kwargs)

        def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
            batch = self.kwshim_batch
            ptr_data, value_data, mask_data = _common(ptrs.data, value.data, mask.data)
            handles = (self, TensorHandle(ptr_data, ptrs.dtype.scalar), TensorHandle(value_data, value.dtype.scalar),
                       TensorHandle(mask_data, mask.dtype.scalar), *args)
            batch.log.store(functools.partial(base.create_masked_store, **kwargs), handles, ptr_data[mask_data],
                            _programs_of(ptr_data)[mask_data])

        def create_assert(self, condition, *args, **kwargs):
            if not np.all(condition.data):
                raise Fallback("a device_assert fails")

    for name, reason in (("create_atomic_rmw", "an atomic"), ("create_atomic_cas", "an atomic"),
                         ("create_atomic_load", "an atomic"), ("create_atomic_store", "an atomic"),
                         ("create_atomic_poll", "an atomic"), ("create_print", "device_print"),
                         ("create_inline_asm", "inline assembly"), ("create_histogram", "tl.histogram"),
                         ("create_gather", "tl.gather"), ("create_dot_scaled", "tl.dot_scaled"),
                         ("create_make_block_ptr", "a block pointer"), ("create_advance", "a block pointer"),
                         ("create_tensor_pointer_load", "a block pointer"),
                         ("create_tensor_pointer_store", "a block pointer"),
                         ("create_make_tensor_descriptor", "a tensor descriptor"),
                         ("create_descriptor_load", "a tensor descriptor"),
                         ("create_descriptor_store", "a tensor descriptor"),
                         ("create_descriptor_gather", "a tensor descriptor"),
                         ("create_descriptor_scatter", "a tensor descriptor")):
        if hasattr(base, name):
            setattr(BatchedBuilder, name, refuse(reason))
    return BatchedBuilder


def _paired(lhs, rhs):
    """Two blocks with their program axes made equal (1 and n become n)."""
    programs = max(lhs.shape[0], rhs.shape[0])
    return (np.broadcast_to(lhs, (programs,) + lhs.shape[1:]), np.broadcast_to(rhs, (programs,) + rhs.shape[1:]))


def _block_result(data, dtype):
    """A ``tl.tensor`` of ``data`` (programs first): a scalar where nothing follows the program axis."""
    import triton.language as tl

    interpreter = sys.modules[_INTERPRETER]
    data = data.astype(interpreter._get_np_dtype(dtype), copy=False)
    block_type = tl.block_type(dtype, list(data.shape[1:])) if data.ndim > 1 else dtype
    return tl.core.tensor(interpreter.TensorHandle(data, dtype.scalar), block_type)


def _reduction_axes(data, axis):
    """``data`` and the NumPy axis a Triton ``axis`` (None: all) is, past the program axis."""
    if axis is None:
        return data.reshape(data.shape[0], -1), 1
    return data, axis + 1


def _reduce_class(base):
    """``base`` (the interpreter's reduce class, or kwshim's refining one) with a program axis:
    sums, maxima, minima and their indices; a combine function of the kernel's own falls back."""
    import triton.language as tl

    standard = tl.standard
    arg_max = tuple(getattr(standard, n) for n in ("_argmax_combine_tie_break_left", "_argmax_combine_tie_break_fast")
                    if hasattr(standard, n))
    arg_min = tuple(getattr(standard, n) for n in ("_argmin_combine_tie_break_left", "_argmin_combine_tie_break_fast")
                    if hasattr(standard, n))

    def apply_impl(self, input):
        value = input[0]
        data, axis = _reduction_axes(value.handle.data, self.axis)
        keep = self.keep_dims

        def shaped(result):
            if keep and self.axis is None:
                return result.reshape((result.shape[0],) + (1,) * len(value.type.shape))
            return result

        combine = self.combine_fn
        if combine in arg_max or combine in arg_min:
            values, indices = (np.nanmax, np.nanargmax) if combine in arg_max else (np.nanmin, np.nanargmin)
            return (_block_result(shaped(values(data, axis=axis, keepdims=keep)), value.dtype),
                    _block_result(shaped(indices(data, axis=axis, keepdims=keep)), tl.int32))
        if combine is standard._elementwise_max:
            return _block_result(shaped(np.nanmax(data, axis=axis, keepdims=keep)), value.dtype)
        if combine is standard._elementwise_min:
            return _block_result(shaped(np.nanmin(data, axis=axis, keepdims=keep)), value.dtype)
        if combine is standard._sum_combine:
            return _block_result(shaped(np.sum(data, axis=axis, keepdims=keep)), value.dtype)
        raise Fallback("a reduction with a combine function of the kernel's own")

    return type(base.__name__, (base,), {"apply_impl": apply_impl, "__module__": __name__})


def _scan_class(base):
    """``base`` (the interpreter's scan class) with a program axis: sums and products."""
    import triton.language as tl

    def apply_impl(self, input):
        value = input[0]
        data, axis = value.handle.data, self.axis + 1
        if self.combine_fn == tl.standard._sum_combine:
            scan = np.cumsum
        elif getattr(tl.standard, "_prod_combine", None) is not None and self.combine_fn == tl.standard._prod_combine:
            scan = np.cumprod
        else:
            raise Fallback("a scan with a combine function of the kernel's own")
        if self.reverse:
            data = np.ascontiguousarray(np.flip(data, axis=axis))
        result = scan(data, axis=axis)
        if self.reverse:
            result = np.ascontiguousarray(np.flip(result, axis=axis))
        return [_block_result(result, value.dtype)]

    return type(base.__name__, (base,), {"apply_impl": apply_impl, "__module__": __name__})


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


def _per_program(data):
    """The one value all programs share of a scalar's ``data``, or ``Fallback``."""
    if data.size == 1:
        return data.reshape(-1)[0]
    if data.ndim == 1 and (data == data[0]).all():
        return data[0]
    raise Fallback("Python control flow (if, while, range) on a value that differs between programs")


def tensor_entries():
    """``(owner, name, value)`` for ``tl.tensor``: ``bool()``, ``index()`` and ``.T`` with a program axis."""
    import triton.language as tl

    tensor = tl.core.tensor

    def as_bool(self):
        data = self.handle.data
        if data.ndim > 1:  # a block is true in the interpreter (one element: its value)
            per_row = data.reshape(data.shape[0], -1)
            if per_row.shape[1] != 1:
                return True
            data = per_row[:, 0]
        return bool(_per_program(data))

    def as_index(self):
        return int(_per_program(self.handle.data))

    def transposed(self):
        interpreter = sys.modules[_INTERPRETER]
        data = np.swapaxes(self.handle.data, -1, -2)
        shape = list(self.type.shape)
        shape[-1], shape[-2] = shape[-2], shape[-1]
        return tl.core.tensor(interpreter.TensorHandle(data, self.handle.dtype), tl.core.block_type(self.dtype, shape))

    return ((tensor, "__bool__", as_bool), (tensor, "__index__", as_index), (tensor, "T", property(transposed)))
