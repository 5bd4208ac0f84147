"""Trace and replay (``batching/replay``): a kernel's body runs once per specialization and guard
values, later batches replay its operations, and every launch leaves the loop's bits."""

import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import programs as grid_module
from kwshim.interpreter import language_patch
from kwshim.batching import replay
from kwshim.batching.steps import Folded, slots_in

from . import replay_settings
from .kernels import needs_block_loads
from .test_programs import _same_bits, batching
from .test_programs_runs import early_return


@triton.jit
def row_norm(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    scale = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, x * scale * w, mask=mask)


@triton.jit
def steered(x_ptr, out_ptr, n, trips):
    """Python control flow on two scalars: an ``if`` and a ``range``."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    total = x * 0
    for i in range(trips):
        total += x * (i + 1)
    if n > 4:
        total = total + 1000
    tl.store(out_ptr + pid, total)


@triton.jit
def lockstep(x_ptr, out_ptr, rows_per_program, BLOCK: tl.constexpr):
    """Each program a block of rows: a ``range`` whose bounds differ between programs."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for row in range(pid * rows_per_program, (pid + 1) * rows_per_program):
        tl.store(out_ptr + row * BLOCK + cols, tl.load(x_ptr + row * BLOCK + cols) * 2)


def _record(kernel):
    return grid_module.launch_record().get(kernel.fn.__qualname__, {"batched": 0, "replayed": 0, "looped": 0})


def _launches(kernel, grid_and_arguments, mode, **constants):
    """Every launch of ``grid_and_arguments`` ((grid, make) pairs) in one activation of ``mode``, and
    the tensors each left."""
    results = []
    with kwshim.activate(grid=mode):
        for grid, make in grid_and_arguments:
            tensors, scalars = make()
            kernel[grid](*tensors, *scalars, **constants)
            results.append(tensors)
    return results


def _same_as_the_loop(kernel, launches, **constants):
    looped = _launches(kernel, launches, "sequential", **constants)
    batched = _launches(kernel, launches, "batched", **constants)
    for loop, batch in zip(looped, batched):
        _same_bits(loop, batch)
    return batched


def _row_norm_launch(rows, eps, seed):
    def make():
        generator = torch.Generator().manual_seed(seed)
        x, w = torch.randn(rows, 100, generator=generator), torch.randn(100, generator=generator)
        return (x, w, torch.zeros(rows, 100)), (100, eps)
    return (rows,), make


@batching
@needs_block_loads
def test_later_launches_replay_the_first_s_trace_with_the_loop_s_bits():
    before = _record(row_norm)
    launches = [_row_norm_launch(rows, 1e-6, seed) for seed, rows in enumerate((2, 300, 70, 300))]
    _same_as_the_loop(row_norm, launches, BLOCK=128)
    after = _record(row_norm)
    assert after["batched"] - before["batched"] == 4
    assert after["replayed"] - before["replayed"] == 3  # all but the first (one chunk), which made the trace


@batching
@needs_block_loads
def test_each_launch_computes_with_its_own_float_argument():
    # a float is an input of the trace where it reaches the body as a tensor, and part of the key where not
    launches = [_row_norm_launch(8, eps, 0) for eps in (1e-6, 0.5, 1e-6)]
    batched = _same_as_the_loop(row_norm, launches, BLOCK=128)
    assert not torch.equal(batched[0][2], batched[1][2]) and torch.equal(batched[0][2], batched[2][2])


@batching
def test_a_scalar_that_steers_python_is_a_guard_and_another_value_traces_again():
    def launch(n, trips):
        return (6,), lambda: ((torch.arange(6, dtype=torch.float32), torch.zeros(6)), (n, trips))

    before = _record(steered)
    values = [(3, 2), (10, 2), (3, 5), (3, 2), (10, 2), (7, 5)]
    batched = _same_as_the_loop(steered, [launch(n, trips) for n, trips in values])
    assert batched[0][1].tolist() == [3 * x for x in range(6)]
    assert batched[1][1].tolist() == [3 * x + 1000 for x in range(6)]
    after = _record(steered)
    # a trace holds both guards: the second (3, 2) and (10, 2) replay the first two launches' traces;
    # (10, 2), (3, 5) and (7, 5) each meet another value in one guard of every trace kept, and trace again
    assert after["replayed"] - before["replayed"] == 2


