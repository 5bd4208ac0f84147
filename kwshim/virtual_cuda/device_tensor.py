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
- where CUDA computes an operation otherwise than the CPU (a bf16 matmul, ``log_softmax`` or
  ``layer_norm``; an fp32 softmax's backward; a matmul with ``out_dtype``), it computes as CUDA
  (``cuda_numerics``);
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

from . import cuda_kernels, cuda_numerics, graphs, poison, random_state
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
    special = (func in _MIXING or func in _SETS or func is _LOCAL_SCALAR or cuda_numerics.differs(func)
               or func in poison.EMPTY_OPERATIONS or random_state.is_random(func))
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
        as_cuda = cuda_numerics.rule_for(func, args)
        if as_cuda is not None:
            out = as_cuda(*args, **kwargs)
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
