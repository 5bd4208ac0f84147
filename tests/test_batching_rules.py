"""``interpreter/batching_rules``: every operation of the installed interpreter's builder has its rule
for a batch of programs, and an operation without one falls back to the loop with the loop's bits."""

import pytest
import torch
import triton
import triton.language as tl

from kwshim.batching import batching_rules, program_axis
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads
from .test_programs import _both, _reason, _same_bits, batching


def _builder_class():
    import triton.runtime.interpreter as interpreter

    return type(interpreter.interpreter_builder)


@batching
def test_every_operation_of_the_installed_builder_has_a_rule():
    unlisted = [name for name in batching_rules.operations(_builder_class()) if batching_rules.rule(name) is None]
    assert not unlisted, f"classify these in kwshim/batching/batching_rules.py: {unlisted}"


def test_the_program_axis_rule_is_exactly_what_program_axis_computes():
    own = {name for name in vars(program_axis.ProgramAxisOperations) if name.startswith("create_")}
    ruled = {name for name, kind in batching_rules.RULES.items() if kind == batching_rules.PROGRAM_AXIS}
    assert own == ruled


@batching
def test_the_batched_builder_refuses_what_falls_back_and_lets_the_rest_through():
    base = _builder_class()
    batched = program_axis.batched_builder_class(base)
    for name in batching_rules.operations(base):
        kind = batching_rules.rule(name)
        method = vars(batched).get(name)
        if kind == batching_rules.FALLS_BACK:
            assert method.kwshim_falls_back == batching_rules.FALLBACKS[name]
        else:
            assert method is None, name  # the release's own (element-wise), or ProgramAxisOperations'
    assert batched.create_reshape is program_axis.ProgramAxisOperations.create_reshape


@pytest.fixture
def fresh_builder_classes():
    program_axis.batched_builder_class.cache_clear()
    yield
    program_axis.batched_builder_class.cache_clear()


@triton.jit
def absolute_rows(x_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.abs(tl.load(x_ptr + offsets)))


@batching
@needs_block_loads
def test_an_operation_without_a_rule_falls_back_to_the_loop_naming_it(monkeypatch, fresh_builder_classes):
    """What a new release adds, unclassified, runs the loop (here ``tl.abs`` of a float, taken out)."""
    monkeypatch.delitem(batching_rules.RULES, "create_fabs")
    grid_module.forget(absolute_rows.fn)
    x = torch.randn(6, 8)
    looped, batched = _both(absolute_rows, (6,), lambda: (x, torch.zeros(6, 8)), N=8)
    _same_bits(looped, batched)
    assert torch.equal(batched[1], x.abs())
    assert _reason(absolute_rows) == "an operation kwshim's batched grid has not classified (create_fabs)"
    grid_module.forget(absolute_rows.fn)


@triton.jit
def sort_rows(x_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.sort(tl.load(x_ptr + offsets)))


@triton.jit
def sort_tiles(x_ptr, out_ptr, N: tl.constexpr):
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    offsets = tl.program_id(0) * N * N + rows * N + cols
    tl.store(out_ptr + offsets, tl.sort(tl.load(x_ptr + offsets), dim=1, descending=True))


@batching
@needs_block_loads
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16])
def test_tl_sort_sorts_each_program_s_own_block(dtype):
    """Sorting a batch once sorted across programs: a row came back unsorted and partly from other rows."""
    torch.manual_seed(0)
    x = (torch.randn(8, 16) * 100).to(dtype)
    grid_module.forget(sort_rows.fn)
    looped, batched = _both(sort_rows, (8,), lambda: (x, torch.zeros_like(x)), N=16)
    _same_bits(looped, batched)
    assert torch.equal(batched[1], x.sort(dim=1).values)
    assert _reason(sort_rows) is None

    tiles = (torch.randn(4, 8, 8) * 100).to(dtype)
    looped, batched = _both(sort_tiles, (4,), lambda: (tiles, torch.zeros_like(tiles)), N=8)
    _same_bits(looped, batched)
    assert torch.equal(batched[1], tiles.sort(dim=2, descending=True).values)


def test_no_operation_is_listed_twice_and_every_fallback_has_a_reason():
    kinds = {batching_rules.PROGRAM_AXIS, batching_rules.ELEMENT_WISE, batching_rules.TRAILING_AXES,
             batching_rules.HELD, batching_rules.UNIFORM, batching_rules.FALLS_BACK}
    assert set(batching_rules.RULES.values()) == kinds
    falling = {name for name, kind in batching_rules.RULES.items() if kind == batching_rules.FALLS_BACK}
    assert falling == set(batching_rules.FALLBACKS) and all(batching_rules.FALLBACKS.values())
