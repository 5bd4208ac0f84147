"""Launch scenarios run once compiled on a GPU and once interpreted under @kwsafe on the CPU.

Run as ``python -m parity.scenarios interpreted|compiled``: prints one JSON object mapping each
scenario to what the kernel stored (or the exception it raised). ``parity.run`` compares them.
"""

import json
import os
import sys

MODE = sys.argv[1] if __name__ == "__main__" else os.environ.get("KWSHIM_PARITY_MODE", "interpreted")
os.environ["TRITON_INTERPRET"] = "1" if MODE == "interpreted" else "0"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kwshim import kwsafe  # noqa: E402
from tests.kernels import autotuned_warps_stages as autotuned  # noqa: E402  (the suite's kernels, shared)
from tests.kernels import debug_param, grid_param, instrumentation_param, plain_store, warps_stages  # noqa: E402
from tests.kernels import annotated_int64_times, doubled_as_int64, times_scalar, unspecialised_to_int64  # noqa: E402
from tests.kernels import heuristic_stages as heuristic  # noqa: E402

DEVICE = "cpu" if MODE == "interpreted" else "cuda"
GRID = (1,)


@triton.autotune(configs=[triton.Config({}, num_warps=2, num_stages=2)], key=[])
@kwsafe
@triton.jit
def autotuned_defaults(out_ptr, num_warps: tl.constexpr = 1, num_stages: tl.constexpr = 1):
    tl.store(out_ptr, num_warps * 10 + num_stages)


@kwsafe
@triton.jit
def ctas_regs(out_ptr, num_ctas: tl.constexpr, maxnreg: tl.constexpr = 255):
    tl.store(out_ptr, num_ctas * 1000 + maxnreg)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2, num_stages=1)], key=["n_cols"])
@kwsafe
@triton.jit
def softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, num_warps: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * n_cols + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + offsets, e / tl.sum(e, axis=0) * num_warps, mask=mask)


@kwsafe
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, N: tl.constexpr, num_stages: tl.constexpr):
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rows * N + cols)
    b = tl.load(b_ptr + rows * N + cols)
    tl.store(c_ptr + rows * N + cols, tl.dot(a, b, input_precision="ieee") + num_stages)


@triton.jit
def keyword_only_reserved(out_ptr, *, num_warps: tl.constexpr = 1):
    tl.store(out_ptr, num_warps)


@triton.jit
def keyword_only_plain(out_ptr, *, X: tl.constexpr = 1):
    tl.store(out_ptr, X)


@triton.jit
def hooked(out_ptr, a):
    tl.store(out_ptr, a)


def _hook_arguments():
    """What a pre-run hook receives for ``k[(1,)](out, a=1)``: the count of positional values
    and the keyword names."""
    kernel = kwsafe(triton.jit(hooked.fn))
    seen = []
    kernel.add_pre_run_hook(lambda *args, **kwargs: seen.append(f"{len(args)}|{','.join(sorted(kwargs))}"))
    _stored(lambda o: kernel[GRID](o, a=1))
    return seen[0]


def _stored(launch, dtype=torch.int32):
    """What ``launch(out)`` stored in a one-element ``out`` of ``dtype``, as a Python number."""
    out = torch.zeros(1, dtype=dtype, device=DEVICE)
    launch(out)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return out[0].item()


def _softmax():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 20, generator=generator).to(DEVICE)
    out = torch.empty_like(x)
    softmax[(4,)](x, out, 20)
    return out.cpu().flatten().tolist()


def _matmul():
    generator = torch.Generator().manual_seed(1)
    a = torch.randn(16, 16, generator=generator).to(DEVICE)
    b = torch.randn(16, 16, generator=generator).to(DEVICE)
    c = torch.empty(16, 16, device=DEVICE)
    matmul[GRID](a, b, c, N=16, num_stages=3)
    return c.cpu().flatten().tolist()


@kwsafe
@triton.jit
def scalar_to_fp32(out_ptr, eps):
    tl.store(out_ptr, eps.to(tl.float32) * 2)


@kwsafe
@triton.jit
def scalar_width(out_ptr, value):
    tl.store(out_ptr, value.dtype.primitive_bitwidth)


