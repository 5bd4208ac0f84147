"""One switch for a whole process: ``kwshim.activate()``.

While it is on, every interpreted kernel binds its launches as under ``@kwsafe`` (decorated or
not, created before or after, in any library) and every autotuner over interpreted kernels
tunes on the CPU under a policy (``autotune.py``). It works by patching Triton's interpreter
kernel class and ``Autotuner`` while on, and nowhere else: each patch records the exact prior
attribute (or its absence) and is undone in reverse order when the last handle deactivates.

Choices, documented for users:
- **Nesting**: handles stack. The innermost active handle's policy is in force; deactivating
  it restores the enclosing one's. Deactivating out of order is allowed; Triton is restored
  when no handle is left.
- **Double deactivation** is a no-op; entering a deactivated handle (a second ``with handle:``)
  raises ``RuntimeError``: call ``activate()`` again.
- **Threads**: the switch is process-wide (Triton's classes are), not per thread; activation
  and deactivation are serialized by a lock. Activate before starting threads that launch.
- In compiled mode nothing changes: every patched path hands compiled kernels to Triton's own code.
"""

import threading
from typing import List, Optional

from . import _triton
from . import autotune as autotune_module
from . import interpreter_math
from .kernel import RunSlot, launcher_via_paths

__all__ = ["activate", "Handle", "active_settings", "is_active"]

_ABSENT = object()
_LOCK = threading.RLock()
_HANDLES: List["Handle"] = []
_PATCHES: Optional["Patches"] = None


class Patches:
    """Reversible attribute patches: record the exact prior value (or absence), undo in reverse."""

    def __init__(self):
        self._undo = []

    def set(self, owner, name, value):
        prior = vars(owner).get(name, _ABSENT)
        setattr(owner, name, value)
        self._undo.append((owner, name, prior))

    def undo(self):
        while self._undo:
            owner, name, prior = self._undo.pop()
            if prior is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, prior)


class Handle:
    """An activation of the switch. A context manager; ``deactivate()`` ends it (twice is a no-op)."""

    def __init__(self, settings):
        self.settings = settings

    @property
    def active(self) -> bool:
        return self in _HANDLES

    def deactivate(self) -> None:
        global _PATCHES
        with _LOCK:
            if self not in _HANDLES:
                return
            _HANDLES.remove(self)
            if not _HANDLES and _PATCHES is not None:
                _PATCHES.undo()
                _PATCHES = None
                _INSTALL_RUN.clear()

    def __enter__(self):
        if not self.active:  # a second `with` on a spent handle would silently switch nothing on
            raise RuntimeError("kwshim: this switch handle was deactivated; call kwshim.activate() again "
                               "for a new one")
        return self

    def __exit__(self, *exc_info):
        self.deactivate()

    def __repr__(self):
        return f"<kwshim switch {self.settings.policy!r} {'active' if self.active else 'inactive'}>"


def activate(autotune: str = "all", *, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = True) -> Handle:
    """Switch kwshim on for the whole process and return its handle (also a context manager).

    ``autotune`` is the policy of autotuners over interpreted kernels: ``"first"`` (no tuning),
    ``"all"`` (each surviving Config runs once per key with the autotuner's own hooks, nothing
    restored, as on a GPU; the first is chosen) or ``"verify"`` (``"all"``, and every Config must
    leave the tensors as the first does from the same snapshot, and the tuned launch as one clean
    launch does; compared exactly for integers and booleans and with ``rtol``/``atol``/``equal_nan``
    for floating point: NaN in the same place agrees unless ``equal_nan=False``).
    """
    global _PATCHES
    settings = autotune_module.Settings(autotune, rtol, atol, equal_nan)
    handle = Handle(settings)
    with _LOCK:
        if _PATCHES is None:
            _PATCHES = _install(settings.policy)
        elif settings.policy == "verify" and _INSTALL_RUN:
            _INSTALL_RUN[0]()
        _HANDLES.append(handle)
    return handle


def is_active() -> bool:
    return bool(_HANDLES)


def active_settings():
    handles = _HANDLES
    return handles[-1].settings if handles else autotune_module.Settings()


#: ``install_run()`` of the installed autotune patches (empty while the switch is off)
_INSTALL_RUN: list = []


def _install(policy) -> Patches:
    classes = _triton.kernel_classes()
    patches = Patches()
    if classes.interpreted is None:  # 2.1.0: nothing interprets, so nothing to switch
        return patches
    _triton.pristine_interpreter_methods()  # read before anything is patched
    try:
        patches.set(classes.interpreted, "__getitem__", launcher_via_paths)
        patches.set(classes.interpreted, "run", RunSlot())
        interpreting = _triton.interpreter_on()
        if classes.autotuner is not None:
            # A compiled-only process needs kwshim's Autotuner.run for verify only (README: verify on a GPU)
            _INSTALL_RUN[:] = [autotune_module.install(patches, active_settings,
                                                       patch_run=interpreting or policy == "verify")]
        if interpreting:  # compiled kernels keep the backend's own libdevice
            interpreter_math.install(patches)
    except BaseException:
        patches.undo()
        _INSTALL_RUN.clear()
        raise
    return patches
