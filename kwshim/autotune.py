"""Autotuning on a CPU, under the interpreter: the policies ``first``, ``all`` and ``verify``.

Triton's ``Autotuner`` benchmarks each Config with a GPU benchmarker (``do_bench``), which fails
on a CPU-only machine. While the switch is on (``kwshim.activate``), kwshim leaves the
Autotuner's own logic in charge (pruning, keys, hooks, the per-key cache, ``best_config``) and
replaces only what needs a GPU, for autotuners over interpreted kernels:

- the benchmarker: each surviving Config runs once (``all``/``verify``) or not at all
  (``first``). Nothing is restored between runs: Triton's own hooks (``reset_to_zero``,
  ``restore_value``, pre/post hooks) do what they do on a GPU, so a kernel that accumulates
  without ``reset_to_zero`` ends as wrong on the CPU as on the GPU. The times returned order
  the Configs as they were given, so the Autotuner's own ``min`` picks the first surviving
  Config, deterministically;
- a Config whose run fails a ``tl.static_assert`` gets an infinite time, as compiled Triton
  gives a Config that fails to compile;
- ``check_disk_cache`` (3.4-3.8 crash on interpreted stacks): caching off, as 3.9 does;
- 3.2-3.3 ask a GPU driver for a benchmarker at decoration: the Autotuner gets kwshim's instead.

``verify`` adds two checks to ``all`` (class ``_Verification``): every Config also runs from the
same snapshot and is compared with the first before any post-hook restores anything
(``ConfigDivergenceError``), and the tuned launch is compared with one clean launch of the chosen
Config (``AutotuneSideEffectError``). kwshim writes only into tensors a kernel changed.

Compiled autotuners (a GPU) are Triton's own under ``first`` and ``all``. Under ``verify`` they get
the same two checks: before Triton's benchmarker times a Config, the Config runs once from the
snapshot and is compared; timing still picks the Config; the tuned launch is compared with one
clean launch. That is one extra launch per Config, plus one.
"""

import inspect
import threading
import time
import weakref
from typing import Any, Optional

from . import _triton
from .errors import AutotuneSideEffectError, ConfigDivergenceError
from .kernel import kernel_name

__all__ = ["POLICIES", "Settings", "install"]

POLICIES = ("first", "all", "verify")
_INFINITE = (float("inf"),) * 3


class Settings:
    """A policy and the tolerances ``verify`` compares floating-point tensors with."""

    def __init__(self, policy="all", rtol=1e-05, atol=1e-08, equal_nan=True):
        if policy not in POLICIES:
            raise ValueError(f"kwshim: unknown autotune policy {policy!r}; choose one of {', '.join(POLICIES)}")
        for name, value in (("rtol", rtol), ("atol", atol)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"kwshim: {name} must be a number >= 0, not {value!r}")
        self.policy, self.rtol, self.atol, self.equal_nan = policy, float(rtol), float(atol), bool(equal_nan)

    def __repr__(self):
        return f"Settings({self.policy!r}, rtol={self.rtol}, atol={self.atol}, equal_nan={self.equal_nan})"


class Timing(float):
    """A CPU time in ms that orders by position: the Autotuner's ``min`` then picks Config 0."""

    def __new__(cls, ms, order):
        value = super().__new__(cls, ms)
        value.order = order
        return value

    def __eq__(self, other):
        return self.order == other.order if isinstance(other, Timing) else float.__eq__(self, other)

    def __lt__(self, other):
        return self.order < other.order if isinstance(other, Timing) else float.__lt__(self, other)

    def __le__(self, other):
        return self.order <= other.order if isinstance(other, Timing) else float.__le__(self, other)

    def __gt__(self, other):
        return self.order > other.order if isinstance(other, Timing) else float.__gt__(self, other)

    def __ge__(self, other):
        return self.order >= other.order if isinstance(other, Timing) else float.__ge__(self, other)

    __hash__ = float.__hash__


class _Round:
    """One tuning of one autotuner for one key (``verification`` is set under ``verify``)."""

    def __init__(self, autotuner, settings, compiled=False):
        self.autotuner, self.settings = autotuner, settings
        self.first = settings.policy == "first"
        self.compiled = compiled  #: a compiled autotuner under ``verify``: Triton's benchmarker times
        self.order = 0  #: the position of the next Config benchmarked
        self.verification: Optional[_Verification] = None
        self.real_bench: Any = None  #: compiled: the benchmarker the autotuner would have used

    def next_order(self):
        order = self.order
        self.order = order + 1
        return order


