"""Kernels a library registers for the ``CUDA`` dispatch key, run on the device's tensors.

A library replaces torch's operators with its own Triton kernels through ``torch.library``
(``Library("aten", "IMPL").impl(name, fn, "CUDA")``, ``torch.library.impl``, ``custom_op(...,
device_types="cuda")``, ``register_kernel``): FlagGems' ``use_gems()`` does it for hundreds of aten
operators. On a GPU a CUDA tensor runs them. A device tensor is a CPU tensor to torch's dispatcher,
so it ran torch's CPU kernel instead, and a test compared torch with torch: green, and no kernel of
the library launched (190 of FlagGems' 192 passes). Here an operator on a device tensor runs the
kernel registered for ``CUDA`` where there is one that is not torch's own (torch's CPU build
registers a few for its collectives), redispatched to that key; torch's CPU kernel otherwise.

Which operators have one is read from the dispatcher at an operator's first use and kept until a
registration through ``torch.library`` changes it (``Library.impl`` and ``Library._destroy`` clear
what was read, while the device is on); an operator found with one is asked again at each use (a
``Library`` collected takes its registrations along, unannounced). A C++ extension loaded after an
operator's first use is seen at the next registration through ``torch.library``.

An operator torch implements by composition (``CompositeImplicitAutograd``: ``square`` is ``pow(x,
2)``, ``kron`` a product of reshaped views) decomposes in torch's autograd layer, before a device
tensor's dispatch sees it. On a GPU a library's CUDA kernel for it replaces the composition; here
the composition ran, with the library's kernels for its parts where it had them (FlagGems'
``square`` computed as its ``pow``: an ulp off torch's ``x * x``, which the GPU's ``square``
matches). So while the device is on, such an operator with a library's CUDA kernel gets a kernel of
kwshim's for ``AutogradCPU`` (``_route``): the library's kernel where a device tensor is among its
arguments, below autograd as on a GPU; torch's composition otherwise.
"""

import functools
import os

import torch

__all__ = ["kernel_for", "install", "wrapped_numbers", "CUDA_KEYS", "routed_composites", "serves", "factory_kernel"]

CUDA_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
#: operator -> whether a library's CUDA kernel serves it (read at its first use)
_FOUND: dict = {}


def kernel_for(func) -> bool:
    """Whether ``func`` (an ``OpOverload``) has a kernel a library registered that a CUDA tensor runs."""
    found = _FOUND.get(func)
    if found is None:
        found = _FOUND[func] = _registered(func.name())
    elif found:  # still there (a Library's registrations go when it is collected, which nothing announces)
        found = _FOUND[func] = found if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), found) else ""
    return bool(found)


def serves(name) -> bool:
    """Whether a library's CUDA kernel serves some overload of ``aten::name`` (read once per name, as
    ``kernel_for``): a factory's (``arange``, ``zeros``) or a composite's (``quantile``)."""
    served = _SERVED.get(name)
    if served is None:
        packet = getattr(torch.ops.aten, name, None)
        overloads = packet.overloads() if packet is not None else ()
        served = _SERVED[name] = any(kernel_for(getattr(packet, overload)) for overload in overloads)
    return served


#: name -> whether a library's CUDA kernel serves some overload of ``aten::name`` (``serves``)
_SERVED: dict = {}


def factory_kernel(name, args, kwargs):
    """For a factory that ``serves`` names, the overload of ``aten::name`` that these arguments call,
    where a library's CUDA kernel serves it (FlagGems' ``arange``, ``zeros``, ``rand``: a GPU's
    ``torch.zeros(n, device="cuda")`` runs them); else None. ``args`` and ``kwargs`` as the call
    gives them, with its ``"cuda"`` device; a size given as several numbers (``zeros(2, 3)``) is the
    one list the operator takes."""
    if "out" in kwargs or "names" in kwargs:
        return None
    packet = getattr(torch.ops.aten, name)
    forms = [args] + ([(tuple(args),)] if args and all(type(value) is int for value in args) else [])
    for given in forms:
        try:
            overload = torch._C._jit_resolve_packet(f"aten::{name}", *given, **kwargs)
        except RuntimeError:  # no overload takes them so: torch's own factory decides
            continue
        operator = getattr(packet, overload)
        return (operator, given) if kernel_for(operator) else None
    return None


