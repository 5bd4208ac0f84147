"""Tensors asked for on ``"cuda"`` are the virtual GPU's (``device_tensor``): torch's factories
(every ``torch`` function documented with a ``device`` argument: ``randn``, ``empty``, ``tensor``,
``arange``, ``*_like``, ...), ``Tensor.new_*`` and ``Tensor.type`` with a legacy CUDA type make
their tensor on the CPU and hand it back as a device tensor, for a ``"cuda"``/``"cuda:0"``/``0``/
``torch.device("cuda")`` device (a factory a library registered a ``CUDA`` kernel for runs that
kernel: ``cuda_kernels``); ``Tensor.to`` and ``Tensor.cuda()`` copy a CPU tensor onto the
device, and ``.cpu()`` / ``.to("cpu")`` copy a device tensor back, as across the bus. Modules'
``.cuda()`` and ``.to("cuda")`` go through them. ``torch.Generator("cuda")`` is CUDA's (``random_state``).

Pinned memory is remembered, not made (a CPU-only build cannot pin): ``pin_memory=True`` and
``Tensor.pin_memory()`` give a tensor ``is_pinned()`` answers True for, which a kernel may take as
a GPU takes pinned host memory.

These are patched functions, not a ``TorchFunctionMode``: a mode sees every torch call, and on a
step of small calls (a tiny MLP's forward and backward) it cost 42% (``benchmarks/device_cost.py``);
the patches cost nothing where no device is given. What they cannot see is a factory bound by name
before the switch went on (``from torch import zeros``): that call asks for the real CUDA and fails
loudly ("Torch not compiled with CUDA enabled"), never silently.
"""

import weakref

import torch
from torch.utils import _device as torch_device

from . import cuda_kernels, poison, random_state, torch_cuda
from .device_tensor import DeviceTensor, adopt, is_host_copy, release, to_device, to_host
from .model import device_index

__all__ = ["install", "factory_names", "is_pinned"]

#: the CPU tensors made pinned while the device is on, by id (a tensor's ``==`` is elementwise)
_pinned: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def is_pinned(tensor) -> bool:
    return _pinned.get(id(tensor)) is tensor


def _pin(tensor):
    _pinned[id(tensor)] = tensor
    return tensor


def _target(value, index=False):
    """``"cuda"`` for a CUDA device (``index``: an int is a device's index too, as torch reads
    ``device=0``), ``"cpu"`` for the CPU, None for anything else. A device other than the one GPU
    raises."""
    if isinstance(value, str):
        try:
            value = torch.device(value)
        except (RuntimeError, ValueError):
            return None
    if isinstance(value, torch.device):
        if value.type == "cuda":
            device_index(value)
        return value.type if value.type in ("cuda", "cpu") else None
    if index and type(value) is int:
        device_index(value)
        return "cuda"
    return None


def _legacy_type(value):
    """A legacy CUDA tensor type (``torch.cuda.FloatTensor``, or its name) as the CPU's."""
    if isinstance(value, type(torch.FloatTensor)) and value.__module__ == "torch.cuda":
        return getattr(torch, value.__name__)
    if isinstance(value, str) and value.startswith("torch.cuda."):
        return "torch." + value[len("torch.cuda."):]
    return value


def _placing(function):
    """``function`` making a ``"cuda"`` ``device=`` tensor on the CPU and handing it back as a device
    tensor; a ``"cpu"`` one a CPU tensor (``zeros_like(x, device="cpu")`` of a device tensor);
    ``pin_memory`` remembered."""
    name = function.__name__
    empty = name in poison.EMPTY_FACTORIES
    random = name in random_state.RANDOM_FACTORIES
    defaulted = name in _DEFAULTED  # takes the default device (``with torch.device("cuda")``)

    def placed(*args, **kwargs):
        device = kwargs.get("device")
        if device is None and defaulted:
            device = _default_device()
            if device is not None:
                kwargs["device"] = device
        if not kwargs:
            return function(*args)
        target = _TARGETS.get(device) if type(device) in _NAMED else None  # the common names, remembered
        if target is None:
            target = _target(device, index=True)
            if target is not None and type(device) in _NAMED:
                _TARGETS[device] = target
        if target == "cuda" and cuda_kernels.serves(name):  # a library's CUDA kernel for it, as on a GPU
            made = _library_made(name, args, kwargs)
            if made is not None:
                return made
        if target is not None:
            if torch_device.CURRENT_DEVICE is None and not _modes():  # the CPU is the default: no device to parse
                del kwargs["device"]
            else:
                kwargs["device"] = "cpu"
        pinned = kwargs.get("pin_memory")
        if pinned:
            kwargs["pin_memory"] = False
        if random and target == "cuda":  # CUDA's seed and offset, advanced as CUDA's
            made = random_state.drawn(kwargs.get("generator"), lambda: function(*args, **kwargs))
        else:
            made = function(*args, **kwargs)
        if target == "cuda" and not isinstance(made, DeviceTensor):
            return adopt(poison.poisoned(made) if empty and poison.wanted() else made)
        if target == "cpu" and isinstance(made, DeviceTensor):
            return release(made)
        if pinned:
            _pin(made)
        return made

    placed.__name__, placed.__doc__, placed.__wrapped__ = function.__name__, function.__doc__, function
    return placed


