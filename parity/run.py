"""GPU parity: run ``parity.scenarios`` compiled (CUDA) and interpreted under @kwsafe (CPU),
compare what the kernels stored, add compiled-mode checks, and write a Markdown report.

    python -m parity.run --report parity/REPORT.md     # on a machine with an NVIDIA GPU
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time

TOLERANCE = 1e-4

#: Scenarios where the interpreter under @kwsafe knowingly differs from compiled Triton (none left).
KNOWN_GAPS = {}

#: Where compiled Triton refuses at compile time what kwsafe refuses when the kernel is wrapped, or
#: what the interpreter raises running the kernel's body.
EQUIVALENT_ERRORS = {"CompilationError": ("UnsupportedSignatureError", "InterpreterError")}


def run_mode(mode, extra_pythonpath=None):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in (extra_pythonpath, root, env.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["KWSHIM_TARGET"] = "cuda"  # the interpreter checks options as the compiled side's backend does
    done = subprocess.run([sys.executable, "-m", "parity.scenarios", mode], capture_output=True, text=True,
                          env=env, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def compare(compiled, interpreted):
    """Rows of (scenario, compiled, interpreted, verdict); verdict 'same', 'known gap: ...' or a
    reason starting with DIFFERENT."""
    rows = []
    for name, want in compiled["results"].items():
        got = interpreted["results"].get(name)
        if name in KNOWN_GAPS:
            rows.append((name, want, got, f"known gap: {KNOWN_GAPS[name]}"))
        elif got is None:
            rows.append((name, want, got, "missing"))
        elif "error" in want:
            same = "error" in got and (want["error"] in got["mro"]
                                       or any(e in got["mro"] for e in EQUIVALENT_ERRORS.get(want["error"], ())))
            rows.append((name, want, got, "same" if same else "DIFFERENT"))
        elif "error" in got:
            rows.append((name, want, got, "DIFFERENT"))
        elif isinstance(want["value"], list):
            worst = max(abs(a - b) for a, b in zip(want["value"], got["value"]))
            ok = len(want["value"]) == len(got["value"]) and worst <= TOLERANCE * max(
                1.0, max(abs(v) for v in want["value"]))
            rows.append((name, want, got, f"same (max abs diff {worst:.2e})" if ok else f"DIFFERENT ({worst:.2e})"))
        else:
            rows.append((name, want, got, "same" if want["value"] == got["value"] else "DIFFERENT"))
    return rows


def compiled_checks():
    """In-process, compiled mode: identity, torch.compile, launch-time ratio."""
    os.environ["TRITON_INTERPRET"] = "0"
    os.environ["KWSHIM_PARITY_MODE"] = "compiled"
    import torch
    import triton
    import triton.language as tl

    from kwshim import kwsafe

    def body(out_ptr, num_warps: tl.constexpr):
        tl.store(out_ptr, num_warps)

    checks = {}
    bare = triton.jit(body)
    checks["kwsafe(k) is k (compiled)"] = kwsafe(bare) is bare and kwsafe()(bare) is bare

    from parity import scenarios  # noqa: F401  (compiled-mode kernels)

    def launch_softmax(x):
        out = torch.empty_like(x)
        scenarios.softmax[(x.shape[0],)](x, out, x.shape[1])
        return out

    x = torch.randn(4, 20, device="cuda")
    try:
        compiled_fn = torch.compile(launch_softmax, fullgraph=True)
        same = torch.allclose(compiled_fn(x), launch_softmax(x), atol=1e-5)
        checks["torch.compile(fullgraph=True) of an autotuned @kwsafe kernel"] = bool(same)
    except Exception as exc:
        checks["torch.compile(fullgraph=True) of an autotuned @kwsafe kernel"] = \
            f"failed: {type(exc).__name__}: {exc}"[:300]

    # What a GPU's tuning leaves (the CPU's `all` mirrors it: 3 tuning runs + the launch = 4.0).
    def accumulate(x_ptr, acc_ptr, SLOT: tl.constexpr):
        tl.atomic_add(acc_ptr, tl.load(x_ptr))

    for label, hooks in (("without reset_to_zero", {}), ("with reset_to_zero", {"reset_to_zero": ["acc_ptr"]})):
        tuned = triton.autotune(configs=[triton.Config({"SLOT": i}) for i in range(3)], key=[], **hooks)(
            triton.jit(accumulate))
        x, acc = torch.ones(1, device="cuda"), torch.zeros(1, device="cuda")
        tuned[(1,)](x, acc)
        torch.cuda.synchronize()
        checks[f"3-Config autotuned atomic_add {label}: acc after the first launch from 0 (one launch: 1.0)"] = \
            float(acc[0])

    safe = kwsafe(bare)
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    for kernel in (bare, safe):
        for _ in range(50):
            kernel[(1,)](out, num_warps=4)
    torch.cuda.synchronize()
    ratios = []
    for round_index in range(21):
        totals = {}
        for kernel in ((bare, safe) if round_index % 2 else (safe, bare)):
            start = time.perf_counter()
            for _ in range(200):
                kernel[(1,)](out, num_warps=4)
            torch.cuda.synchronize()
            totals[id(kernel) if kernel is not safe else "safe"] = time.perf_counter() - start
        ratios.append(totals["safe"] / totals[id(bare)] if "safe" in totals and id(bare) in totals else 1.0)
    ratios.sort()
    checks["compiled launch time ratio kwsafe/bare (median of 21 rounds x 200)"] = round(ratios[len(ratios) // 2], 4)
    return checks


def render(compiled, interpreted, rows, checks, device_name, verify_rows=(), cost_rows=()):
    today = datetime.date.today().isoformat()
    lines = [
        "# GPU parity report",
        "",
        f"- date: {today}",
        f"- GPU: {device_name}",
        f"- compiled: Triton {compiled['triton']}, torch {compiled['torch']} (CUDA)",
        f"- interpreted under @kwsafe: Triton {interpreted['triton']}, torch {interpreted['torch']} "
        f"(CPU, TRITON_INTERPRET=1)",
        f"- produced by `python -m parity.run`: {sum(r[3].startswith('same') for r in rows)} scenarios the same, "
        f"{sum(r[3].startswith('known gap') for r in rows)} known gap, "
        f"{sum(r[3].startswith('DIFFERENT') or r[3] == 'missing' for r in rows)} different",
        "",
        "| scenario | compiled | interpreted + kwsafe | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for name, want, got, verdict in rows:
        lines.append(f"| {name} | {_cell(want)} | {_cell(got)} | {verdict} |")
    lines += ["", "## Compiled-mode checks", ""]
    lines += [f"- {name}: {value}" for name, value in checks.items()]
    if verify_rows:
        lines += ["", "## Compiled mode, switch on, autotune policy `verify` (`parity/compiled_verify.py`)", "",
                  "| check | expected | measured | verdict |", "| --- | --- | --- | --- |"]
        lines += [f"| {name} | {want} | {got.replace('|', '/')} | {'same' if ok else 'DIFFERENT'} |"
                  for name, want, got, ok in verify_rows]
    if cost_rows:
        lines += ["", "### Cost of `verify` on the GPU, and of the switch under `first`/`all`", ""]
        lines += [f"- {name}: {value}" for name, value in cost_rows]
    return "\n".join(lines) + "\n"


def _cell(result):
    if result is None:
        return "-"
    if "error" in result:
        return f"`{result['error']}`"
    value = result["value"]
    if isinstance(value, list):
        return f"{len(value)} values, sum {math.fsum(value):.4f}"
    return str(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", help="write the Markdown report here")
    parser.add_argument("--interpreter-pythonpath", help="prepended to PYTHONPATH for the interpreted run "
                                                         "(e.g. a numpy<2.4 the interpreter needs)")
    options = parser.parse_args()
    os.environ["TRITON_INTERPRET"] = "0"  # this process is the compiled side
    import torch

    compiled = run_mode("compiled")
    interpreted = run_mode("interpreted", options.interpreter_pythonpath)
    rows = compare(compiled, interpreted)
    checks = compiled_checks()
    from parity import compiled_verify

    verify_rows, cost_rows = compiled_verify.verify_rows(), compiled_verify.cost_rows()
    report = render(compiled, interpreted, rows, checks, torch.cuda.get_device_name(), verify_rows, cost_rows)
    print(report)
    if options.report:
        with open(options.report, "w") as handle:
            handle.write(report)
    return 0 if all(r[3].startswith(("same", "known gap")) for r in rows) and all(r[3] for r in verify_rows) else 1


if __name__ == "__main__":
    sys.exit(main())
