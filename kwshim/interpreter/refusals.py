"""What compiled Triton refuses to compile, raised as it raises it: a ``CompilationError``.

Compiled Triton runs its front end (``triton.language``'s ``core``, ``semantic``, ``standard``)
before anything runs, and wraps whatever it raises in a ``CompilationError``: a ``tl.dot`` smaller
than the target's smallest, a reshape to another element count, ``tl.arange`` of a length that is
not a power of 2. The interpreter runs the same front end as each program runs and wraps what it
raises in its ``InterpreterError``, so a suite that expects the compiled refusal
(``pytest.raises(CompilationError)``) sees another class. kwshim's own refusals of what compiled
Triton cannot lower (``UncompilableError``) are the same case.

``as_compiled``: such an ``InterpreterError`` as ``refusal_class()``, which is both the
interpreter's ``InterpreterError`` and compiled Triton's ``CompilationError``, with its message.
What a program raises at run time (NumPy, the interpreter's builder, the kernel's own ``assert``)
stays the interpreter's.
"""

import functools
import importlib
import os
import sys

__all__ = ["as_compiled", "refusal_class", "refuse_lowering", "type_name"]

_INTERPRETER = "triton.runtime.interpreter"
_FRONT_END = os.sep + os.path.join("triton", "language") + os.sep


def refuse_lowering(what, hint):
    """Raise ``UncompilableError``: compiled Triton cannot lower ``what`` for sm_90; ``hint`` says what to do."""
    from ..errors import UncompilableError

    raise UncompilableError(f"kwshim: compiled Triton cannot lower {what} for an NVIDIA GPU (sm_90: measured on "
                            f"the H200, Triton 3.6); {hint}")


def type_name(tt):
    """A Triton type's name (``fp8e5``), for a message."""
    return getattr(tt, "name", str(tt))


@functools.lru_cache(maxsize=None)
def refusal_class():
    """A class that is the interpreter's ``InterpreterError`` and compiled Triton's ``CompilationError``
    (of the installed release), or None where either is missing."""
    interpreter_error = getattr(sys.modules.get(_INTERPRETER), "InterpreterError", None)
    try:
        compilation_error = importlib.import_module("triton.compiler.errors").CompilationError
    except (ImportError, AttributeError):
        return None
    if interpreter_error is None or issubclass(interpreter_error, compilation_error):
        return None

    class CompilationRefused(compilation_error, interpreter_error):
        """What compiled Triton fails to compile, refused by the interpreter's front end."""

        def __init__(self, message):
            self.src, self.node, self.error_message = None, None, message
            self.message = message

        def __str__(self):
            return self.message

        def __reduce__(self):
            return type(self), (self.message,)

    CompilationRefused.__module__ = __name__
    return CompilationRefused


def as_compiled(error):
    """``error`` (an ``InterpreterError``) as ``refusal_class()`` where the front end raised its
    innermost cause (or kwshim refused what compiled Triton cannot lower); else None."""
    from ..errors import UncompilableError

    refused = refusal_class()
    if refused is None or isinstance(error, refused):
        return None
    cause, seen = error, set()
    while (cause.__cause__ is not None or cause.__context__ is not None) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    if not isinstance(cause, UncompilableError) and not _raised_by_front_end(cause):
        return None
    return refused(str(error))


def _raised_by_front_end(error):
    trace = error.__traceback__
    if trace is None:
        return False
    while trace.tb_next is not None:
        trace = trace.tb_next
    return _FRONT_END in trace.tb_frame.f_code.co_filename
