"""The virtual GPU's tensors: a ``DeviceTensor`` is a CPU tensor that says it lives on ``cuda:0``.

Libraries choose their GPU paths from ``x.device.type`` (Liger's backward grids: the SM count on
cuda, 1 program elsewhere), and a test that keeps a CPU reference beside its ``.cuda()`` copy needs
the copy to be one. So a tensor made for the device is a ``torch.Tensor`` subclass over ordinary CPU
memory:

- Python sees the device: ``device`` is ``cuda:0``, ``is_cuda`` True, ``is_cpu`` False,
  ``get_device()`` 0, its repr says ``device='cuda:0'``, and ``numpy()`` refuses as on CUDA;
- torch's C++ sees a CPU tensor, so its kernels (and every tensor they make for themselves) run on
  the CPU, and Triton's interpreter reads and writes its memory with no copy;
- every operation on one goes through ``__torch_dispatch__``, which runs the CPU kernel and makes
  each new result a device tensor. The gradients autograd makes are results of operations on device
  tensors, so they are device tensors too (``x.grad``, an ``autograd.Function``'s ``grad_output``);
- an operation CUDA has and the CPU build lacks (a matmul with ``out_dtype``) computes on the CPU
  in that dtype, and a bf16 or fp16 matmul sums in fp32 and rounds once, as cuBLAS does, and a
  bf16 or fp16 ``log_softmax`` computes in fp32 and rounds once, as CUDA's kernel does, and an
  fp32 softmax backward sums its rows as nearly exactly as CUDA's tree;
- an operation mixing a device tensor with a CPU tensor that is not 0-dim raises torch's own
  "Expected all tensors to be on the same device" (``copy_``, and indexing with CPU indices, are
  allowed, as on CUDA).

Why this and not another mechanism (measured in ``benchmarks/device_cost.py``): a wrapper subclass
(``_make_wrapper_subclass``) whose C++ device is ``cuda`` has no memory of its own, sends torch's
internal factories (``at::empty(..., self.options())``) to a CUDA backend this build lacks, and cost
19x per small operation; a subclass with only ``__torch_function__`` loses itself in autograd, whose
gradients are plain tensors. This one costs a Python call per operation: 7.1x on a step of three
small operations, 2.2x on a tiny MLP's step, 1.04x on large ones (README, "Quick start").
"""

import weakref

import torch
from torch.utils._pytree import tree_map

from . import cuda_kernels, graphs, poison, random_state
from .graphs import CAPTURING

__all__ = ["DeviceTensor", "CUDA0", "adopt", "release", "to_device", "to_host", "host_view", "is_host_copy", "install"]

CUDA0 = torch.device("cuda", 0)
_PLAIN = torch.Tensor
_make = torch.Tensor._make_subclass
_no_dispatch = torch._C._DisableTorchDispatch
_aten = torch.ops.aten

#: operations that take CPU tensors beside CUDA ones on a GPU: copies, and indices of indexing
_MIXING = frozenset(op for op in (
    getattr(_aten.copy_, "default", None), getattr(_aten._to_copy, "default", None),
    getattr(_aten._copy_from, "default", None), getattr(_aten.copy, "default", None),
    getattr(_aten.index, "Tensor", None), getattr(_aten.index_put_, "default", None),
    getattr(_aten.index_put, "default", None), getattr(_aten._index_put_impl_, "default", None),
    getattr(_aten.set_, "source_Tensor", None), getattr(_aten.lift_fresh, "default", None),
) if op is not None)


_LOCAL_SCALAR = getattr(_aten._local_scalar_dense, "default", None)

#: ``set_`` from another tensor, which CUDA refuses across devices (measured: ``parity/device_moves.py``)
_SETS = frozenset(op for op in (getattr(_aten.set_, "source_Tensor", None),) if op is not None)

#: torch's matmuls with a CUDA-only overload (``out_dtype``) and a half-precision path of their own
_MATMULS = ("mm", "bmm", "addmm", "baddbmm")


def _into(out, result):
    """``result`` written into an ``out=`` tensor, as an ``_out`` overload writes it."""
    return out.resize_(result.shape).copy_(result)


def _cuda_only():
    """The operations CUDA has and torch's CPU build lacks, as the CPU computes them: a matmul with
    ``out_dtype`` (torch 2.8+, which Liger's fused linear JSD calls on cuda only) in that dtype."""
    def product(multiply):
        return lambda a, b, out_dtype, out=None: (lambda r: r if out is None else _into(out, r))(
            multiply(a.to(out_dtype), b.to(out_dtype)))

    def accumulated(add):
        return lambda c, a, b, out_dtype, beta=1, alpha=1, out=None: (lambda r: r if out is None else _into(out, r))(
            add(c.to(out_dtype), a.to(out_dtype), b.to(out_dtype), beta=beta, alpha=alpha))

    table = {}
    for name in _MATMULS:
        make = accumulated if name in ("addmm", "baddbmm") else product
        packet = getattr(_aten, name, None)
        for overload in ("dtype", "dtype_out"):
            op = getattr(packet, overload, None) if packet is not None and overload in packet.overloads() else None
            if op is not None:
                table[op] = make(getattr(torch, name))
    return table


