"""Reductions, scans and float atomics compiled on a GPU, where the order of the combines decides the
bits: fp32 row sums, 2-D axis reductions, ``tl.cumsum``, ``tl.max``/``tl.min`` with their indices over
rows holding NaN, signed zeros and ties, and a block's ``atomic_add`` where lanes share an address.

Each case's inputs are made by integer arithmetic (the same on every machine); its outputs are saved
as raw bits with the layouts the compiler chose (ttgir's ``#blocked`` lines), so that a model of the
GPU's order can be fitted and checked away from the GPU.

    python -m parity.lane_orders OUT_DIR              # on a machine with an NVIDIA GPU
    python -m parity.lane_orders --record OUT_DIR/lane_orders_h200.json > parity/lane_orders_h200.json
    TRITON_INTERPRET=1 python -m parity.lane_orders OUT_DIR --kwshim    # under the switch

``parity/lane_orders_h200.json`` keeps every case but the scans of rows over 256 and blocks over
1024 elements, each output's first ``KEPT`` values (``recorded``); ``tests/test_numerics.py``
runs those cases under the switch and holds them to it (``differences``). Shared-address atomics are
recorded with whether three runs gave the same bits: on the H200 they do not.
"""

import json
import os
import re
import sys

import numpy as np
import triton
import triton.language as tl

ROWS = 8
BLOCKS = 4
#: (N, num_warps) of the 1-D rows
ROW_SHAPES = [(32, 1), (64, 4), (128, 1), (128, 4), (256, 4), (256, 8), (512, 1), (512, 4), (512, 8),
              (1024, 4), (2048, 8), (4096, 8)]
#: (M, N, num_warps) of the 2-D blocks
BLOCK_SHAPES = [(16, 64, 4), (64, 16, 4), (32, 32, 4), (8, 256, 4), (256, 8, 4), (64, 128, 8), (128, 64, 4),
                (2, 512, 4)]
ROW_OPS = {"sum": ("positive", "signed", "large"), "sum_sq": ("signed",), "masked_sum": ("signed",),
           "widened_sum": ("signed",), "widened_sum_sq": ("signed",), "cumsum": ("positive", "signed", "large"),
           "max_idx": ("ties",), "min_idx": ("ties",), "max": ("ties",), "min": ("ties",)}
BLOCK_OPS = {"sum0": ("signed", "large"), "sum1": ("signed", "large"), "cumsum0": ("signed", "large"),
             "cumsum1": ("signed", "large"), "max_idx0": ("ties",), "max_idx1": ("ties",)}
ATOMIC_SHAPES = [(64, 4, 1), (256, 4, 4), (256, 16, 4), (1024, 8, 8)]  # (N, addresses, num_warps)
DTYPES = ("fp32", "fp16", "bf16")
KEPT = 128
#: Where the H200's bits are not modelled (``kwshim/arithmetic/lane_order.py`` says why): the arg
#: reductions whose result the GPU reads from another lane (24, 8, and 16 for the fp16 and bf16
#: indices: the lowest lane of the last phase of the layout conversion's shared-memory store).
NOT_MODELLED = {"block max_idx1 fp32 M=64 N=128 num_warps=8", "block max_idx1 fp32 M=128 N=64 num_warps=4",
                "block max_idx1 fp16 M=8 N=256 num_warps=4", "block max_idx1 bf16 M=8 N=256 num_warps=4"}


def inputs(kind, count, seed):
    """``count`` fp32 values of one kind: ``positive`` on [0.5, 2), ``signed`` on [-2, 2), ``large``
    on [48, 192) (fp16 sums overflow), ``ties`` from {-1, -0, +0, 1, 2, 3} with NaN in some rows."""
    index = np.arange(count, dtype=np.uint64) + np.uint64(seed * 7919)
    mixed = (index * np.uint64(2654435761) + np.uint64(seed)) % np.uint64(2 ** 32)
    unit = mixed.astype(np.float64) / 2 ** 32
    if kind == "positive":
        return (0.5 + unit * 1.5).astype(np.float32)
    if kind == "signed":
        return (unit * 4 - 2).astype(np.float32)
    if kind == "large":
        return (48 + unit * 144).astype(np.float32)
    choices = np.array([-1.0, -0.0, 0.0, 1.0, 2.0, 3.0, 3.0, 2.5], dtype=np.float32)
    values = choices[(mixed >> np.uint64(7)) % np.uint64(8)]
    rate = (index // np.uint64(64)) % np.uint64(4)  # runs of 64: no NaN, 1 in 16, 1 in 4, 1 in 2
    nan = (rate > 0) & ((mixed >> np.uint64(3)) % (np.uint64(1) << (np.uint64(5) - rate)) == 0)
    values = np.where(nan, np.float32(np.nan), values)
    return values.astype(np.float32)


@triton.jit
def row_kernel(x_ptr, out_ptr, index_ptr, valid, N: tl.constexpr, OP: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + offsets)
    if OP == "sum":
        tl.store(out_ptr + row, tl.sum(x, axis=0))
    elif OP == "sum_sq":
        tl.store(out_ptr + row, tl.sum(x * x, axis=0))
    elif OP == "masked_sum":  # a row shorter than its block, of a length the compiler cannot see
        tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * N + offsets, mask=offsets < valid, other=0.0), axis=0))
    elif OP == "widened_sum":  # a 16-bit load widened to fp32 (Liger's norms): the load's layout
        tl.store(out_ptr + row, tl.sum(x.to(tl.float32), axis=0))
    elif OP == "widened_sum_sq":
        wide = x.to(tl.float32)
        tl.store(out_ptr + row, tl.sum(wide * wide, axis=0))
    elif OP == "cumsum":
        tl.store(out_ptr + row * N + offsets, tl.cumsum(x, axis=0))
    elif OP == "max_idx":
        value, index = tl.max(x, axis=0, return_indices=True)
        tl.store(out_ptr + row, value)
        tl.store(index_ptr + row, index)
    elif OP == "min_idx":
        value, index = tl.min(x, axis=0, return_indices=True)
        tl.store(out_ptr + row, value)
        tl.store(index_ptr + row, index)
    elif OP == "max":
        tl.store(out_ptr + row, tl.max(x, axis=0))
    else:
        tl.store(out_ptr + row, tl.min(x, axis=0))


