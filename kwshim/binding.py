"""How a kernel's launch arguments bind, as compiled Triton 3.x binds them.

A ``BindingPlan`` is built once per kernel. Its ``bind`` is a function generated from the
kernel's own signature (the technique Triton's ``JITFunction`` uses for its binder), so a good
launch costs one plain Python call. Every fault goes to ``BindingPlan.fail``, which is slow and
exact: it names the kernel and the parameter, in compiled Triton's order (binding errors first,
unknown keywords after).
"""

import inspect
import keyword

from .errors import LaunchArgumentError, PlacementError, UnknownLaunchKeywordError

__all__ = ["BindingPlan"]

_P = inspect.Parameter


class _Refused(TypeError):
    """Raised inside a generated binder so that every fault takes the one slow, exact path."""


class BindingPlan:
    """The binding of one kernel: its parameters, the launch options it ignores, and a binder.

    ``bind(*args, **kwargs)`` returns the values of the positional-or-keyword parameters in
    declared order (a tuple), or ``(tuple, dict)`` when the kernel has keyword-only parameters
    (``has_keyword_only``); it raises a ``LaunchArgumentError`` for a bad launch.
    """

    def __init__(self, kernel_name, function, launch_options):
        self.kernel_name = kernel_name
        self.launch_options = frozenset(launch_options)
        params = list(inspect.signature(function).parameters.values())
        variadic = [p.name for p in params if p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)]
        if variadic:
            raise PlacementError(
                f"{kernel_name}() declares *{variadic[0]}: Triton kernels take no variadic "
                "parameters, so kwsafe cannot bind its launches")
        self.parameters = params
        self.positional = [p.name for p in params if p.kind is not _P.KEYWORD_ONLY]
        self.keyword_only = [p.name for p in params if p.kind is _P.KEYWORD_ONLY]
        self.has_keyword_only = bool(self.keyword_only)
        self.bind = self._generate_binder()

    def _generate_binder(self):
        defaults = {p.name: p.default for p in self.parameters if p.default is not _P.empty}
        known = self.launch_options
        extra = _unused_name({p.name for p in self.parameters}, "launch_options")

        def refuse():
            raise _Refused

        def declare(p):
            return p.name if p.default is _P.empty else f"{p.name}=_kwshim_defaults[{p.name!r}]"

        signature = [declare(p) for p in self.parameters if p.kind is not _P.KEYWORD_ONLY]
        if self.keyword_only:
            signature += ["*"] + [declare(p) for p in self.parameters if p.kind is _P.KEYWORD_ONLY]
        signature.append("**" + extra)
        values = "".join(f"{name}, " for name in self.positional)
        result = f"({values})"
        if self.keyword_only:
            result += ", {" + ", ".join(f"{n!r}: {n}" for n in self.keyword_only) + "}"
        name = self.kernel_name if self.kernel_name.isidentifier() and not keyword.iskeyword(
            self.kernel_name) else "kernel"
        source = (
            f"def make(_kwshim_defaults, _kwshim_known, _kwshim_refuse):\n"
            f"    def {name}({', '.join(signature)}):\n"
            f"        if {extra} and not _kwshim_known.issuperset({extra}):\n"
            f"            _kwshim_refuse()\n"
            f"        return {result}\n"
            f"    return {name}\n")
        namespace = {}
        exec(compile(source, f"<kwshim binder for {self.kernel_name}>", "exec"), namespace)
        return _guard(namespace["make"](defaults, known, refuse), self.fail)

    def fail(self, args, kwargs):
        """Raise the error compiled Triton would raise for this launch, naming the kernel."""
        name = self.kernel_name
        names = {p.name for p in self.parameters}
        given_positionally = set(self.positional[: len(args)])
        for key in kwargs:
            if key in given_positionally:
                raise LaunchArgumentError(f"{name}() got multiple values for argument '{key}'")
        if len(args) > len(self.positional):
            n = len(self.positional)
            raise LaunchArgumentError(
                f"{name}() takes {n} positional argument{'s' if n != 1 else ''} "
                f"but {len(args)} were given")
        bound = given_positionally | (names & kwargs.keys())
        missing = [p.name for p in self.parameters if p.default is _P.empty and p.name not in bound]
        if missing:
            raise LaunchArgumentError(
                f"{name}() missing {len(missing)} required argument{'s' if len(missing) > 1 else ''}: "
                f"{_quoted_list(missing)}")
        unknown = [key for key in kwargs if key not in names and key not in self.launch_options]
        if unknown:
            raise UnknownLaunchKeywordError(
                f"Keyword argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                f"{'were' if len(unknown) > 1 else 'was'} specified but unrecognised: "
                f"{name}() has no parameter {_quoted_list(unknown, 'or')} and "
                f"{'they are not launch options' if len(unknown) > 1 else 'it is not a launch option'} "
                "of the installed Triton", unknown)
        raise AssertionError(f"kwshim: binder for {name}() refused a launch it cannot fault")  # pragma: no cover


def _guard(binder, fail):
    """Route every TypeError of the generated binder to the exact, slow diagnosis."""

    def bind(*args, **kwargs):
        try:
            return binder(*args, **kwargs)
        except TypeError:
            fail(args, kwargs)

    bind.__name__ = bind.__qualname__ = binder.__name__
    return bind


def _unused_name(taken, stem):
    name = f"_kwshim_{stem}"
    while name in taken:
        name += "_"
    return name


def _quoted_list(items, conjunction="and"):
    quoted = [f"'{item}'" for item in items]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" {conjunction} " + quoted[-1]
