"""The one reversible patch: attributes and dict entries set through it, each prior value (or its
absence) recorded, and undone in reverse order (with any undo function registered in between).

Triton's own ``_LangPatchScope`` and pytest's ``MonkeyPatch`` are the models: a ``Patch`` is held
open for as long as the switch is on, or used as a scope (``with Patch() as patch:``) for one
launch or one tuning run. ``Scope`` is the same patch prepared in advance, for what every launch
of a wrapped kernel sets: its entries are known once, so a call records nothing as it goes. kwshim
changes nothing of Triton's, or of a kernel's, any other way.
"""

from typing import Any, Iterable, List, MutableMapping, Tuple

__all__ = ["Patch", "Scope"]

_ABSENT = object()  #: the prior value of a name that was not there: undoing removes it
_CALL = object()  #: an undo entry that is a function to call


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

    def on_undo(self, function) -> None:
        """Call ``function()`` when this patch is undone, in order with the entries set (last first): for
        state that is not an attribute or an item (a mode pushed on torch's dispatch-mode stack)."""
        self._undo.append((function, "", _CALL, False))

    def undo(self) -> None:
        """Restore everything set through this patch, in reverse order; a second call does nothing."""
        undo = self._undo
        while undo:
            target, name, prior, attribute = undo.pop()
            if prior is _CALL:
                target()
            elif attribute:
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


class Scope:
    """``(owner, name, value)`` entries (``owner`` a dict: an item; else an attribute, ``__class__``
    included) set for the length of each ``call`` and restored after it, exactly as ``Patch``
    restores them. Every call holds ``lock``, so a caller serializing its launches on the same lock
    needs no lock of its own: what a call sets is shared by every thread. While ``held`` is true
    (set through a ``Patch``: the switch holds the same entries in place) ``call`` sets nothing.

    Every launch of a ``@kwsafe`` kernel pays for ``call``, so its body is written out once per
    scope, one statement per entry, as ``dataclasses`` writes ``__init__``: a loop over the
    entries costs more than the whole of the rest (about 6,000 CPU instructions a launch, 0.4% of
    a one-element kernel's launch on 3.0; ``benchmarks/instructions.py``)."""

    def __init__(self, entries: Iterable[Tuple[Any, str, Any]], lock):
        self.held = False
        names: dict = {"scope": self, "acquire": lock.acquire, "release": lock.release, "ABSENT": _ABSENT}
        sets, undos = [], []
        for index, (owner, name, value) in enumerate(entries):
            names[f"o{index}"], names[f"n{index}"], names[f"v{index}"] = owner, name, value
            o, n, v, p = f"o{index}", f"n{index}", f"v{index}", f"p{index}"
            if isinstance(owner, dict):
                sets.append(f"{p} = {o}.get({n}, ABSENT); {o}[{n}] = {v}")
                undos.append(f"if {p} is ABSENT: {o}.pop({n}, None)\n            else: {o}[{n}] = {p}")
            elif name == "__class__":
                sets.append(f"{p} = type({o}); {o}.__class__ = {v}")
                undos.append(f"{o}.__class__ = {p}")
            else:
                sets.append(f"{p} = vars({o}).get({n}, ABSENT); setattr({o}, {n}, {v})")
                undos.append(f"if {p} is ABSENT: delattr({o}, {n})\n            else: setattr({o}, {n}, {p})")
        body = "".join(f"        {line}\n" for line in sets) or "        pass\n"
        undo = "".join(f"            {line}\n" for line in reversed(undos)) or "            pass\n"
        source = ("def call(function, *args, **kwargs):\n"
                  "    acquire()\n"
                  "    try:\n"
                  "        if scope.held:\n"
                  "            return function(*args, **kwargs)\n"
                  f"{body}"
                  "        try:\n"
                  "            return function(*args, **kwargs)\n"
                  "        finally:\n"
                  f"{undo}"
                  "    finally:\n"
                  "        release()\n")
        exec(compile(source, f"<kwshim scope of {len(sets)} entries>", "exec"), names)
        #: ``call(function, *args, **kwargs)``: ``function(*args, **kwargs)`` with the entries set.
        self.call = names["call"]