_CUDA_ONLY = _cuda_only()


def _half_matmuls():
    """bf16 and fp16 matmuls as cuBLAS computes them: products summed in fp32, rounded once.
    torch's CPU build rounds in another order, and for a row-major second operand it takes a
    scalar path (229 s for a 4096x2048x4096 bf16 ``mm`` on 2 cores, 3.4 s transposed): Liger's and
    fla's reference modules sat in it. Measured on the H200 (``parity/half_matmul.py``), this is as
    near its bits as the CPU's own path, nearer in 3 of 5 cases."""
    def in_fp32(op):
        def compute(*args, **kwargs):
            dtype = args[0].dtype
            widened = [a.float() if isinstance(a, _PLAIN) else a for a in args]
            return op(*widened, **kwargs).to(dtype)
        return compute

    table = {}
    for name in _MATMULS:
        op = getattr(getattr(_aten, name, None), "default", None)
        if op is not None:
            table[op] = in_fp32(op)
    return table


def _half_log_softmax(x, dim, half_to_float):
    """CUDA's ``log_softmax`` of bf16 or fp16 rows: ``x - max - log(sum(exp(x - max)))`` in fp32,
    rounded once. torch's CPU build rounds twice, 11% of the elements an ulp away (0.0625 for a
    vocabulary's log-probabilities in bf16), and so a bf16 cross entropy's gradient, ``exp`` of
    them: Liger's bf16 cross entropy tests failed their 5% here, and pass on the H200. Measured on
    the H200 (``parity/half_log_softmax.py``)."""
    result = _aten._log_softmax.default(x.float(), dim, False)
    return result if half_to_float else result.to(x.dtype)


#: bf16 and fp16 operations that CUDA computes in fp32, rounding once, where torch's CPU build does not
_HALF_IN_FP32 = {**_half_matmuls(), _aten._log_softmax.default: _half_log_softmax}
_HALVES = (torch.bfloat16, torch.float16)


def _summed_as_a_tree(op):
    """An fp32 softmax backward (``grad - exp(output) * sum(grad)``, ``output * (grad - sum(grad *
    output))``) whose row sum is as near the exact one as CUDA's, a tree over a block's threads:
    computed in fp64 and rounded once. torch's CPU build adds a row in 8 or 16 long chains, one per
    SIMD lane: over a 32000-wide row a label-smoothed cross entropy's gradient came out a median
    1.7e-5 from the exact one, which Liger's fp32 cross entropy tests (1e-6, 1e-5) fail and the
    H200 passes. Measured on the H200 (``parity/softmax_backward.py``): within one ulp of each row's
    largest element of its result, where the CPU's was 4 away.

    A large one is computed a slice of rows at a time (rows are independent: the same bits): Liger's
    cross entropy of 8192 rows of 32000 took 4.5-6.2 s whole, in 2 GB fp64 copies, and 0.75-0.94 s
    in slices of 2M elements."""
    def compute(grad_output, output, dim, input_dtype):
        dim = dim % grad_output.dim() if grad_output.dim() else 0
        axis = next((axis for axis in range(grad_output.dim()) if axis != dim), None)
        if axis is None or grad_output.numel() <= _SLICE:
            return op(grad_output.double(), output.double(), dim, torch.float64).float()
        result = torch.empty(grad_output.shape, dtype=torch.float32)
        step = max(1, _SLICE * grad_output.shape[axis] // grad_output.numel())
        for start in range(0, grad_output.shape[axis], step):
            rows = min(step, grad_output.shape[axis] - start)
            sliced = op(grad_output.narrow(axis, start, rows).double(), output.narrow(axis, start, rows).double(),
                        dim, torch.float64)
            result.narrow(axis, start, rows).copy_(sliced)  # rounded to fp32, as .float() rounds
        return result
    return compute


#: the elements of a slice of ``_summed_as_a_tree``'s rows (16 MB of fp64)
_SLICE = 2 ** 21


#: fp32 operations whose sums CUDA adds as a tree, computed here in fp64 and rounded once
_FP32_SUMS = {op: _summed_as_a_tree(op)
              for op in (_aten._log_softmax_backward_data.default, _aten._softmax_backward_data.default)}


def _host_operand(args, kwargs):
    """The first CPU tensor among ``args`` and ``kwargs`` (a list's items too) that a CUDA kernel
    refuses beside CUDA tensors: one that is not a device tensor and not 0-dim."""
    for value in args:
        if isinstance(value, _PLAIN):
            if not isinstance(value, DeviceTensor) and value.dim() and value.device.type == "cpu":
                return value
        elif type(value) in (list, tuple):
            host = _host_operand(value, ())
            if host is not None:
                return host
    return _host_operand(tuple(kwargs.values()), ()) if kwargs else None


def _refused(func, host):
    """torch's own error for a CPU tensor ``host`` given to ``func`` beside device tensors."""
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
                        f"cpu! (kwshim: the virtual CUDA device, in {func}; a tensor of shape {tuple(host.shape)} is "
                        f"on the CPU: move it with .cuda())")


