"""Live probes of the installed Triton, run by ``kwshim doctor`` in a subprocess. Prints one JSON
object. The probe contract (its keys, what each checks, how a failure reads) is defined here
once, in ``PROBES``; ``doctor.py`` and ``tools/matrix.py`` read it from here.

- ``python -m kwshim.tools.probe``: with ``TRITON_INTERPRET=1`` set before ``import triton``, each
  probe launches a tiny kernel bare (without kwsafe) and records ``{"ok", "detail", "causes"}``.
- ``python -m kwshim.tools.probe --mode``: with the environment as it is, whether the installed
  Triton builds interpreter kernels (Triton up to 3.3 reads only ``TRITON_INTERPRET=1``).

Importing this module is light: Triton and torch are imported only when a probe runs.
"""

import json
import os
import re
import sys

#: key -> (what the probe checks, how its failure reads in a table)
PROBES = {
    "stores_work": ("interpreter's tl.store writes values", "stores write nothing"),
    "reserved_keywords_reach_parameters": ("declared reserved keywords (num_warps=...) reach the kernel",
                                           "drops reserved kwargs"),
    "reserved_keyword_overrides_default": ("a reserved keyword overrides the parameter's default",
                                           "default used silently"),
    "unknown_keywords_refused": ("unknown launch keywords (typos) are refused", "unknown kwargs dropped silently"),
    "autotune_works": ("an autotuned kernel (one Config) launches", "autotune fails"),
    "multi_config_autotune_works": ("an autotuned kernel with two Configs tunes and launches",
                                    "multi-Config autotune fails"),
    "bf16_arithmetic_works": ("bf16 x + y stores the sum", "bf16 arithmetic wrong"),
}


def _error(exc):
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def probe():
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl

    globals()["tl"] = tl  # the interpreter looks up triton.language in the kernels' module globals

    @triton.jit
    def _store_seven(out_ptr):
        tl.store(out_ptr, 7)

    @triton.jit
    def _reserved_required(out_ptr, num_warps: tl.constexpr):
        tl.store(out_ptr, num_warps)

    @triton.jit
    def _reserved_default(out_ptr, num_warps: tl.constexpr = 1):
        tl.store(out_ptr, num_warps)

    @triton.jit
    def _plain(out_ptr, value):
        tl.store(out_ptr, value)

    def launch(kernel, *args, **kwargs):
        out = torch.zeros(1, dtype=torch.int32)
        kernel[(1,)](out, *args, **kwargs)
        return int(out[0])

    results = {}
    try:
        stored = launch(_store_seven)
        results["stores_work"] = {"ok": stored == 7, "detail": f"stored {stored}, expected 7"}
    except Exception as exc:
        results["stores_work"] = {"ok": False, "detail": _error(exc)}
    try:
        stored = launch(_reserved_required, num_warps=4)
        results["reserved_keywords_reach_parameters"] = {"ok": stored == 4, "detail": f"stored {stored}, expected 4"}
    except Exception as exc:
        results["reserved_keywords_reach_parameters"] = {"ok": False, "detail": f"dropped: {_error(exc)}"}
    try:
        stored = launch(_reserved_default, num_warps=4)
        detail = "launch value used" if stored == 4 else f"default silently used: stored {stored}, expected 4"
        results["reserved_keyword_overrides_default"] = {"ok": stored == 4, "detail": detail}
    except Exception as exc:
        results["reserved_keyword_overrides_default"] = {"ok": False, "detail": _error(exc)}
    try:
        stored = launch(_plain, 5, bogus=1)
        results["unknown_keywords_refused"] = {"ok": False, "detail": f"silently dropped (stored {stored})"}
    except Exception as exc:
        results["unknown_keywords_refused"] = {"ok": True, "detail": _error(exc)}
    results["autotune_works"] = _probe_autotune(triton, _plain, launch)
    results["multi_config_autotune_works"] = _probe_multi_config_autotune(triton, _plain, launch)
    results["bf16_arithmetic_works"] = _probe_bf16(torch, triton)
    for result in results.values():
        result.setdefault("causes", [])
    return results


def _probe_bf16(torch, triton):
    """The interpreter keeps bf16 as raw 16-bit integers and computes on the bits: ``x + y`` of
    small values stores numbers like 1e37."""

    @triton.jit
    def _bf16_add(x_ptr, y_ptr, out_ptr):
        offsets = tl.arange(0, 4)  # noqa: F821  (``tl`` is in this module's globals while probing)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))  # noqa: F821

    x = torch.tensor([0.5, 1.0, -2.0, 3.0], dtype=torch.bfloat16)
    y = torch.tensor([0.25, 1.5, 0.5, -1.0], dtype=torch.bfloat16)
    out = torch.zeros(4, dtype=torch.bfloat16)
    try:
        _bf16_add[(1,)](x, y, out)
    except Exception as exc:
        return {"ok": False, "detail": _error(exc)}
    want = x + y
    ok = bool(torch.equal(out, want))
    return {"ok": ok, "detail": f"stored {out.float().tolist()}, expected {want.float().tolist()}"}


