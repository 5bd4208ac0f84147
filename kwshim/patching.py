"""The one reversible patch: attributes and dict entries set through it, each prior value (or its
absence) recorded, and undone in reverse order.

Triton's own ``_LangPatchScope`` and pytest's ``MonkeyPatch`` are the models: a ``Patch`` is held
open for as long as the switch is on, or used as a scope (``with Patch() as patch:``) for one
launch or one tuning run. kwshim changes nothing of Triton's, or of a kernel's, any other way.
"""

from typing import Any, List, MutableMapping, Tuple

__all__ = ["Patch"]

_ABSENT = object()  #: the prior value of a name that was not there: undoing removes it


class Patch:
    """Attributes (``setattr``) and dict entries (``setitem``) set reversibly; ``undo`` restores
    each exactly as it was (an own attribute, an inherited one, or none), last set first undone."""

    __slots__ = ("_undo",)

    def __init__(self):
        self._undo: List[Tuple[Any, str, Any, bool]] = []

    def setattr(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.name``; the prior value is the owner's own (``vars(owner)``), so an
        attribute it inherits is inherited again after ``undo`` (``__class__``: the object's class)."""
        prior = type(owner) if name == "__class__" else vars(owner).get(name, _ABSENT)
        setattr(owner, name, value)
        self._undo.append((owner, name, prior, True))

    def set(self, owner: Any, name: str, value: Any) -> None:
        """``setitem`` where ``owner`` is a dict (a module's globals), else ``setattr``."""
        if isinstance(owner, dict):
            self.setitem(owner, name, value)
        else:
            self.setattr(owner, name, value)

    def setitem(self, mapping: MutableMapping, key: Any, value: Any) -> None:
        """Set ``mapping[key]`` (a dict: a module's or a function's globals, an instance's ``__dict__``)."""
        prior = mapping.get(key, _ABSENT)
        mapping[key] = value
        self._undo.append((mapping, key, prior, False))

    def undo(self) -> None:
        """Restore everything set through this patch, in reverse order; a second call does nothing."""
        undo = self._undo
        while undo:
            target, name, prior, attribute = undo.pop()
            if attribute:
                if prior is _ABSENT:
                    delattr(target, name)
                else:
                    setattr(target, name, prior)
            elif prior is _ABSENT:
                target.pop(name, None)
            else:
                target[name] = prior

    def __bool__(self) -> bool:
        return bool(self._undo)

    def __enter__(self) -> "Patch":
        return self

    def __exit__(self, *exc_info) -> None:
        self.undo()
