"""One switch for a whole process: ``kwshim.activate()``.

While it is on, every interpreted kernel binds its launches as under ``@kwsafe`` (decorated or
not, created before or after, in any library) and every autotuner over interpreted kernels
tunes on the CPU under a policy (``autotune``). It works by patching Triton's interpreter kernel
class and ``Autotuner`` while on, and nowhere else, through one ``Patch`` that is undone when the
last handle deactivates.

Choices, documented for users:
- **Nesting**: handles stack. The innermost active handle's settings are in force; a nested
  activation inherits every setting it does not name from the enclosing one, and deactivating it
  restores the enclosing one's. The outermost reads the ``KWSHIM_NAME`` environment variables for
  the settings it does not name. Deactivating out of order is allowed; Triton is restored
  when no handle is left.
- **Double deactivation** is a no-op; entering a deactivated handle (a second ``with handle:``)
  raises ``RuntimeError``: call ``activate()`` again.
- **Threads**: the switch is process-wide (Triton's classes are), not per thread; activation
  and deactivation are serialized by a lock. Activate before starting threads that launch.
- In compiled mode nothing changes: every patched path hands compiled kernels to Triton's own code.
"""

import threading
from typing import Any, List, Mapping, Optional, Union

from .. import batching, compat, compiler, interpreter
from ..autotune import AutotunerPatch
from ..launch import jit_answers
from ..launch.kernel import RunSlot, launcher_via_paths, warmup_via_paths
from ..patching import Patch
from ..settings import ACTIVATIONS, Settings, in_force, resolve

__all__ = ["activate", "activate_with", "Handle", "active_settings", "is_active"]

_LOCK = threading.RLock()
_HANDLES: List["Handle"] = ACTIVATIONS  # the settings module keeps them: the one place settings are in force
_PATCH: Optional[Patch] = None
_AUTOTUNER: Optional[AutotunerPatch] = None
_NUMERICS: Optional[str] = None  #: the interpreter arithmetic ``_PATCH`` holds in place (None: none)
_DEVICE: Optional[str] = None  #: the virtual device ``_PATCH`` holds in place (None: none)


class Handle:
    """An activation of the switch. A context manager; ``deactivate()`` ends it (twice is a no-op)."""

    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def active(self) -> bool:
        return self in _HANDLES

    def deactivate(self) -> None:
        global _PATCH, _AUTOTUNER, _NUMERICS, _DEVICE
        with _LOCK:
            if self not in _HANDLES:
                return
            _HANDLES.remove(self)
            if _HANDLES:
                _settings_changed()
            elif _PATCH is not None:
                _PATCH.undo()
                _PATCH = _AUTOTUNER = _NUMERICS = _DEVICE = None

    def __enter__(self):
        if not self.active:  # a second `with` on a spent handle would silently switch nothing on
            raise RuntimeError("kwshim: this switch handle was deactivated; call kwshim.activate() again "
                               "for a new one")
        return self

    def __exit__(self, *exc_info):
        self.deactivate()

    def __repr__(self):
        return f"<kwshim switch {self.settings.autotune!r} {'active' if self.active else 'inactive'}>"


class _Unset:
    """A setting ``activate`` was not given: inherited from the enclosing activation, else from
    its ``KWSHIM_NAME`` environment variable, else the default."""

    def __repr__(self):
        return "<inherited>"


UNSET: Any = _Unset()


def activate(autotune: str = UNSET, *, rtol: float = UNSET, atol: float = UNSET, equal_nan: bool = UNSET,
             numerics: str = UNSET, grid: str = UNSET, device: Optional[str] = UNSET,
             compile: str = UNSET, empty_fill: str = UNSET, check_bounds: bool = UNSET) -> Handle:
    """Switch kwshim on for the whole process and return its handle (also a context manager).

    A setting not given is the enclosing activation's, else its ``KWSHIM_NAME`` environment
    variable's (``KWSHIM_GRID=check``), else the default (``settings.FIELDS``). A value of the wrong
    type is a ``TypeError`` and a bad value a ``ValueError``, each naming kwshim.

    ``autotune`` is the policy of autotuners over interpreted kernels: ``"first"`` (no tuning),
    ``"all"`` (each surviving Config runs once per key with the autotuner's own hooks, nothing
    restored, as on a GPU; the first is chosen) or ``"verify"`` (``"all"``, and every Config must
    leave the tensors as the first does from the same snapshot, and the tuned launch as one clean
    launch does; compared exactly for integers and booleans and with ``rtol``/``atol``/``equal_nan``
    for floating point: NaN in the same place agrees unless ``equal_nan=False``; ``rtol`` and
    ``atol`` not given are the dtype's, as ``torch.testing.assert_close`` picks them).

    ``numerics`` is the arithmetic of interpreted kernels: ``"gpu"`` (as compiled Triton computes on
    an NVIDIA GPU: TF32 and tensor-core dots, fused multiply-adds, the approximate
    transcendentals, libdevice reading fp32 subnormals as zeros) or ``"ieee"`` (each operation
    exactly rounded; running both tells a precision problem from a logic bug). bf16 and fp8 are
    held and converted as on a GPU in both.

    ``grid`` is how interpreted launches run their programs: ``"sequential"`` (Triton's loop),
    ``"batched"`` (all programs together, in chunks, leaving the loop's bits; what a batch cannot
    run so falls back to the loop, and the kernel remembers why) or ``"check"`` (both from one
    state, compared bit for bit: ``GridDivergenceError``).

    ``device="cuda"`` makes a virtual CUDA GPU for suites that say ``"cuda"``: tensors asked for on
    it are CPU tensors, ``torch.cuda`` and Triton's driver answer as an H200, kernels run in the
    interpreter (it needs ``TRITON_INTERPRET=1``). The outermost activation decides it: a nested
    one asking for another device is refused.

    ``compile="check"`` also compiles each interpreted kernel specialization with the installed
    Triton's compiler for the H200 (sm_90): what its compiler refuses raises its
    ``CompilationError``, a kernel needing more shared memory than the H200 gives a block raises
    ``OutOfResources`` at launch (and an autotuner prunes its Config), and ``warmup()`` and a launch
    return the ``CompiledKernel`` (``.asm``). The interpreter still computes every result.

    ``check_bounds`` (default True) checks every load, store and atomic of an interpreted kernel,
    before it is made, against the memory its launch may touch: an address outside it raises
    ``OutOfBoundsError`` naming the kernel, line, program, argument and offset, where the interpreter
    would read or write the process's memory there (and could end the process). ``False`` leaves
    the interpreter's silence.

    ``empty_fill="poison"`` fills what ``torch.empty`` and its kin make on the virtual device with NaN
    (floats) or the largest value (integers), as torch's ``fill_uninitialized_memory`` does, so a
    kernel that reads memory nobody wrote fails visibly; ``"none"`` (the default) leaves the bytes.
    """
    given = dict(autotune=autotune, rtol=rtol, atol=atol, equal_nan=equal_nan, numerics=numerics, grid=grid,
                 device=device, compile=compile, empty_fill=empty_fill,
                 check_bounds=check_bounds)
    return activate_with({name: value for name, value in given.items() if value is not UNSET})


