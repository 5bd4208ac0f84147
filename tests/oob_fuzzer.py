"""Random out-of-bounds kernels, run in a process of their own (``tests/test_bounds.py``): offsets,
strides, masks, gathers, atomics and block pointers, under each grid setting, each launched after
in-bounds launches of its specialization (so that batched launches replay a trace). Every case whose
active lanes leave their tensor must raise ``OutOfBoundsError``; every case that stays inside must
store what NumPy computes. Prints one JSON line: the counts, and the first few cases that went wrong.
A case that ends the process in a signal ends this script with it: the test reads the exit status.

    TRITON_INTERPRET=1 python tests/oob_fuzzer.py CASES SEED
"""

import json
import os
import random
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
from kwshim.errors import OutOfBoundsError  # noqa: E402

BLOCK = 16
N = 96  # elements of each tensor


@triton.jit
def strided(x_ptr, y_ptr, start, stride, limit, KIND: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = pid * BLOCK + tl.arange(0, BLOCK)
    offs = start + lanes * stride
    mask = (offs < limit) & (lanes < limit)
    if KIND == 0:  # a load leaves x
        tl.store(y_ptr + lanes, tl.load(x_ptr + offs, mask=mask, other=-1.0), mask=lanes < 96)
    elif KIND == 1:  # a store leaves y
        tl.store(y_ptr + offs, tl.load(x_ptr + lanes, mask=lanes < 96), mask=mask)
    elif KIND == 2:  # an atomic leaves y
        tl.atomic_add(y_ptr + offs, 1.0, mask=mask)
    else:  # an unmasked load
        tl.store(y_ptr + lanes, tl.load(x_ptr + offs), mask=lanes < 96)


@triton.jit
def gathered(x_ptr, i_ptr, y_ptr, BLOCK: tl.constexpr):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    index = tl.load(i_ptr + lanes)
    tl.store(y_ptr + lanes, tl.load(x_ptr + index))


@triton.jit
def blocks(x_ptr, y_ptr, rows, row0, col0, ADVANCE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    pid = tl.program_id(0)
    source = tl.make_block_ptr(x_ptr, shape=(rows, 8), strides=(8, 1), offsets=(row0 + pid * BR, col0),
                               block_shape=(BR, BC), order=(1, 0))
    if ADVANCE:
        source = tl.advance(source, (BR, 0))
    target = tl.make_block_ptr(y_ptr, shape=(12, 8), strides=(8, 1), offsets=(pid * BR, 0),
                               block_shape=(BR, BC), order=(1, 0))
    tl.store(target, tl.load(source), boundary_check=(0, 1))


if hasattr(tl, "make_tensor_descriptor"):
    @triton.jit
    def described(x_ptr, y_ptr, rows, row0, BR: tl.constexpr, BC: tl.constexpr):
        pid = tl.program_id(0)
        source = tl.make_tensor_descriptor(x_ptr, shape=[rows, 8], strides=[8, 1], block_shape=[BR, BC])
        target = tl.make_tensor_descriptor(y_ptr, shape=[12, 8], strides=[8, 1], block_shape=[BR, BC])
        target.store([pid * BR, 0], source.load([row0 + pid * BR, 0]))


def _described_case(rng):
    rows = rng.choice([12, 12, 13, 16, 20])  # the descriptor's shape: past x's 12 rows from 13 on
    row0 = rng.choice([0, 0, 1, 2, 4])
    read = [row0 + p * 4 + r for p in range(3) for r in range(4)]
    outside = any(12 <= r < rows for r in read)  # the descriptor masks the rows past its shape alone
    return ("described", rows, row0), outside


def _run_described(case, args):
    _, rows, row0 = case
    x = torch.arange(96, dtype=torch.float32)
    y = torch.zeros(96, dtype=torch.float32)
    described[(3,)](x, y, rows, row0, BR=4, BC=8)
    expected = np.zeros((12, 8), np.float32)
    kept = np.arange(96, dtype=np.float32).reshape(12, 8)[row0:]
    expected[:kept.shape[0]] = kept
    return np.array_equal(y.numpy(), expected.reshape(-1))


def _strided_case(rng):
    kind = rng.randrange(4)
    start = rng.choice([0, 0, 1, -1, -3, rng.randrange(-20, 100)])
    stride = rng.choice([1, 1, 1, 2, 3, -1])
    limit = rng.choice([N, N, N + rng.randrange(1, 40), rng.randrange(1, N)])
    programs = rng.randrange(1, 8)
    lanes = np.arange(programs * BLOCK)
    offs = start + lanes * stride
    active = (offs < limit) & (lanes < limit) if kind != 3 else np.ones(offs.shape, bool)
    outside = bool(((offs < 0) | (offs >= N))[active].any())
    return ("strided", kind, start, stride, limit, programs), outside


def _run_strided(case, args):
    _, kind, start, stride, limit, programs = case
    x = torch.arange(N, dtype=torch.float32)
    y = torch.zeros(N, dtype=torch.float32)
    strided[(programs,)](x, y, start, stride, limit, KIND=kind, BLOCK=BLOCK)
    expected = np.zeros(N, np.float32)
    lanes = np.arange(programs * BLOCK)
    offs = start + lanes * stride
    active = ((offs < limit) & (lanes < limit)) if kind != 3 else np.ones(offs.shape, bool)
    if kind in (0, 3):
        loaded = np.where(active, np.clip(offs, 0, N - 1).astype(np.float32), -1.0)
        expected[:min(N, lanes.size)] = loaded[:N]
    elif kind == 1:
        keep = active & (lanes < N)
        expected[offs[keep]] = lanes[keep]
    else:
        np.add.at(expected, offs[active], 1.0)
    return np.array_equal(y.numpy(), expected)


def _gathered_case(rng):
    programs = rng.randrange(1, 6)
    index = np.array([rng.randrange(N) for _ in range(programs * BLOCK)])
    outside = rng.random() < 0.7
    if outside:
        index[rng.randrange(index.size)] = rng.choice([-1, -5, N, N + 7, N + 1000, -1000])
    return ("gathered", programs, index.tolist()), outside


def _run_gathered(case, args):
    _, programs, index = case
    x = torch.arange(N, dtype=torch.float32)
    i = torch.tensor(index, dtype=torch.int32)
    y = torch.zeros(programs * BLOCK, dtype=torch.float32)
    gathered[(programs,)](x, i, y, BLOCK=BLOCK)
    return np.array_equal(y.numpy(), np.array(index, np.float32))


def _blocks_case(rng):
    rows = rng.choice([12, 12, 13, 16, 20])  # the block pointer's shape: past x's 12 rows from 13 on
    row0 = rng.choice([0, 0, -1, 2, 4])
    advance = rng.random() < 0.3
    first = row0 + (4 if advance else 0)
    programs = 3
    read = [first + p * 4 + r for p in range(programs) for r in range(4)]
    outside = any(r < 0 or r >= 12 for r in read)  # no boundary check on the load: every lane is active
    return ("blocks", rows, row0, advance, programs), outside


def _run_blocks(case, args):
    _, rows, row0, advance, programs = case
    x = torch.arange(96, dtype=torch.float32)
    y = torch.zeros(96, dtype=torch.float32)
    blocks[(programs,)](x, y, rows, row0, 0, ADVANCE=advance, BR=4, BC=8)
    first = row0 + (4 if advance else 0)
    expected = np.arange(96, dtype=np.float32).reshape(12, 8)[first:first + 12].reshape(-1)
    return np.array_equal(y.numpy(), expected)


def _kinds():
    """The kinds of case the installed Triton has: block pointers (removed in 3.9), tensor descriptors (3.4 on)."""
    kinds = [(_strided_case, _run_strided), (_gathered_case, _run_gathered)]
    try:
        with kwshim.activate():
            _run_blocks(("blocks", 12, 0, False, 3), None)
        kinds.append((_blocks_case, _run_blocks))
    except Exception:  # noqa: BLE001  ("Block pointers have been removed in favor of the tensor descriptor API")
        pass
    if hasattr(tl, "make_tensor_descriptor"):
        try:  # 3.4-3.5's interpreter refuses this descriptor ("stride must be 16-byte aligned")
            with kwshim.activate():
                _run_described(("described", 12, 0), None)
            kinds.append((_described_case, _run_described))
        except Exception:  # noqa: BLE001
            pass
    return kinds


def main(cases, seed):
    rng = random.Random(seed)
    kinds = _kinds()
    counts = {"raised": 0, "stored": 0, "wrong": 0}
    wrong = []
    for number in range(cases):
        grid = ("sequential", "batched", "check")[number % 3]
        make, run = kinds[rng.randrange(len(kinds))]
        case, outside = make(rng)
        warm = {"strided": ("strided", case[1], 0, 1, N, 6), "gathered": ("gathered", 2, list(range(32))),
                "blocks": ("blocks", 12, 0, False, 3), "described": ("described", 12, 0)}[case[0]]
        message = ""
        with kwshim.activate(grid=grid):
            if grid == "batched":  # its specialization traced and replayed first
                for _ in range(3):
                    assert run(warm, None), warm
            try:
                ok = run(case, None)
                result = "stored" if ok and not outside else "wrong"
            except OutOfBoundsError as error:
                result, message = ("raised" if outside else "wrong"), str(error)
            except Exception as error:  # noqa: BLE001
                result, message = "wrong", f"{type(error).__name__}: {error}"
        counts[result] += 1
        if result == "wrong" and len(wrong) < 5:
            wrong.append({"case": repr(case), "grid": grid, "outside": outside, "message": message[:300]})
    print(json.dumps({"counts": counts, "wrong": wrong, "kinds": [make.__name__.strip("_") for make, _ in kinds]}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
