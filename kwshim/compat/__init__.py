"""The one compatibility layer: what kwshim knows about the installed Triton, each fact a named probe
of its behaviour (computed once), never a version string. Nothing here imports Triton at import time."""

from .backends import *  # noqa: F401,F403
from .backends import __all__ as _backends
from .classes import *  # noqa: F401,F403
from .classes import __all__ as _classes
from .interpreter import *  # noqa: F401,F403
from .interpreter import __all__ as _interpreter

__all__ = [*_classes, *_interpreter, *_backends]