@triton.jit
def block_kernel(x_ptr, out_ptr, index_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    block = tl.program_id(0)
    rows = tl.arange(0, M)
    columns = tl.arange(0, N)
    x = tl.load(x_ptr + block * M * N + rows[:, None] * N + columns[None, :])
    if OP == "sum0":
        tl.store(out_ptr + block * N + columns, tl.sum(x, axis=0))
    elif OP == "sum1":
        tl.store(out_ptr + block * M + rows, tl.sum(x, axis=1))
    elif OP == "cumsum0":
        tl.store(out_ptr + block * M * N + rows[:, None] * N + columns[None, :], tl.cumsum(x, axis=0))
    elif OP == "cumsum1":
        tl.store(out_ptr + block * M * N + rows[:, None] * N + columns[None, :], tl.cumsum(x, axis=1))
    elif OP == "max_idx0":
        value, index = tl.max(x, axis=0, return_indices=True)
        tl.store(out_ptr + block * N + columns, value)
        tl.store(index_ptr + block * N + columns, index)
    else:
        value, index = tl.max(x, axis=1, return_indices=True)
        tl.store(out_ptr + block * M + rows, value)
        tl.store(index_ptr + block * M + rows, index)


@triton.jit
def atomic_kernel(x_ptr, out_ptr, N: tl.constexpr, ADDRESSES: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    tl.atomic_add(out_ptr + offsets % ADDRESSES, x)


def cases():
    """Every case: (name, kernel kind, op, dtype, shape, num_warps, input kinds)."""
    found = []
    for dtype in DTYPES:
        for op, kinds in ROW_OPS.items():
            if op.startswith("widened") and dtype == "fp32":
                continue
            for n, warps in ROW_SHAPES:
                if op == "cumsum" and n > 2048:
                    continue
                found.append((f"row {op} {dtype} N={n} num_warps={warps}", "row", op, dtype, (n,), warps, kinds))
        for op, kinds in BLOCK_OPS.items():
            for m, n, warps in BLOCK_SHAPES:
                found.append((f"block {op} {dtype} M={m} N={n} num_warps={warps}", "block", op, dtype, (m, n), warps,
                              kinds))
        for n, addresses, warps in ATOMIC_SHAPES:
            found.append((f"atomic {dtype} N={n} addresses={addresses} num_warps={warps}", "atomic", "atomic_add",
                          dtype, (n, addresses), warps, ("signed",)))
    return found


def _bits(tensor):
    """``tensor``'s elements as signed integers of their width, on the CPU."""
    import torch

    return tensor.view({torch.float32: torch.int32}.get(tensor.dtype, torch.int16)).cpu().numpy()


def run_case(case, device):
    import torch

    name, kernel_kind, op, dtype_name, shape, warps, kinds = case
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    outputs, compiled = {}, None
    for kind in kinds:
        seed = sum(shape) + warps + len(op)
        if kernel_kind == "row":
            n, = shape
            x = torch.from_numpy(inputs(kind, ROWS * n, seed)).to(dtype).to(device)
            size = ROWS * n if op == "cumsum" else ROWS
            wide = op.startswith("widened")  # an fp32 result, stored as one
            out = torch.zeros(size, dtype=torch.float32 if wide else dtype, device=device)
            index = torch.full((ROWS,), -7, dtype=torch.int32, device=device)
            compiled = row_kernel[(ROWS,)](x, out, index, n - 3 if op == "masked_sum" else n, N=n, OP=op,
                                           num_warps=warps)
        elif kernel_kind == "block":
            m, n = shape
            x = torch.from_numpy(inputs(kind, BLOCKS * m * n, seed)).to(dtype).to(device)
            size = BLOCKS * {"0": n, "1": m}[op[-1]] if not op.startswith("cumsum") else BLOCKS * m * n
            out = torch.zeros(size, dtype=dtype, device=device)
            index = torch.full((size,), -7, dtype=torch.int32, device=device)
            compiled = block_kernel[(BLOCKS,)](x, out, index, M=m, N=n, OP=op, num_warps=warps)
        else:
            n, addresses = shape
            x = torch.from_numpy(inputs(kind, n, seed)).to(dtype).to(device)
            runs = []
            for _ in range(3):  # the same bits each time, or a race
                out = torch.zeros(addresses, dtype=dtype, device=device)
                compiled = atomic_kernel[(1,)](x, out, N=n, ADDRESSES=addresses, num_warps=warps)
                runs.append(_bits(out).copy())
            outputs[kind] = {"out": runs[0].tolist(), "repeatable": all((r == runs[0]).all() for r in runs)}
            continue
        entry = {"out": _bits(out).tolist()}
        if "idx" in op:
            entry["index"] = index.cpu().numpy().tolist()[:out.numel()]
        outputs[kind] = entry
    asm = getattr(compiled, "asm", None) or {}
    layouts = re.findall(r"^(#\w+ = #ttg\.\w+<.*>)$", asm.get("ttgir", ""), flags=re.M)
    return name, {"outputs": outputs, "layouts": layouts}


def recorded(found):
    """The cases kept in the repository, from a whole run's ``found`` (``cases`` of the JSON)."""
    kept = {}
    for name, entry in found.items():
        words = name.split()
        if "cumsum" in words[1]:
            elements = int(words[3][2:]) * (int(words[4][2:]) if words[0] == "block" else 1)
            if elements > (256 if words[0] == "row" else 1024):
                continue
        kept[name] = {"outputs": {kind: {key: value[:KEPT] if isinstance(value, list) else value
                                         for key, value in output.items()}
                                  for kind, output in entry["outputs"].items()}}
    return kept


def _is_nan(bits, dtype):
    exponent, mantissa = {"fp32": (0x7F800000, 0x7FFFFF), "fp16": (0x7C00, 0x3FF), "bf16": (0x7F80, 0x7F)}[dtype]
    bits = np.asarray(bits, dtype=np.int64)
    return ((bits & exponent) == exponent) & ((bits & mantissa) != 0)


def differences(recorded_cases, names, device="cuda"):
    """``{case: (input kind, values differing, of)}`` for each of ``names`` run here against
    ``recorded_cases``; NaN patterns compare equal whatever their payload (as the numerics table)."""
    table = {case[0]: case for case in cases()}
    found = {}
    for name in names:
        _, here = run_case(table[name], device)
        for kind, truth in recorded_cases[name]["outputs"].items():
            dtype = "fp32" if "widened" in name else table[name][3]
            ours = np.asarray(here["outputs"][kind]["out"][:len(truth["out"])])
            theirs = np.asarray(truth["out"])
            same = (ours == theirs) | (_is_nan(ours, dtype) & _is_nan(theirs, dtype))
            if "index" in truth:
                same &= np.asarray(here["outputs"][kind]["index"][:len(truth["index"])]) == np.asarray(truth["index"])
            if not same.all():
                found[name] = (kind, int((~same).sum()), same.size)
    return found


def _worker(arguments):
    chunk, device, switch = arguments
    if switch:
        import kwshim

        with kwshim.activate(device="cuda", compile="off"):
            return [run_case(case, device) for case in chunk]
    return [run_case(case, device) for case in chunk]


def main():
    if sys.argv[1] == "--record":
        with open(sys.argv[2]) as handle:
            whole = json.load(handle)
        print(json.dumps({"triton": whole["triton"], "rows": whole["rows"], "blocks": whole["blocks"],
                          "cases": recorded(whole["cases"])}, sort_keys=True, separators=(",", ":")))
        return
    out_dir = sys.argv[1]
    switch = "--kwshim" in sys.argv
    workers = int(os.environ.get("LANE_WORKERS", "12"))
    table = cases()
    chunks = [table[i::workers] for i in range(workers)]
    if workers == 1:
        done = [_worker((chunks[0], "cuda", switch))]
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            done = pool.map(_worker, [(chunk, "cuda", switch) for chunk in chunks])
    found = dict(item for part in done for item in part)
    os.makedirs(out_dir, exist_ok=True)
    name = "lane_orders_kwshim.json" if switch else "lane_orders_h200.json"
    with open(os.path.join(out_dir, name), "w") as handle:
        json.dump({"triton": triton.__version__, "rows": ROWS, "blocks": BLOCKS, "cases": found}, handle,
                  sort_keys=True)
    print(len(found), "cases written to", os.path.join(out_dir, name))


if __name__ == "__main__":
    main()