@batching
def test_the_traces_of_one_specialization_are_bounded():
    with kwshim.activate(grid="batched"):
        for trips in range(2, replay._PER_KEY + 6):  # 1 is a constexpr when compiled: another specialization
            steered[(2,)](torch.ones(2), torch.zeros(2), 0, trips)
        name = steered.fn.__qualname__
        kept = [traces for key, traces in replay._TRACES.items() if key[0].__qualname__ == name]
    assert len(kept) == 1 and len(kept[0]) == replay._PER_KEY


@batching
def test_a_loop_whose_bounds_differ_between_programs_is_replayed_and_its_trip_count_is_a_guard():
    def launch(programs, rows_per_program):
        x = torch.arange(programs * rows_per_program * 16, dtype=torch.float32).reshape(-1, 16)
        return (programs,), lambda: ((x.clone(), torch.zeros_like(x)), (rows_per_program,))

    before = _record(lockstep)
    # 2 rows per program twice (the second replays), 3 (another trip count: traced again), 0 (the
    # bounds agree between programs: Python's range, traced again)
    batched = _same_as_the_loop(lockstep, [launch(4, 2), launch(6, 2), launch(4, 3), launch(4, 0)], BLOCK=16)
    assert torch.equal(batched[1][1], batched[1][0] * 2) and torch.equal(batched[2][1], batched[2][0] * 2)
    after = _record(lockstep)
    assert after["batched"] - before["batched"] == 4 and after["replayed"] - before["replayed"] == 1


@triton.jit
def lockstep_arithmetic(out_ptr, rows_per_program):
    """A loop index's own arithmetic with ints: each recorded as a step."""
    pid = tl.program_id(0)
    for row in range(pid * rows_per_program, (pid + 1) * rows_per_program):
        shifted = (row * 3 + 1) // 2 % 7 - (-row)
        if row * 0 < 1:  # a comparison with an int, read by Python
            tl.store(out_ptr + row, shifted)


