"""Reductions of a ``tl.dot`` result, compiled on a GPU: ``tl.sum`` and ``tl.max`` along either axis
of the accumulator, which the compiler leaves in the tensor cores' layout (``#ttg.nvidia_mma``)
rather than a loaded block's. Each case saves the accumulator's own bits beside the reductions, so
that the order of the combines can be checked on the GPU's accumulator, apart from the dot's own
rounding, with the layouts the compiler chose (ttgir's ``#mma`` and ``#blocked`` lines).

    python -m parity.dot_reductions OUT_DIR     # on a machine with an NVIDIA GPU
    python -m parity.dot_reductions --record OUT_DIR/dot_reductions_h200.json > parity/dot_reductions_h200.json

``parity/dot_reductions_h200.json`` keeps the first ``KEPT`` rows (``sum1``, ``cumsum1``) or
columns (``sum0``) of each accumulator with their results; ``tests/test_numerics.py`` holds
``kwshim/arithmetic/lane_order.py``'s tensor-core order to the sums, and the scans to a loaded
block's order (the compiler converts the accumulator to a blocked layout to scan it). (``sum_exp1``
adds the ``exp2`` approximation's own ulp; ``max1`` is order-free without NaN.)
"""

import json
import os
import re
import sys

import numpy as np
import triton
import triton.language as tl

from parity.lane_orders import inputs

#: (M, N, K, num_warps): small blocks take ``mma.sync`` (version 2), blocks of 64 rows or more per
#: warp group ``wgmma`` (version 3)
SHAPES = [(16, 16, 16, 1), (32, 32, 16, 4), (16, 64, 32, 4), (64, 64, 16, 4), (64, 128, 32, 4), (128, 64, 32, 4),
          (128, 128, 32, 8), (64, 256, 16, 4), (128, 32, 16, 8), (256, 64, 16, 8)]
OPS = ("sum1", "sum0", "max1", "cumsum1", "sum_exp1")
DTYPES = ("fp16", "bf16")
KEPT = 4


@triton.jit
def dot_kernel(a_ptr, b_ptr, acc_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               OP: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    acc = tl.dot(a, b)
    tl.store(acc_ptr + m[:, None] * N + n[None, :], acc)
    if OP == "sum1":
        tl.store(out_ptr + m, tl.sum(acc, axis=1))
    elif OP == "sum0":
        tl.store(out_ptr + n, tl.sum(acc, axis=0))
    elif OP == "max1":
        tl.store(out_ptr + m, tl.max(acc, axis=1))
    elif OP == "cumsum1":
        tl.store(out_ptr + m[:, None] * N + n[None, :], tl.cumsum(acc, axis=1))
    else:  # flash attention's row sum of probabilities
        tl.store(out_ptr + m, tl.sum(tl.exp2(acc - tl.max(acc, axis=1)[:, None]), axis=1))


def run_case(m, n, k, warps, op, dtype_name, device="cuda"):
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    seed = m + 3 * n + 7 * k + warps
    a = torch.from_numpy(inputs("signed", m * k, seed)).to(dtype).reshape(m, k).to(device)
    b = torch.from_numpy(inputs("signed", k * n, seed + 1)).to(dtype).reshape(k, n).to(device)
    acc = torch.zeros(m, n, dtype=torch.float32, device=device)
    out = torch.zeros({"sum0": n, "cumsum1": m * n}.get(op, m), dtype=torch.float32, device=device)
    compiled = dot_kernel[(1,)](a, b, acc, out, M=m, N=n, K=k, OP=op, num_warps=warps)
    asm = getattr(compiled, "asm", None) or {}
    layouts = re.findall(r"^(#\w+ = #ttg\.\w+<.*>)$", asm.get("ttgir", ""), flags=re.M)
    bits = {name: t.view(torch.int32).cpu().numpy().reshape(-1).tolist() for name, t in (("acc", acc), ("out", out))}
    return {"layouts": layouts, **bits}


def recorded(found):
    """The first ``KEPT`` rows or columns of each accumulator summed or scanned, with the results."""
    kept = {}
    for name, case in found.items():
        op, dims = name.split()[1], name.split()[3:]
        if op not in ("sum1", "sum0", "cumsum1") or "error" in case:
            continue
        m, n = (int(d.split("=")[1]) for d in dims[:2])
        acc = np.array(case["acc"], np.int32).reshape(m, n)
        lines = acc[:KEPT] if op != "sum0" else acc[:, :KEPT].T
        out = case["out"][:KEPT * n] if op == "cumsum1" else case["out"][:KEPT]
        kept[name] = {"acc": lines.tolist(), "out": out, "layouts": [
            layout for layout in case["layouts"] if "nvidia_mma" in layout]}
    return kept


def main():
    if sys.argv[1] == "--record":
        with open(sys.argv[2]) as handle:
            whole = json.load(handle)
        print(json.dumps({"triton": whole["triton"], "cases": recorded(whole["cases"])}, sort_keys=True,
                         separators=(",", ":")))
        return
    out_dir = sys.argv[1]
    found = {}
    for m, n, k, warps in SHAPES:
        for op in OPS:
            for dtype in DTYPES:
                name = f"dot {op} {dtype} M={m} N={n} K={k} num_warps={warps}"
                try:
                    found[name] = run_case(m, n, k, warps, op, dtype)
                except Exception as error:  # noqa: BLE001 - a shape the compiler refuses is a fact too
                    found[name] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "dot_reductions_h200.json"), "w") as handle:
        json.dump({"triton": triton.__version__, "cases": found}, handle, sort_keys=True)
    print(len(found), "cases,", sum("error" in case for case in found.values()), "refused")


if __name__ == "__main__":
    main()
