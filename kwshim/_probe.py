"""Live probes of the installed Triton interpreter, run by ``kwshim doctor`` in a subprocess
(with ``TRITON_INTERPRET=1`` set before ``import triton``). Prints one JSON object.

Each probe launches a tiny kernel bare (without kwsafe) and records what happened.
"""

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


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


def _launch(kernel, *args, **kwargs):
    out = torch.zeros(1, dtype=torch.int32)
    kernel[(1,)](out, *args, **kwargs)
    return int(out[0])


def _error(exc):
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def probe():
    results = {}
    try:
        stored = _launch(_store_seven)
        results["stores_work"] = {"ok": stored == 7, "detail": f"stored {stored}, expected 7"}
    except Exception as exc:
        results["stores_work"] = {"ok": False, "detail": _error(exc)}
    try:
        stored = _launch(_reserved_required, num_warps=3)
        results["reserved_keywords_reach_parameters"] = {"ok": stored == 3, "detail": f"stored {stored}, expected 3"}
    except Exception as exc:
        results["reserved_keywords_reach_parameters"] = {"ok": False, "detail": f"dropped: {_error(exc)}"}
    try:
        stored = _launch(_reserved_default, num_warps=3)
        detail = "launch value used" if stored == 3 else f"default silently used: stored {stored}, expected 3"
        results["reserved_keyword_overrides_default"] = {"ok": stored == 3, "detail": detail}
    except Exception as exc:
        results["reserved_keyword_overrides_default"] = {"ok": False, "detail": _error(exc)}
    try:
        stored = _launch(_plain, 5, bogus=1)
        results["unknown_keywords_refused"] = {"ok": False, "detail": f"silently dropped (stored {stored})"}
    except Exception as exc:
        results["unknown_keywords_refused"] = {"ok": True, "detail": _error(exc)}
    results["autotune_works"] = _probe_autotune()
    return results


def _probe_autotune():
    problems = []
    try:
        kernel = triton.autotune(configs=[triton.Config({}, num_warps=2)], key=[])(_plain)
    except Exception as exc:
        problems.append(f"@triton.autotune fails at decoration (needs a GPU driver): {_error(exc)}")
        try:  # the same Autotuner, given a benchmarker, shows whether launches work
            from triton.runtime.autotuner import Autotuner

            kernel = Autotuner(_plain, _plain.arg_names, [triton.Config({}, num_warps=2)], [], None, None,
                               do_bench=lambda *args, **kwargs: [0.0])
        except Exception:
            return {"ok": False, "detail": problems[0]}
    try:
        stored = _launch(kernel, 4)
        if stored != 4:
            problems.append(f"stored {stored}, expected 4")
    except Exception as exc:
        problems.append(f"every autotuned launch fails: {_error(exc)}")
    return {"ok": not problems, "detail": "; ".join(problems) or "stored 4, expected 4"}


if __name__ == "__main__":
    json.dump(probe(), sys.stdout)