@batching
def test_a_loop_index_s_arithmetic_replays_with_the_loop_s_bits():
    def launch(programs):
        return (programs,), lambda: ((torch.zeros(programs * 3, dtype=torch.int32),), (3,))

    before = _record(lockstep_arithmetic)
    batched = _same_as_the_loop(lockstep_arithmetic, [launch(4), launch(5)])
    assert batched[1][0].tolist() == [(row * 3 + 1) // 2 % 7 + row for row in range(15)]
    assert grid_module.fallback_reasons().get(lockstep_arithmetic.fn.__qualname__) is None
    assert _record(lockstep_arithmetic)["replayed"] - before["replayed"] == 1


@batching
def test_a_replay_whose_guard_differs_between_programs_splits_as_the_body_does():
    def launch(n):
        return (8,), lambda: ((torch.zeros(8, dtype=torch.int32),), (n,))

    batched = _same_as_the_loop(early_return, [launch(8), launch(5), launch(3)])
    assert batched[1][0].tolist() == [1, 2, 3, 4, 5, 0, 0, 0]
    assert grid_module.fallback_reasons().get(early_return.fn.__qualname__) is None


@batching
@needs_block_loads
def test_a_trace_releases_every_slot_a_step_makes():
    with kwshim.activate(grid="batched"):
        for _ in range(2):
            (grid, make) = _row_norm_launch(4, 1e-6, 0)
            tensors, scalars = make()
            row_norm[grid](*tensors, *scalars, BLOCK=128)
        name = row_norm.fn.__qualname__
        (trace,) = [traces[0] for key, traces in replay._TRACES.items() if key[0].__qualname__ == name]
    inputs = {slot for _, slot in trace.inputs}
    released = [slot for step in trace.steps if isinstance(step, tuple) for slot in step[4]]
    released += [slot for step in trace.steps if not isinstance(step, tuple) for slot in step.release]
    made = {slot for step in trace.steps if isinstance(step, tuple) for slot in slots_in(step[3])}
    made |= {step.index for step in trace.steps if isinstance(step, Folded)}
    assert sorted(released) == sorted(set(released))  # each once
    assert made and made - inputs <= set(released)  # every slot a step made is let go


def _traces_of(kernel):
    name = kernel.fn.__qualname__
    return [trace for key, kept in replay._TRACES.items() if key[0].__qualname__ == name for trace in kept]


@batching
def test_a_trace_replayed_often_runs_as_one_function_with_the_walk_s_bits_and_guards(monkeypatch):
    """After ``_COMPILED_AFTER`` walked replays a trace is one generated function: its launches keep
    the loop's bits, a guard that reads another value still misses (and traces again), and a guard
    where the programs disagree still splits the batch as the body does."""
    monkeypatch.setattr(replay, "_COMPILED_AFTER", 2)

    def launch(n, trips):
        return (6,), lambda: ((torch.arange(6, dtype=torch.float32), torch.zeros(6)), (n, trips))

    before = _record(steered)
    values = [(3, 2)] * 5 + [(10, 2), (3, 2), (3, 5), (3, 2)]
    batched = _same_as_the_loop(steered, [launch(n, trips) for n, trips in values])
    assert batched[5][1].tolist() == [3 * x + 1000 for x in range(6)]
    assert batched[6][1].tolist() == [3 * x for x in range(6)]
    assert batched[7][1].tolist() == [15 * x for x in range(6)]
    # the five (3, 2): one records, two walk, two run the function; after, (10, 2) and (3, 5) miss in
    # the function and trace again, and each (3, 2) after them runs the function
    assert _record(steered)["replayed"] - before["replayed"] == 6
    with kwshim.activate(grid="batched"):
        for _ in range(4):
            steered[(6,)](torch.arange(6, dtype=torch.float32), torch.zeros(6), 3, 2)
        assert any(trace.code is not None for trace in _traces_of(steered))

    def split(n):
        return (8,), lambda: ((torch.zeros(8, dtype=torch.int32),), (n,))

    batched = _same_as_the_loop(early_return, [split(8)] * 4 + [split(5), split(8), split(3)])
    assert batched[4][0].tolist() == [1, 2, 3, 4, 5, 0, 0, 0] and batched[6][0].tolist() == [1, 2, 3, 0, 0, 0, 0, 0]
    assert grid_module.fallback_reasons().get(early_return.fn.__qualname__) is None


@triton.jit
def loaded_trips(x_ptr, trips_ptr, out_ptr):
    """A loop over a count each program loads (a varlen kernel's chunks of its own sequence)."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    total = x * 0
    for i in range(tl.load(trips_ptr + pid)):
        total += x * (i + 1)
    tl.store(out_ptr + pid, total)


def _counting_replays(monkeypatch):
    """The traces whose replay a batch tries, in order (a list that fills as they are tried)."""
    tried, replay_trace = [], replay.Trace.replay

    def counted(trace, builder, args):
        tried.append(trace)
        return replay_trace(trace, builder, args)

    monkeypatch.setattr(replay.Trace, "replay", counted)
    return tried


@batching
@pytest.mark.parametrize("compiled_after", [1, 3])
def test_a_miss_skips_the_traces_whose_guard_there_holds_another_value(monkeypatch, compiled_after):
    """Traces of one specialization share their steps up to the first guard whose values differ:
    where one misses, the value read there tells which others can hold. With a trace for each trip
    count from 2 to 7 (the newest tried first), a launch of 2 trips tries the newest and then its own,
    not the four between, in a walked replay and in the generated function alike; where the programs
    disagree at the guard, every trace would, and the body runs after the first (then each run of
    programs that agree tries the newest and its own). The loop's bits."""
    monkeypatch.setattr(replay, "_COMPILED_AFTER", compiled_after)

    def launch(trips):
        trips = torch.tensor(trips if isinstance(trips, list) else [trips] * 4, dtype=torch.int32)
        return (4,), lambda: ((torch.arange(4, dtype=torch.float32) + 1, trips, torch.zeros(4)), ())

    uniform = [launch(trips) for trips in range(2, 8)] + [launch(7)] * 2  # 7's trace runs as code when compiled_after=1
    with kwshim.activate(grid="batched"):
        for grid, make in uniform:
            tensors, _ = make()
            loaded_trips[grid](*tensors)
        tried = _counting_replays(monkeypatch)
        grid, make = launch(2)
        tensors, _ = make()
        loaded_trips[grid](*tensors)
        newest = _traces_of(loaded_trips)[0]
        assert (newest.code is not None) == (compiled_after == 1)
        sizes = [len(trace.steps) for trace in tried]
        assert len(sizes) == 2 and sizes[0] > sizes[1]  # 7 trips' trace, then 2 trips' (shorter)
        assert tried[0] is newest
        assert tensors[2].tolist() == [3.0, 6.0, 9.0, 12.0]
        del tried[:]
        grid, make = launch([2, 3, 2, 3])
        tensors, _ = make()
        loaded_trips[grid](*tensors)
        sizes = [len(trace.steps) for trace in tried]
        seven, two, three = sizes[0], sizes[2], sizes[4]  # the batches of programs that agree follow
        assert sizes[1:] and sizes == [seven] + [seven, two, seven, three] * ((len(sizes) - 1) // 4), sizes
    monkeypatch.undo()
    _same_as_the_loop(loaded_trips, uniform + [launch(2), launch([2, 3, 2, 3]), launch(5)])


@batching
def test_where_the_programs_disagree_at_a_guard_a_trace_of_a_lockstep_range_still_replays():
    def launch(programs, rows_per_program):
        x = torch.arange(max(1, programs * rows_per_program) * 16, dtype=torch.float32).reshape(-1, 16)
        return (programs,), lambda: ((x.clone(), torch.zeros_like(x)), (rows_per_program,))

    before = _record(lockstep)
    # 2 rows per program: a range in lockstep, recorded; 0 rows: the bounds agree (Python's range, a
    # guard), recorded and tried first; 2 rows again: that trace misses where the programs disagree,
    # and the lockstep trace, which has no guard there, replays
    batched = _same_as_the_loop(lockstep, [launch(4, 2), launch(4, 0), launch(4, 2)], BLOCK=16)
    assert torch.equal(batched[2][1], batched[2][0] * 2)
    assert _record(lockstep)["replayed"] - before["replayed"] == 1


@batching
def test_the_traces_are_forgotten_when_the_switch_goes_off():
    with kwshim.activate(grid="batched"):
        early_return[(4,)](torch.zeros(4, dtype=torch.int32), 4)
        assert replay._TRACES
    assert not replay._TRACES


class _Builder:
    options = None


@pytest.mark.parametrize("value, kept", [(3, True), (2.5, True), ("text", True), (None, True), ([1, 2], False),
                                         (torch.zeros(1), False)])
def test_a_launch_is_keyed_by_its_arguments_or_not_replayed(value, kept):
    assert (replay.key(row_norm, _Builder(), {"a": value}) is not None) == kept


def test_a_float_that_reaches_the_body_as_a_number_is_keyed_by_its_value():
    # the body would make it a constant of the trace: a trace of 1e-6 must not serve 0.5
    assert replay.key(row_norm, _Builder(), {"eps": 1e-6}) != replay.key(row_norm, _Builder(), {"eps": 0.5})
    assert replay.key(row_norm, _Builder(), {"eps": 0.5}) == replay.key(row_norm, _Builder(), {"eps": 0.5})


@batching
@needs_block_loads
def test_a_replayed_launch_leaves_triton_language_unpatched_and_the_body_patches_it(monkeypatch):
    languages = []
    taken = language_patch.deferred_language

    def recorded():
        language = taken()
        languages.append(language)
        return language

    monkeypatch.setattr(language_patch, "deferred_language", recorded)
    launches = [_row_norm_launch(4, 1e-6, seed) for seed in range(2)]
    _same_as_the_loop(row_norm, launches, BLOCK=128)
    with kwshim.activate(grid="batched"):  # a grid callable may compute with tensors: patched for it
        tensors, scalars = launches[0][1]()
        row_norm[lambda meta: (4,)](*tensors, *scalars, BLOCK=128)
    assert [language.made for language in languages] == [True, False, True]


def test_the_builder_s_options_and_triton_s_environment_are_part_of_the_specialization(monkeypatch):
    # what the front end reads besides the arguments: options.sanitize_overflow, TRITON_F32_DEFAULT, ...
    class Debugging:
        options = ("debug", True)

    plain = replay.key(row_norm, _Builder(), {"a": 1})
    assert replay.key(row_norm, Debugging(), {"a": 1}) != plain
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    assert replay.key(row_norm, _Builder(), {"a": 1}) != plain


@triton.jit
def _double(x):
    return x * 2


@triton.jit
def applied(x_ptr, out_ptr, FUNCTION: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, FUNCTION(tl.load(x_ptr + pid)))


@batching
def test_a_kernel_given_a_jitted_function_as_a_constexpr_is_replayed():
    before = _record(applied)
    launches = [((4,), lambda: ((torch.arange(4.0), torch.zeros(4)), ())) for _ in range(2)]
    batched = _same_as_the_loop(applied, launches, FUNCTION=_double)
    assert batched[1][1].tolist() == [0.0, 2.0, 4.0, 6.0]
    assert _record(applied)["replayed"] - before["replayed"] == 1


@triton.jit
def store_then_steer(out_ptr, n):
    """A store before the guard: a replay that misses there has stored into its batch's log only."""
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + 1)
    if n > 4:
        tl.store(out_ptr + pid, pid + 100)


@batching
def test_a_replay_that_misses_after_a_store_writes_nothing_of_its_own():
    def launch(n):
        return (4,), lambda: ((torch.zeros(4, dtype=torch.int32),), (n,))

    batched = _same_as_the_loop(store_then_steer, [launch(3), launch(10), launch(3)])
    assert batched[0][0].tolist() == [1, 2, 3, 4] and batched[1][0].tolist() == [100, 101, 102, 103]
    assert batched[2][0].tolist() == [1, 2, 3, 4]


@batching
@needs_block_loads
def test_a_step_of_constants_alone_is_made_once_for_every_replay():
    """``tl.arange`` and a constant splat are folded: the handle the first replay made is every later
    replay's (the same object), adds are not folded, and each launch still stores the loop's bits."""
    from kwshim.batching.steps import Folded

    launches = [_row_norm_launch(4, 1e-6, seed) for seed in range(3)]
    name = row_norm.fn.__qualname__
    made, stored = [], []
    with kwshim.activate(grid="batched"):
        for grid, make in launches:
            tensors, scalars = make()
            row_norm[grid](*tensors, *scalars, BLOCK=128)
            stored.append([t.clone() for t in tensors])
            (trace,) = [traces[0] for key, traces in replay._TRACES.items() if key[0].__qualname__ == name]
            made.append([step.value for step in trace.steps if isinstance(step, Folded)])
    folded = [step for step in trace.steps if isinstance(step, Folded)]
    assert {getattr(step.step[0], "__name__", None) for step in folded} >= {"create_make_range"}
    assert not {getattr(step.step[0], "__name__", None) for step in folded} & {"create_fadd", "create_fsub"}
    assert all(value is None for value in made[0])  # the first launch records; its replays make them
    assert made[1] and all(value is not None for value in made[1])
    assert all(a is b for a, b in zip(made[1], made[2])) and len(made[1]) == len(made[2])
    for loop, batch in zip(_launches(row_norm, launches, "sequential", BLOCK=128), stored):
        _same_bits(loop, batch)


@batching
@needs_block_loads
def test_a_one_program_launch_is_recorded_at_its_second_launch_and_replayed_after(monkeypatch):
    # a batch of one program is no faster than the loop, but a replay skips the body's front end: a
    # kernel launched once pays no recording, and its launches from the third on replay
    replayed = _counting_replays(monkeypatch)
    name = row_norm.fn.__qualname__
    before = _record(row_norm)
    launches = [_row_norm_launch(1, eps, seed) for seed, eps in enumerate((0.25, 0.25, 0.25, 0.25, 0.5))]
    with kwshim.activate(grid="batched"):
        kept = []
        for grid, make in launches:
            tensors, scalars = make()
            row_norm[grid](*tensors, *scalars, BLOCK=128)
            kept.append(sum(len(traces) for key, traces in replay._TRACES.items() if key[0].__qualname__ == name))
    assert kept == [0, 1, 1, 1, 1]  # the eps of the fifth reaches the body as a tensor: the same trace
    assert len(replayed) == 3
    assert _record(row_norm) == before  # one program: not in the counts of launches a batch speeds
    _same_as_the_loop(row_norm, launches, BLOCK=128)
    with kwshim.activate(grid="check"):  # one program runs once, as the loop: nothing to compare
        for grid, make in launches[:3]:
            tensors, scalars = make()
            row_norm[grid](*tensors, *scalars, BLOCK=128)
    assert len(replayed) == 3 + 3


@triton.jit
def row_sums(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * N + tl.arange(0, N)), axis=0))


