"""The exceptions kwshim raises.

Each subclasses the builtin it refines, so code written against compiled Triton or plain
Python (``except TypeError``, ``except KeyError``, ``except ImportError``) still catches it.
"""

__all__ = [
    "LaunchArgumentError",
    "UnknownLaunchKeywordError",
    "PlacementError",
    "TritonNotFoundError",
    "UnsupportedTritonError",
    "UnsupportedSignatureError",
    "LaunchOptionError",
    "ConfigDivergenceError",
    "AutotuneSideEffectError",
    "UncompilableError",
    "MissingNumericsDependencyError",
    "GridDivergenceError",
    "OutOfBoundsError",
]


class LaunchArgumentError(TypeError):
    """A kernel launch binds its arguments badly: a value given twice, too many positional
    values, or a required parameter that nothing supplies. The message names the kernel and
    the parameter.

    Added in 0.1.0.
    """


class UnknownLaunchKeywordError(LaunchArgumentError, KeyError):
    """A launch keyword that is neither a parameter of the kernel nor a launch option of the
    installed Triton (most often a typo).

    Compiled Triton 3.x raises ``KeyError`` here and Python raises ``TypeError``; this error is
    both, so either ``except`` clause catches it.

    Added in 0.1.0.
    """

    def __init__(self, message, keywords=()):
        super().__init__(message)
        self.keywords = tuple(keywords)

    def __str__(self):
        # KeyError.__str__ would show the message in quotes; show it as plain text.
        return str(self.args[0]) if self.args else ""


class PlacementError(TypeError):
    """``kwsafe`` was applied to something that is not a Triton kernel, most often because
    ``@kwsafe`` was written in the wrong place in the decorator stack.

    Added in 0.1.0.
    """


class TritonNotFoundError(ImportError):
    """No ``triton`` module is importable in this environment.

    Added in 0.1.0.
    """


class UnsupportedTritonError(RuntimeError):
    """The installed Triton cannot be made to follow the contract (Triton 2.1.0 has no
    ``TRITON_INTERPRET`` interpreter at all).

    Added in 0.1.0.
    """


class UnsupportedSignatureError(PlacementError):
    """The kernel declares a kind of parameter that the installed Triton's compiler refuses
    (keyword-only parameters before 3.9), or that kwshim cannot bind (variadic parameters).
    Refused when the kernel is wrapped, so that no launch can silently use a default.

    Added in 0.2.0.
    """


class LaunchOptionError(AssertionError):
    """A launch option's value is refused as the target backend refuses it (CUDA:
    ``num_warps must be a power of 2``), or a deprecated launch keyword (``stream``) is given.
    Compiled Triton raises ``AssertionError`` here, and so does this.

    Added in 0.2.0.
    """


class ConfigDivergenceError(AssertionError):
    """Under the ``"verify"`` autotune policy, two Configs of one autotuned kernel left a tensor
    argument different. The message names the kernel, both Configs, the parameter, how many
    elements differ, the largest absolute difference and the first differing index.
    The tensors are back to their pre-launch state when it is raised.

    Added in 0.2.0.
    """


class AutotuneSideEffectError(AssertionError):
    """Under the ``"verify"`` autotune policy, the first (tuned) launch of an autotuned kernel
    leaves a tensor different from one clean launch of the chosen Config: the tuning runs
    changed it, as they do on a GPU (an accumulator without ``reset_to_zero``, an in-place
    update without ``restore_value``). The message names the kernel, the parameter, the size of
    the difference and the remedy. The tensors are back to their pre-launch state when it is raised.

    Added in 0.2.0.
    """


class UncompilableError(TypeError):
    """An interpreted kernel does what compiled Triton refuses for an NVIDIA GPU (measured on the
    H200, sm_90): arithmetic, comparisons or reductions on fp8 values, a conversion between two fp8
    formats or between fp8 and fp64, a rounding mode the target has no instruction for. Compiled
    Triton fails to compile such a kernel; the interpreter would have run it.

    Added in 0.2.0.
    """


class MissingNumericsDependencyError(ImportError):
    """A kernel computes on bf16 or fp8 values and ``ml_dtypes``, which holds them as real NumPy
    floats, is not installed (without it the interpreter computes on their raw bits).

    Added in 0.2.0.
    """


class GridDivergenceError(AssertionError):
    """Under ``grid="check"``, the batched run of a launch's programs left a tensor argument with
    other bits than Triton's own loop, one program after another, left it. The message names the
    kernel, the argument and the first differing index; the loop's result is what the tensors hold.

    Added in 0.2.0.
    """


class OutOfBoundsError(RuntimeError):
    """An interpreted kernel loaded, stored or applied an atomic at an address outside the memory
    its launch may touch (the storages of the tensors it was handed, or any live tensor's), found
    before the access was made. The message names what compute-sanitizer's memcheck names on a GPU:
    the kernel, the source line, the program, the access's size, the argument, the offset in elements
    and bytes, and how far outside its allocation. Stores of the programs before it are made; the
    one that failed wrote nothing. ``check_bounds=False`` turns the check off.

    Added in 0.2.0.
    """