def _library_made(name, args, kwargs):
    """The tensor a library's CUDA kernel for the factory ``name`` makes for this call, on the device
    (a GPU runs it: FlagGems' ``arange``, a Triton launch into a tensor it asks ``"cuda"`` for); None
    where no library kernel serves the call."""
    given = {key: value for key, value in kwargs.items() if key != "requires_grad"}
    found = cuda_kernels.factory_kernel(name, args, given)
    if found is None:
        return None
    operator, args = found
    made = operator(*args, **given)
    made = made if isinstance(made, DeviceTensor) else adopt(made)
    return made.requires_grad_() if kwargs.get("requires_grad") else made


def _keeping_device(method):
    """``Tensor.new_*`` ``method`` (``_placing``) giving a device tensor's new tensor on the device
    where no device is asked for, as CUDA does: ``new_tensor`` builds its tensor from Python data in
    torch's C++, which never reaches the device tensor's dispatch, and made it on the CPU."""
    def kept(self, *args, **kwargs):
        made = method(self, *args, **kwargs)
        if isinstance(self, DeviceTensor) and not isinstance(made, DeviceTensor) and \
                _target(kwargs.get("device"), index=True) is None:
            return adopt(made)
        return made

    kept.__name__, kept.__doc__, kept.__wrapped__ = method.__name__, method.__doc__, method
    return kept


def _generator_class(generator):
    """``torch.Generator`` making a CPU generator for ``device="cuda"``; every generator (the
    default ones among them) is still an instance of it."""
    class Meta(type(generator)):
        def __instancecheck__(cls, instance):
            return isinstance(instance, generator)

        def __subclasscheck__(cls, subclass):
            return issubclass(subclass, generator)

    class Generator(generator, metaclass=Meta):
        __doc__ = generator.__doc__

        def __new__(cls, device="cpu"):
            return random_state.CudaGenerator() if _target(device) == "cuda" else generator(device)

    return Generator


def factory_names():
    """The ``torch`` functions documented with a ``device`` argument, and those whose operator takes
    one without saying so (``scalar_tensor``, ``normal``'s sizes): 42 in torch 2.13."""
    def takes_device(name):
        try:
            schemas = torch._C._jit_get_schemas_for_operator("aten::" + name)
        except RuntimeError:
            return False
        return any(argument.name == "device" for schema in schemas for argument in schema.arguments)

    return sorted(name for name in dir(torch) if not name.startswith("_") and callable(getattr(torch, name))
                  and not isinstance(getattr(torch, name), type)
                  and ("device (:class:" in (getattr(torch, name).__doc__ or "") or takes_device(name)))


def _default_device():
    """torch's default device where it is not the CPU (``set_default_device``, or a ``with
    torch.device(...)``, whose mode C++ pushes without setting ``CURRENT_DEVICE``); None otherwise."""
    default = torch_device.CURRENT_DEVICE
    modes = _modes()
    if default is None and not modes:  # the common case, at every factory call
        return None
    for index in range(modes):  # read in place: no mode is popped
        mode = torch._C._get_function_stack_at(index)
        if isinstance(mode, torch_device.DeviceContext):
            default = mode.device
    return None if default is None or torch.device(default).type == "cpu" else default


_modes = torch._C._len_torch_function_stack

#: a device named by a string or a ``torch.device``, and where it sends a tensor (``_target``), once seen
_NAMED = (str, torch.device)
_TARGETS: "dict[object, str]" = {}

#: the factories torch hands the default device (``torch.utils._device``), by name
_DEFAULTED: "set[str]" = set()


