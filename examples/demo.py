"""The seed example: bare Triton's interpreter fails it, @kwsafe makes it pass.

Run with `make demo` (Triton 3.0.0 on the CPU interpreter). Exits non-zero if either half does
not behave as described.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before `import triton`: tl.sum & co. are jitted at import

import torch
import triton
import triton.language as tl

from kwshim import kwsafe


def seed_kernel():
    """The kernel body; `num_stages` is one of the kernel's own parameters."""

    def simple_kernel(a_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
        offsets = tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        a = tl.load(a_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, a * num_stages, mask=mask)

    return simple_kernel


CONFIGS = [triton.Config({}, num_stages=2, num_warps=1)]
bare = triton.autotune(configs=CONFIGS, key=["BLOCK_SIZE"])(triton.jit(seed_kernel()))
fixed = triton.autotune(configs=CONFIGS, key=["BLOCK_SIZE"])(kwsafe(triton.jit(seed_kernel())))


def launch(kernel):
    device = "cuda" if torch.cuda.is_available() else "cpu"  # a GPU, or kwshim's virtual one
    a = torch.arange(8, dtype=torch.float32, device=device)
    out = torch.zeros(8, device=device)
    kernel[(1,)](a, out, 8, BLOCK_SIZE=8)
    return out.cpu()


def main():
    print(f"Triton {triton.__version__}, interpreter on the CPU")
    print("\nautotune Config(num_stages=2, num_warps=1), kernel declares `num_stages: tl.constexpr`")
    bare_ok = False
    try:
        out = launch(bare)
        print(f"bare Triton:   stored {out.tolist()}")
        bare_ok = torch.equal(out, torch.arange(8.0) * 2)
    except TypeError as exc:
        print(f"bare Triton:   TypeError: {exc}")
    out = launch(fixed)
    print(f"with @kwsafe:  stored {out.tolist()}  (a * num_stages, num_stages=2)")
    fixed_ok = torch.equal(out, torch.arange(8.0) * 2)
    if not fixed_ok:
        raise SystemExit("FAIL: @kwsafe did not give the kernel num_stages=2")
    if bare_ok:
        import kwshim

        if kwshim.doors.switch.is_active():
            print("\n(the switch (kwshim run / pytest --kwshim) fixed the bare kernel too)")
        else:
            print("\n(this Triton release binds the parameter itself; @kwsafe changes nothing here)")
    print("\nOK")


if __name__ == "__main__":
    main()
