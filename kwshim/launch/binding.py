"""How a kernel's launch arguments bind, as compiled Triton 3.x binds them.

A ``BindingPlan`` is built once per kernel. From the kernel's own signature it generates plain
Python functions (the technique Triton's ``JITFunction`` uses for its binder), so a good launch
costs one ordinary call: Python itself binds positional values, keywords and defaults. Every
fault goes to ``BindingPlan.fail``, which is slow and exact: it names the kernel and the
parameter, in compiled Triton's order (binding errors first, unknown keywords after).
"""

import inspect
import itertools
import keyword
import linecache

from ..errors import LaunchArgumentError, UnknownLaunchKeywordError, UnsupportedSignatureError

__all__ = ["BindingPlan", "check_signature"]

_P = inspect.Parameter


class Refused(TypeError):
    """Raised by a generated function for a launch keyword it does not know; callers answer it
    (like a binding ``TypeError``) with ``BindingPlan.fail``."""


def _refuse():
    raise Refused


class BindingPlan:
    """The binding of one kernel: its parameters and the launch options it consumes.

    - ``bind(*args, **kwargs)`` returns the values of the positional-or-keyword parameters in
      declared order (a tuple), or ``(tuple, dict)`` when the kernel has keyword-only parameters
      (``has_keyword_only``); it raises a ``LaunchArgumentError`` for a bad launch.
    - ``fast_bind`` is the same without the guard: for a bad launch it raises a plain
      ``TypeError``, which the caller answers with ``fail(args, kwargs)``. Launch paths call it
      inline, so that no frame of kwshim's sits under the running kernel but the launch itself.
    """

    def __init__(self, kernel_name, function, launch_options):
        self.kernel_name = kernel_name
        #: a set shared with ``kwshim.options`` is kept as it is (it follows the target in force)
        self.launch_options = launch_options if isinstance(launch_options, (set, frozenset)) else frozenset(
            launch_options)
        self.module = getattr(function, "__module__", None) or "kwshim"
        self.qualname = getattr(function, "__qualname__", kernel_name)
        params = list(inspect.signature(function).parameters.values())
        variadic = [p.name for p in params if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)]
        if variadic:
            raise UnsupportedSignatureError(
                f"{kernel_name}() declares *{variadic[0]}: kwsafe binds named parameters only, so it "
                "cannot bind this kernel's launches")
        self.parameters = params
        self.names = frozenset(p.name for p in params)
        self.positional = [p.name for p in params if p.kind is not _P.KEYWORD_ONLY]
        self.keyword_only = [p.name for p in params if p.kind is _P.KEYWORD_ONLY]
        self.has_keyword_only = bool(self.keyword_only)
        #: a launch of exactly this many positional values and no keyword binds as it is
        #: (-1: never, when keyword-only parameters must be given by keyword)
        self.arity = -1 if self.keyword_only else len(self.positional)
        self.fast_bind = fast_bind = self._generate()

        def bind(*args, **kwargs):
            try:
                return fast_bind(*args, **kwargs)
            except TypeError:
                self.fail(args, kwargs)

        self.bind = bind

    def _generate(self):
        taken = set(self.names)
        extra, known, refuse, defaults = (_unused(taken, stem) for stem in ("options", "known", "refuse", "defaults"))

        def declare(p):
            return p.name if p.default is _P.empty else f"{p.name}={defaults}[{p.name!r}]"

        signature = [declare(p) for p in self.parameters if p.kind is not _P.KEYWORD_ONLY]
        if self.keyword_only:
            signature += ["*"] + [declare(p) for p in self.parameters if p.kind is _P.KEYWORD_ONLY]
        signature.append("**" + extra)
        positional = "".join(f"{name}, " for name in self.positional)
        keyword_only = ", ".join(f"{n!r}: {n}" for n in self.keyword_only)
        result = f"({positional})" + (f", {{{keyword_only}}}" if self.keyword_only else "")
        name = self.kernel_name if self.kernel_name.isidentifier() and not keyword.iskeyword(
            self.kernel_name) else "kernel"
        source = (
            f"def {name}({', '.join(signature)}):\n"
            f"    if {extra} and not {known}.issuperset({extra}):\n"
            f"        {refuse}()\n"
            f"    return {result}\n")
        namespace = {defaults: {p.name: p.default for p in self.parameters if p.default is not _P.empty},
                     known: self.launch_options, refuse: _refuse}
        filename = f"<kwshim binder of {self.module}.{self.qualname} #{next(_serial)}>"
        # As attrs does for the methods it generates: the source goes into linecache, so that
        # tracebacks and inspect.getsource show the binder's lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
        binder = namespace[name]
        binder.__module__ = self.module
        binder.__qualname__ = f"{self.qualname}.<kwshim binder>"
        return binder

    def fail(self, args, kwargs, check_options=None):
        """Raise the error compiled Triton would raise for this launch, naming the kernel, in
        compiled Triton's order: binding errors, then option values (``check_options``), then
        unknown keywords. Raised without the internal exception that led here."""
        try:
            self._diagnose(args, kwargs, check_options)
        except (LaunchArgumentError, AssertionError) as error:
            raise error from None

    def _diagnose(self, args, kwargs, check_options):
        name = self.kernel_name
        given_positionally = set(self.positional[: len(args)])
        for key in kwargs:
            if key in given_positionally:
                raise LaunchArgumentError(f"{name}() got multiple values for argument '{key}'")
        if len(args) > len(self.positional):
            n = len(self.positional)
            raise LaunchArgumentError(
                f"{name}() takes {n} positional argument{'s' if n != 1 else ''} "
                f"but {len(args)} were given")
        bound = given_positionally | (self.names & kwargs.keys())
        missing = [p.name for p in self.parameters if p.default is _P.empty and p.name not in bound]
        if missing:
            raise LaunchArgumentError(
                f"{name}() missing {len(missing)} required argument{'s' if len(missing) > 1 else ''}: "
                f"{_quoted_list(missing)}")
        if check_options is not None:
            check_options(kwargs)
        unknown = [key for key in kwargs if key not in self.names and key not in self.launch_options]
        if unknown:
            raise UnknownLaunchKeywordError(
                f"Keyword argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                f"{'were' if len(unknown) > 1 else 'was'} specified but unrecognised: "
                f"{name}() has no parameter {_quoted_list(unknown, 'or')} and "
                f"{'they are not launch options' if len(unknown) > 1 else 'it is not a launch option'} "
                "of the installed Triton", unknown)
        raise AssertionError(f"kwshim: a launch of {name}() was refused without a fault")  # pragma: no cover


