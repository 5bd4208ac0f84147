"""torch's own refusals of CPU tensors, lifted where torch runs the same eager code on both devices.

A test that calls ``flex_attention`` without ``torch.compile`` runs torch's unfused implementation
(the scores matrix materialized, then softmax and the matmuls), forward and backward, on CUDA and on
a CPU alike. Only ``_validate_device`` refuses a CPU input that needs a gradient ("FlexAttention does
not support backward on CPU"): the refusal is for the fused CPU kernel that ``torch.compile`` makes,
which has no backward. On the virtual device the inputs are the device's tensors, so an eager call
runs as it does on CUDA. Inside a Dynamo trace (``torch.compile``) the refusal stands: there the
fused CPU kernel would run, and it has no backward (with ``fullgraph=True`` the call fails as on a
CPU; without it Dynamo runs the call eagerly, which is the unfused implementation again).

Eager flex attention runs its operator through Dynamo (``torch.compile(..., fullgraph=True)``), which
cannot trace a device tensor: on the device, ``flex_attention`` runs on CPU copies of its inputs and
its block mask, and its outputs are copied back, each copy differentiable as ``.cpu()`` and
``.cuda()`` are; the device tensors a ``score_mod`` or ``mask_mod`` captures in its closure are
handed in as their CPU memory (one captured through a module global is not seen).

Probed, not read from a version: where torch has no ``_validate_device`` there is nothing to lift.
"""

__all__ = ["install"]


def _eager_flex_attention_allowed(validate_device):
    """``validate_device`` passing CPU inputs outside a Dynamo trace."""
    import torch

    def validate(query, key, value):
        if query.device.type == "cpu" and not torch.compiler.is_compiling():
            return None
        return validate_device(query, key, value)

    validate.__name__, validate.__doc__, validate.__wrapped__ = "_validate_device", validate_device.__doc__, \
        validate_device
    return validate


def _host_captures(function):
    """``function`` (a ``score_mod`` or ``mask_mod``) with the device tensors it captures in its
    closure as the CPU memory they are (Dynamo traces it, and cannot trace a device tensor)."""
    import types

    from .device_tensor import DeviceTensor, host_view

    cells = getattr(function, "__closure__", None) or ()
    if not any(isinstance(cell.cell_contents, DeviceTensor) for cell in cells if _filled(cell)):
        return function
    closure = tuple(types.CellType(host_view(cell.cell_contents)) if _filled(cell)
                    and isinstance(cell.cell_contents, DeviceTensor) else cell for cell in cells)
    return types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              closure)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:  # a cell not yet bound
        return False
    return True


def _on_host_copies(flex_attention):
    """``flex_attention`` taking device tensors through CPU copies (``device_tensor``)."""
    from .device_tensor import DeviceTensor, to_device, to_host

    def flex(query, key, value, *args, **kwargs):
        if not isinstance(query, DeviceTensor):
            return flex_attention(query, key, value, *args, **kwargs)

        def host(value):  # a BlockMask (it has .to and .as_tuple) on the CPU, and its mask_mod's captures
            if hasattr(value, "as_tuple") and hasattr(value, "to"):
                value = value.to("cpu")
                if callable(getattr(value, "mask_mod", None)):
                    value.mask_mod = _host_captures(value.mask_mod)
                return value
            return _host_captures(value) if callable(value) else value

        args, kwargs = [host(value) for value in args], {k: host(v) for k, v in kwargs.items()}
        out = flex_attention(to_host(query), to_host(key), to_host(value), *args, **kwargs)
        return tuple(to_device(item) if hasattr(item, "dim") else item for item in out) if isinstance(out, tuple) \
            else to_device(out)

    flex.__name__, flex.__doc__, flex.__wrapped__ = "flex_attention", flex_attention.__doc__, flex_attention
    return flex


def install(patch) -> None:
    """The refusals lifted, through ``patch``."""
    try:
        from torch.nn.attention import flex_attention
    except ImportError:  # torch before 2.5: no flex attention
        return
    validate_device = getattr(flex_attention, "_validate_device", None)
    if callable(validate_device):
        patch.setattr(flex_attention, "_validate_device", _eager_flex_attention_allowed(validate_device))
        patch.setattr(flex_attention, "flex_attention", _on_host_copies(flex_attention.flex_attention))
