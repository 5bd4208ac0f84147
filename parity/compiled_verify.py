"""Compiled mode on the GPU: the switch's ``verify`` policy over compiled autotuners.

Called by ``parity.run`` (in its compiled-side process, ``TRITON_INTERPRET=0``): returns rows of
(check, expected, measured, verdict) for the report, and the cost figures.
"""

import statistics
import time

import torch
import triton
import triton.language as tl

import kwshim
from kwshim import AutotuneSideEffectError, ConfigDivergenceError


@triton.jit
def _scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, 8)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, tl.where(offsets < BLOCK, x * 2, x))  # wrong beyond BLOCK


@triton.jit
def _half(out_ptr, SLOT: tl.constexpr):
    offsets = tl.arange(0, 8)
    if SLOT == 0:
        tl.store(out_ptr + offsets, offsets + 1, mask=offsets < 4)
    else:
        tl.store(out_ptr + offsets, offsets + 1, mask=offsets >= 4)


@triton.jit
def _accumulate(x_ptr, acc_ptr, SLOT: tl.constexpr):
    tl.atomic_add(acc_ptr, tl.load(x_ptr))


@triton.jit
def _increment(x_ptr, SLOT: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def _between(view_ptr, SLOT: tl.constexpr):
    offsets = tl.arange(0, 4) * 2 + 1  # between the elements of a stride-2 view
    tl.store(view_ptr + offsets, tl.full((4,), SLOT + 1, tl.int32))


@triton.jit
def _store_slot(out_ptr, unused_ptr, SLOT: tl.constexpr):
    tl.store(out_ptr, SLOT * 0 + 5)


def _configs(count, key="SLOT"):
    return [triton.Config({key: i}) for i in range(count)]


def _first(timing):
    return timing[0] if isinstance(timing, (list, tuple)) else timing


def _ms(timing):
    return float(_first(timing))


def _outcome(launch):
    """'passes' or the error class and its message."""
    try:
        launch()
        torch.cuda.synchronize()
        return "passes"
    except (ConfigDivergenceError, AutotuneSideEffectError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _shown(outcome):
    """The error class and what the message names (the argument and the remedy), for the table."""
    if outcome == "passes":
        return outcome
    named = [part for part in ("argument 'out_ptr'", "argument 'acc_ptr'", "argument 'x_ptr'",
                               "reset_to_zero=['acc_ptr']", "restore_value=['x_ptr']") if part in outcome]
    return f"{outcome.split(':')[0]} ({', '.join(named)})"


def verify_rows():
    rows = []
    with kwshim.activate(autotune="verify"):
        x, out = torch.arange(8, dtype=torch.float32, device="cuda"), torch.full((8,), -1.0, device="cuda")
        scale = triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 4})], key=[])(_scale)
        got = _outcome(lambda: scale[(1,)](x, out))
        rows.append(("a divergent Config (masking bug at BLOCK=4)", "ConfigDivergenceError",
                     _shown(got), got.startswith("ConfigDivergenceError") and float(out.sum()) == -8.0))
        out = torch.zeros(8, dtype=torch.int32, device="cuda")
        half = triton.autotune(configs=_configs(2), key=[])(_half)
        got = _outcome(lambda: half[(1,)](out))
        rows.append(("Configs writing disjoint regions (triton#9230)", "ConfigDivergenceError", _shown(got),
                     got.startswith("ConfigDivergenceError") and int(out.sum()) == 0))
        ones, acc = torch.ones(1, device="cuda"), torch.zeros(1, device="cuda")
        accumulate = triton.autotune(configs=_configs(3), key=[])(_accumulate)
        got = _outcome(lambda: accumulate[(1,)](ones, acc))
        rows.append(("atomic_add without reset_to_zero (triton#4217, #781)", "AutotuneSideEffectError naming "
                     "reset_to_zero=['acc_ptr']", _shown(got),
                     "reset_to_zero=['acc_ptr']" in got and float(acc[0]) == 0.0))
        value = torch.full((1,), 10, dtype=torch.int32, device="cuda")
        increment = triton.autotune(configs=_configs(3), key=[])(_increment)
        got = _outcome(lambda: increment[(1,)](value))
        rows.append(("in-place update without restore_value (triton#5339)", "AutotuneSideEffectError naming "
                     "restore_value=['x_ptr']", _shown(got),
                     "restore_value=['x_ptr']" in got and int(value[0]) == 10))
        acc = torch.zeros(1, device="cuda")
        hooked = triton.autotune(configs=_configs(3), key=[], reset_to_zero=["acc_ptr"])(_accumulate)
        got = _outcome(lambda: hooked[(1,)](ones, acc))
        rows.append(("atomic_add with reset_to_zero", "passes, acc 1.0", f"{got}, acc {float(acc[0])}",
                     got == "passes" and float(acc[0]) == 1.0))
        value = torch.full((1,), 10, dtype=torch.int32, device="cuda")
        restored = triton.autotune(configs=_configs(3), key=[], restore_value=["x_ptr"])(_increment)
        got = _outcome(lambda: restored[(1,)](value))
        rows.append(("in-place update with restore_value", "passes, x 11", f"{got}, x {int(value[0])}",
                     got == "passes" and int(value[0]) == 11))
        acc = torch.full((1,), 5.0, device="cuda")
        zeroed = triton.autotune(configs=_configs(3), key=[], reset_to_zero=["acc_ptr"])(_accumulate)
        got = _outcome(lambda: zeroed[(1,)](ones, acc))
        rows.append(("reset_to_zero on a non-zero buffer (5.0)", "passes, acc 1.0", f"{got}, acc {float(acc[0])}",
                     got == "passes" and float(acc[0]) == 1.0))
        storage = torch.zeros(8, dtype=torch.int32, device="cuda")
        between = triton.autotune(configs=_configs(2), key=[])(_between)
        got = _outcome(lambda: between[(1,)](storage[::2]))
        rows.append(("Configs writing between a strided view's elements", "ConfigDivergenceError naming "
                     "'view_ptr.storage'", got.split(":")[0] + (" ('view_ptr.storage')" if "'view_ptr.storage'" in got
                                                                else ""),
                     got.startswith("ConfigDivergenceError") and "'view_ptr.storage'" in got
                     and int(storage.sum()) == 0))
        out = torch.zeros(1, dtype=torch.int32, device="cuda")
        fp8 = torch.ones(4, device="cuda").to(torch.float8_e4m3fn)
        same = triton.autotune(configs=_configs(2), key=[])(_store_slot)
        got = _outcome(lambda: same[(1,)](out, fp8))
        rows.append(("an fp8 argument", "passes, out 5", f"{got}, out {int(out[0])}",
                     got == "passes" and int(out[0]) == 5))
    acc = torch.full((1,), 5.0, device="cuda")
    bare = triton.autotune(configs=_configs(3), key=[], reset_to_zero=["acc_ptr"])(_accumulate)
    bare[(1,)](ones, acc)
    torch.cuda.synchronize()
    rows.append(("bare Triton: reset_to_zero on 5.0, the first launch (zeroed after tuning)", "acc 1.0",
                 f"acc {float(acc[0])}", float(acc[0]) == 1.0))
    with kwshim.activate(autotune="verify"):
        n = 1 << 20
        a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
        add = triton.autotune(configs=[triton.Config({"BLOCK": 2 ** k}) for k in (7, 8, 9, 10)], key=["n"])(_add)
        add[(lambda meta: (triton.cdiv(n, meta["BLOCK"]),))](a, b, c, n)
        torch.cuda.synchronize()
        timings = {config: _ms(timing) for config, timing in add.configs_timings.items()}
        real = (all(type(_first(t)) is float for t in add.configs_timings.values())
                and len(set(timings.values())) > 1 and add.best_config is min(timings, key=timings.get))
        rows.append(("tuning picks by measured GPU time", "configs_timings in ms, best = fastest",
                     ", ".join(f"{v:.4f}" for v in timings.values())
                     + f"; best BLOCK {add.best_config.kwargs['BLOCK']}",
                     real))
    return rows


