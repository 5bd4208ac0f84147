"""The ways a tensor changes its device in place, as on CUDA.

On CUDA, ``t.data = x`` makes ``t`` the tensor ``x`` is, its device included: a parameter whose
``.data`` is given a CUDA tensor is a CUDA parameter from then on (Liger's chunked-loss tests set
``lin.weight.data = torch.randn(V, H, device="cuda")``). torch's own assignment swaps the memory but
keeps the Python class, so under the device a CPU tensor given a device tensor's data stayed a CPU
tensor, and the next operation mixing it with device tensors failed: 1,638 of Liger's whole-file
tests. Here the assignment that crosses between the CPU and the device swaps the tensor for one of
the other kind, over the same memory (``torch.utils.swap_tensors``: the Python object, and so every
reference to it, an optimizer's included, stays; a parameter stays a parameter, its
``requires_grad`` and gradient kept). An assignment that crosses nothing is torch's own.

``torch.load(..., map_location=...)`` places what it loads as CUDA places it: ``"cuda"`` (or
``cuda:0``, a ``torch.device``, ``0``) on the device, ``"cpu"`` on the CPU, a saved device tensor
included. torch itself cannot make a CUDA storage here ("Storage device not recognized"). A
``map_location`` that is a dict or a function stays torch's own.
"""

__all__ = ["install"]


def install(patch) -> None:
    """``Tensor.data``'s assignment crossing between the CPU and the device, through ``patch``."""
    import torch

    base = torch._C.TensorBase.data  # the C++ getter and setter

    def get(self):
        return base.__get__(self, type(self))

    def set(self, value):
        if isinstance(value, torch.Tensor) and _is_device(self) != _is_device(value):
            if _moved(torch, self, value):
                return
        base.__set__(self, value)

    patch.setattr(torch.Tensor, "data", property(get, set, doc=base.__doc__))
    patch.setattr(torch, "load", _placing_load(torch, torch.load))


def _placing_load(torch, load):
    """``torch.load`` placing what it loads where ``map_location`` says: the device or the CPU."""
    import functools

    from .placement import _target

    @functools.wraps(load)
    def placed(f, map_location=None, *args, **kwargs):
        if map_location is None:  # each storage where it was saved: a GPU's on the device
            saved_on_gpu: set = set()

            def locate(storage, location):
                if str(location).startswith("cuda"):
                    saved_on_gpu.add(storage.data_ptr())
                return storage

            loaded = load(f, locate, *args, **kwargs)
            return _placed(torch, loaded, "cuda", saved_on_gpu) if saved_on_gpu else loaded
        target = None if isinstance(map_location, dict) or callable(map_location) else _target(map_location, True)
        if target is None:
            return load(f, map_location, *args, **kwargs)
        return _placed(torch, load(f, "cpu", *args, **kwargs), target)

    return placed


def _placed(torch, value, target, only=None):
    """``value`` (tensors, parameters, and the dicts, lists and tuples holding them) on ``target``;
    ``only``: the tensors over these storages (their ``data_ptr``) alone."""
    from .device_tensor import DeviceTensor, to_device, to_host

    if isinstance(value, torch.Tensor):
        if (target == "cuda") == isinstance(value, DeviceTensor):
            return value
        if only is not None and value.untyped_storage().data_ptr() not in only:
            return value
        moved = (to_device if target == "cuda" else to_host)(value.detach()).requires_grad_(value.requires_grad)
        return torch.nn.Parameter(moved, value.requires_grad) if isinstance(value, torch.nn.Parameter) else moved
    if isinstance(value, dict):
        placed = type(value)() if type(value) is not dict else {}
        for key, item in value.items():
            placed[key] = _placed(torch, item, target, only)
        if hasattr(value, "_metadata"):  # a state dict's metadata
            placed._metadata = value._metadata
        return placed
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_placed(torch, item, target, only) for item in value)
    return value


def _is_device(tensor) -> bool:
    from .device_tensor import DeviceTensor

    return isinstance(tensor, DeviceTensor)


def _moved(torch, tensor, value) -> bool:
    """``tensor`` swapped for a tensor of ``value``'s kind over ``value``'s memory; False where torch
    cannot swap it (a tensor with a weak reference, or one autograd holds more than its leaf's
    accumulator), which is left to torch's own assignment (its memory moves, its class stays)."""
    from .device_tensor import DeviceTensor, host_view

    requires_grad, grad = tensor.requires_grad, tensor.grad
    if isinstance(value, DeviceTensor):
        moved = torch.Tensor._make_subclass(DeviceTensor, host_view(value), requires_grad)
    else:
        moved = value.detach().requires_grad_(requires_grad)
    if isinstance(tensor, torch.nn.Parameter):
        moved = torch.nn.Parameter(moved, requires_grad)
    try:
        torch.utils.swap_tensors(tensor, moved)
    except RuntimeError:
        return False
    if grad is not None:
        tensor.grad = grad
    return True