#: operations with nothing of the device's own to do but run on the CPU and hand back device tensors
_ORDINARY: set = set()


def _is_ordinary(func) -> bool:
    """Whether ``func`` is one of them (remembered): not a copy or indexing that mixes devices, not a
    set of storage, a sync, an operation CUDA computes otherwise, a draw of random numbers or an
    empty (the poison)."""
    special = (func in _MIXING or func in _SETS or func is _LOCAL_SCALAR or func in _CUDA_ONLY
               or func in _HALF_IN_FP32 or func in _FP32_SUMS or func in poison.EMPTY_OPERATIONS
               or random_state.is_random(func))
    if not special:
        _ORDINARY.add(func)
    return not special


def _wrapped(value):
    return _make(DeviceTensor, value) if type(value) is _PLAIN else value


def _on_device(out):
    """An operation's result with each plain tensor in it made a device tensor (no copy)."""
    if type(out) is _PLAIN:
        return _make(DeviceTensor, out)
    return tree_map(_wrapped, out) if type(out) in (tuple, list) else out


class DeviceTensor(torch.Tensor):
    """A CPU tensor that says it lives on the virtual GPU (``cuda:0``); see the module's docstring."""

    device = property(lambda self: CUDA0, doc="``cuda:0``: the virtual GPU's one device")
    is_cuda = property(lambda self: True)
    is_cpu = property(lambda self: False)

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if cuda_kernels.kernel_for(func):  # a library's kernel for CUDA: what a CUDA tensor runs
            args, kwargs = cuda_kernels.wrapped_numbers(func, args, kwargs)
            return func.redispatch(cuda_kernels.CUDA_KEYS, *args, **kwargs)
        if (func in _ORDINARY or _is_ordinary(func)) and not CAPTURING:
            # the common case, as few steps as it takes (``benchmarks/device_cost.py``): each one costs every operation
            host = _host_operand(args, kwargs)
            if host is not None:
                raise _refused(func, host)
            with _no_dispatch():
                out = func._op(*args, **kwargs)  # the OpOverload's own call, one Python frame fewer
            return _on_device(out)
        if func in _SETS and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and isinstance(args[0], DeviceTensor) != isinstance(args[1], DeviceTensor):
            here, there = ("cuda:0", "cpu") if isinstance(args[0], DeviceTensor) else ("cpu", "cuda:0")
            raise RuntimeError(f'Attempted to set the storage of a tensor on device "{here}" to a storage on '
                               f'different device "{there}".  This is no longer allowed; the devices must match. '
                               f'(kwshim: the virtual CUDA device)')
        if func not in _MIXING:
            host = _host_operand(args, kwargs)
            if host is not None:
                raise _refused(func, host)
        if func is _LOCAL_SCALAR:
            graphs.refuse_sync(".item()")  # while a CUDA graph captures
        out = _computed(func, args, kwargs)
        graphs.recorded_operation(_computed, func, args, kwargs, out)  # while one captures: its replay computes it
        return _on_device(out)

    def get_device(self):
        return 0

    def cpu(self, memory_format=torch.preserve_format):
        graphs.refuse_sync(".cpu()")
        return to_host(self, memory_format=memory_format)

    def numpy(self, *args, **kwargs):
        raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                        "host memory first. (kwshim: the virtual CUDA device)")

    def __array__(self, dtype=None, copy=None):
        return self.numpy()

    def tolist(self):
        return host_view(self).tolist()

    def __format__(self, spec):
        return host_view(self).__format__(spec) if self.dim() == 0 else object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None):
        text = repr(host_view(self))  # torch's own, without autograd's marks, which follow here
        marks = [at for at in (text.find(mark) for mark in (", dtype=", ", size=")) if at >= 0]
        at = min(marks) if marks else text.rfind(")")
        text = text[:at] + ", device='cuda:0'" + text[at:]
        if self.grad_fn is not None:
            return f"{text[:-1]}, grad_fn=<{type(self.grad_fn).__name__}>)"
        return f"{text[:-1]}, requires_grad=True)" if self.requires_grad else text

    def __reduce_ex__(self, protocol):
        return _rebuild, (to_host(self.detach()), self.requires_grad)


