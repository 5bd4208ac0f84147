"""A chunk whose programs diverge in a few interleaved values runs as one batch per value
(``interpreter/program_groups``), committed only where the chunk as one batch would be: every result
has the loop's bits."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import program_groups, store_log
from kwshim.batching import programs as grid_module

from .kernels import needs_block_loads
from .test_programs import _both, _reason, _same_bits, batching


@pytest.fixture
def groups(monkeypatch):
    """The program counts of each chunk committed as groups, one list per chunk."""
    committed = []
    commit = store_log.commit_groups

    def counted(logs, native_store):
        committed.append([log.programs for log in logs])
        return commit(logs, native_store)

    monkeypatch.setattr(store_log, "commit_groups", counted)
    monkeypatch.setattr(program_groups, "_NOT_GROUPED", set())
    return committed


@triton.jit
def varlen_cumsum(s_ptr, o_ptr, cu_ptr, H: tl.constexpr, S: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr):
    """flash-linear-attention's ``chunk_global_cumsum_vector_kernel``: each program a slice of one
    head of one sequence, looping over the sequence's chunks of rows (their count is the sequence's)."""
    i_s, i_nh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    i_n, i_h = i_nh // H, i_nh % H
    bos, eos = tl.load(cu_ptr + i_n).to(tl.int64), tl.load(cu_ptr + i_n + 1).to(tl.int64)
    T = eos - bos
    b_z = tl.zeros([BS], dtype=tl.float32)
    for i_t in range(tl.cdiv(T, BT)):
        o_t = i_t * BT + tl.arange(0, BT)
        o_s = i_s * BS + tl.arange(0, BS)
        m = (o_t[:, None] < T) & (o_s[None, :] < S)
        p_s = s_ptr + (bos * H + i_h) * S + o_t[:, None] * (H * S) + o_s[None, :]  # rows (``rows``)
        p_o = o_ptr + (bos * H + i_h) * S + o_t[:, None] * (H * S) + o_s[None, :]
        b = tl.load(p_s, mask=m, other=0.0).to(tl.float32)
        tl.store(p_o, (b_z[None, :] + tl.cumsum(b, axis=0)).to(p_o.dtype.element_ty), mask=m)
        b_z += tl.sum(b, 0)


@triton.jit
def reads_the_next_row(x_ptr, BLOCK: tl.constexpr):
    """Each program reads its own row, which the program before it wrote: the loop's order counts."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for _ in range(pid % 2 + 1):
        row = tl.load(x_ptr + pid * BLOCK + offs)
        tl.store(x_ptr + (pid + 1) * BLOCK + offs, row + 1)


