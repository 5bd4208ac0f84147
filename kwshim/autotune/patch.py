"""``AutotunerPatch``: Triton's ``Autotuner`` taught to tune on a CPU, while the switch is on.

Triton's ``Autotuner`` benchmarks each Config with a GPU benchmarker (``do_bench``), which fails on
a CPU-only machine. kwshim leaves the Autotuner's own logic in charge (pruning, keys, hooks, the
per-key cache, ``best_config``) and replaces only what needs a GPU, for autotuners over
interpreted kernels:

- the benchmarker (``rounds.cpu_bench``): each surviving Config runs once (``all``/``verify``) or
  not at all (``first``). Nothing is restored between runs: Triton's own hooks (``reset_to_zero``,
  ``restore_value``, pre/post hooks) do what they do on a GPU;
- a Config whose run fails a ``tl.static_assert`` gets an infinite time, as compiled Triton gives a
  Config that fails to compile; under ``first``, where nothing runs, the assertions at the top of
  the kernel that read only its parameters are evaluated for each Config (``static_asserts``);
- ``check_disk_cache`` (3.4-3.8 crash on interpreted stacks): caching off, as 3.9 does;
- 3.2-3.3 ask a GPU driver for a benchmarker at decoration: the Autotuner gets kwshim's instead;
- tuning launches run one at a time (``_TUNING_LOCK``): an autotuner's cache and ``best_config``
  are shared by every thread, and Triton's own Autotuner is not thread-safe either.

Compiled autotuners (a GPU) are Triton's own under ``first`` and ``all``; under ``verify`` they get
the same two checks (``verify.py``), timing still picking the Config.

The methods put in place of the Autotuner's are the module's functions below (``self`` is the
autotuner); they read the patch in force, ``_active``, which is set and unset through the same
``Patch`` as everything else.
"""

import dataclasses
import importlib
import inspect
import threading
import warnings
import weakref
from typing import Any, Optional

from .. import compat
from ..errors import AutotuneSideEffectError, ConfigDivergenceError
from ..patching import Patch
from . import static_asserts
from .rounds import Round, cpu_bench, failed_static_assert, module_bench, rounds, untuned
from ..snapshot import reachable_tensors
from .verify import Verification, capturing

__all__ = ["AutotunerPatch"]

_INFINITE = (float("inf"),) * 3
_TUNING_LOCK = threading.RLock()
#: the tuning keys of each autotuner that were tuned under ``verify`` (kept across activations, as
#: the autotuner's own cache is)
_VERIFIED: "weakref.WeakKeyDictionary[Any, set]" = weakref.WeakKeyDictionary()
#: the patch in force, while the switch is on
_active: Optional["AutotunerPatch"] = None


class AutotunerPatch:
    """What kwshim changes of Triton's ``Autotuner`` while the switch is on, and what the replaced
    methods read: Triton's originals, the release's benchmarker seam, and the settings in force
    (``settings``: the switch sets it as handles come and go)."""

    def __init__(self, settings):
        self.module = importlib.import_module("triton.runtime.autotuner")
        autotuner = self.Autotuner = self.module.Autotuner
        self.original_init, self.original_run = autotuner.__init__, autotuner.run
        self.original_bench = autotuner._bench
        self.original_check_disk_cache = vars(autotuner).get("check_disk_cache")
        parameters = list(inspect.signature(self.original_init).parameters)
        #: where ``do_bench`` sits among ``__init__``'s arguments after self and fn (None: 2.2-3.1,
        #: whose ``_bench`` calls the module's own ``do_bench``)
        self.do_bench_position = parameters.index("do_bench") - 2 if "do_bench" in parameters else None
        classes = compat.kernel_classes()
        self.jit_class, self.interpreted_class = classes.jit, classes.interpreted
        self.settings = settings
        self._patch: Optional[Patch] = None

    def install(self, patch: Patch, run: bool = True) -> None:
        """Put kwshim's methods in place through ``patch``; ``run=False`` leaves ``Autotuner.run``
        Triton's own until ``install_run`` (a compiled-only process under first/all adds no frame
        to its launches until a ``verify`` handle needs it)."""
        self._patch = patch
        patch.setitem(globals(), "_active", self)
        patch.setattr(self.Autotuner, "__init__", _init)
        if run:
            self.install_run()
        patch.setattr(self.Autotuner, "_bench", _bench)
        if self.original_check_disk_cache is not None:
            patch.setattr(self.Autotuner, "check_disk_cache", _check_disk_cache)
        for name in ("do_bench", "do_bench_cudagraph"):  # 2.2-3.1: _bench calls the module's own
            original = vars(self.module).get(name)
            if original is not None:
                patch.setattr(self.module, name, module_bench(original))

    def install_run(self) -> None:
        """Put kwshim's ``Autotuner.run`` in place (once)."""
        if self._patch is not None and vars(self.Autotuner).get("run") is not _run:
            self._patch.setattr(self.Autotuner, "run", _run)


