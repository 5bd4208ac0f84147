"""Python's own operators on Triton blocks, compiled: ``and``, ``or``, ``not``, a chained comparison,
a conditional expression on a block, ``min``/``max``, ``//`` and ``%`` of negative integers, ``**``,
and the truth of a one-element block. Each kernel stores 8 int32 values (or raises); the answers
are the values stored, or the error's class and first line. The interpreter runs Python's own
semantics for some (``r < 2 and r < 6`` is ``r < 6``); ``tests/test_block_logic.py`` holds kwshim
to these answers (``parity/block_logic_h100.json``).

    python -m parity.block_logic > parity/block_logic_h100.json   # on a GPU
"""

import json
import sys

import triton
import triton.language as tl


@triton.jit
def both(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, ((r < 2) and (r < 6)).to(tl.int32))


@triton.jit
def either(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, ((r < 2) or (r > 5)).to(tl.int32))


@triton.jit
def three_and(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, ((r > 0) and (r < 6) and (r != 3)).to(tl.int32))


@triton.jit
def mask_and_mask(out_ptr, n_rows, n_cols):
    """FlagGems' ``mask = row_mask and col_mask``, 2-D: a store under it."""
    rows = tl.arange(0, 4)[:, None]
    cols = tl.arange(0, 2)[None, :]
    mask = (rows < n_rows) and (cols < n_cols)
    tl.store(out_ptr + rows * 2 + cols, (rows * 2 + cols + 1).to(tl.int32), mask=mask)


@triton.jit
def constexpr_and_block(out_ptr, FLAG: tl.constexpr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, (FLAG and (r < 3)).to(tl.int32))


@triton.jit
def block_and_scalar(out_ptr, s):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, ((r < 5) and (s > 0)).to(tl.int32))


@triton.jit
def negate(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, (not (r < 3)).to(tl.int32))


@triton.jit
def negate_int(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, (not r).to(tl.int32))


@triton.jit
def chained(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, (1 < r < 6).to(tl.int32))


@triton.jit
def conditional_on_block(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, r if r < 4 else -r)


@triton.jit
def conditional_on_scalar(out_ptr, s):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, r if s > 0 else -r)


@triton.jit
def builtin_min(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, min(r, 7 - r))


@triton.jit
def builtin_max_scalars(out_ptr, a, b):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, r * 0 + max(a, b))


@triton.jit
def floor_divide(out_ptr):
    r = tl.arange(0, 8) - 4
    tl.store(out_ptr + r + 4, r // 3)


@triton.jit
def modulo(out_ptr):
    r = tl.arange(0, 8) - 4
    tl.store(out_ptr + r + 4, r % 3)


@triton.jit
def scalar_floor_divide_and_modulo(out_ptr, a, b):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, tl.where(r < 4, a // b, a % b))


@triton.jit
def power(out_ptr):
    r = tl.arange(0, 8)
    tl.store(out_ptr + r, r ** 2)


@triton.jit
def truth_of_one_element(out_ptr):
    x = tl.full((1,), 3, tl.int32)
    if x:
        tl.store(out_ptr + tl.arange(0, 8), tl.full((8,), 1, tl.int32))


@triton.jit
def truth_of_scalar(out_ptr, s):
    if s:
        tl.store(out_ptr + tl.arange(0, 8), tl.full((8,), 1, tl.int32))


#: name: (kernel, its extra arguments)
CASES = {
    "and": (both, ()),
    "or": (either, ()),
    "three and": (three_and, ()),
    "mask and mask, 2-D, under a store": (mask_and_mask, (3, 1)),
    "constexpr True and block": (constexpr_and_block, (True,)),
    "constexpr False and block": (constexpr_and_block, (False,)),
    "block and scalar": (block_and_scalar, (1,)),
    "not block": (negate, ()),
    "not int block": (negate_int, ()),
    "chained comparison": (chained, ()),
    "conditional expression on a block": (conditional_on_block, ()),
    "conditional expression on a scalar": (conditional_on_scalar, (-1,)),
    "min of blocks": (builtin_min, ()),
    "max of scalars": (builtin_max_scalars, (3, -5)),
    "// of negative ints": (floor_divide, ()),
    "% of negative ints": (modulo, ()),
    "scalar // and %": (scalar_floor_divide_and_modulo, (-7, 2)),
    "**": (power, ()),
    "truth of a one-element block": (truth_of_one_element, ()),
    "truth of a scalar": (truth_of_scalar, (2,)),
}


def outcome(torch, kernel, extra, device):
    out = torch.zeros(8, dtype=torch.int32, device=device)
    try:
        kernel[(1,)](out, *extra)
        return {"stored": out.cpu().tolist()}
    except Exception as error:  # noqa: BLE001 - the answer is the error
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        return {"raises": type(error).__name__, "message": (lines[-1] if lines else "")[:200],
                "classes": sorted({k.__name__ for k in type(error).__mro__} - {"object", "BaseException"})}


def results(torch, device="cuda"):
    return {name: outcome(torch, kernel, extra, device) for name, (kernel, extra) in CASES.items()}


def main():
    import torch

    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
               "answers": results(torch)}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