@kwsafe
@triton.jit
def annotated_fp16_width(out_ptr, value: tl.float16):
    tl.store(out_ptr, value.dtype.primitive_bitwidth)


@kwsafe
@triton.jit
def scalar_times_three(out_ptr, value):
    tl.store(out_ptr, value * 3)


def _fp16_times(scalar):
    """What an fp16 1.0 times ``scalar`` stores into an fp32 output (fp32 math, as compiled)."""
    x = torch.ones(1, dtype=torch.float16, device=DEVICE)
    return _stored(lambda o: times_scalar[GRID](x, o, scalar), torch.float32)


LIBDEVICE_X = [0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.8, 0.95]
LIBDEVICE_Y = [1.5, 2.0, 0.5, 3.0, 1.25, 0.75, 2.5, 1.0]


def _libdevice(name):
    from parity import libdevice_kernels

    def scenario():
        x = torch.tensor(LIBDEVICE_X, device=DEVICE)
        y = torch.tensor(LIBDEVICE_Y, device=DEVICE)
        out = torch.zeros(8, device=DEVICE)
        getattr(libdevice_kernels, f"ld_{name}")[GRID](x, y, out)
        return out.cpu().tolist()

    return scenario


def _libdevice_bits(name):
    """A rounding-mode variant: the stored floats as hex strings, so that the report compares bits."""
    scenario = _libdevice(name)
    return lambda: " ".join(float.hex(v) for v in scenario())


def _libdevice_scenarios():
    try:
        from parity import libdevice_kernels
    except ImportError:  # no triton.language.extra.libdevice in this Triton
        return {}
    names = libdevice_kernels.UNARY + libdevice_kernels.BINARY + libdevice_kernels.TERNARY
    rounded = libdevice_kernels.ROUNDED_UNARY + libdevice_kernels.ROUNDED_BINARY + libdevice_kernels.ROUNDED_TERNARY
    return {**{f"libdevice.{name}": _libdevice(name) for name in names},
            **{f"libdevice.{name} (bits)": _libdevice_bits(name) for name in rounded}}