# -- the methods put in place of the Autotuner's (``self`` is the autotuner) --------------------

def _init(self, fn, *args, **kwargs):
    """An autotuner over an interpreted kernel gets the CPU's benchmarker (3.2+ take one at decoration)."""
    position = _active.do_bench_position
    if (position is not None and len(args) <= position and kwargs.get("do_bench") is None
            and compat.is_interpreted(fn)):
        kwargs["do_bench"] = cpu_bench
    _active.original_init(self, fn, *args, **kwargs)


def _run(self, *args, **kwargs):
    """A launch: Triton's own for a compiled autotuner (but under ``verify``); for an interpreted
    one, a tuning round under the policy in force, one tuning launch at a time."""
    patch = _active
    settings = patch.settings
    kind = type(self.fn)
    if kind is patch.jit_class and settings.autotune != "verify":  # compiled, the common case
        return patch.original_run(self, *args, **kwargs)
    if kind is not patch.interpreted_class and not compat.is_interpreted(self):
        if settings.autotune != "verify":  # compiled: Triton's own, except under verify
            return patch.original_run(self, *args, **kwargs)
        with _TUNING_LOCK:
            return _verified_run(patch, self, settings, args, kwargs, compiled=True)
    with _TUNING_LOCK:
        if settings.autotune == "verify":
            return _verified_run(patch, self, settings, args, kwargs)
        stack = rounds()
        stack.append(Round(self, settings))
        try:
            return patch.original_run(self, *args, **kwargs)
        finally:
            stack.pop()


def _unrounded(self, args, config, meta):
    """One Config of an interpreted autotuner whose own ``run`` benchmarks each Config through
    ``_bench``, without Triton's ``Autotuner.run`` (FlagGems' ``LibTuner``): no round is open. Under
    ``first`` nothing runs; otherwise the Config runs once on the CPU, as under ``all`` (``verify``
    cannot compare Configs it does not see together: it says so, once). Either way its timings are
    its place in the autotuner's list (a Config the compile check refuses: infinite), so that the
    first is chosen whatever the CPU's clock says, as plain floats: such a tuner may store them
    (FlagGems' cache writes each timing to SQL by its type, which refused kwshim's ``Timing``)."""
    settings = _active.settings
    configs = list(getattr(self, "configs", ()))
    place = float(next((index for index, listed in enumerate(configs) if listed is config), len(configs)))
    if settings.autotune == "first":
        if static_asserts.refuses(compat.innermost(self), args, config, meta) or \
                (settings.compile == "check" and _refused_by_compiler(self, args, config, meta)):
            return [float("inf")] * 3
        return [place] * 3
    if settings.autotune == "verify" and self not in _UNVERIFIED:
        _UNVERIFIED.add(self)
        warnings.warn(f"kwshim: autotune='verify' cannot compare the Configs of {type(self).__name__} over "
                      f"{compat.kernel_name(compat.innermost(self))}: its own run() tunes without Triton's "
                      f"Autotuner.run, so its Configs run as under 'all'", stacklevel=3)
    stack = rounds()
    stack.append(Round(self, dataclasses.replace(settings, autotune="all")))
    try:
        timings = _bench(self, *args, config=config, **meta)
    finally:
        stack.pop()
    if isinstance(timings, (list, tuple)):
        return [float("inf") if timing == float("inf") else place for timing in timings]
    return float("inf") if timings == float("inf") else place


#: the autotuners ``verify`` has said it cannot check (``_unrounded``)
_UNVERIFIED: "weakref.WeakSet" = weakref.WeakSet()


def _verified_run(patch, self, settings, args, kwargs, compiled=False):
    """A launch under ``verify``: a key tuned under another policy is tuned again (set aside while
    this launch runs); after tuning, the tuned launch is compared with one clean launch."""
    verified = _VERIFIED.setdefault(self, set())
    unverified = {key: config for key, config in self.cache.items() if key not in verified}
    for key in unverified:
        del self.cache[key]
    known = set(self.cache)
    current = Round(self, settings, compiled)
    stack = rounds()
    resets: list = []
    tuned = set()
    try:
        stack.append(current)
        try:
            with Patch() as scope:
                if "pre_hook" in vars(self):  # Triton resets reset_to_zero after tuning: noted, to repeat
                    scope.setitem(vars(self), "pre_hook", _noting_resets(self.pre_hook, resets))
                result = patch.original_run(self, *args, **kwargs)
        finally:
            stack.pop()
            tuned = set(self.cache) - known
        verification = current.verification
        if verification is not None and verification.reference is not None:
            def clean_launch():  # one launch of the chosen Config, reset as the tuning launch was
                for hook_args, hook_kwargs in resets:
                    self.pre_hook(*hook_args, **hook_kwargs)
                patch.original_run(self, *args, **kwargs)

            try:
                verification.check_side_effects(clean_launch)
            except AutotuneSideEffectError:
                for key in tuned:  # not a tuning to keep: the next verify launch tunes (and fails) again
                    del self.cache[key]
                tuned = set()
                raise
    finally:
        verified.update(tuned)
        for key, config in unverified.items():
            self.cache.setdefault(key, config)
    return result


