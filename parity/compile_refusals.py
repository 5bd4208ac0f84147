"""What the GPU's compiler refuses, and what it shows: eight launches compiled for the H200 (sm_90),
each with the exception compiled Triton raised (its class and the classes it subclasses) or what the
compiled kernel holds (its shared memory, its ``asm`` keys); the autotuner's choice between a Config
that fits the GPU's shared memory and one that does not; and the device's own shared memory limit.
``parity/compile_refusals_h200.json`` holds what the H200 answered; ``tests/test_compile_check.py``
holds ``compile="check"`` to it.

    python -m parity.compile_refusals                               # on a machine with an NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.compile_refusals --kwshim   # anywhere: under the switch
"""

import json
import sys

import triton
import triton.language as tl


@triton.jit
def small_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@triton.jit
def dot_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A block of C = A @ B (A is BM x K, B is K x BN, both row-major), pipelined over K."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


#: The two Configs of the autotuner: BM=BN=64 fits the H200's shared memory, 256 does not.
FITS = {"BM": 64, "BN": 64, "BK": 32, "num_stages": 4, "num_warps": 4}
TOO_LARGE = {"BM": 256, "BN": 256, "BK": 128, "num_stages": 4, "num_warps": 8}


def _tuned():
    configs = [triton.Config({k: v for k, v in c.items() if k.isupper()}, num_stages=c["num_stages"],
                             num_warps=c["num_warps"]) for c in (TOO_LARGE, FITS)]
    return triton.autotune(configs, key=["K"])(dot_loop)


@triton.jit
def reshape_count(x_ptr, y_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(y_ptr + tl.arange(0, 8), tl.sum(tl.reshape(x, (2, 4)), axis=0))


@triton.jit
def arange_three(x_ptr):
    tl.store(x_ptr + tl.arange(0, 3), 1.0)


def launches(device):
    """Each launch by name: a callable that runs it and returns the compiled kernel (or None)."""
    import torch

    def half(*shape):
        return torch.randn(*shape, device=device).half()

    def dot(m, n, k):
        return lambda: small_dot[(1,)](half(m, k), half(k, n), torch.empty(m, n, device=device), M=m, N=n, K=k)

    def loop(config):
        bm, bn, bk = config["BM"], config["BN"], config["BK"]
        k = 4 * bk
        return lambda: dot_loop[(1,)](half(bm, k), half(k, bn), torch.empty(bm, bn, device=device), k, BM=bm, BN=bn,
                                      BK=bk, num_stages=config["num_stages"], num_warps=config["num_warps"])

    return {
        "dot 16x16x16 fp16": dot(16, 16, 16),
        "dot 8x8x8 fp16": dot(8, 8, 8),
        "dot 16x16x8 fp16": dot(16, 16, 8),
        "dot loop 64x64x32 num_stages=4": loop(FITS),
        "dot loop 256x256x128 num_stages=4 num_warps=8": loop(TOO_LARGE),
        "reshape to another element count": lambda: reshape_count[(1,)](torch.zeros(16, device=device),
                                                                        torch.zeros(8, device=device)),
        "arange(0, 3)": lambda: arange_three[(1,)](torch.zeros(4, device=device)),
    }


def outcome(launch):
    """``{"runs": True, ...}`` or ``{"raises": class, "classes": [its bases' names], "message": ...}``."""
    try:
        kernel = launch()
    except Exception as error:  # noqa: BLE001 - the outcome is what is measured
        classes = sorted({klass.__name__ for klass in type(error).__mro__} - {"object", "BaseException"})
        return {"raises": type(error).__name__, "classes": classes, "message": str(error).strip().splitlines()[-1]}
    found = {"runs": True}
    metadata = getattr(kernel, "metadata", None)
    if metadata is not None:
        found["shared"] = getattr(metadata, "shared", None) if not isinstance(metadata, dict) else metadata["shared"]
        found["asm"] = sorted(kernel.asm)
    return found


def results(device):
    import torch

    found = {name: outcome(launch) for name, launch in launches(device).items()}
    tuned, k = _tuned(), 4 * FITS["BK"]
    bm = 256
    a, b, c = (torch.randn(bm, k, device=device).half(), torch.randn(k, bm, device=device).half(),
               torch.empty(bm, bm, device=device))
    try:
        tuned[(1,)](a, b, c, k)
        found["autotuner over both Configs"] = {"picks": dict(tuned.best_config.kwargs)}
    except Exception as error:  # noqa: BLE001
        found["autotuner over both Configs"] = {"raises": type(error).__name__}
    properties = triton.runtime.driver.active.utils.get_device_properties(0)
    return {"max_shared_mem": properties["max_shared_mem"], "launches": found}


def main():
    if "--kwshim" in sys.argv:
        import kwshim

        with kwshim.activate(device="cuda", compile="check"):
            found = results("cuda")
    else:
        found = results("cuda")
    print(json.dumps({"triton": triton.__version__, **found}, indent=1))


if __name__ == "__main__":
    main()