def _first_launch_seconds(policy, rounds=5):
    """Median time of the first (tuning) launch of a 4-Config autotuner, under ``policy``."""
    n = 1 << 22
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    configs = [triton.Config({"BLOCK": 2 ** k}) for k in (7, 8, 9, 10)]
    times = []
    for index in range(rounds):
        with kwshim.activate(autotune=policy):
            kernel = triton.autotune(configs=configs, key=["n"])(triton.jit(_add.fn))
            kernel[(lambda meta: (triton.cdiv(n, meta["BLOCK"]),))](a, b, c, n)  # compile every Config once
            torch.cuda.synchronize()
            m = n - index - 1  # a new key: a tuning launch, kernels already compiled
            start = time.perf_counter()
            kernel[(lambda meta: (triton.cdiv(m, meta["BLOCK"]),))](a, b, c, m)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _launch_count(policy, configs=4):
    """Kernel launches made by the first launch of a ``configs``-Config autotuner under ``policy``,
    with a benchmarker that runs each Config once (so the count does not depend on timing)."""
    launches = []

    def once(kernel_call, quantiles=None, **kwargs):
        kernel_call()
        return [0.001 * (len(launches) + 1)] * 3

    with kwshim.activate(autotune=policy):
        jitted = triton.jit(_increment.fn)
        kernel = triton.autotune(configs=_configs(configs), key=[], restore_value=["x_ptr"], do_bench=once)(jitted)
        original = jitted.run

        def counting(*args, **kwargs):
            launches.append(1)
            return original(*args, **kwargs)

        jitted.run = counting
        kernel[(1,)](torch.zeros(1, dtype=torch.int32, device="cuda"))
        torch.cuda.synchronize()
    return len(launches)


def _cached_launch_ratio(policy, rounds=21, per_round=200):
    """Cached (no tuning) launches of an autotuned compiled kernel, switch on under ``policy`` / off."""
    n = 4096
    a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
    kernel = triton.autotune(configs=[triton.Config({"BLOCK": 1024})], key=["n"])(triton.jit(_add.fn))
    grid = (4,)
    for _ in range(50):
        kernel[grid](a, b, c, n)
    torch.cuda.synchronize()

    def timed():
        start = time.perf_counter()
        for _ in range(per_round):
            kernel[grid](a, b, c, n)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    ratios = []
    for index in range(rounds):
        if index % 2:
            off = timed()
            with kwshim.activate(autotune=policy):
                on = timed()
        else:
            with kwshim.activate(autotune=policy):
                on = timed()
            off = timed()
        ratios.append(on / off)
    return statistics.median(ratios)


def cost_rows():
    with_verify, without = _first_launch_seconds("verify"), _first_launch_seconds("all")
    return [
        ("tuning time of one 4-Config autotuner (first launch, 4M-element add), verify / all",
         f"{with_verify * 1000:.2f} ms / {without * 1000:.2f} ms = {with_verify / without:.2f}"),
        ("kernel launches of that first launch with a run-once benchmarker: all, verify (goal: at most 2 per "
         "Config plus 1 extra)", f"{_launch_count('all')}, {_launch_count('verify')}"),
        ("cached launches, switch on under 'first' / off (median of 21 rounds x 200)",
         f"{_cached_launch_ratio('first'):.3f}"),
        ("cached launches, switch on under 'all' / off (median of 21 rounds x 200)",
         f"{_cached_launch_ratio('all'):.3f}"),
    ]