def _noting_resets(pre_hook, resets):
    """The autotuner's pre-hook, noting each call with ``reset_only`` (Triton's reset after tuning)."""

    def noting_pre_hook(*args, **kwargs):
        if kwargs.get("reset_only") or (len(args) > 1 and args[1]):
            resets.append((args, kwargs))
        return pre_hook(*args, **kwargs)

    return noting_pre_hook


def _bench(self, *args, config, **meta):
    """One Config in a round: nothing runs under ``first``; under ``all``/``verify`` the CPU's
    benchmarker (3.2+: on the instance, for this call), and under ``verify`` the snapshot (taken
    at the first Config) and a post-hook that captures each Config's results."""
    patch = _active
    stack = rounds()
    if not stack or stack[-1].autotuner is not self:
        if not compat.is_interpreted(self):
            return patch.original_bench(self, *args, config=config, **meta)
        return _unrounded(self, args, config, meta)
    current = stack[-1]
    if current.first:  # no tuning: nothing runs, the order picks Config 0 (the first the compiler accepts)
        checked = current.settings.compile == "check"
        if not current.accepted and (static_asserts.refuses(compat.innermost(self), args, config, meta) or
                                     (checked and _refused_by_compiler(self, args, config, meta))):
            current.next_order()
            return _INFINITE  # a tuple, as ``untuned``'s: the autotuner compares them
        current.accepted = True
        return untuned(current.next_order())
    verification = current.verification
    if current.settings.autotune == "verify":
        if verification is None:  # the first Config: the pre-launch snapshot
            names = list(getattr(self, "arg_names", []))
            verification = current.verification = Verification(
                self, current.settings, reachable_tensors(names, args, meta))
        verification.config = config
    if current.compiled and current.real_bench is None and hasattr(type(self), "do_bench"):
        current.real_bench = self.do_bench  # what Triton would time with (3.2+)
    with Patch() as scope:
        if patch.do_bench_position is not None:
            scope.setitem(vars(self), "do_bench", cpu_bench)
        if verification is not None:
            scope.setitem(vars(self), "post_hook", capturing(verification, getattr(self, "post_hook", None)))
        try:
            return patch.original_bench(self, *args, config=config, **meta)
        except (ConfigDivergenceError, AutotuneSideEffectError):
            raise
        except Exception as exc:
            if not current.compiled and failed_static_assert(exc):  # compiled: CompileTimeAssertionFailure
                return list(_INFINITE)
            _add_note(exc, f"kwshim: raised while autotuning {compat.kernel_name(compat.innermost(self))} on the "
                           f"CPU with Config {config} (policy {current.settings.autotune!r})")
            raise


def _refused_by_compiler(autotuner, args, config, meta):
    """Under ``first`` and ``compile="check"``: whether the GPU's benchmark would prune ``config``, its
    specialization compiled for the H200 raising what the installed autotuner prunes
    (``OutOfResources``, ``PTXASError``, ``CompileTimeAssertionFailure``). Anything else (a heuristic's
    argument not yet given) leaves the Config to the launch."""
    from ..compiler import check_launch

    kernel = compat.innermost(autotuner)
    kwargs = {name: value for name, value in meta.items() if name not in compat.LAUNCH_KEYWORDS}
    kwargs.update(config.all_kwargs() if hasattr(config, "all_kwargs") else
                  {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages})
    try:
        check_launch(kernel.fn, (1,), args, kwargs, False, getattr(kernel, "kwargs", None))
    except compat.pruned_errors():
        return True
    except Exception:  # noqa: BLE001 - not a pruning: the launch decides
        return False
    return False


def _check_disk_cache(self, tuning_key, configs, bench_fn):
    """No disk cache for interpreted stacks, as 3.9 does (3.4-3.8 crash on them)."""
    if compat.is_interpreted(self):
        bench_fn()
        return False
    return _active.original_check_disk_cache(self, tuning_key, configs, bench_fn)


def _add_note(exc: Any, note: str):
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python < 3.11: kept where tools that know notes look
        exc.__notes__ = list(getattr(exc, "__notes__", [])) + [note]