def install(patch) -> None:
    """The factories, ``Tensor``'s moving methods and ``Tensor.is_cuda``, through ``patch``.

    ``with torch.device("cuda")`` and ``torch.set_default_device("cuda")`` set torch's default
    device, which a function mode hands to the factories it knows by identity: the originals, a set
    read once (so it is read again after the switch), which the patched factories are not. So the
    patched ones read the default device themselves; it was the CPU's, silently (FlagGems'
    ``test_flash_attn_varlen_func.py``)."""
    constructors = getattr(torch_device, "_device_constructors", None)
    if constructors is not None and not _DEFAULTED:
        _DEFAULTED.update(getattr(function, "__name__", "") for function in constructors())
    cache_clear = getattr(constructors, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()
        patch.on_undo(cache_clear)

    for name in factory_names():
        patch.setattr(torch, name, _placing(getattr(torch, name)))
    tensor = torch.Tensor
    for name in ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros"):
        patch.setattr(tensor, name, _keeping_device(_placing(getattr(tensor, name))))
    to = tensor.to

    def moved(self, *args, **kwargs):
        """``Tensor.to``: a copy across the bus where the device changes, torch's own otherwise."""
        args, target = list(args), None
        if args and isinstance(args[0], torch.Tensor):  # .to(other): other's device and dtype
            target, args[0] = _target(args[0].device), args[0].dtype
        elif args:
            target = _target(args[0], index=True)
            if target is not None:
                args[0] = None  # torch's device=None: the overload stays the one written
        if "device" in kwargs and _target(kwargs["device"], index=True) is not None:
            target = _target(kwargs.pop("device"), index=True)
        if target == "cuda" and not isinstance(self, DeviceTensor):
            kwargs.pop("copy", None)
            return to_device(to(self, *args, **kwargs))
        if target == "cpu" and isinstance(self, DeviceTensor):
            kwargs.pop("copy", None)
            moved = to(to_host(self), *args, **kwargs)
            return _pin(moved) if kwargs.get("non_blocking") else moved  # CUDA copies into pinned memory
        return to(self, *args, **kwargs)

    def cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        device_index(device)
        return to_device(self, memory_format=memory_format)

    retype = tensor.type

    def typed(self, *args, **kwargs):
        """``Tensor.type``: a legacy CUDA type (``torch.cuda.FloatTensor``) on the device; a device
        tensor's type named as CUDA names it."""
        if not args and not kwargs:
            name = retype(self)
            return name.replace("torch.", "torch.cuda.", 1) if isinstance(self, DeviceTensor) else name
        legacy = [value for value in (*args, *kwargs.values()) if _legacy_type(value) is not value]
        done = retype(self, *(_legacy_type(arg) for arg in args), **{k: _legacy_type(v) for k, v in kwargs.items()})
        if legacy and not isinstance(done, DeviceTensor):
            return to_device(done)
        if not legacy and isinstance(done, DeviceTensor) and any(isinstance(v, (str, type)) for v in args):
            return to_host(done)
        return done

    record_stream = tensor.record_stream

    def recorded(self, stream):  # a CPU tensor's memory is freed when it is: nothing to record
        return None if isinstance(stream, torch_cuda.Stream) else record_stream(self, stream)

    def pinned(self, *args, **kwargs):
        return _pin(self.clone())

    _install_module_moves(patch, torch)
    patch.setattr(tensor, "to", moved)
    patch.setattr(tensor, "type", typed)
    patch.setattr(tensor, "record_stream", recorded)
    patch.setattr(torch, "Generator", _generator_class(torch.Generator))
    patch.setattr(tensor, "cuda", cuda)
    patch.setattr(tensor, "pin_memory", pinned)
    patch.setattr(tensor, "is_pinned", lambda self, *args, **kwargs: is_pinned(self))


def _install_module_moves(patch, torch) -> None:
    """``Module.to("cuda")``/``.cuda()``/``.cpu()`` swapping each parameter into its moved class in
    place (its identity kept, as CUDA keeps it: an optimizer made before still holds it), by the
    swap torch uses for tensor subclasses. torch's own ``param.data = moved`` would keep the old
    class over the new memory."""
    from torch.nn.modules import module

    is_wrapper = module.is_traceable_wrapper_subclass

    def swapped_in(tensor):
        return isinstance(tensor, DeviceTensor) or is_host_copy(tensor) or is_wrapper(tensor)

    patch.setattr(module, "is_traceable_wrapper_subclass", swapped_in)
