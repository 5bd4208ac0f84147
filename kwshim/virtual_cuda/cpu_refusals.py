"""torch's own refusals of CPU tensors, lifted where torch runs the same eager code on both devices.

A test that calls ``flex_attention`` without ``torch.compile`` runs torch's unfused implementation
(the scores matrix materialized, then softmax and the matmuls), forward and backward, on CUDA and on
a CPU alike. Only ``_validate_device`` refuses a CPU input that needs a gradient ("FlexAttention does
not support backward on CPU"): the refusal is for the fused CPU kernel that ``torch.compile`` makes,
which has no backward. On the virtual device the inputs are the device's tensors, so an eager call
runs as it does on CUDA. Inside a Dynamo trace (``torch.compile``) the refusal stands: there the
fused CPU kernel would run, and it has no backward (with ``fullgraph=True`` the call fails as on a
CPU; without it Dynamo runs the call eagerly, which is the unfused implementation again).

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


def install(patch) -> None:
    """The refusals lifted, through ``patch``."""
    try:
        from torch.nn.attention import flex_attention
    except ImportError:  # torch before 2.5: no flex attention
        return
    validate_device = getattr(flex_attention, "_validate_device", None)
    if callable(validate_device):
        patch.setattr(flex_attention, "_validate_device", _eager_flex_attention_allowed(validate_device))