_serial = itertools.count(1)


def check_signature(name, fn, accepted):
    """Refuse, when the kernel is wrapped, a signature the installed compiler would refuse
    (``accepted``: ``compat.compiler_accepts()``): a launch must never silently use a parameter's
    default instead of the value given."""
    for param in inspect.signature(fn).parameters.values():
        if param.kind is _P.KEYWORD_ONLY and "keyword_only" not in accepted:
            raise UnsupportedSignatureError(
                f"{name}() declares the keyword-only parameter '{param.name}': the installed Triton's "
                "compiler refuses keyword-only kernel parameters (compiled Triton before 3.9 raises "
                "CompilationError), and its interpreter would silently launch with the default. "
                f"Declare '{param.name}' before any '*' in the signature.")
        if param.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            star = "*" if param.kind is _P.VAR_POSITIONAL else "**"
            if "variadic" in accepted and star == "*":
                reason = ("the installed Triton's compiler accepts variadic kernels, but kwsafe binds "
                          "named parameters only and cannot bind this one's launches")
            else:
                reason = "the installed Triton's compiler takes no variadic kernel parameters"
            raise UnsupportedSignatureError(f"{name}() declares {star}{param.name}: {reason}")


def _unused(taken, stem):
    name = f"_kwshim_{stem}"
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _quoted_list(items, conjunction="and"):
    quoted = [f"'{item}'" for item in items]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" {conjunction} " + quoted[-1]
