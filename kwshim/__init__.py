"""kwshim: Triton's interpreter binds kernel launch arguments exactly as compiled Triton does.

``import kwshim`` needs wrapt alone (for ``kwshim check`` and the flake8 plugin): Triton is imported
on first use, and NumPy and torch only where the interpreter runs. The house is in
``docs/architecture.md``.
"""

from .doors.decorator import kwsafe
from .doors.retrofit import kwsafe_module
from .doors.switch import activate, active_settings
from .errors import (AutotuneSideEffectError, ConfigDivergenceError, GridDivergenceError, LaunchArgumentError,
                     LaunchOptionError, MissingNumericsDependencyError, OutOfBoundsError, PlacementError,
                     TritonNotFoundError, UncompilableError, UnknownLaunchKeywordError, UnsupportedSignatureError,
                     UnsupportedTritonError)
from .launch.kernel import KwsafeKernel
from .launch.options import get_target, set_target
from .settings import Settings
from .version import __version__


__all__ = [
    "kwsafe",
    "kwsafe_module",
    "activate",
    "active_settings",
    "Settings",
    "set_target",
    "get_target",
    "KwsafeKernel",
    "LaunchArgumentError",
    "UnknownLaunchKeywordError",
    "LaunchOptionError",
    "PlacementError",
    "UnsupportedSignatureError",
    "ConfigDivergenceError",
    "AutotuneSideEffectError",
    "TritonNotFoundError",
    "UnsupportedTritonError",
    "UncompilableError",
    "MissingNumericsDependencyError",
    "GridDivergenceError",
    "OutOfBoundsError",
    "__version__",
]
