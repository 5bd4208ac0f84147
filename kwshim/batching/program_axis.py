"""Many programs of one launch run as one: every block value carries a leading program axis.

A batched run computes the programs ``first .. first + count - 1`` of a launch in one call of the
kernel's Python body. Every ``TensorHandle`` holds ``(programs, *block shape)`` data, where
``programs`` is ``count`` for a value that differs between programs (what ``tl.program_id`` feeds)
and 1 for one that does not (a constant, ``tl.arange``): NumPy broadcasting pairs the two, so the
element-wise builder methods need nothing. Every builder operation has its rule in
``batching_rules``; what sees shapes or memory is shifted by one axis here
(``ProgramAxisOperations``): ``tl.program_id``, ranges, splats, broadcasts, reshapes, transposes,
concatenation, joins, loads, stores, atomics (reductions and scans: ``reductions``),
and ``bool()`` and ``index()`` of a tensor (Python control flow). An operation the table does not
list falls back.

The sequential loop is the reference, bit for bit, so a batch never guesses:

- stores are deferred (``store_log``) and written in the loop's order when the batch ends; a load
  of an address that an earlier program, or the same program earlier, stores to makes the batch
  fall back: the programs run one by one from the state before the batch, whose writes were never
  made; loads of many elements are one NumPy gather (``memory``), the same bytes as the native loop;
- an atomic read-modify-write is applied at the end too, by the interpreter's own atomic in the
  loop's order (float sums round as the loop's do), where the kernel does not use the value it
  returns;
- tensor descriptors load and store through the same batched loads and stores;
- a Python ``if``, ``while`` or ``range`` on a value that differs between programs raises
  ``Diverged``: the batch runs again as runs of programs that agree (``grid``, ``program_range``);
- what a batch cannot run as the loop would raises ``Fallback`` with the reason: the operations
  ``batching_rules.FALLBACKS`` lists and those it does not classify, the value an atomic returned,
  a failing ``device_assert``, ``tensor.T`` (whose interpreter form differs by release), a
  reduction or scan with a combine function of the kernel's own.
"""

import functools
import sys

import numpy as np

from . import batching_rules, block_pointers, memory, rows

from ..arithmetic import inline_ptx
from .. import launch_state
from ..interpreter.gpu_builder import predicate
from ..launch_state import Fallback

__all__ = ["Fallback", "Diverged", "ProgramAxisOperations", "batched_builder_class", "tensor_entries", "truth",
           "index"]

#: A load of at least this many elements is one NumPy gather (``memory``), not the native loop.
_GATHER_FROM = 256

_INTERPRETER = "triton.runtime.interpreter"


class Diverged(Fallback):
    """Python control flow that differs between programs: ``values`` holds each program's value
    (one per program of the batch), so that the batch can split into runs of programs that agree."""

    def __init__(self, values):
        super().__init__("Python control flow (if, while, range) on a value that differs between programs")
        self.values = np.asarray(values).reshape(-1)

    def leading_run(self):
        """How many programs, from the batch's first, share its value."""
        differs = np.flatnonzero(self.values != self.values[0])
        return max(1, int(differs[0]) if differs.size else self.values.size)  # a NaN differs from itself

    def runs(self):
        """How many programs each run of programs that agree holds, in order: the runs after the
        leading one agree up to here as well, so each can be the next batch without diverging here."""
        values = self.values
        edges = np.flatnonzero(values[1:] != values[:-1]) + 1
        return np.diff(np.concatenate(([0], edges, [values.size]))).tolist()


def _interpreter():
    return sys.modules[_INTERPRETER]


def _handle(data, like):
    """A handle of ``data`` typed as the handle ``like``'s elements."""
    return _interpreter().TensorHandle(data, like.dtype.scalar)


def _spread(each, shape):
    """``each`` (a value per program: a 1-D array ``astype`` made, so contiguous, as a buffer must be)
    as a read-only block of ``shape`` per program, no copy: ``np.broadcast_to``'s view, made
    directly (it costs several times more)."""
    spread = np.ndarray((each.shape[0],) + shape, each.dtype, each, 0, (each.strides[0],) + (0,) * len(shape))
    spread.flags.writeable = False
    return spread