@triton.jit
def warps_stored(out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.extra.cuda.num_warps())


@batching
def test_launches_that_differ_in_num_warps_alone_share_a_trace_that_sums_in_each_launch_s_lane_order():
    # an autotuner's Configs of warps and stages alone: one trace; the reduction reads the warps as it runs
    x = torch.randn(4, 1024, generator=torch.Generator().manual_seed(3))
    warps = (2, 8, 2, 8)
    sums = {}
    for mode in ("sequential", "batched"):
        with kwshim.activate(grid=mode):
            before = _record(row_sums)
            sums[mode] = []
            for count in warps:
                out = torch.zeros(4)
                row_sums[(4,)](x, out, N=1024, num_warps=count)
                sums[mode].append(out)
            after = _record(row_sums)
    assert [s.view(torch.int32).tolist() for s in sums["batched"]] == \
        [s.view(torch.int32).tolist() for s in sums["sequential"]]
    assert not torch.equal(sums["sequential"][0], sums["sequential"][1])  # the lanes' order differs by warps
    assert after["replayed"] - before["replayed"] == 3


@batching
@pytest.mark.skipif(not hasattr(getattr(getattr(tl, "extra", None), "cuda", None), "num_warps"),
                    reason="this Triton has no tl.extra.cuda.num_warps")
