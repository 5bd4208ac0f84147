"""kwshim: Triton's interpreter binds kernel launch arguments exactly as compiled Triton does.

``import kwshim`` works without Triton (for ``kwshim check``); ``kwsafe`` imports it on use.
"""

from .decorator import KwsafeKernel, kwsafe
from .retrofit import kwsafe_module
from .errors import (LaunchArgumentError, PlacementError, TritonNotFoundError, UnknownLaunchKeywordError,
                     UnsupportedTritonError)

__version__ = "0.1.0"

__all__ = [
    "kwsafe",
    "kwsafe_module",
    "KwsafeKernel",
    "LaunchArgumentError",
    "UnknownLaunchKeywordError",
    "PlacementError",
    "TritonNotFoundError",
    "UnsupportedTritonError",
    "__version__",
]
