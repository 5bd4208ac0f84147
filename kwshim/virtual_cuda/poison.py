"""``empty_fill="poison"``: memory the device hands out uninitialized (``torch.empty``,
``empty_like``, ``empty_strided``, ``new_empty``, ``new_empty_strided`` on the device) is filled
with a poison pattern, as torch's ``fill_uninitialized_memory`` fills it: NaN for floating point and
complex, the largest value for integers, True for booleans. A kernel that reads what nobody wrote
then reads NaN (or a huge index) and fails visibly, where the CPU's allocator often hands back zeros
or a freed tensor's values, and a test passes by luck. Off by default (``"none"``): filling costs a
pass over every new tensor.
"""

import torch

from ..settings import in_force

__all__ = ["EMPTY_OPERATIONS", "EMPTY_FACTORIES", "poisoned", "wanted"]

_aten = torch.ops.aten
#: the operations that make a tensor without writing it, as a device tensor's dispatch sees them
EMPTY_OPERATIONS = frozenset(op for op in (
    getattr(_aten.empty, "memory_format", None), getattr(_aten.empty_like, "default", None),
    getattr(_aten.empty_strided, "default", None), getattr(_aten.new_empty, "default", None),
    getattr(_aten.new_empty_strided, "default", None)) if op is not None)
#: the factories (``torch.NAME``, ``Tensor.NAME``) that make one, as the device's placement sees them
EMPTY_FACTORIES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


def wanted() -> bool:
    """Whether the settings in force ask for the poison."""
    return in_force().empty_fill == "poison"


def poisoned(tensor):
    """``tensor`` filled with the poison pattern of its dtype (in place, no autograd record)."""
    dtype = tensor.dtype
    with torch.no_grad():
        if dtype.is_floating_point or dtype.is_complex:
            tensor.fill_(float("nan"))
        elif dtype == torch.bool:
            tensor.fill_(True)
        else:
            tensor.fill_(torch.iinfo(dtype).max)
    return tensor