# -- tensors: where they are, their state, and writing only what changed ----------------------

def _is_tensor(value):
    return hasattr(value, "clone") and hasattr(value, "copy_") and hasattr(value, "dtype")


def reachable_tensors(names, args, kwargs):
    """(name, tensor) for every tensor a launch can reach: positional and keyword arguments,
    tuple elements, and the tensor inside a host ``TensorDescriptor`` (its ``base``)."""
    found, seen = [], set()

    def visit(name, value):
        if _is_tensor(value):
            if id(value) not in seen:
                seen.add(id(value))
                found.append((name, value))
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                visit(f"{name}[{i}]", item)
        elif _is_tensor(getattr(value, "base", None)) and hasattr(value, "block_shape"):
            visit(f"{name}.base", value.base)

    for i, value in enumerate(args):
        visit(names[i] if i < len(names) else f"#{i}", value)
    for name, value in kwargs.items():
        visit(name, value)
    return found


def _same(a, b):
    """Bit-for-bit the same values (NaN where NaN): nothing to write back."""
    import torch

    if torch.equal(a, b):
        return True
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return False


def _write(tensor, values):
    """Put ``values`` back into ``tensor`` as the interpreter writes: no autograd version bump,
    and legal for leaves that require grad and for inference tensors."""
    import torch

    if tensor.is_inference():
        with torch.inference_mode():
            tensor.copy_(values)
    else:
        tensor.data.copy_(values)