def _probe_autotune(triton, plain, launch):
    problems, causes = [], []
    try:
        kernel = triton.autotune(configs=[triton.Config({}, num_warps=2)], key=[])(plain)
    except Exception as exc:
        problems.append(f"@triton.autotune fails at decoration (needs a GPU driver): {_error(exc)}")
        causes.append("needs a GPU driver at decoration")
        try:  # the same Autotuner, given a benchmarker, shows whether launches work
            from triton.runtime.autotuner import Autotuner

            kernel = Autotuner(plain, plain.arg_names, [triton.Config({}, num_warps=2)], [], None, None,
                               do_bench=lambda *args, **kwargs: [0.0])
        except Exception:
            return {"ok": False, "detail": problems[0], "causes": causes}
    try:
        stored = launch(kernel, 4)
        if stored != 4:
            problems.append(f"stored {stored}, expected 4")
            causes.append("wrong value stored")
    except Exception as exc:
        problems.append(f"every autotuned launch fails: {_error(exc)}")
        keyword = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
        causes.append(f"launch: '{keyword.group(1)}'" if keyword else "launch error")
    return {"ok": not problems, "detail": "; ".join(problems) or "stored 4, expected 4", "causes": causes}


def _probe_multi_config_autotune(triton, plain, launch):
    """Two Configs make the Autotuner benchmark, which bare Triton does with CUDA in every release."""
    try:
        kernel = triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)],
                                 key=[])(plain)
    except Exception as exc:
        return {"ok": False, "detail": f"@triton.autotune fails at decoration: {_error(exc)}",
                "causes": ["needs a GPU driver at decoration"]}
    try:
        stored = launch(kernel, 4)
    except Exception as exc:
        return {"ok": False, "detail": f"tuning fails on the CPU: {_error(exc)}", "causes": ["tuning needs a GPU"]}
    if stored != 4:
        return {"ok": False, "detail": f"stored {stored}, expected 4", "causes": ["wrong value stored"]}
    return {"ok": True, "detail": "stored 4, expected 4", "causes": []}


def interpreter_mode():
    """Whether a kernel made by ``triton.jit`` in this environment is an interpreter kernel."""
    import tempfile

    import triton

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kwshim_mode_probe.py")
        with open(path, "w") as handle:
            handle.write("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
        sys.path.insert(0, folder)
        try:
            import kwshim_mode_probe
        finally:
            sys.path.remove(folder)
    kind = type(kwshim_mode_probe.k).__name__
    return {"interpreted": kind == "InterpretedFunction", "kernel_class": kind,
            "triton": getattr(triton, "__version__", "unknown")}


class _Activation:
    """What the switch's handle gives ``settings.in_force()``: its settings."""

    def __init__(self, settings):
        self.settings = settings


def batched_grid():
    """Whether four programs of a row kernel run batched here under ``grid="check"`` with the loop's bits."""
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton
    import triton.language as tl

    from .. import settings
    from ..batching import programs as grid
    from ..patching import Patch

    globals()["tl"] = tl  # the interpreter looks up triton.language in the kernels' module globals

    @triton.jit
    def _rows(x_ptr, out_ptr):
        offsets = tl.program_id(0) * 8 + tl.arange(0, 8)
        tl.store(out_ptr + offsets, tl.sum(tl.load(x_ptr + offsets), axis=0) + offsets)

    if not grid.batching_works():
        return {"ok": False, "detail": "this interpreter has no module-wide builder (2.x): launches run Triton's loop"}
    x, out = torch.arange(32, dtype=torch.float32), torch.zeros(32)
    try:
        with Patch() as patch:  # the grid seam alone, as the switch sets it, under grid="check"
            grid.install(patch)
            patch.setitem(vars(settings), "ACTIVATIONS", [_Activation(settings.Settings(grid="check"))])
            _rows[(4,)](x, out)
    except Exception as exc:
        return {"ok": False, "detail": _error(exc)}
    reason = grid.fallback_reasons().get(_rows.fn.__qualname__)
    if reason is not None:
        return {"ok": False, "detail": f"a row kernel fell back: {reason}"}
    return {"ok": True, "detail": "a row kernel's programs ran together with the loop's bits"}


def compiler_target():
    """Whether the installed Triton compiles for the H200 (sm_90) here, as ``compile="check"`` needs."""
    os.environ["TRITON_INTERPRET"] = "1"
    from ..compiler import unavailable

    reason = unavailable()
    if reason is not None:
        return {"ok": False, "detail": f"{reason}: compile='check' is skipped with a notice"}
    return {"ok": True, "detail": "a one-store kernel compiled for the H200 (sm_90): compile='check' works"}


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if "--mode" in arguments:
        result = interpreter_mode()
    elif "--grid" in arguments:
        result = batched_grid()
    elif "--with-grid" in arguments:  # the bare probes, then the grid's, in one process (the doctor's)
        result = {"probes": probe()}
        try:
            result["grid"] = batched_grid()
        except Exception as exc:  # noqa: BLE001 (reported, the bare probes kept)
            result["grid"] = {"ok": False, "detail": f"the grid probe failed: {_error(exc)}"}
        try:
            result["compiler"] = compiler_target()
        except Exception as exc:  # noqa: BLE001 (reported, the other probes kept)
            result["compiler"] = {"ok": False, "detail": f"the compiler probe failed: {_error(exc)}"}
    else:
        result = probe()
    json.dump(result, sys.stdout)
