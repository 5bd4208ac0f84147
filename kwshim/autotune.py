"""Autotuning on a CPU, under the interpreter: the policies ``first``, ``all`` and ``verify``.

Triton's ``Autotuner`` benchmarks each Config with a GPU benchmarker (``do_bench``), which fails
on a CPU-only machine. While the switch is on (``kwshim.activate``), kwshim leaves the
Autotuner's own logic in charge (pruning, keys, hooks, the per-key cache, ``best_config``) and
replaces only what needs a GPU, for autotuners over interpreted kernels:

- the benchmarker: each surviving Config runs once (``all``/``verify``) or not at all
  (``first``), from the same snapshot of the tensor arguments, and its CPU time is recorded. The
  times returned order the Configs as they were given, so the Autotuner's own ``min`` picks the
  first surviving Config, deterministically;
- ``check_disk_cache`` (3.4-3.8 crash on interpreted stacks): caching off, as 3.9 does;
- 3.2-3.3 ask a GPU driver for a benchmarker at decoration: the Autotuner gets kwshim's instead.
"""

import inspect
import threading
import time
from typing import Any, List, Optional

from . import _triton
from .errors import ConfigDivergenceError
from .kernel import kernel_name

__all__ = ["POLICIES", "Settings", "install"]

POLICIES = ("first", "all", "verify")


