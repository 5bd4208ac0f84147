"""Reductions of a ``tl.dot`` result that feeds another ``tl.dot`` (flash attention's ``q @ k`` then
``p @ v``), compiled on a GPU: Triton spreads the warps of a chained dot otherwise than a lone one's
(``AccelerateMatmul``: all on the rows, where it can), so its row and column sums combine in
another order. Each case saves the first dot's accumulator beside its sums, and its layout (ttgir's
``#mma``: ``results`` under ``compile="check"`` reads it from the compiler here too).

    python -m parity.dot_chains > parity/dot_chains_h200.json     # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.dot_chains --layouts > parity/dot_chains_sm90_layouts.json

The second records only the compiler's layouts of the first dot, compiled on a CPU for sm_90 by the
Triton the H200 runs (3.6.0); ``tests/test_numerics.py`` holds ``lane_order``'s warps to them.
"""

import json
import re
import sys

import triton
import triton.language as tl

from parity.lane_orders import inputs

#: (M, N, D, num_warps): the first dot is M x N (from K = D), the second M x D
SHAPES = [(64, 64, 64, 8), (64, 128, 64, 8), (64, 64, 64, 4), (128, 64, 64, 8), (32, 64, 32, 4), (32, 64, 32, 2),
          (64, 64, 32, 2), (16, 64, 32, 4), (16, 32, 64, 2), (32, 32, 32, 4)]
KEPT = 4


@triton.jit
def chained(q_ptr, k_ptr, v_ptr, qk_ptr, rows_ptr, columns_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr,
            D: tl.constexpr):
    m, n, d = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + m[:, None] * D + d[None, :])
    k = tl.load(k_ptr + d[:, None] * N + n[None, :])
    v = tl.load(v_ptr + n[:, None] * D + d[None, :])
    qk = tl.dot(q, k)
    tl.store(qk_ptr + m[:, None] * N + n[None, :], qk)
    tl.store(rows_ptr + m, tl.sum(qk, axis=1))
    tl.store(columns_ptr + n, tl.sum(qk, axis=0))
    p = (qk * 0.125).to(tl.float16)
    tl.store(o_ptr + m[:, None] * D + d[None, :], tl.dot(p, v))


def results(device, shapes=SHAPES):
    import torch

    found = {}
    for m, n, d, warps in shapes:
        seed = m + 3 * n + 7 * d + warps
        q = torch.from_numpy(inputs("signed", m * d, seed)).half().reshape(m, d).to(device)
        k = torch.from_numpy(inputs("signed", d * n, seed + 1)).half().reshape(d, n).to(device)
        v = torch.from_numpy(inputs("signed", n * d, seed + 2)).half().reshape(n, d).to(device)
        qk, rows, columns = (torch.zeros(*shape, device=device) for shape in ((m, n), (m,), (n,)))
        o = torch.zeros(m, d, device=device)
        compiled = chained[(1,)](q, k, v, qk, rows, columns, o, M=m, N=n, D=d, num_warps=warps)
        ttgir = (getattr(compiled, "asm", None) or {}).get("ttgir", "")
        first_dot = re.search(r"(?:tt\.dot|warp_group_dot) .*-> tensor<\w+, (#mma\w*)>", ttgir)
        layouts = dict(re.findall(r"^(#mma\w*) = #ttg\.nvidia_mma<(.*)>$", ttgir, flags=re.M))
        bits = {name: t.view(torch.int32).cpu().numpy()
                for name, t in (("qk", qk), ("rows", rows), ("columns", columns))}
        found[f"chained M={m} N={n} D={d} num_warps={warps}"] = {
            "qk layout": layouts.get(first_dot.group(1)) if first_dot else None,
            "qk rows": bits["qk"][:KEPT].tolist(), "rows": bits["rows"][:KEPT].tolist(),
            "qk columns": bits["qk"][:, :KEPT].T.tolist(), "columns": bits["columns"][:KEPT].tolist()}
    return found


def main():
    if "--layouts" in sys.argv:  # the compiler's layouts alone, compiled here for sm_90 (no GPU)
        import kwshim

        with kwshim.activate(device="cuda", compile="check"):
            found = results("cuda")
        print(json.dumps({"triton": triton.__version__, "target": "sm_90, compiled on a CPU",
                          "layouts": {name: case["qk layout"] for name, case in found.items()}}, indent=1,
                         sort_keys=True))
        return
    print(json.dumps({"triton": triton.__version__, "cases": results("cuda")}, sort_keys=True, separators=(",", ":")))


if __name__ == "__main__":
    main()
