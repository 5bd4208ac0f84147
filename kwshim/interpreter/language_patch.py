"""The interpreter's patch of ``triton.language`` for a launch, made only where something needs it.

Each interpreted launch patches ``triton.language`` for the kernel (``_patch_lang``: every builtin
bound to the interpreter's builder) and undoes it at the end: a third of a small launch. A replayed
launch (``replay``) runs no front end, so it needs none. While the switch is on, the launch's own
``_patch_lang`` is deferred (``DeferredLanguage``); the grid seam (``programs``) makes it before
anything that runs Triton's Python: the body, the loop, a grid callable. A jitted helper's
``_patch_lang`` is made at once, as before.
"""

import threading

__all__ = ["DeferredLanguage", "deferring_patch_lang", "defer_language", "deferred_language"]


class DeferredLanguage:
    """The interpreter's patch of ``triton.language`` for one launch (its ``_patch_lang``), made when
    something first needs it (the body, the loop, a grid callable): a replayed launch runs no front
    end and needs none, and making and undoing it is a third of a small launch."""

    def __init__(self, patch_lang, fn):
        self._patch_lang, self._fn, self._scope, self.made = patch_lang, fn, None, False

    def make(self):
        if not self.made:
            self.made = True
            self._scope = self._patch_lang(self._fn)

    def restore(self):  # what the interpreter calls at the launch's end (3.6 on)
        if self._scope is not None:
            self._scope.restore()


_PENDING = threading.local()


def deferring_patch_lang(patch_lang):
    """The interpreter's ``_patch_lang``, deferred (``DeferredLanguage``) for the launch that
    ``defer_language`` names, and made at once for any other call (a jitted helper's)."""

    def _patch_lang(fn):
        if getattr(_PENDING, "fn", None) is fn:
            _PENDING.fn, _PENDING.language = None, DeferredLanguage(patch_lang, fn)
            return _PENDING.language
        return patch_lang(fn)

    return _patch_lang


def defer_language(fn):
    """The next ``_patch_lang`` of ``fn`` (its launch's) is deferred (None: none is)."""
    _PENDING.fn, _PENDING.language = fn, None


def deferred_language():
    """The ``DeferredLanguage`` of the launch now running, taken (None where there is none)."""
    language = getattr(_PENDING, "language", None)
    _PENDING.fn, _PENDING.language = None, None
    return language