def test_a_body_that_reads_num_warps_keeps_its_trace_for_those_warps_alone():
    stored = []
    with kwshim.activate(grid="batched"):
        before = _record(warps_stored)
        for count in (2, 8, 2, 8):
            out = torch.zeros(3, dtype=torch.int32)
            warps_stored[(3,)](out, num_warps=count)
            stored.append(out.tolist())
        after = _record(warps_stored)
    assert stored == [[2] * 3, [8] * 3, [2] * 3, [8] * 3]
    assert after["replayed"] - before["replayed"] == 2  # each warps' trace, recorded once and replayed once


@triton.jit
def _plus_constant(x_ptr, out_ptr, C: tl.constexpr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * 0.0 + C)


@needs_block_loads
@batching
def test_a_float_constexpr_keys_its_trace_by_its_bits_so_minus_zero_is_not_zero():
    """``-1 * 0.0 + C`` is -0.0 for C = -0.0 and +0.0 for C = 0.0 (where the release's front end keeps
    the constant's sign: 3.2 and 3.3 make it +0.0): one trace for both (the key compared floats with
    ==) replayed 0.0's constant. Each launch leaves the loop's bits."""
    x, out, signs, looped = -torch.ones(4), torch.zeros(4), [], []
    constants = (0.0, 0.0, -0.0, -0.0, 0.0)
    with kwshim.activate(grid="batched"):
        for constant in constants:  # two programs a launch: batched, traced, replayed
            _plus_constant[(2,)](x, out, constant)
            signs.append(bool(torch.signbit(out).all()))
    with kwshim.activate(grid="sequential"):
        for constant in constants:
            _plus_constant[(2,)](x, out, constant)
            looped.append(bool(torch.signbit(out).all()))
    assert signs == looped and looped[:2] == [False, False]