@triton.jit
def pairs_write_one_row(x_ptr, BLOCK: tl.constexpr):
    """Programs 2k and 2k+1 both write row k; their trip counts put 2 and 3 in groups committed
    3's first."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for _ in range(1 + (pid + 1) // 2 % 2):
        tl.store(x_ptr + pid // 2 * BLOCK + offs, tl.zeros([BLOCK], tl.int32) + pid)


@triton.jit
def pairs_write_one_element(x_ptr):
    """``pairs_write_one_row`` with a store of one element: records that are not rows."""
    pid = tl.program_id(0)
    for _ in range(1 + (pid + 1) // 2 % 2):
        tl.store(x_ptr + pid // 2, pid)


@triton.jit
def token_parallel(x_ptr, out_ptr, T, BC: tl.constexpr):
    """flash-linear-attention's ``chunk_kda_fwd_kernel_intra_token_parallel``: a program per token,
    looping over the tokens before it in its sub-chunk of ``BC`` (a trip count that cycles through
    1..BC along the grid), each trip loading and storing one element: no rows."""
    i_t = tl.program_id(0)
    i_ts = i_t // BC * BC
    x = tl.load(x_ptr + i_t)
    for j in range(i_ts, min(i_t + 1, T)):
        tl.store(out_ptr + i_t * BC + j - i_ts, x * tl.load(x_ptr + j))


@batching
def test_a_token_parallel_loop_runs_as_one_batch_per_trip_count_with_the_loop_s_bits(groups):
    torch.manual_seed(0)
    x = torch.randn(256)
    looped, batched = _both(token_parallel, (256,), lambda: (x, torch.zeros(256 * 16)), 256, BC=16)
    _same_bits(looped, batched)
    assert _reason(token_parallel) is None and groups and all(len(chunk) == 16 for chunk in groups)
    assert sum(map(sum, groups)) == 256  # before: the element records were not decided, and it ran the loop
    with kwshim.activate(grid="check"):
        token_parallel[(256,)](x, torch.zeros(256 * 16), 256, BC=16)


@batching
@needs_block_loads
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_varlen_loop_runs_as_one_batch_per_trip_count_with_the_loop_s_bits(groups, dtype):
    torch.manual_seed(0)
    cu = torch.tensor([0, 1, 100, 300, 600, 640], dtype=torch.int32)
    H, S, BT, BS = 4, 40, 16, 16  # the last block of columns keeps 8 of 16: rows of two lengths
    s = torch.randn(1, 640, H, S).to(dtype)

    def make():
        return s, torch.zeros(1, 640, H, S, dtype=dtype), cu

    grid = (triton.cdiv(S, BS), 5 * H)  # the sequence changes every 4 programs (y is inner)
    looped, batched = _both(varlen_cumsum, grid, make, H=H, S=S, BT=BT, BS=BS)
    _same_bits(looped, batched)
    expected = torch.cat([s[:, a:b].float().cumsum(1) for a, b in zip(cu[:-1].tolist(), cu[1:].tolist())], 1)
    torch.testing.assert_close(batched[1].float(), expected.to(dtype).float(), atol=1e-2, rtol=1e-2)
    assert groups == [[12] * 5] and _reason(varlen_cumsum) is None  # 60 programs: 5 sequences of 12
    assert grid_module.launch_record()[varlen_cumsum.fn.__qualname__]["looped"] == 0
    with kwshim.activate(grid="check"):
        varlen_cumsum[grid](*make(), H=H, S=S, BT=BT, BS=BS)


@batching
@needs_block_loads
@pytest.mark.parametrize("kernel, start", [(reads_the_next_row, lambda: torch.arange(17 * 8, dtype=torch.int32)),
                                           (pairs_write_one_row, lambda: torch.full((8 * 8,), -1, dtype=torch.int32)),
                                           (pairs_write_one_element, lambda: torch.full((8,), -1, dtype=torch.int32))])
def test_groups_whose_programs_meet_are_not_committed_as_groups(groups, kernel, start):
    constants = {} if kernel is pairs_write_one_element else {"BLOCK": 8}
    looped, batched = _both(kernel, (16,), lambda: (start(),), **constants)
    _same_bits(looped, batched)
    assert groups == [] and kernel.fn.__qualname__ in {fn.__qualname__ for fn in program_groups._NOT_GROUPED}
    if kernel is pairs_write_one_element:
        assert batched[0].tolist() == [2 * k + 1 for k in range(8)]
    elif kernel is pairs_write_one_row:
        assert batched[0].view(8, 8)[:, 0].tolist() == [2 * k + 1 for k in range(8)]  # the later program's
    else:
        assert batched[0].view(17, 8)[:, 0].tolist() == list(range(17))  # each row one more than the last


@pytest.mark.parametrize("values, expected", [
    ([1, 1, 2, 2, 1, 1, 2, 2, 1, 1], [[0, 1, 4, 5, 8, 9], [2, 3, 6, 7]]),
    ([3, 1, 3, 1, 3, 1], [[0, 2, 4], [1, 3, 5]]),
    ([1, 1, 1, 2, 2, 2], None),  # two runs: the leading run splits once
    ([1, 2, 1], None),  # three runs of two values: no fewer splits
    ([1.0, 2.0, 1.0, 2.0, 1.0], None),  # floats may be NaN
    ([True, False, True, False, True], [[0, 2, 4], [1, 3]]),
])
def test_groups_are_the_places_of_each_value_in_order_of_first_appearance(values, expected):
    import numpy as np

    found = program_groups._groups(np.array(values), len(values))
    assert (found if found is None else [group.tolist() for group in found]) == expected
    assert program_groups._groups(np.array(values), len(values) + 1) is None
