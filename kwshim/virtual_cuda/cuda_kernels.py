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
"""

import os

import torch

__all__ = ["kernel_for", "install", "CUDA_KEYS"]

CUDA_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
#: operator -> whether a library's CUDA kernel serves it (read at its first use)
_FOUND: dict = {}


def kernel_for(func) -> bool:
    """Whether ``func`` (an ``OpOverload``) has a ``CUDA`` kernel that a library registered."""
    found = _FOUND.get(func)
    if found is None:
        found = _FOUND[func] = _registered(func.name())
    elif found:  # still there (a Library's registrations go when it is collected, which nothing announces)
        found = _FOUND[func] = torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CUDA")
    return found


def _registered(name) -> bool:
    if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"):
        return False
    for line in torch._C._dispatch_dump(name).splitlines():
        if line.startswith("CUDA: registered at "):
            return not _torch_s_own(line[len("CUDA: registered at "):].split(" :: ")[0])
    return False


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


def install(patch) -> None:
    """A registration through ``torch.library`` makes the device read the registry again, through ``patch``."""
    library = torch.library.Library
    forget()
    for name in ("impl", "_destroy"):
        original = vars(library).get(name)
        if callable(original):
            patch.setattr(library, name, _forgetting(original))
    patch.on_undo(forget)


def _forgetting(original):
    def method(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        finally:
            forget()

    method.__name__, method.__doc__, method.__wrapped__ = original.__name__, original.__doc__, original
    return method
