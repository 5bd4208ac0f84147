"""Launch options: which keywords a launch may carry, and which values the target backend refuses.

Compiled Triton reads a launch's keywords as compile options of the backend it compiles for: the
backend's ``parse_options`` builds its options class (``CUDAOptions``, ``HIPOptions``, ...), whose
own checks refuse bad values (CUDA: ``num_warps must be a power of 2``), and a keyword that is
neither an option field nor a parameter is a ``KeyError``. The interpreter has no backend, so
kwshim runs the installed backends' own ``parse_options`` on each launch's option keywords.

The target is ``KWSHIM_TARGET`` (``cuda``, ``hip``, ...) or ``set_target()``; under the virtual
CUDA device (``device="cuda"``) with neither, values are judged by the cuda backend alone, as the
stated GPU's compiler judges them. Otherwise an option name is accepted if any installed backend
accepts it, and a value is refused only if every installed backend refuses it.
"""

import os
from typing import Dict, Optional

from .. import compat
from ..compat.backends import Backend, backends, installed_targets, option_names
from ..errors import LaunchOptionError
from ..settings import ACTIVATIONS, in_force

__all__ = ["set_target", "get_target", "installed_targets", "backends", "option_names", "known_names", "DEPRECATED"]

#: Keywords compiled Triton 3.x refuses with an AssertionError whatever the kernel declares.
DEPRECATED = {
    "device_type": "device_type option is deprecated; current target will be used",
    "device": "device option is deprecated; current device will be used",
    "stream": "stream option is deprecated; current stream will be used",
}

_ENV = "KWSHIM_TARGET"
_target: Optional[str] = None
_target_read = False


def set_target(target: Optional[str]) -> None:
    """Validate launch options as ``target``'s backend does (``"cuda"``, ``"hip"``, ...); ``None``
    accepts what any installed backend accepts. Overrides ``KWSHIM_TARGET``."""
    global _target, _target_read
    if target is not None and target not in installed_targets():
        raise ValueError(f"kwshim: unknown target {target!r}; the installed Triton has backends for "
                         f"{', '.join(sorted(installed_targets())) or 'none'}")
    _target, _target_read = target, True
    _refresh_known_names()


def get_target() -> Optional[str]:
    """The target set by ``set_target`` or ``KWSHIM_TARGET`` (read once), or None."""
    global _target, _target_read
    if not _target_read:
        _target_read = True
        value = os.environ.get(_ENV, "").strip().lower() or None
        if value is not None and value not in installed_targets():
            raise ValueError(f"{_ENV}={value!r}, but the installed Triton has backends for "
                             f"{', '.join(sorted(installed_targets())) or 'none'}")
        _target = value
    return _target


#: The keywords a launch may carry that are not parameters, for the target in force. One set
#: object, updated in place when the target changes, so every kernel's binder sees the change.
_KNOWN: set = set()


def known_names() -> set:
    if not _KNOWN:
        _refresh_known_names()
    return _KNOWN


def _refresh_known_names():
    target = get_target()
    names: set
    if target is None:
        names = set(compat.launch_options()) | option_names()
    else:
        names = set(backends()[target].names) | {"grid", "warmup"}
    names |= set(compat.injected_keywords())  # compiled run adds them to every launch itself
    names -= set(DEPRECATED)
    _KNOWN.clear()
    _KNOWN.update(names)
    _verdicts.clear()


#: verdicts by the option values given: ``frozenset`` of (name, type, value), the type so that
#: ``num_warps=4.0`` is not answered with ``num_warps=4``'s verdict
_verdicts: Dict[frozenset, Optional[str]] = {}
_DEPRECATED_NAMES = frozenset(DEPRECATED)


def check(kernel_name: str, keywords: dict) -> None:
    """Refuse the launch's option values as compiled Triton would (a ``LaunchOptionError``,
    which is an ``AssertionError``), naming the kernel, the option and the value. It runs on
    every launch that carries an option keyword (every autotuner's launch): a set intersection
    and one lookup when the values were seen before."""
    present = option_names().intersection(keywords)
    if present:
        try:
            target = _judging_target()
            key = frozenset([(name, type(keywords[name]), keywords[name]) for name in present] + [target])
            verdict = _verdicts[key]
        except KeyError:
            verdict = _verdicts[key] = _judge(_in_order(keywords, present), target)
        except TypeError:  # an unhashable value: judge it every time
            verdict = _judge(_in_order(keywords, present), _judging_target())
        if verdict is not None:
            raise LaunchOptionError(f"{kernel_name}(): {verdict}")
    if not _DEPRECATED_NAMES.isdisjoint(keywords):
        for name in DEPRECATED:
            if name in keywords:
                raise LaunchOptionError(f"{kernel_name}(): {DEPRECATED[name]}")


def _in_order(keywords, names):
    """The options given, in the caller's order (the error names the first refused one)."""
    return {name: value for name, value in keywords.items() if name in names}


def _judging_target() -> Optional[str]:
    """The backend whose checks judge a launch's option values: the target, else cuda under the
    virtual CUDA device (where the installed Triton has a cuda backend), else None (any backend)."""
    target = get_target()
    if target is None and ACTIVATIONS and in_force().device == "cuda" and "cuda" in installed_targets():
        return "cuda"
    return target


def _judge(given: dict, target: Optional[str]) -> Optional[str]:
    """None when ``target``'s backend (or, with none, some backend) accepts ``given``; else the reason."""
    candidates = [backends()[target]] if target else list(backends().values())
    reasons = []
    for backend in candidates:
        mine = {k: v for k, v in given.items() if k in backend.names}
        try:
            backend.check(mine)
            return None
        except Exception as exc:  # AssertionError or ValueError from the backend's checks, or a crash on a bad type
            reasons.append((backend.target, _culprit(backend, mine), str(exc) or type(exc).__name__))
    if not reasons:
        return None
    parts = [f"{culprit} is refused by the {target_name} backend: {message}"
             for target_name, culprit, message in reasons]
    return "launch option " + "; ".join(parts)


def _culprit(backend: Backend, given: dict) -> str:
    """The option (``name=value``) that the backend refuses on its own, or all of them."""
    for name, value in given.items():
        try:
            backend.check({name: value})
        except Exception:
            return f"{name}={value!r}"
    return ", ".join(f"{name}={value!r}" for name, value in given.items())