SCALE = 2.0
TRIPS: tl.constexpr = tl.constexpr(3)


@triton.jit
def _plus_one(x):
    return x + 1


@triton.jit
def _plus_hundred(x):
    return x + 100


HELPER = _plus_one


@triton.jit
def _reads_globals(x_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    x = tl.load(x_ptr + offsets)
    count = x * 0
    for _ in range(TRIPS):
        count += 1
    tl.store(out_ptr + offsets, HELPER(x * SCALE) + count)


@needs_block_loads
@batching
def test_a_replay_sees_each_global_the_body_reads_a_float_a_helper_chosen_by_a_global_a_range_bound(monkeypatch):
    """A trace kept launch 1's globals from launch 2 on (no guard read them): each change now traces
    again, and the launch stores what the loop stores."""
    x, out, stored = torch.ones(4), torch.zeros(4), []
    module = sys.modules[__name__]
    changes = {2: ("SCALE", 3.0), 3: ("HELPER", _plus_hundred), 4: ("TRIPS", tl.constexpr(5))}
    with kwshim.activate(grid="batched"):
        for launch in range(6):
            if launch in changes:
                monkeypatch.setattr(module, *changes[launch])
            _reads_globals[(2,)](x, out)
            stored.append(float(out[0]))
    assert stored == [6.0, 6.0, 7.0, 106.0, 108.0, 108.0]


def _closing_over(constant):
    @triton.jit
    def closure_kernel(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), constant, tl.float32))

    return closure_kernel


@needs_block_loads
@batching
def test_a_replay_sees_a_closure_cell_that_changed():
    out = torch.zeros(4)
    kernel = _closing_over(1.5)
    with kwshim.activate(grid="batched"):
        kernel[(2,)](out)
        kernel[(2,)](out)
        kernel.fn.__closure__[0].cell_contents = 2.5
        kernel[(2,)](out)
    assert out.tolist() == [2.5] * 4


@triton.jit
def _reads_a_module_attribute(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), replay_settings.SCALE, tl.float32))


@needs_block_loads
@batching
def test_a_replay_sees_an_attribute_of_a_module_the_body_names(monkeypatch):
    """``settings.SCALE`` where ``settings`` is a module: a change traces again, as a global's does."""
    out, stored = torch.zeros(4), []
    with kwshim.activate(grid="batched"):
        for launch in range(4):
            if launch == 2:
                monkeypatch.setattr(replay_settings, "SCALE", 2.5)
            _reads_a_module_attribute[(2,)](out)
            stored.append(float(out[0]))
    assert stored == [1.5, 1.5, 2.5, 2.5]
