"""Tensor state for ``verify`` and ``grid="check"``: which tensors a launch can reach, their values
at one moment, how two states differ, and writing back only what changed.

A state is taken of the whole storage under each tensor, not only of the elements a view shows: a
kernel given a strided view can write between its elements, and that must be seen and undone too.
kwshim writes only into tensors a kernel changed, and writes as the interpreter does (no autograd
version bump; legal for leaves that require grad and for inference tensors).
"""

import contextlib
from typing import Any, NamedTuple, Optional

from .settings import tolerances

__all__ = ["launch_leaves", "reachable_tensors", "storage_bytes", "State", "Difference", "difference", "describe"]


def launch_leaves(names, args, kwargs):
    """(name, value) for every value a launch's arguments hold that is no tuple or list: positional
    and keyword arguments (``names``: the kernel's parameters), tuple elements (``name[i]``), and for
    a host ``TensorDescriptor`` or a ``triton.reinterpret`` wrapper, the tensor inside (``name.base``)."""
    import torch

    def visit(name, value):
        if isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                yield from visit(f"{name}[{i}]", item)
        elif not isinstance(value, torch.Tensor) and isinstance(getattr(value, "base", None), torch.Tensor):
            yield f"{name}.base", value.base  # a descriptor, a reinterpreted tensor
        else:
            yield name, value

    for i, value in enumerate(args):
        yield from visit(names[i] if i < len(names) else f"#{i}", value)
    for name, value in kwargs.items():
        yield from visit(name, value)


def reachable_tensors(names, args, kwargs):
    """(name, tensor) for every tensor a launch can reach (``launch_leaves``), and, for a view that
    does not cover its storage, the whole storage under it (``name.storage``, in the view's dtype)."""
    import torch

    found, seen, storages = [], set(), set()
    for name, tensor in launch_leaves(names, args, kwargs):
        if not isinstance(tensor, torch.Tensor) or id(tensor) in seen:
            continue
        seen.add(id(tensor))
        found.append((name, tensor))
        storage = tensor.untyped_storage()
        if storage.data_ptr() in storages:  # already whole: a tensor over all of it, or its storage
            continue
        storages.add(storage.data_ptr())
        if not _covers(tensor, storage):
            found.append((f"{name}.storage", _whole_storage(tensor, storage)))
    return found


def _covers(tensor, storage):
    """Whether ``tensor``'s elements are all of its storage, each once."""
    return (tensor.storage_offset() == 0 and tensor.is_contiguous()
            and tensor.numel() * tensor.element_size() == storage.nbytes())


def _whole_storage(tensor, storage):
    """A flat tensor of ``tensor``'s dtype over all of ``storage`` (a new tensor object: writing
    through it bumps no version counter of the view's)."""
    import torch

    count = storage.nbytes() // tensor.element_size()
    with torch.inference_mode() if tensor.is_inference() else contextlib.nullcontext():
        return torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(storage, 0, (count,), (1,))


def _same(a, b):
    """Bit-for-bit the same values (NaN where NaN): nothing to write back."""
    import torch

    if torch.equal(a, b):
        return True
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return False


def _write(tensor, values):
    """Put ``values`` back into ``tensor`` as the interpreter writes."""
    import torch

    if tensor.is_inference():
        with torch.inference_mode():
            tensor.copy_(values)
    else:
        tensor.data.copy_(values)


def storage_bytes(tensors):
    """The bytes of the storages ``tensors`` (``(name, tensor)``) reach, each storage once."""
    storages = {}
    for _, tensor in tensors:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


class State:
    """The values of some tensors at one moment; ``put`` writes back only the tensors that differ."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.values = [tensor.clone() for _, tensor in tensors]

    def put(self, same=None):
        """Write back the tensors that differ (``same(a, b)``: by default the same values, NaN where NaN)."""
        same = same or _same
        for (_, tensor), values in zip(self.tensors, self.values):
            if not same(tensor, values):
                _write(tensor, values)

    def is_current(self):
        return all(_same(tensor, values) for (_, tensor), values in zip(self.tensors, self.values))


class Difference(NamedTuple):
    """Where two tensors disagree: how many elements, of how many, the largest absolute
    difference, the first differing index, the two values where the difference is largest
    (``want``, ``got``), and
    whether they were compared with tolerances (floating point)."""

    differing: int
    total: int
    largest: float
    first: tuple
    want: Any = None
    got: Any = None
    tolerant: bool = False
    dtype: str = ""


def difference(want, got, settings) -> Optional[Difference]:
    """None when ``got`` agrees with ``want`` (exact for integers and booleans, ``torch.isclose``
    for floating point, NaN in the same place agreeing unless ``equal_nan`` is off); otherwise a
    ``Difference``."""
    import torch

    if want.shape != got.shape:
        return Difference(got.numel(), want.numel(), float("nan"), ())
    if want.dtype.is_floating_point or want.dtype.is_complex:
        rtol, atol = tolerances(settings, str(want.dtype).replace("torch.", ""))
        if want.element_size() == 1:  # fp8: torch has no isclose for it; float32 holds every value exactly
            want, got = want.to(torch.float32), got.to(torch.float32)
        same = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=settings.equal_nan)
    else:
        same = got == want
    if bool(same.all()):
        return None
    differ = ~same
    index = tuple(int(i) for i in torch.nonzero(differ)[0].tolist())
    tolerant = bool(want.dtype.is_floating_point or want.dtype.is_complex)
    if want.dtype == torch.bool:
        return Difference(int(differ.sum()), want.numel(), 1.0, index, want[index].item(), got[index].item())
    delta = (got.to(torch.float64) - want.to(torch.float64)).abs()
    delta = torch.where(differ, torch.nan_to_num(delta, nan=float("inf")), torch.zeros_like(delta))
    at = tuple(int(i) for i in torch.unravel_index(torch.argmax(delta), delta.shape)) if delta.dim() else ()
    largest = float((got.to(torch.float64) - want.to(torch.float64)).abs()[at])
    return Difference(int(differ.sum()), want.numel(), largest, index, want[at].item(), got[at].item(), tolerant,
                      str(want.dtype).replace("torch.", ""))


def describe(found: Difference, settings=None) -> str:
    """``difference``'s answer in words; with ``settings``, the tolerances it was compared with and
    how to widen them, where it compared floating point."""
    text = f"{found.differing} of {found.total} elements differ, largest absolute difference {found.largest}"
    if found.want is not None:
        text += f" ({found.want!r} against {found.got!r})"
    text += f", first at index {found.first}"
    if settings is not None and found.tolerant:
        rtol, atol = tolerances(settings, found.dtype)
        picked = f" ({found.dtype}'s, as torch.testing.assert_close picks them)" \
            if settings.rtol is None and settings.atol is None else ""
        text += (f"; compared with rtol={rtol}, atol={atol}{picked}: if it is rounding (a sum in another "
                 f"order), allow it with --kwshim-atol/--kwshim-rtol (kwshim run --atol/--rtol, activate(atol=...))")
    return text
