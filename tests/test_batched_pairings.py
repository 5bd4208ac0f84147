"""Every pairing of a mask form with a memory operation, batched against the loop, bit for bit.

Each kernel loads a block under one mask form (a program's scalar beside a block, a block alone, a
prefix that differs between programs, none), from one address form (a row, a shared row, one
element, a permutation, a gather), then stores, adds atomically or reduces under another. The
kernels are written to a module file (the interpreter runs a kernel from its source). A mask made of
a program's scalar and a block once made a batch index by it and write another program's row,
with no error, and an atomic whose operands do not depend on the program was applied once for
all: on Triton 3.6, 99 of these 189 kernels differed from the loop then.
"""

import importlib.util
import itertools

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import programs as grid_module

from .test_programs import batching

MASKS = ["cols < n", "(row < n) & (cols < 4)", "(cols < 4) & (row < n)", "row < n", "(row % 2 == 0) | (cols == 1)",
         "(row * BLOCK + cols) < n", "cols < row", "(cols < n) & (cols >= row)", None]
LOADS = ["row * BLOCK + cols", "cols", "row + cols * 0", "(cols * 3) % BLOCK + row * BLOCK", "tl.load(idx_ptr + cols)",
         "tl.load(idx_ptr + row * BLOCK + cols)"]
OPERATIONS = ["tl.store(out_ptr + row * BLOCK + cols, v * 2, mask=MASK)",
              "tl.store(out_ptr + row + cols * 0, v + 1, mask=MASK)",
              "tl.atomic_add(out_ptr + cols, v, mask=MASK)",
              "tl.store(out_ptr + row, tl.sum(tl.where(WHERE, v, 0.0), axis=0))",
              "tl.atomic_add(out_ptr + row + cols * 0, v, mask=MASK)",
              "tl.store(out_ptr + (row * BLOCK + cols) % 16, v, mask=MASK)",
              "tl.store(out_ptr + tl.load(idx_ptr + cols), v, mask=MASK)"]
OTHERS = ["0.0", "-1.5", "float('nan')"]
BLOCK = 8


def _source():
    """The kernels' module: one kernel per (load mask, operation mask, operation), the load's
    address and ``other`` taken in turn."""
    lines = ["import triton", "import triton.language as tl", ""]
    pairings = list(itertools.product(MASKS, [MASKS[1], MASKS[6], None], OPERATIONS))
    for number, (load_mask, mask, operation) in enumerate(pairings):
        address, other = LOADS[number % len(LOADS)], OTHERS[number % len(OTHERS)]
        load = f"tl.load(x_ptr + {address})" if load_mask is None else \
            f"tl.load(x_ptr + {address}, mask={load_mask}, other={other})"
        operation = operation.replace("MASK", str(mask)).replace("WHERE", "True" if mask is None else mask)
        lines += ["@triton.jit", f"def kernel{number}(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                  "    row = tl.program_id(0)", "    cols = tl.arange(0, BLOCK)", f"    v = {load}",
                  f"    {operation}", ""]
    return "\n".join(lines), len(pairings)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    source, count = _source()
    path = tmp_path_factory.mktemp("pairings") / "pairing_kernels.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("pairing_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [getattr(module, f"kernel{number}") for number in range(count)]


def _run(kernel, mode, programs, n):
    generator = torch.Generator().manual_seed(programs)
    x = torch.randn(programs * BLOCK, generator=generator)
    indices = torch.randint(0, BLOCK, (programs * BLOCK,), generator=generator)
    out = torch.full((max(16, programs * BLOCK),), -7.0)
    with kwshim.activate(grid=mode):
        kernel[(programs,)](x, indices, out, n, BLOCK=BLOCK)
    return out.view(torch.int32).tolist()


@batching
def test_every_pairing_of_a_mask_and_a_memory_operation_batches_with_the_loop_s_bits(kernels):
    differing = [kernel.fn.__name__ for kernel in kernels
                 if _run(kernel, "sequential", 6, 5) != _run(kernel, "batched", 6, 5)]
    assert not differing, differing
    fell_back = {kernel.fn.__name__: grid_module.fallback_reasons().get(kernel.fn.__qualname__) for kernel in kernels}
    assert not any(fell_back.values()), fell_back  # each ran batched: the comparison is of a batch


@triton.jit
def counted(count_ptr, total_ptr, x_ptr, BLOCK: tl.constexpr):
    """Every program adds the same: one to a counter, and a block that does not depend on it."""
    tl.atomic_add(count_ptr, 1)
    cols = tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr + cols, tl.load(x_ptr + cols))


@batching
def test_an_atomic_that_no_operand_ties_to_a_program_is_applied_by_every_program():
    """``tl.atomic_add(count, 1)`` over 64 programs counts 64: a batch applied it once (its
    operands have no program axis, and a store of such operands is the same write each time)."""
    results = {}
    for mode in ("sequential", "batched"):
        count, total = torch.zeros(1, dtype=torch.int32), torch.zeros(8)
        with kwshim.activate(grid=mode):
            counted[(64,)](count, total, torch.arange(8, dtype=torch.float32) / 3, BLOCK=8)
        results[mode] = (count.item(), total.view(torch.int32).tolist())
    assert results["batched"] == results["sequential"] and results["batched"][0] == 64
    assert grid_module.fallback_reasons().get(counted.fn.__qualname__) is None