class State:
    """The values of some tensors at one moment; ``put`` writes back only the tensors that differ."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.values = [tensor.clone() for _, tensor in tensors]

    def put(self):
        for (_, tensor), values in zip(self.tensors, self.values):
            if not _same(tensor, values):
                _write(tensor, values)

    def is_current(self):
        return all(_same(tensor, values) for (_, tensor), values in zip(self.tensors, self.values))


def difference(want, got, settings):
    """None when ``got`` agrees with ``want`` (exact for integers and booleans, ``torch.isclose``
    for floating point, NaN in the same place agreeing unless ``equal_nan`` is off); otherwise
    (differing elements, elements, largest absolute difference, first differing index)."""
    import torch

    if want.shape != got.shape:
        return (got.numel(), want.numel(), float("nan"), ())
    if want.dtype.is_floating_point or want.dtype.is_complex:
        same = torch.isclose(got, want, rtol=settings.rtol, atol=settings.atol, equal_nan=settings.equal_nan)
    else:
        same = got == want
    if bool(same.all()):
        return None
    differ = ~same
    index = tuple(int(i) for i in torch.nonzero(differ)[0].tolist())
    if want.dtype == torch.bool:
        largest = 1.0
    else:
        delta = (got.to(torch.float64) - want.to(torch.float64)).abs()[differ]
        largest = float(delta.max()) if delta.numel() else float("nan")
    return int(differ.sum()), want.numel(), largest, index


def _describe(found):
    count, total, largest, index = found
    return (f"{count} of {total} elements differ, largest absolute difference {largest}, "
            f"first at index {index}")


# -- verify -----------------------------------------------------------------------------------

class _Verification:
    """What ``verify`` keeps for one tuning: the pre-launch snapshot, the first Config's results.

    Each Config runs twice at most: once from the snapshot, compared with the first Config
    before its post-hook restores anything, and once from where the Configs before it left the
    tensors (the GPU's sequence: only that run is timed). The two are one run whenever those
    states are the same, as for Config 0 and for kernels whose hooks put everything back.
    """

    def __init__(self, autotuner, settings, tensors):
        self.autotuner, self.settings = autotuner, settings
        self.snapshot = State(tensors)
        self.reference = None  # (config, State of the first Config's results)
        self.config = None
        self.captured: Optional[State] = None
        self.capturing = False

    def capture(self):
        """Called by the post-hook wrapper, before the post-hook itself runs."""
        if self.capturing:
            self.captured = State(self.snapshot.tensors)
            self.capturing = False

    def run_config(self, kernel_call):
        """Run one Config as ``verify`` does on the CPU; returns its CPU time in ms (the GPU-order run)."""
        before = None if self.snapshot.is_current() else State(self.snapshot.tensors)
        elapsed = self._compared_run(kernel_call, before)
        if before is not None:  # the GPU's run, from where the Configs before left the tensors
            before.put()
            try:
                elapsed = _timed(kernel_call)
            except BaseException:
                before.put()
                raise
        return elapsed

    def check_config(self, kernel_call):
        """Compiled mode: run the Config once from the snapshot, compare it, and put the tensors
        back where the Configs before it left them, for Triton's benchmarker to time it there."""
        before = State(self.snapshot.tensors)
        self._compared_run(kernel_call, before)
        before.put()

    def _compared_run(self, kernel_call, before):
        """Run the Config once from the snapshot and compare its results with the first Config's,
        taken before its post-hook restores anything. ``before``: the tensors as the Configs before
        left them (None where that is the snapshot), put back if the run fails. Returns ms."""
        if before is not None:
            self.snapshot.put()
        self.capturing, self.captured = True, None
        try:
            elapsed = _timed(kernel_call)
            if self.captured is None:  # no post-hook was called (none in this release's kernel_call)
                self.capture()
            self.compare(self.config, self.captured)
        except (ConfigDivergenceError, AutotuneSideEffectError):
            raise
        except BaseException:  # a Config that fails leaves the tensors as the Configs before it did
            self.capturing = False
            (before or self.snapshot).put()
            raise
        return elapsed

    def compare(self, config, results):
        if self.reference is None:
            self.reference = (config, results)
            return
        first_config, first_results = self.reference
        for (name, _), want, got in zip(results.tensors, first_results.values, results.values):
            found = difference(want, got, self.settings)
            if found is not None:
                self.snapshot.put()
                raise ConfigDivergenceError(
                    f"{_kernel_name(self.autotuner)}: Config {config} and Config {first_config} leave argument "
                    f"'{name}' different: {_describe(found)}")

    def check_side_effects(self, relaunch):
        """Compare what the tuned launch left with one clean launch of the chosen Config."""
        tuned = State(self.snapshot.tensors)
        self.snapshot.put()
        relaunch()
        for (name, tensor), want, start in zip(tuned.tensors, tuned.values, self.snapshot.values):
            found = difference(tensor, want, self.settings)
            if found is not None:
                self.snapshot.put()
                raise AutotuneSideEffectError(
                    f"{_kernel_name(self.autotuner)}: autotuning changes what the first launch leaves in argument "
                    f"'{name}': after tuning it differs from one launch of the chosen Config "
                    f"{self.autotuner.best_config}: {_describe(found)}. {_remedy(name, start)}")
        tuned.put()


def _remedy(name, start):
    parameter = name.split(".")[0].split("[")[0]
    if not bool((start == 0).all()):
        return (f"The tuning runs leave '{parameter}' changed: add restore_value=['{parameter}'] to "
                f"@triton.autotune so that each tuning run starts from the caller's values.")
    return (f"The tuning runs accumulate into '{parameter}', which started at zero: add "
            f"reset_to_zero=['{parameter}'] to @triton.autotune so that the launch starts from zero.")


def _kernel_name(autotuner):
    return kernel_name(_triton.innermost(autotuner))


def _failed_static_assert(exc):
    """True when ``exc`` comes from a failed ``tl.static_assert`` in the interpreter, which
    compiled Triton reports at compilation (``CompileTimeAssertionFailure``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, AssertionError):
            tb = exc.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            if tb is not None and tb.tb_frame.f_code.co_name == "_new_static_assert":
                return True
        exc = exc.__cause__ or exc.__context__
    return False


#: The timings of Configs that ``first`` does not run, by position (shared: they never change).
_UNTUNED = tuple((Timing(0.0, order),) * 3 for order in range(256))

_local = threading.local()
#: the tuning keys of each autotuner that were tuned under ``verify``
_VERIFIED: "weakref.WeakKeyDictionary[Any, set]" = weakref.WeakKeyDictionary()


def _rounds():
    rounds = getattr(_local, "rounds", None)
    if rounds is None:
        rounds = _local.rounds = []
    return rounds


def cpu_bench(kernel_call, quantiles=None, **ignored):
    """The benchmarker of interpreted autotuners (``all``/``verify``; ``first`` never benchmarks):
    run the Config once, and return its CPU time, ordered by position. For a compiled autotuner
    under ``verify``: check the Config from the snapshot, then time it with Triton's own benchmarker."""
    rounds = _rounds()
    if not rounds:
        return _gpu_bench(kernel_call, quantiles, **ignored)
    current = rounds[-1]
    if current.compiled:
        if current.verification is not None:
            current.verification.check_config(kernel_call)
        real = current.real_bench or (lambda call, quantiles=None, **kw: _gpu_bench(call, quantiles, **kw))
        return real(kernel_call, quantiles=quantiles, **ignored)
    order = current.next_order()
    if current.verification is None:
        elapsed = _timed(kernel_call)
    else:
        elapsed = current.verification.run_config(kernel_call)
    timing = Timing(elapsed, order)
    return [timing] * len(quantiles) if quantiles else timing


def _timed(kernel_call):
    start = time.perf_counter()
    kernel_call()
    return (time.perf_counter() - start) * 1000.0


def _gpu_bench(kernel_call, quantiles, **kwargs):
    """Outside a kwshim round (a compiled autotuner): what Triton itself would benchmark with."""
    _triton.import_triton()
    from triton.runtime import driver

    bench = getattr(driver.active, "get_benchmarker", None)
    if bench is not None:
        return bench()(kernel_call, quantiles=quantiles, **kwargs)
    from triton.testing import do_bench

    return do_bench(kernel_call, quantiles=quantiles, **kwargs)


def install(patches, settings_now, patch_run=True):
    """Install the autotuner patches through ``patches`` (a reversible patcher); ``settings_now()``
    gives the policy in force at each launch. Returns ``install_run()``, which patches
    ``Autotuner.run`` (idempotent): at once with ``patch_run``, else left to the caller, so that a
    compiled-only process under ``first``/``all`` keeps Triton's own ``run`` (no frame added to its
    launches) until a ``verify`` handle needs it."""
    autotuner_module = __import__("triton.runtime.autotuner", fromlist=["Autotuner"])
    Autotuner = autotuner_module.Autotuner
    original_init, original_run, original_bench = Autotuner.__init__, Autotuner.run, Autotuner._bench
    parameters = list(inspect.signature(original_init).parameters)
    #: where do_bench sits among __init__'s arguments after self and fn (None: no such parameter,
    #: 2.2-3.1, whose ``_bench`` calls the module's own ``do_bench``)
    do_bench_position = parameters.index("do_bench") - 2 if "do_bench" in parameters else None
    #: what ``_bench`` swaps on the instance for one call: the benchmarker (3.2+), and under verify
    #: also the post-hook
    swapped_all = ("do_bench",) if do_bench_position is not None else ()
    swapped_verify = swapped_all + ("post_hook",)

    def __init__(self, fn, *args, **kwargs):
        if (do_bench_position is not None and len(args) <= do_bench_position and kwargs.get("do_bench") is None
                and _triton.is_interpreted(fn)):
            kwargs["do_bench"] = cpu_bench
        original_init(self, fn, *args, **kwargs)

    jit_class, interpreted_class = _triton.kernel_classes().jit, _triton.kernel_classes().interpreted

    def run(self, *args, **kwargs):
        settings = settings_now()
        kind = type(self.fn)
        if kind is jit_class and settings.policy != "verify":  # compiled, the common case
            return original_run(self, *args, **kwargs)
        if kind is not interpreted_class and not _triton.is_interpreted(self):
            # compiled: Triton's own, except under verify
            if settings.policy != "verify":
                return original_run(self, *args, **kwargs)
            return _verified_run(self, settings, args, kwargs, compiled=True)
        if settings.policy == "verify":
            return _verified_run(self, settings, args, kwargs)
        rounds = _rounds()
        rounds.append(_Round(self, settings))
        try:
            return original_run(self, *args, **kwargs)
        finally:
            rounds.pop()

    def _verified_run(self, settings, args, kwargs, compiled=False):
        verified = _VERIFIED.setdefault(self, set())
        # A key tuned under another policy is tuned again: set aside while this launch runs.
        unverified = {key: config for key, config in self.cache.items() if key not in verified}
        for key in unverified:
            del self.cache[key]
        known = set(self.cache)
        current = _Round(self, settings, compiled)
        rounds = _rounds()
        rounds.append(current)
        tuned = set()
        try:
            try:
                result = original_run(self, *args, **kwargs)
            finally:
                rounds.pop()
                tuned = set(self.cache) - known
            if current.verification is not None and current.verification.reference is not None:
                try:
                    current.verification.check_side_effects(lambda: original_run(self, *args, **kwargs))
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

    def _bench(self, *args, config, **meta):
        rounds = _rounds()
        if not rounds or rounds[-1].autotuner is not self:
            return original_bench(self, *args, config=config, **meta)
        current = rounds[-1]
        if current.first:  # no tuning: nothing runs, the order picks Config 0
            order = current.next_order()
            return _UNTUNED[order] if order < len(_UNTUNED) else (Timing(0.0, order),) * 3
        verification = current.verification
        if current.settings.policy == "verify":
            if verification is None:  # the first Config: the pre-launch snapshot
                names = list(getattr(self, "arg_names", []))
                verification = current.verification = _Verification(
                    self, current.settings, reachable_tensors(names, args, meta))
            verification.config = config
        # 3.2+: the instance's benchmarker, for this call only (verify: also the post-hook)
        swapped = swapped_all if verification is None else swapped_verify
        saved = [(name, self.__dict__.get(name, _ABSENT)) for name in swapped]
        if current.compiled and current.real_bench is None and hasattr(type(self), "do_bench"):
            current.real_bench = self.do_bench  # what Triton would time with (3.2+)
        if swapped_all:
            self.__dict__["do_bench"] = cpu_bench
        if verification is not None:
            self.__dict__["post_hook"] = _capturing(verification, getattr(self, "post_hook", None))
        try:
            return original_bench(self, *args, config=config, **meta)
        except (ConfigDivergenceError, AutotuneSideEffectError):
            raise
        except Exception as exc:
            if not current.compiled and _failed_static_assert(exc):  # compiled: CompileTimeAssertionFailure
                return list(_INFINITE)
            _add_note(exc, f"kwshim: raised while autotuning {_kernel_name(self)} on the CPU with Config {config} "
                           f"(policy {current.settings.policy!r})")
            raise
        finally:
            for name, value in saved:
                if value is _ABSENT:
                    self.__dict__.pop(name, None)
                else:
                    self.__dict__[name] = value

    run_patched = []

    def install_run():
        if not run_patched:
            patches.set(Autotuner, "run", run)
            run_patched.append(True)

    patches.set(Autotuner, "__init__", __init__)
    if patch_run:
        install_run()
    patches.set(Autotuner, "_bench", _bench)
    if "check_disk_cache" in vars(Autotuner):
        original_check = Autotuner.check_disk_cache

        def check_disk_cache(self, tuning_key, configs, bench_fn):
            if _triton.is_interpreted(self):  # as 3.9 does under the interpreter: no disk cache
                bench_fn()
                return False
            return original_check(self, tuning_key, configs, bench_fn)

        patches.set(Autotuner, "check_disk_cache", check_disk_cache)
    for name in ("do_bench", "do_bench_cudagraph"):  # 2.2-3.1: _bench calls the module's own
        original = vars(autotuner_module).get(name)
        if original is not None:
            patches.set(autotuner_module, name, _module_bench(original))
    return install_run


_ABSENT = object()


def _capturing(verification, post_hook):
    """The autotuner's post-hook, preceded by taking the Config's results (``verify``): a
    ``restore_value`` post-hook would otherwise put them back before they are compared."""

    def capturing_post_hook(*args, **kwargs):
        if kwargs.get("exception") is None:
            verification.capture()
        if post_hook is not None:
            return post_hook(*args, **kwargs)
        return None

    return capturing_post_hook


def _module_bench(original):
    def bench(kernel_call, *args, quantiles=None, **kwargs):
        rounds = _rounds()
        if rounds:
            if rounds[-1].compiled and rounds[-1].real_bench is None:
                rounds[-1].real_bench = lambda call, quantiles=None, **kw: original(call, *args, quantiles=quantiles,
                                                                                    **kwargs)
            return cpu_bench(kernel_call, quantiles=quantiles)
        return original(kernel_call, *args, quantiles=quantiles, **kwargs)

    bench.__wrapped__ = original
    return bench


def _add_note(exc: Any, note: str):
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python < 3.11: kept where tools that know notes look
        exc.__notes__ = list(getattr(exc, "__notes__", [])) + [note]
