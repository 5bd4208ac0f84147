"""The interpreter's patch of ``triton.language`` for a launch, made only where something needs it.

Each interpreted launch patches ``triton.language`` for the kernel (``_patch_lang``: every builtin
bound to the interpreter's builder) and undoes it at the end: a third of a small launch. A replayed
launch (``replay``) runs no front end, so it needs none. While the switch is on, the launch's own
``_patch_lang`` is deferred (``DeferredLanguage``); the grid seam (``programs``) makes it before
anything that runs Triton's Python: the body, the loop, a grid callable. A jitted helper's
``_patch_lang`` is left out where the launch's patch in place covers its modules (3.6 on), else made
at once and undone at the batch's or the launch's end (the interpreter undoes no helper's:
``triton.language.core`` stayed patched after a ``tl.sum``, and a kernel compiled later failed).

The patch reaches ``triton.language``'s modules, not other names for their functions: a kernel that
calls a builtin through a global of its own (flash-linear-attention's ``gather = tl.gather``) finds
the unpatched builtin ("Did you forget to add @triton.jit?"), where compiled Triton resolves the
name as the builtin. ``builtin_alias_swaps`` gives such globals a forwarder for the launch.
"""

import functools
import sys
import threading
from typing import Any, List, Set, Tuple

from ..compat import reached_globals

__all__ = ["DeferredLanguage", "deferring_patch_lang", "defer_language", "deferred_language", "undo_helpers",
           "builtin_alias_swaps"]


class DeferredLanguage:
    """The interpreter's patch of ``triton.language`` for one launch (its ``_patch_lang``), made when
    something first needs it (the body, the loop, a grid callable): a replayed launch runs no front
    end and needs none, and making and undoing it is a third of a small launch."""

    def __init__(self, patch_lang, fn):
        self._patch_lang, self._fn, self._scope, self.made = patch_lang, fn, None, False

    def make(self):
        if not self.made:
            self.made = True
            self._scope = _patched(self._patch_lang, self._fn)

    def restore(self):  # what the interpreter calls at the launch's end (3.6 on)
        if self._scope is not None:
            self._scope.restore()


_PENDING = threading.local()
#: The modules (``triton.language``, ``triton.language.core``) a launch's patch now in place covers,
#: from its making to its undoing; empty where none is, or where the release cannot undo one.
_COVERED: Set[int] = set()
#: ``(scope, modules)`` of each helper's patch of modules the launch's left out (``tl.sum``'s module
#: names ``triton.language.core``): the interpreter keeps no scope of a helper's, so such a module
#: stayed patched for good, and a kernel compiled after it met the interpreter's builtins.
_HELPERS: list = []


def _languages(fn) -> Set[int]:
    """The ``triton.language`` modules ``_patch_lang`` patches for ``fn``: those its globals hold."""
    language = sys.modules["triton.language"]
    return {id(value) for value in fn.__globals__.values() if value is language or value is language.core}


class _Covering:
    """A launch's patch scope (3.6 on) that says, while it is in place, which modules it covers."""

    def __init__(self, scope, covered):
        self._scope = scope
        _COVERED.clear()
        _COVERED.update(covered)

    def restore(self):
        undo_helpers()
        _COVERED.clear()
        self._scope.restore()


def undo_helpers():
    """Undo the helpers' patches of modules the launch's patch leaves out (last first), where they
    were made: at a batch's end (``programs``), before the batch's own entries (``tl.range``) are put
    back, and at the launch's end for the rest."""
    while _HELPERS:
        scope, languages = _HELPERS.pop()
        scope.restore()
        _COVERED.difference_update(languages)


def _patched(patch_lang, fn):
    """``patch_lang(fn)``, a launch's; its scope wrapped where it has one (``_Covering``)."""
    scope = patch_lang(fn)
    return _Covering(scope, _languages(fn)) if callable(getattr(scope, "restore", None)) else scope


def deferring_patch_lang(patch_lang):
    """The interpreter's ``_patch_lang``, deferred (``DeferredLanguage``) for the launch that
    ``defer_language`` names, and made at once for any other call: a launch's not deferred (its scope
    wrapped, ``_patched``), or a jitted helper's. A helper's patches every builtin again, about a
    millisecond a call (flash-linear-attention's delta rule: 10 of 82 s), though the launch's patch
    in place already covers its modules: then it is left out (3.6 on: 3.0-3.5 undo no patch, so
    that nothing says when one is in place)."""

    def _patch_lang(fn):
        if getattr(_PENDING, "fn", None) is fn:
            _PENDING.fn, _PENDING.language = None, DeferredLanguage(patch_lang, fn)
            return _PENDING.language
        if not _COVERED:
            return _patched(patch_lang, fn)
        languages = _languages(fn)  # a helper's call: the interpreter keeps no scope of it
        if languages <= _COVERED:
            return None
        scope = patch_lang(fn)  # another module: patched until ``undo_helpers``
        _HELPERS.append((scope, languages - _COVERED))
        _COVERED.update(languages)
        return scope

    return _patch_lang


def defer_language(fn):
    """The next ``_patch_lang`` of ``fn`` (its launch's) is deferred (None: none is)."""
    _PENDING.fn, _PENDING.language = fn, None


def deferred_language():
    """The ``DeferredLanguage`` of the launch now running, taken (None where there is none)."""
    language = getattr(_PENDING, "language", None)
    _PENDING.fn, _PENDING.language = None, None
    return language


def builtin_alias_swaps(fn) -> List[Tuple[dict, str, Any]]:
    """(globals, name, forwarder) for every ``triton.language`` builtin that ``fn`` or a jitted helper
    names by a global of its own (``gather = tl.gather``; not ``tl`` itself): the forwarder calls
    the module's attribute of that name when called (the interpreter's patched one in a launch, or
    kwshim's for ``tl.extra.cuda``'s), and is a builtin itself, as the original is to compiled Triton."""
    language = sys.modules.get("triton.language")
    if language is None:
        return []
    is_builtin = language.core.is_builtin
    swaps = []
    for scope, name, value in reached_globals(fn)[0]:
        if not is_builtin(value) or not hasattr(value, "__name__"):
            continue
        home = str(getattr(value, "__module__", ""))
        module = language.math if home.endswith(".math") else \
            sys.modules.get(home) if home.startswith("triton.language.extra.") else language
        current = vars(module).get(value.__name__) if module is not None else None
        if current is None or current is not value and is_builtin(current):  # another builtin has the name
            continue
        swaps.append((scope, name, _forwarder(module, value.__name__, value)))
    return swaps


def _forwarder(module, name, builtin):
    def forward(*args, **kwargs):
        return getattr(module, name)(*args, **kwargs)

    return functools.update_wrapper(forward, builtin)  # its __dict__ too: the builtin's mark
