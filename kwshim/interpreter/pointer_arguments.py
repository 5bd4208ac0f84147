"""Pointer arguments that are not tensors, as compiled Triton takes them.

Compiled Triton reads a pointer argument from any object with ``data_ptr()`` and ``dtype`` (its
specialization and launcher ask nothing more): FlagGems passes its ``StridedBuffer``, an offset view
with its own shape and strides, to every pointwise kernel. The interpreter copies each such argument
to the host and back as a torch tensor (``untyped_storage``, ``.cpu()``, ``.data.copy_``), and fails
on anything else. While the switch is on, an object with ``data_ptr`` that is no tensor passes the
interpreter's copies untouched (its memory is the CPU's already) and reaches the kernel as the
pointer its ``data_ptr()`` and ``dtype`` make, as compiled. Triton 2.x copies inside its grid call,
which this does not reach. ``grid="check"`` compares the tensors a launch reaches, which such an
object's memory is not.
"""

__all__ = ["install", "is_foreign_pointer"]


class _Held:
    """A foreign pointer object, held out of the interpreter's copies (no ``data_ptr``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def is_foreign_pointer(value) -> bool:
    """An object compiled Triton takes as a pointer (``data_ptr`` and ``dtype``) that is no tensor."""
    import torch

    return hasattr(value, "data_ptr") and hasattr(value, "dtype") and not isinstance(value, torch.Tensor)


def _held(values):
    return [_Held(value) if is_foreign_pointer(value) else value for value in values]


def _released(values):
    return [value.value if isinstance(value, _Held) else value for value in values]


def install(patch, executor) -> None:
    """The interpreter's argument copies (``GridExecutor._init_args_hst``, ``_restore_args_dev``)
    passing foreign pointer objects through, through ``patch``; nothing where the release has neither."""
    copy_in, copy_out = vars(executor).get("_init_args_hst"), vars(executor).get("_restore_args_dev")
    if not callable(copy_in) or not callable(copy_out):
        return

    def _init_args_hst(self, args_dev, kwargs):
        if not any(map(is_foreign_pointer, (*args_dev, *kwargs.values()))):
            return copy_in(self, args_dev, kwargs)
        keys = list(kwargs)
        args_hst, kwargs_hst = copy_in(self, _held(args_dev), dict(zip(keys, _held(kwargs.values()))))
        return _released(args_hst), dict(zip(kwargs_hst, _released(kwargs_hst.values())))

    def _restore_args_dev(self, args_dev, args_hst, kwargs, kwargs_hst):
        if not any(map(is_foreign_pointer, (*args_dev, *kwargs.values()))):
            return copy_out(self, args_dev, args_hst, kwargs, kwargs_hst)
        return copy_out(self, _held(args_dev), _held(args_hst), dict(zip(kwargs, _held(kwargs.values()))),
                        dict(zip(kwargs_hst, _held(kwargs_hst.values()))))

    patch.setattr(executor, "_init_args_hst", _init_args_hst)
    patch.setattr(executor, "_restore_args_dev", _restore_args_dev)
