"""``tl.dot_scaled`` compiled on a GPU: e2m1 by e4m3, e5m2 and bf16, and e4m3 by e4m3, with e8m0
group scales, the outputs' bits saved. ``parity/scaled_dots_h200.json`` holds what the H200
computed; ``tests/test_numerics.py`` holds the interpreter to it.

    python -m parity.scaled_dots > parity/scaled_dots_h200.json      # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.scaled_dots --kwshim          # anywhere: under the switch
"""


import numpy as np
import triton
import triton.language as tl

from parity import print_record

#: (M, N, K, lhs format, rhs format)
CASES = [(32, 32, 64, "e2m1", "e4m3"), (64, 64, 64, "e2m1", "e5m2"), (64, 32, 128, "e2m1", "bf16"),
         (32, 64, 64, "e4m3", "e4m3"), (128, 64, 64, "e2m1", "e4m3")]


@triton.jit
def scaled_dot(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               A_FORMAT: tl.constexpr, B_FORMAT: tl.constexpr):
    A_K: tl.constexpr = K // 2 if A_FORMAT == "e2m1" else K
    m, n = tl.arange(0, M), tl.arange(0, N)
    a = tl.load(a_ptr + m[:, None] * A_K + tl.arange(0, A_K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + n[None, :])
    a_scale = tl.load(a_scale_ptr + m[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if B_FORMAT == "bf16":
        c = tl.dot_scaled(a, a_scale, A_FORMAT, b, None, B_FORMAT)
    else:
        b_scale = tl.load(b_scale_ptr + n[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        c = tl.dot_scaled(a, a_scale, A_FORMAT, b, b_scale, B_FORMAT)
    tl.store(out_ptr + m[:, None] * N + n[None, :], c)


def _bytes(count, seed, finite_fp8):
    """``count`` bytes made by integer arithmetic; fp8 ones with their NaN patterns made finite."""
    index = np.arange(count, dtype=np.uint64) + np.uint64(seed * 7919)
    mixed = ((index * np.uint64(2654435761) + np.uint64(seed)) >> np.uint64(7)) % np.uint64(256)
    data = mixed.astype(np.uint8)
    if finite_fp8 == "e4m3":
        data = np.where(data & 0x7F == 0x7F, data & 0xF0, data)
    elif finite_fp8 == "e5m2":
        data = np.where(data & 0x7C == 0x7C, data & 0x83, data)
    return data


def _inputs(m, n, k, a_format, b_format):
    """The case's operands and scales, as bytes (bf16 values for a bf16 operand)."""
    seed = m + 3 * n + 7 * k
    a_k = k // 2 if a_format == "e2m1" else k
    a = _bytes(m * a_k, seed, a_format).reshape(m, a_k)
    if b_format == "bf16":
        b = (_bytes(k * n, seed + 1, None).astype(np.float32) / 64 - 2).reshape(k, n)
    else:
        b = _bytes(k * n, seed + 1, b_format).reshape(k, n)
    a_scale = (120 + _bytes(m * (k // 32), seed + 2, None) % 14).reshape(m, k // 32)
    b_scale = (120 + _bytes(n * (k // 32), seed + 3, None) % 14).reshape(n, k // 32)
    return a, b, a_scale, b_scale


def magnitudes(m, n, k, a_format, b_format):
    """Each output's sum of its products' magnitudes (fp64), from the operands decoded here by
    torch: the scale of the tensor cores' rounding."""
    import torch

    def decoded(data, fmt):
        if fmt == "e2m1":
            nibbles = np.stack([data & 0x0F, data >> 4], axis=-1).reshape(data.shape[0], -1)
            return np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])[nibbles & 7]
        if fmt == "bf16":
            return np.abs(torch.from_numpy(data).to(torch.bfloat16).double().numpy())
        kind = torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2
        return np.abs(torch.from_numpy(data).view(kind).double().numpy())

    a, b, a_scale, b_scale = _inputs(m, n, k, a_format, b_format)
    a_values = decoded(a, a_format) * np.exp2(np.repeat(a_scale.astype(np.float64) - 127, 32, axis=1))
    b_values = decoded(b, b_format)
    if b_format != "bf16":
        b_values = b_values * np.exp2(np.repeat(b_scale.astype(np.float64) - 127, 32, axis=1)).T
    return a_values @ b_values


def results(device):
    import torch

    found = {}
    for m, n, k, a_format, b_format in CASES:
        a, b, a_scale, b_scale = (torch.from_numpy(array) for array in _inputs(m, n, k, a_format, b_format))
        a, b = a.to(device), (b.to(torch.bfloat16) if b_format == "bf16" else b).to(device)
        a_scale, b_scale = a_scale.to(device), b_scale.to(device)
        out = torch.zeros(m, n, dtype=torch.float32, device=device)
        name = f"{a_format} x {b_format} M={m} N={n} K={k}"
        try:
            scaled_dot[(1,)](a, a_scale, b, b_scale, out, M=m, N=n, K=k, A_FORMAT=a_format, B_FORMAT=b_format)
        except Exception as error:  # noqa: BLE001 - a refusal is a fact too: its first line
            found[name] = f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
            continue
        found[name] = out.view(torch.int32).cpu().numpy().reshape(-1).tolist()
    return found


def main():
    print_record(results, sort_keys=True, separators=(",", ":"))


if __name__ == "__main__":
    main()