def _bytes_of(element):
    """The bytes an element of the Triton type ``element`` takes in memory (int1: one)."""
    return max(1, element.primitive_bitwidth // 8)


def _everywhere(ptr):
    """An all-true mask for the block of pointers ``ptr`` (broadcast, not made)."""
    return _interpreter().TensorHandle(np.ones((1,) * rows.block_ndim(ptr), dtype=bool), _interpreter().tl.int1)


def _refuse(reason):
    def operation(self, *args, **kwargs):
        raise Fallback(reason)
    operation.kwshim_falls_back = reason
    return operation


@functools.lru_cache(maxsize=None)
def batched_builder_class(base):
    """A subclass of the builder class ``base`` computing many programs at once (the batch is the
    launch's ``launch_state.batch``: program ids, count and ``StoreLog``): ``ProgramAxisOperations``
    first, and every operation that ``batching_rules`` does not let through refusing with its reason."""
    refusals = {}
    for name in batching_rules.operations(base):
        kind = batching_rules.rule(name)
        if kind is None:
            refusals[name] = _refuse(f"an operation kwshim's batched grid has not classified ({name})")
        elif kind == batching_rules.FALLS_BACK:
            refusals[name] = _refuse(batching_rules.FALLBACKS[name])
    return type("BatchedBuilder", (ProgramAxisOperations, base), refusals)


class ProgramAxisOperations:
    """The builder operations whose rule is ``PROGRAM_AXIS``: each sees shapes or memory, one axis
    further in than the interpreter's (placed before the interpreter's builder class, so ``super()``
    is the release's own, or kwshim's GPU builder)."""

    def create_inline_asm(self, inlineAsm, constraints, values, type, isPure, pack):
        found = inline_ptx.results(inlineAsm, constraints, values, type, pack)  # element-wise, programs and all
        if found is None:
            raise Fallback("inline assembly")
        return found

    def create_get_program_id(self, axis):
        return _interpreter().TensorHandle(launch_state.batch.program_ids[axis], _interpreter().tl.int32)

    def create_make_range(self, *args):
        made = super().create_make_range(*args)
        return _handle(made.data[None], made)

    def create_splat(self, first, second):  # (arg, shape) up to 3.3; (block type, arg) from 3.4
        interpreter = _interpreter()
        arg, shape = (first, second) if isinstance(first, interpreter.TensorHandle) else (second, first)
        shape = tuple(shape.shape if isinstance(shape, interpreter.tl.block_type) else shape)
        each = arg.data.reshape(arg.data.shape[0], -1)[:, 0].astype(interpreter._get_np_dtype(arg.dtype))
        # a read-only view, no copy: what reads it broadcasts anyway (an address block is made once, by addptr)
        return _handle(_spread(each, shape), arg)

    def create_addptr(self, ptr, offset):  # the interpreter's, in two passes over the block instead of three
        width = _bytes_of(ptr.get_element_ty())
        if isinstance(ptr, rows.pointers_class(_interpreter().TensorHandle)):
            moved = rows.shifted(ptr, offset.data)
            if moved is not None:
                return moved
        found = rows.row_starts(ptr.data, offset.data, width, memo=offset)
        if found is not None:  # each row from its own start: kept as the starts
            starts, pitch = found
            return rows.pointers_class(_interpreter().TensorHandle)(starts, offset.data.shape[-1], width, ptr.dtype,
                                                                    pitch)
        steps = np.multiply(offset.data, width, dtype=np.int64)
        bases = ptr.data.view(np.int64)
        TensorHandle = _interpreter().TensorHandle
        if memory.broadcast_shape([steps.shape, bases.shape]) == steps.shape:
            return TensorHandle(np.add(bases, steps, out=steps).view(np.uint64), ptr.dtype)
        return TensorHandle((bases + steps).view(np.uint64), ptr.dtype)

    def create_unsplat(self, arg):
        return _handle(np.ascontiguousarray(arg.data.reshape(arg.data.shape[0], -1)[:, 0]), arg)

    def create_expand_dims(self, arg, axis):
        return _handle(np.expand_dims(arg.data, axis + 1 if axis >= 0 else axis), arg)

    def create_broadcast(self, arg, shape):
        data = arg.data
        if data.ndim == 1:  # a scalar's programs
            data = data.reshape((-1,) + (1,) * len(shape))
        return _handle(np.broadcast_to(data, (data.shape[0],) + tuple(shape)), arg)

    def create_reshape(self, arg, shape, *rest):
        return _handle(arg.data.reshape((arg.data.shape[0],) + tuple(shape)), arg)

    def create_trans(self, arg, perm=None):
        if perm is None:
            raise Fallback("a transpose without its permutation")
        return _handle(np.transpose(arg.data, (0,) + tuple(p + 1 for p in perm)), arg)

    def create_cat(self, lhs, rhs):
        return _handle(np.concatenate(_paired(lhs.data, rhs.data), axis=1), lhs)

    def create_join(self, lhs, rhs):
        lhs_data, rhs_data = _paired(lhs.data, rhs.data)
        return _handle(np.stack([lhs_data, rhs_data], axis=-1), lhs)

    def create_load(self, ptr, *args):  # every release's: a masked load of every element, no other
        if isinstance(ptr, rows.pointers_class(_interpreter().TensorHandle)):
            return self.create_masked_load(ptr, _everywhere(ptr), None, *args)
        ptr_data = np.ascontiguousarray(ptr.data)  # no mask to make, broadcast and test (a scalar's load)
        return self._loaded(ptr, ptr_data, np.ones(ptr_data.shape, bool), True, None, None, *args)

    def create_store(self, ptr, value, *args):
        if isinstance(ptr, rows.pointers_class(_interpreter().TensorHandle)):
            return self.create_masked_store(ptr, value, _everywhere(ptr), *args)
        ptr_data, value_data = memory.operands(ptr.data, value.data)  # every element (a scalar's store)
        return self._stored(ptr_data.reshape(-1), value_data.reshape(-1), np.ones(ptr_data.shape, bool))

    def create_masked_load(self, ptrs, mask, other, *args, **kwargs):
        mask = predicate(mask)  # bool data: an int32 one would index, not mask, below
        loaded = rows.load(launch_state.batch.log, ptrs, mask, other, _GATHER_FROM)
        if loaded is not None:
            return loaded
        if other is None:
            ptr_data, mask_data = memory.operands(ptrs.data, mask.data)
            other_data = None
        else:
            ptr_data, mask_data, other_data = memory.operands(ptrs.data, mask.data, other.data)
        return self._loaded(ptrs, ptr_data, mask_data, mask_data.all(), other, other_data, *args, **kwargs)

    def _loaded(self, ptrs, ptr_data, mask_data, every, other, other_data, *args, **kwargs):
        """A load of ``ptrs`` under ``mask_data`` (``every``: all true), recorded, gathered (the
        native loop for a few elements); the operands broadcast to one shape."""
        TensorHandle = _interpreter().TensorHandle
        addresses = ptr_data.reshape(-1) if every else ptr_data[mask_data]
        element = ptrs.get_element_ty()
        numpy_type = np.dtype(_interpreter()._get_np_dtype(element))
        record = launch_state.batch.log.load(addresses, mask_data, _bytes_of(element))
        loaded = memory.gather(addresses, numpy_type, record.increasing()) \
            if addresses.size >= _GATHER_FROM and numpy_type.kind != "b" else None
        if loaded is None:  # the native loop
            other = None if other is None else TensorHandle(other_data, other.dtype.scalar)
            mask = TensorHandle(mask_data, _interpreter().tl.int1)
            return super().create_masked_load(TensorHandle(ptr_data, ptrs.dtype.scalar), mask, other, *args, **kwargs)
        if every:
            return TensorHandle(loaded.reshape(ptr_data.shape), element)
        data = np.zeros(ptr_data.shape, numpy_type) if other is None else other_data.astype(numpy_type)
        data[mask_data] = loaded
        return TensorHandle(data, element)

    def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
        mask = predicate(mask)
        found = rows.pieces(ptrs, mask)
        stored = None if found is None else [rows.store_rows(ptrs, value, piece) for piece in found]
        if stored is not None and None not in stored:
            for starts, kept, owners in stored:  # the values' bits, as the native store takes them
                launch_state.batch.log.store_rows(starts, kept.view(f"uint{kept.dtype.itemsize * 8}"), owners,
                                                  ptrs.pitch)
            return
        ptr_data, value_data, mask_data = memory.operands(ptrs.data, value.data, mask.data)
        if mask_data.all():
            return self._stored(ptr_data.reshape(-1), value_data.reshape(-1), mask_data)
        return self._stored(ptr_data[mask_data], value_data[mask_data], mask_data)

    def _stored(self, addresses, values, mask_data):
        values = np.ascontiguousarray(values)  # its bits, as the native store takes them
        launch_state.batch.log.store(addresses, values.view(f"uint{values.dtype.itemsize * 8}"), mask_data)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        mask = predicate(mask)
        interpreter = _interpreter()
        TensorHandle = interpreter.TensorHandle
        ptr_data, val_data, mask_data = memory.operands(ptr.data, val.data, mask.data)
        programs = launch_state.batch.log.programs
        if ptr_data.shape[0] != programs:  # no operand varies by program (``tl.atomic_add(count, 1)``):
            ptr_data, val_data, mask_data = (np.ascontiguousarray(np.broadcast_to(a, (programs,) + a.shape[1:]))
                                             for a in (ptr_data, val_data, mask_data))  # each program applies it
        element, pointer = val.dtype.scalar, ptr.dtype.scalar
        release_atomic = super().create_atomic_rmw

        def apply(addresses, values):  # the interpreter's own atomic, element by element in array order
            everywhere = TensorHandle(np.ones(addresses.shape, dtype=bool), interpreter.tl.int1)
            release_atomic(rmwOp, TensorHandle(addresses, pointer), TensorHandle(values, element),
                           everywhere, sem, scope)

        values = val_data[mask_data]
        launch_state.batch.log.atomic(ptr_data[mask_data], values, mask_data, apply, (str(rmwOp), values.dtype.str))
        return _unused_result_class(TensorHandle)(element)

    def create_advance(self, ptr, offsets):
        return block_pointers.advanced(ptr, offsets)

    def create_tensor_pointer_load(self, ptr, boundary_check, padding_option, *args, **kwargs):
        ptrs, mask = block_pointers.pointers(ptr, boundary_check)
        return self.create_masked_load(ptrs, mask, block_pointers.padding(ptrs, padding_option), *args, **kwargs)

    def create_tensor_pointer_store(self, ptr, value, boundary_check, *args, **kwargs):
        ptrs, mask = block_pointers.pointers(ptr, boundary_check)
        return self.create_masked_store(ptrs, value, mask, *args, **kwargs)

    def create_descriptor_load(self, desc, indices, *args, **kwargs):  # the release's, on batched pointers
        return super().create_descriptor_load(_batched_descriptor(desc), indices, *args, **kwargs)

    def create_descriptor_store(self, desc, value, indices, *args, **kwargs):
        return super().create_descriptor_store(_batched_descriptor(desc), value, indices, *args, **kwargs)

    def create_assert(self, condition, *args, **kwargs):
        if not np.all(condition.data):
            raise Fallback("a device_assert fails")


@functools.lru_cache(maxsize=None)
def _unused_result_class(TensorHandle):
    class UnusedResult(TensorHandle):
        """What an atomic returns in a batch: the old values, which only the loop can give."""

        def __init__(self, dtype):
            self.dtype = dtype

        @property
        def data(self):
            raise Fallback("the value an atomic returned is used")

    return UnusedResult


def _batched_descriptor(desc):
    """A copy of the tensor descriptor ``desc`` whose pointers and mask for a block's offsets carry the
    program axis (the interpreter's ``materialize_pointers``, one axis further in), both handles,
    as the batched loads and stores take them. A block pointer of the loop starts aligned to 16
    bytes, or the loop's assertion fails: the batch falls back there, for the loop to raise it."""
    import copy

    interpreter = sys.modules[_INTERPRETER]
    batched = copy.copy(desc)
    ndim = len(desc.block_shape)

    def per_program(data):
        return np.asarray(data).reshape((-1,) + (1,) * ndim)

    def materialize_pointers(offsets):
        itemsize = desc.base.dtype.element_ty.primitive_bitwidth // 8
        if len(offsets) != ndim or np.any((offsets[-1].data * itemsize) % 16):
            raise Fallback("a tensor descriptor's block off its shape or its 16-byte alignment")
        pointers = per_program(desc.base.data)
        mask = np.ones((1,) + tuple(desc.block_shape), dtype=bool)
        for dim, size in enumerate(desc.block_shape):
            along = [1] * (ndim + 1)
            along[dim + 1] = size
            offset = per_program(offsets[dim].data) + np.arange(size).reshape(along)
            pointers = pointers + (itemsize * offset * per_program(desc.strides[dim].data)).astype(np.uint64)
            mask = mask & (0 <= offset) & (offset < per_program(desc.shape[dim].data))
        return (interpreter.TensorHandle(pointers, desc.base.dtype.scalar),
                interpreter.TensorHandle(mask, interpreter.tl.int1))

    batched.materialize_pointers = materialize_pointers
    return batched


def _paired(lhs, rhs):
    """Two blocks with their program axes made equal (1 and n become n)."""
    programs = max(lhs.shape[0], rhs.shape[0])
    return (np.broadcast_to(lhs, (programs,) + lhs.shape[1:]), np.broadcast_to(rhs, (programs,) + rhs.shape[1:]))


def _per_program(data):
    """The one value all programs share of a scalar's ``data``, or ``Fallback``."""
    if data.size == 1:
        return data.reshape(-1)[0]
    if data.ndim != 1:
        raise Fallback("Python control flow (if, while, range) on a block")
    if (data == data[0]).all():
        return data[0]
    raise Diverged(data)


def tensor_entries():
    """``(owner, name, value)``: ``tl.tensor``'s ``bool()`` and ``index()`` with a program axis
    (``.T`` falls back), and the interpreter's ``_patch_lang_tensor`` putting them back each time it runs (it runs
    again for every jitted function a kernel calls, ``tl.sum`` among them)."""
    import triton.language as tl

    namespace = vars(sys.modules[_INTERPRETER])
    tensor = tl.core.tensor
    own = _tensor_attributes(tensor)
    entries = tuple((tensor, name, value) for name, value in own.items())
    original = namespace.get("_patch_lang_tensor")
    if original is None:
        return entries

    def patch_lang_tensor(*args, **kwargs):
        result = original(*args, **kwargs)
        for name, value in own.items():
            setattr(tensor, name, value)  # the batch's Patch restores the interpreter's afterwards
        return result

    return entries + ((namespace, "_patch_lang_tensor", patch_lang_tensor),)


#: Told of every value the kernel's body reads from a tensor into Python, as
#: ``on_read(read, handle, value)`` (``read`` is ``truth`` or ``index``): the trace's guards (``replay``).
on_read = None


def truth(handle):
    """``bool()`` of a tensor's ``handle`` in a batch: the value every program shares (``Diverged``
    where they differ)."""
    data = handle.data
    if data.ndim > 1:  # a block is true in the interpreter (one element: its value)
        per_row = data.reshape(data.shape[0], -1)
        if per_row.shape[1] != 1:
            return True
        data = per_row[:, 0]
    return bool(_per_program(data.astype(bool)))  # each program's truth (NaN is true), not its value


def index(handle):
    """``index()`` of a tensor's ``handle`` in a batch (``Diverged`` where the programs differ)."""
    return int(_per_program(handle.data))


@functools.lru_cache(maxsize=None)
def _tensor_attributes(tensor):
    def as_bool(self):
        value = truth(self.handle)
        if on_read is not None:
            on_read(truth, self.handle, value)
        return value

    def as_index(self):
        value = index(self.handle)
        if on_read is not None:
            on_read(index, self.handle, value)
        return value

    def transposed(self):  # the release's own .T differs (3.0's loses the block type): the loop runs it
        raise Fallback("tensor.T")

    return {"__bool__": as_bool, "__index__": as_index, "T": property(transposed)}