def wrapped_numbers(func, args, kwargs):
    """``args`` and ``kwargs`` with each Python number given for a ``Tensor`` parameter made the 0-dim
    CPU tensor the dispatcher makes of it (``x + 1``: ``aten::add.Tensor(x, 1)``), of the dtype that
    promotes as a wrapped number does (a float: the default dtype). A redispatch takes no numbers
    there ("Expected a value of type 'Tensor' for argument 'other'"), and a library's CUDA kernel is
    handed this tensor on a GPU."""
    schema = func._schema.arguments
    numbers = (bool, int, float, complex)

    def tensor_typed(argument):
        return str(argument.type) == "Tensor"

    if not any(type(value) in numbers for value in (*args, *kwargs.values())):
        return args, kwargs
    args = tuple(torch.tensor(value) if type(value) in numbers and index < len(schema) and tensor_typed(schema[index])
                 else value for index, value in enumerate(args))
    named = {argument.name: argument for argument in schema}
    kwargs = {name: torch.tensor(value) if type(value) in numbers and name in named and tensor_typed(named[name])
              else value for name, value in kwargs.items()}
    return args, kwargs


#: the keys whose kernel a CUDA tensor runs (its own, or one for every device), with their lines'
#: start in the dispatcher's dump
_SERVING = (("CUDA", "CUDA: registered at "),
            ("CompositeExplicitAutograd", "CompositeExplicitAutograd[alias]: registered at "))


def _registered(name) -> str:
    """The key of a library's kernel that serves ``name`` on CUDA ("" where none does): one registered
    for ``CUDA``, or for every device (``custom_op``/``triton_op`` without ``device_types``:
    ``CompositeExplicitAutograd``), whose body then runs with the device's tensors, as with CUDA
    tensors on a GPU (not with CPU tensors, which a ``wrap_triton`` launch inside refuses)."""
    lines = torch._C._dispatch_dump(name).splitlines()
    for key, start in _SERVING:
        line = next((line for line in lines if line.startswith(start)), None)
        if line is not None and not _torch_s_own(line[len(start):].split(" :: ")[0]):
            return key
    return ""


#: where torch's registration API registers a library's kernel from (``custom_op``, ``torch.library``)
_REGISTRATION_API = (os.path.join(_TORCH, "_library") + os.sep, os.path.join(_TORCH, "library.py"))


def _torch_s_own(where) -> bool:
    """Whether a registration at ``where`` (a file and line) is torch's own: its C++ (its collectives
    in a CPU build) or its Python (``torch/_native``), but not its registration API, which registers a
    library's kernel."""
    if where.startswith(_REGISTRATION_API):
        return False
    return where.startswith(_TORCH) or "/pytorch/" in where


def forget() -> None:
    """Read every operator's registrations again at its next use."""
    _FOUND.clear()
    _SERVED.clear()


def install(patch, tensor_class) -> None:
    """A registration through ``torch.library`` makes the device read the registry again, a composite
    operator with a library's CUDA kernel runs it on ``tensor_class`` (the device's tensors), and
    torch's ``wrap_triton`` launches take them, through ``patch``."""
    library = torch.library.Library
    forget()
    routes = _Routes(tensor_class)
    for name in ("impl", "_destroy"):
        original = vars(library).get(name)
        if callable(original):
            patch.setattr(library, name, _forgetting(original, routes if name == "impl" else None))
    patch.on_undo(forget)
    patch.on_undo(routes.close)
    for qualified in torch._C._dispatch_get_registrations_for_dispatch_key("CUDA"):  # made before the switch
        if _registered(qualified) == "CUDA":
            routes.add(qualified)
    _wrapped_triton(patch, tensor_class)


#: the composite operators routed while the device is on (``_Routes``), by qualified name
routed_composites: "set[str]" = set()