def activate_with(named: Union[Mapping[str, Any], Settings]) -> Handle:
    """``activate`` for the settings a door was given by name (``kwshim run``, ``pytest --kwshim``),
    completed by ``settings.resolve``; a ``Settings`` is taken whole."""
    global _PATCH, _AUTOTUNER, _NUMERICS, _DEVICE
    with _LOCK:
        if isinstance(named, Settings):
            settings = named
        else:
            settings = resolve(named, _HANDLES[-1].settings if _HANDLES else None)
        handle = Handle(settings)
        if _PATCH is not None and settings.device != _DEVICE:
            raise ValueError(f"kwshim: the switch is on with device={_DEVICE!r}; a nested activation cannot make it "
                             f"{settings.device!r} (deactivate first)")
        if _PATCH is None:
            _PATCH, _AUTOTUNER, _NUMERICS = _install(settings)
            _DEVICE = settings.device
        _HANDLES.append(handle)
        _settings_changed()
    return handle


def is_active() -> bool:
    """Whether the switch is on (some activation is in force)."""
    return bool(_HANDLES)


def active_settings() -> Optional[Settings]:
    """The settings in force: the innermost activation's, each one completed (``Settings``), or
    None where kwshim's switch is off. A test asks it whether it runs under kwshim
    (``pytest --kwshim``, ``kwshim run``, ``kwshim.activate``) and with which settings:
    ``kwshim.active_settings() is not None and kwshim.active_settings().device == "cuda"``."""
    return in_force() if _HANDLES else None


def _settings_changed() -> None:
    """Put the settings now in force (the innermost handle's) in place where reading them is not
    enough: the autotuner patch's run, and the interpreter's arithmetic (the grid reads them)."""
    global _NUMERICS
    settings = _HANDLES[-1].settings
    if _AUTOTUNER is not None:
        _AUTOTUNER.settings = settings
        if settings.autotune == "verify":
            _AUTOTUNER.install_run()
    if _NUMERICS is not None and settings.numerics != _NUMERICS:
        interpreter.use_numerics(_PATCH, settings.numerics)
        _NUMERICS = settings.numerics


def _install(settings: Settings):
    classes = compat.kernel_classes()
    patch = Patch()
    if classes.interpreted is None:  # 2.1.0: nothing interprets, so nothing to switch
        return patch, None, None
    compat.pristine_interpreter_methods()  # read before anything is patched
    autotuner = numerics = None
    try:
        patch.setattr(classes.interpreted, "__getitem__", launcher_via_paths)
        patch.setattr(classes.interpreted, "run", RunSlot())
        if not compat.interpreted_has_warmup():  # up to 3.5: compiled Triton's kernels have one
            patch.setattr(classes.interpreted, "warmup", warmup_via_paths)
        interpreting = compat.interpreter_on()
        if classes.autotuner is not None:
            # A compiled-only process needs kwshim's Autotuner.run for verify only (docs: how-to/autotune)
            autotuner = AutotunerPatch(settings)
            autotuner.install(patch, run=interpreting or settings.autotune == "verify")
        if interpreting:  # compiled kernels keep the backend's own libdevice
            jit_answers.install(patch)  # interpreted kernels answer as JITFunctions (FlagGems' libentry)
            compiler.remember_language()  # before a launch: compile="check" compiles with it
            interpreter.install(patch, settings.numerics)
            batching.install(patch)  # the grid seam: a launch's programs run as the grid setting says
            numerics = settings.numerics
        if settings.device is not None:
            if not interpreting or not compat.jit_makes_interpreted():  # TRITON_INTERPRET=true: 1 up to 3.3
                raise RuntimeError(f"kwshim: device={settings.device!r} runs kernels in Triton's interpreter, which is "
                                   f"off here: set TRITON_INTERPRET=1 before importing triton")
            from .. import virtual_cuda

            virtual_cuda.install(patch, settings.device)
    except BaseException:
        patch.undo()
        raise
    return patch, autotuner, numerics