SCENARIOS = {
    "direct keywords": lambda: _stored(lambda o: warps_stages[GRID](o, num_warps=8, num_stages=5)),
    "positional": lambda: _stored(lambda o: warps_stages[GRID](o, 7, 2)),
    "positional + keyword": lambda: _stored(lambda o: warps_stages[GRID](o, 6, num_stages=3)),
    ".run path": lambda: _stored(lambda o: warps_stages.run(o, num_warps=2, num_stages=4, grid=GRID, warmup=False)),
    "Config values": lambda: _stored(lambda o: autotuned[GRID](o)),
    "Config overrides defaults": lambda: _stored(lambda o: autotuned_defaults[GRID](o)),
    "defaults, no Config": lambda: _stored(lambda o: autotuned_defaults.fn[GRID](o)),
    "heuristic": lambda: _stored(lambda o: heuristic[GRID](o, num_warps=2)),
    "grid parameter positional": lambda: _stored(lambda o: grid_param[GRID](o, 5, 2)),
    "grid parameter .run": lambda: _stored(lambda o: grid_param.run(o, 4, 3, grid=GRID, warmup=False)),
    "num_ctas + maxnreg": lambda: _stored(lambda o: ctas_regs[GRID](o, num_ctas=1, maxnreg=128)),
    "maxnreg default": lambda: _stored(lambda o: ctas_regs[GRID](o, num_ctas=1)),
    "options consumed": lambda: _stored(lambda o: warps_stages[GRID](o, 1, 2, num_ctas=1, enable_fp_fusion=False)),
    "error: grid by keyword": lambda: _stored(lambda o: grid_param[GRID](o, grid=5, num_warps=2)),
    "error: missing": lambda: _stored(lambda o: warps_stages[GRID](o, num_warps=2)),
    "error: duplicate": lambda: _stored(lambda o: warps_stages[GRID](o, 1, 2, num_warps=3)),
    "error: positional + Config": lambda: _stored(lambda o: autotuned[GRID](o, 8)),
    "error: unknown keyword": lambda: _stored(lambda o: warps_stages[GRID](o, 1, 2, bogus=3)),
    "error: too many positional": lambda: _stored(lambda o: warps_stages[GRID](o, 1, 2, 3)),
    "error: num_warps=3, declared, by keyword": lambda: _stored(
        lambda o: warps_stages[GRID](o, num_warps=3, num_stages=1)),
    "error: num_warps=3 as a launch option": lambda: _stored(lambda o: plain_store[GRID](o, 1, num_warps=3)),
    "error: keyword-only reserved (num_warps=4)": lambda: _stored(
        lambda o: kwsafe(keyword_only_reserved)[GRID](o, num_warps=4)),
    "error: keyword-only plain (X=5)": lambda: _stored(lambda o: kwsafe(keyword_only_plain)[GRID](o, X=5)),
    "error: stream=0": lambda: _stored(lambda o: plain_store[GRID](o, 1, stream=0)),
    "error: waves_per_eu=2 on CUDA": lambda: _stored(lambda o: plain_store[GRID](o, 1, waves_per_eu=2)),
    "debug parameter, not given": lambda: _stored(lambda o: debug_param[GRID](o)),
    "error: debug parameter positional": lambda: _stored(lambda o: debug_param[GRID](o, 7)),
    "debug parameter by keyword": lambda: _stored(lambda o: debug_param[GRID](o, debug=7)),
    "instrumentation_mode parameter, not given": lambda: _stored(lambda o: instrumentation_param[GRID](o)),
    "error: .run without warmup": lambda: _stored(lambda o: plain_store.run(o, 3, grid=GRID)),
    "pre-run hook arguments": _hook_arguments,
    "list grid": lambda: _stored(lambda o: plain_store[[1]](o, 9)),
    "softmax (x num_warps)": _softmax,
    "matmul (+ num_stages)": _matmul,
    "float scalar: eps.to(tl.float32) * 2": lambda: _stored(lambda o: scalar_to_fp32[GRID](o, 1.25), torch.float32),
    "fp16 x * float scalar (fp32 math)": lambda: _fp16_times(1.0001),
    "float scalar bit width": lambda: _stored(lambda o: scalar_width[GRID](o, 2.5)),
    "bool scalar bit width": lambda: _stored(lambda o: scalar_width[GRID](o, True)),
    "int scalar bit width": lambda: _stored(lambda o: scalar_width[GRID](o, 7)),
    "int 2**40 scalar bit width": lambda: _stored(lambda o: scalar_width[GRID](o, 2 ** 40)),
    "annotated tl.float16 scalar bit width": lambda: _stored(lambda o: annotated_fp16_width[GRID](o, 2.0)),
    "int 1 scalar * 3 (specialised)": lambda: _stored(lambda o: scalar_times_three[GRID](o, 1)),
    "error: int 1 scalar .dtype (specialised)": lambda: _stored(lambda o: scalar_width[GRID](o, 1)),
    "int 3e9 scalar doubled (i64 as compiled)": lambda: _stored(
        lambda o: doubled_as_int64[GRID](o, 3_000_000_000), torch.int64),
    "int 3e9 scalar bit width": lambda: _stored(lambda o: scalar_width[GRID](o, 3_000_000_000)),
    "annotated n: tl.int64, 5 * 1e9": lambda: _stored(
        lambda o: annotated_int64_times[GRID](o, 5, 1_000_000_000), torch.int64),
    "fp16 x * np.float64 scalar (fp32 math)": lambda: _fp16_times(np.float64(1.0001)),
    "fp16 x * np.float32 scalar (fp32 math)": lambda: _fp16_times(np.float32(1.0001)),
    "do_not_specialize int 1: n.to(tl.int64) * 3": lambda: _stored(
        lambda o: unspecialised_to_int64[GRID](o, 1), torch.int64),
    **_libdevice_scenarios(),
}


def run_all():
    results = {}
    for name, scenario in SCENARIOS.items():
        try:
            results[name] = {"value": scenario()}
        except Exception as exc:  # record what was raised, for comparison
            results[name] = {"error": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__],
                             "message": str(exc)[:300]}
    return results


if __name__ == "__main__":
    json.dump({"mode": MODE, "triton": triton.__version__, "torch": torch.__version__, "results": run_all()},
              sys.stdout)
