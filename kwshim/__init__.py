"""kwshim: Triton's interpreter binds kernel launch arguments exactly as compiled Triton does.

``import kwshim`` works without Triton (for ``kwshim check``); ``kwsafe`` imports it on use.
"""

from .decorator import kwsafe
from .errors import (AutotuneSideEffectError, ConfigDivergenceError, LaunchArgumentError, LaunchOptionError,
                     PlacementError, TritonNotFoundError, UnknownLaunchKeywordError, UnsupportedSignatureError,
                     UnsupportedTritonError)
from .kernel import KwsafeKernel
from .options import get_target, set_target
from .retrofit import kwsafe_module
from .switch import activate

__version__ = "0.2.0.dev0"

__all__ = [
    "kwsafe",
    "kwsafe_module",
    "activate",
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
    "__version__",
]