def _computed(func, args, kwargs):
    """``func`` on the device's tensors, as the CPU computes it but where CUDA computes otherwise."""
    with _no_dispatch():
        if func in _CUDA_ONLY:
            out = _CUDA_ONLY[func](*args, **kwargs)
        elif func in _HALF_IN_FP32 and args[0].dtype in _HALVES:
            out = _HALF_IN_FP32[func](*args, **kwargs)
        elif func in _FP32_SUMS and args[0].dtype == torch.float32 and args[3] == torch.float32:
            out = _FP32_SUMS[func](*args, **kwargs)
        elif random_state.is_random(func):  # CUDA's seed and offset, advanced as CUDA's
            out = random_state.drawn(kwargs.get("generator"), lambda: func(*args, **kwargs))
        else:
            out = func(*args, **kwargs)
        if func in poison.EMPTY_OPERATIONS and poison.wanted():  # empty_fill="poison"
            poison.poisoned(out)
    return out


def _rebuild(host, requires_grad):
    """An unpickled device tensor (``torch.save`` of one, loaded while the device is on)."""
    return _make(DeviceTensor, host, requires_grad)


def install(patch) -> None:
    """``torch.load``'s ``weights_only`` unpickler taking a saved device tensor, through ``patch``;
    and torch's first Python dispatch made now. It imports modules (``torch.distributed.tensor``),
    which fails once Triton 2.2/2.3's interpreter has run a kernel: its patch of ``tl.math``
    replaces every member, ``__file__`` too, and ``inspect`` then breaks on that module."""
    try:
        _make(DeviceTensor, torch.zeros(1)).add(0)
    except Exception:  # noqa: BLE001 (the first operation on a device tensor will raise it again)
        pass
    unpickler = getattr(torch, "_weights_only_unpickler", None)
    allowed = getattr(unpickler, "_get_user_allowed_globals", None)
    if callable(allowed):
        name = f"{_rebuild.__module__}.{_rebuild.__qualname__}"
        patch.setattr(unpickler, "_get_user_allowed_globals", lambda: {**allowed(), name: _rebuild})


#: called with each tensor ``adopt`` makes (the allocation statistics, while they count)
adopters: list = []


def adopt(host):
    """A CPU tensor a factory has just made, handed back as the device's (no copy; a leaf stays one)."""
    made = _make(DeviceTensor, host, host.requires_grad)
    for adopter in adopters:
        adopter(made)
    return made


def release(device):
    """A device tensor a factory has just made for the CPU (``zeros_like(x, device="cpu")``), as a
    plain CPU tensor (no copy)."""
    host = host_view(device)
    return host.requires_grad_() if device.requires_grad else host


def host_view(tensor, keep_grad=False):
    """The plain CPU tensor over a device tensor's memory (no copy): what Triton's interpreter reads
    and writes. ``keep_grad``: with its ``grad_fn`` shown (a repr)."""
    with _no_dispatch():
        view = _aten.alias.default(tensor)
    if keep_grad or not view.requires_grad:
        return view
    return view.detach()


class _ToDevice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, host, memory_format):
        return adopt(host.detach().clone(memory_format=memory_format))

    @staticmethod
    def backward(ctx, grad):
        return (to_host(grad) if isinstance(grad, DeviceTensor) else grad), None


class _ToHost(torch.autograd.Function):
    @staticmethod
    def forward(ctx, device, memory_format):
        return host_view(device).clone(memory_format=memory_format)

    @staticmethod
    def backward(ctx, grad):
        return to_device(grad), None


def to_device(tensor, memory_format=torch.preserve_format):
    """A copy of a CPU ``tensor`` on the virtual GPU (as ``.cuda()`` copies across the bus); a device
    tensor as it is. Differentiable, as ``.cuda()`` is."""
    if isinstance(tensor, DeviceTensor):
        return tensor
    if tensor.requires_grad and torch.is_grad_enabled():
        return _ToDevice.apply(tensor, memory_format)
    return adopt(tensor.detach().clone(memory_format=memory_format))


#: the copies ``to_host`` made, by id, while they live (``Module.cpu()`` swaps them in)
_host_copies: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def is_host_copy(tensor) -> bool:
    return _host_copies.get(id(tensor)) is tensor


def to_host(tensor, memory_format=torch.preserve_format):
    """A plain CPU copy of a device ``tensor`` (as ``.cpu()`` copies); a CPU tensor as it is."""
    if not isinstance(tensor, DeviceTensor):
        return tensor
    if tensor.requires_grad and torch.is_grad_enabled():
        return _ToHost.apply(tensor, memory_format)
    copy = host_view(tensor).clone(memory_format=memory_format)
    _host_copies[id(copy)] = copy
    return copy