class Settings:
    """A policy and the tolerances ``verify`` compares floating-point tensors with."""

    def __init__(self, policy="all", rtol=1e-05, atol=1e-08, equal_nan=False):
        if policy not in POLICIES:
            raise ValueError(f"kwshim: unknown autotune policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.policy, self.rtol, self.atol, self.equal_nan = policy, rtol, atol, equal_nan

    def __repr__(self):
        return f"Settings({self.policy!r}, rtol={self.rtol}, atol={self.atol})"


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
    """One tuning of one autotuner for one key: the snapshot and the first Config's result."""

    def __init__(self, autotuner, settings):
        self.autotuner, self.settings = autotuner, settings
        self.first = settings.policy == "first"
        self.order = 0  #: the position of the next Config benchmarked
        self.config = None
        self.tensors: Optional[List[tuple]] = None  # (name, tensor, snapshot)
        self.reference = None  # (config, [results])

    def next_order(self):
        order = self.order
        self.order = order + 1
        return order

    def take_snapshot(self, args, meta):
        if self.tensors is not None:
            return
        names = list(getattr(self.autotuner, "arg_names", []))
        named = [(names[i] if i < len(names) else f"#{i}", value) for i, value in enumerate(args)]
        named += list(meta.items())
        self.tensors = [(name, value, value.clone()) for name, value in named if _is_tensor(value)]

    def restore(self):
        for _, tensor, snapshot in self.tensors or ():
            tensor.copy_(snapshot)

    def compare(self, config):
        results = [tensor.clone() for _, tensor, _ in self.tensors or ()]
        if self.reference is None:
            self.reference = (config, results)
            return
        first_config, first_results = self.reference
        for (name, _, _), want, got in zip(self.tensors, first_results, results):
            difference = _difference(want, got, self.settings)
            if difference is not None:
                count, total, largest, index = difference
                raise ConfigDivergenceError(
                    f"{_kernel_name(self.autotuner)}: Config {config} and Config {first_config} leave argument "
                    f"'{name}' different: {count} of {total} elements differ, largest absolute difference "
                    f"{largest}, first at index {index}")


def _is_tensor(value):
    return hasattr(value, "clone") and hasattr(value, "copy_") and hasattr(value, "dtype")


def _difference(want, got, settings):
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
        largest = 1
    else:
        delta = (got.to(torch.float64) - want.to(torch.float64)).abs()[differ]
        largest = float(delta.max()) if delta.numel() else float("nan")
    return int(differ.sum()), want.numel(), largest, index


def _kernel_name(autotuner):
    return kernel_name(_triton.innermost(autotuner))


#: The timings of Configs that ``first`` does not run, by position (shared: they never change).
_UNTUNED = tuple((Timing(0.0, order),) * 3 for order in range(256))

_local = threading.local()


def _rounds():
    rounds = getattr(_local, "rounds", None)
    if rounds is None:
        rounds = _local.rounds = []
    return rounds


def cpu_bench(kernel_call, quantiles=None, **ignored):
    """The benchmarker of interpreted autotuners (``all``/``verify``; ``first`` never benchmarks):
    run the Config once from the round's snapshot, and return its CPU time, ordered by position."""
    rounds = _rounds()
    if not rounds:
        return _gpu_bench(kernel_call, quantiles, **ignored)
    current = rounds[-1]
    order = current.next_order()
    # Each run starts from the snapshot: taken just before the first, restored after each.
    start = time.perf_counter()
    kernel_call()
    elapsed = (time.perf_counter() - start) * 1000.0
    if current.settings.policy == "verify":
        current.compare(current.config)
    current.restore()
    timing = Timing(elapsed, order)
    return [timing] * len(quantiles) if quantiles else timing


def _gpu_bench(kernel_call, quantiles, **kwargs):
    """Outside a kwshim round (a compiled autotuner): what Triton itself would benchmark with."""
    _triton.import_triton()
    from triton.runtime import driver

    bench = getattr(driver.active, "get_benchmarker", None)
    if bench is not None:
        return bench()(kernel_call, quantiles=quantiles, **kwargs)
    from triton.testing import do_bench

    return do_bench(kernel_call, quantiles=quantiles, **kwargs)


def install(patches, settings_now):
    """Install the autotuner patches through ``patches`` (a reversible patcher); ``settings_now()``
    gives the policy in force at each launch."""
    autotuner_module = __import__("triton.runtime.autotuner", fromlist=["Autotuner"])
    Autotuner = autotuner_module.Autotuner
    original_init, original_run, original_bench = Autotuner.__init__, Autotuner.run, Autotuner._bench
    parameters = list(inspect.signature(original_init).parameters)
    #: where do_bench sits among __init__'s arguments after self and fn (None: no such parameter)
    do_bench_position = parameters.index("do_bench") - 2 if "do_bench" in parameters else None

    def __init__(self, fn, *args, **kwargs):
        if (do_bench_position is not None and len(args) <= do_bench_position and kwargs.get("do_bench") is None
                and _triton.is_interpreted(fn)):
            kwargs["do_bench"] = cpu_bench
        original_init(self, fn, *args, **kwargs)

    def run(self, *args, **kwargs):
        if not _triton.is_interpreted(self):
            return original_run(self, *args, **kwargs)
        rounds = _rounds()
        rounds.append(_Round(self, settings_now()))
        try:
            return original_run(self, *args, **kwargs)
        finally:
            rounds.pop()

    def _bench(self, *args, config, **meta):
        rounds = _rounds()
        if not rounds or rounds[-1].autotuner is not self:
            return original_bench(self, *args, config=config, **meta)
        current = rounds[-1]
        if current.first:  # no tuning: nothing runs, the order picks Config 0
            order = current.next_order()
            return _UNTUNED[order] if order < len(_UNTUNED) else (Timing(0.0, order),) * 3
        current.config = config
        current.take_snapshot(args, meta)
        saved = self.__dict__.get("do_bench", _ABSENT)
        self.__dict__["do_bench"] = cpu_bench  # 3.2+: the instance's benchmarker, for this call only
        try:
            return original_bench(self, *args, config=config, **meta)
        except ConfigDivergenceError:
            raise
        except Exception as exc:
            _add_note(exc, f"kwshim: raised while autotuning {_kernel_name(self)} on the CPU with Config {config} "
                           f"(policy {current.settings.policy!r})")
            raise
        finally:
            if saved is _ABSENT:
                self.__dict__.pop("do_bench", None)
            else:
                self.__dict__["do_bench"] = saved

    patches.set(Autotuner, "__init__", __init__)
    patches.set(Autotuner, "run", run)
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


_ABSENT = object()


def _module_bench(original):
    def bench(kernel_call, *args, quantiles=None, **kwargs):
        if _rounds():
            return cpu_bench(kernel_call, quantiles=quantiles)
        return original(kernel_call, *args, quantiles=quantiles, **kwargs)

    bench.__wrapped__ = original
    return bench


def _add_note(exc: Any, note: str):
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:  # Python < 3.11: kept where tools that know notes look
        exc.__notes__ = list(getattr(exc, "__notes__", [])) + [note]
