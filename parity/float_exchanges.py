"""Float ``tl.atomic_xchg`` and ``tl.atomic_cas``, compiled on a GPU and under the switch: the bits
memory holds after each, and the old bits each returns, for NaNs with a sign and a payload, signed
zeros, a subnormal and infinities. Each address is one lane's, so the order of lanes decides nothing.
Compiled Triton takes an fp32 or fp64 exchange and a 16-, 32- or 64-bit compare-and-swap; the
interpreter's native exchange takes integers only ("Unsupported data type" on every release).
``parity/float_exchanges_h100.json`` holds what an H100 (sm_90, as the H200) computed.

    python -m parity.float_exchanges                            # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.float_exchanges --kwshim   # anywhere: under the switch
"""

import triton
import triton.language as tl

from parity import print_record

#: fp32 bit patterns: quiet NaNs of either sign and with a payload, a signalling NaN, zeros of both
#: signs, subnormals, infinities and numbers (15 of them: a block of 16 lanes, the last one unused).
FP32 = [0x7FC00000, 0xFFC00000, 0x7FC12345, 0x7F812345, 0x00000000, 0x80000000, 0x00000001, 0x7F800000,
        0xFF800000, 0x3F800000, 0xC0490FDB, 0x7FFFFFFF, 0x807FFFFF, 0x7F7FFFFF, 0x3EAAAAAB]
#: fp64: the same kinds.
FP64 = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000012345678, 0x7FF0000012345678, 0x0000000000000000,
        0x8000000000000000, 0x0000000000000001, 0x7FF0000000000000, 0xFFF0000000000000, 0x3FF0000000000000,
        0xC00921FB54442D18, 0x7FFFFFFFFFFFFFFF, 0x800FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x3FD5555555555555]
#: fp16: for the compare-and-swap (an exchange of 16 bits is refused by compiled Triton).
FP16 = [0x7E00, 0xFE00, 0x7E45, 0x7C45, 0x0000, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x3C00, 0xC248, 0x7FFF, 0x83FF,
        0x7BFF, 0x3555]
PATTERNS = {"fp32": FP32, "fp64": FP64, "fp16": FP16}
KINDS = {"fp32": ("float32", "int32", 32), "fp64": ("float64", "int64", 64), "fp16": ("float16", "int16", 16)}


@triton.jit
def exchange(mem_ptr, val_ptr, old_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    """Exchanges each of the first N elements of ``val`` into ``mem``: as a block of lanes (the last,
    the 16th, masked off), or one element per program."""
    if BLOCK:
        offsets = tl.arange(0, 16)
        old = tl.atomic_xchg(mem_ptr + offsets, tl.load(val_ptr + offsets, mask=offsets < N), mask=offsets < N)
        tl.store(old_ptr + offsets, old, mask=offsets < N)
    else:
        offset = tl.program_id(0)
        tl.store(old_ptr + offset, tl.atomic_xchg(mem_ptr + offset, tl.load(val_ptr + offset)))


@triton.jit
def compare_and_swap(mem_ptr, cmp_ptr, val_ptr, old_ptr):
    """Swaps ``val`` into ``mem`` where it holds ``cmp``'s element (the hardware compares bits)."""
    offsets = tl.arange(0, 16)
    old = tl.atomic_cas(mem_ptr + offsets, tl.load(cmp_ptr + offsets), tl.load(val_ptr + offsets))
    tl.store(old_ptr + offsets, old)


def _tensor(torch, bits, name, device):
    """The bit patterns ``bits`` as a tensor of the float type ``name``, padded to 16 elements with zeros."""
    floating, integer, width = KINDS[name]
    signed = [b - (1 << width) if b >= 1 << (width - 1) else b for b in bits + [0] * (16 - len(bits))]
    return torch.tensor(signed, dtype=getattr(torch, integer)).view(getattr(torch, floating)).to(device)


def _hex(tensor, name):
    """The first 15 elements' bit patterns, as hexadecimal text of the type's width."""
    import torch

    floating, integer, width = KINDS[name]
    patterns = tensor.cpu().view(getattr(torch, integer)).tolist()[:15]
    return [f"{v & ((1 << width) - 1):0{width // 4}x}" for v in patterns]


def results(device):
    """{case: {"memory": bits after, "old": bits returned}}: each type's exchange of the patterns
    reversed into the patterns (as a block, and one element per program), and its compare-and-swap
    of 2.0 where memory holds the compared bits (the pattern itself at even indices, the one before at
    odd indices)."""
    import torch

    found = {}
    for name, bits in PATTERNS.items():
        memory, incoming = _tensor(torch, bits, name, device), _tensor(torch, bits[::-1], name, device)
        if name != "fp16":
            for block in (True, False):
                mem, old = memory.clone(), torch.zeros_like(memory)
                exchange[(1 if block else len(bits),)](mem, incoming, old, N=len(bits), BLOCK=block)
                case = f"xchg {name} {'block' if block else 'per program'}"
                found[case] = {"memory": _hex(mem, name), "old": _hex(old, name)}
        compared = _tensor(torch, [b if i % 2 == 0 else bits[i - 1] for i, b in enumerate(bits)], name,
                           device)
        mem, old = memory.clone(), torch.zeros_like(memory)
        compare_and_swap[(1,)](mem, compared, torch.full_like(memory, 2.0), old)
        found[f"cas {name}"] = {"memory": _hex(mem, name), "old": _hex(old, name)}
    return found


def main():
    print_record(results, indent=1)


if __name__ == "__main__":
    main()