class _Routes:
    """kwshim's ``AutogradCPU`` kernels for composite operators with a library's CUDA kernel (see the
    module's docstring), in ``Library`` objects of kwshim's own, one per namespace, closed with the
    switch."""

    def __init__(self, tensor_class):
        self.tensor_class, self.libraries = tensor_class, {}

    def add(self, qualified) -> None:
        if qualified in routed_composites or "::" not in qualified or \
                not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"):
            return
        namespace, name = qualified.split("::", 1)
        packet, _, overload = name.partition(".")
        operator = getattr(getattr(getattr(torch.ops, namespace), packet, None), overload or "default", None)
        if operator is None:
            return
        library = self.libraries.get(namespace)
        if library is None:
            library = self.libraries[namespace] = _ORIGINAL_LIBRARY[0](namespace, "IMPL")
        routed_composites.add(qualified)
        library.impl(name, self._route(operator), "AutogradCPU")

    def _route(self, operator):
        tensor_class = self.tensor_class

        def route(*args, **kwargs):
            on_device = any(isinstance(value, tensor_class) or (type(value) in (list, tuple) and any(
                isinstance(item, tensor_class) for item in value)) for value in (*args, *kwargs.values()))
            if on_device and kernel_for(operator):  # the library's kernel, as a CUDA tensor runs it
                args, kwargs = wrapped_numbers(operator, args, kwargs)
                with torch._C._AutoDispatchBelowAutograd():
                    return operator.redispatch(CUDA_KEYS, *args, **kwargs)
            return operator.decompose(*args, **kwargs)  # torch's composition, as without the device

        return route

    def close(self) -> None:
        for library in self.libraries.values():
            _ORIGINAL_LIBRARY[1](library)
        self.libraries.clear()
        routed_composites.clear()


#: ``torch.library.Library`` and its own ``_destroy`` (kwshim's libraries are neither watched nor routed)
_ORIGINAL_LIBRARY = (torch.library.Library, torch.library.Library._destroy)


def _wrapped_triton(patch, tensor_class) -> None:
    """torch's ``wrap_triton`` (and ``triton_op``, which calls it) launches through higher-order
    operators, which refuse a tensor subclass they have no rule for ("There was no rule registered
    for HOP triton_kernel_wrapper_mutation and subclass DeviceTensor"): on the device their rule is
    their own eager one, which launches the kernel with the device tensors, as on a GPU."""
    from torch._C import DispatchKey

    try:
        from torch._higher_order_ops import triton_kernel_wrap
    except ImportError:  # a torch without wrap_triton
        return
    for name in ("triton_kernel_wrapper_mutation", "triton_kernel_wrapper_functional"):
        operator = getattr(triton_kernel_wrap, name, None)
        eager = getattr(operator, "py_kernels", {}).get(DispatchKey.CompositeExplicitAutograd)
        table = getattr(operator, "python_key_table", None)
        if eager is None or table is None or tensor_class in table:
            continue
        table[tensor_class] = eager
        patch.on_undo(functools.partial(table.pop, tensor_class, None))


def _forgetting(original, routes=None):
    """``Library.impl`` or ``_destroy`` making the device read the registry again; ``impl`` of a
    ``CUDA`` kernel routing a composite operator to it (``routes``)."""
    def method(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            forget()
            if routes is not None and _registers_for_cuda(args, kwargs):
                routes.add(_qualified(self, args[0] if args else kwargs.get("op_name")))

    method.__name__, method.__doc__, method.__wrapped__ = original.__name__, original.__doc__, original
    return method


def _registers_for_cuda(args, kwargs) -> bool:
    """Whether ``Library.impl(op_name, fn, dispatch_key, ...)``'s arguments register for ``CUDA``."""
    key = args[2] if len(args) > 2 else kwargs.get("dispatch_key", "")
    return key == "CUDA"


def _qualified(library, op_name) -> str:
    """``op_name`` as ``Library.impl`` takes it (a name, with or without its overload, or an
    ``OpOverload``) as the dispatcher names it: ``namespace::name[.overload]``."""
    if isinstance(op_name, torch._ops.OpOverload):
        return op_name.name()
    op_name = str(op_name)
    return op_name if "::" in op_name else f"{library.ns}::{op_name}"
