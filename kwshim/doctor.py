"""``kwshim doctor``: what this environment's Triton does, found by running it.

The interpreter's behaviour is probed live, in a subprocess with the interpreter switched on
(see ``_probe.py``), never inferred from version numbers. Versions are reported for context.
"""

import importlib.metadata
import json
import os
import subprocess
import sys

__all__ = ["diagnose", "render"]

_PROBES = {
    "stores_work": "interpreter's tl.store writes values",
    "reserved_keywords_reach_parameters": "declared reserved keywords (num_warps=...) reach the kernel",
    "reserved_keyword_overrides_default": "a reserved keyword overrides the parameter's default",
    "unknown_keywords_refused": "unknown launch keywords (typos) are refused",
    "autotune_works": "an autotuned kernel (one Config) launches",
}


def diagnose():
    """A dict describing the environment; ``broken`` is True when Triton is missing, the probe
    cannot run, or the interpreter's stores write nothing."""
    report = {
        "python": sys.version.split()[0],
        "triton": _distribution_of("triton"),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "wrapt": _version("wrapt"),
        "interpreter_mode": _interpreter_mode(),
        "probes": {},
        "advice": [],
        "broken": False,
    }
    if report["triton"] is None:
        report["broken"] = True
        report["advice"].append("no 'triton' module: install one of triton, pytorch-triton-rocm, "
                                "pytorch-triton-xpu, triton-windows")
        return report
    if report["torch"] is None:
        report["advice"].append("torch is not installed: the live probes need it (skipped)")
        return report
    probes, error = _run_probe()
    report["probes"] = probes
    if error:
        report["broken"] = True
        report["advice"].append(f"the interpreter probe failed: {error}")
        return report
    if not probes["stores_work"]["ok"]:
        report["broken"] = True
        numpy_major = int((report["numpy"] or "0").split(".")[0])
        cause = " (numpy >= 2 with Triton <= 3.1: install 'numpy<2')" if numpy_major >= 2 else ""
        report["advice"].append(f"the interpreter's stores write nothing{cause}")
    if not (probes["reserved_keywords_reach_parameters"]["ok"] and probes["reserved_keyword_overrides_default"]["ok"]):
        report["advice"].append("this interpreter drops declared reserved keywords: use @kwsafe")
    if not probes["unknown_keywords_refused"]["ok"]:
        report["advice"].append("this interpreter drops unknown launch keywords silently: @kwsafe refuses them")
    if not probes["autotune_works"]["ok"]:
        report["advice"].append("autotuned kernels fail here bare: @kwsafe between autotune and jit fixes "
                                "launch-time failures; decoration-time failures need a GPU driver")
    return report


def _run_probe():
    env = dict(os.environ, TRITON_INTERPRET="1")
    try:
        done = subprocess.run([sys.executable, "-m", "kwshim._probe"], capture_output=True, text=True,
                              env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return {}, "timed out after 300 s"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return {}, lines[-1] if lines else f"exit status {done.returncode}"
    return json.loads(done.stdout), None


def _distribution_of(module):
    try:
        imported = __import__(module)
    except ImportError:
        return None
    try:
        names = importlib.metadata.packages_distributions().get(module) or []
    except Exception:
        names = []
    from ._triton import TRITON_DISTRIBUTIONS

    for name in list(names) + [n for n in TRITON_DISTRIBUTIONS if module == "triton" and n not in names]:
        try:
            return {"distribution": name, "version": importlib.metadata.version(name)}
        except importlib.metadata.PackageNotFoundError:
            continue
    # importable without distribution metadata (e.g. a source tree)
    return {"distribution": "unknown", "version": getattr(imported, "__version__", "unknown")}


def _version(module):
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return getattr(__import__(module), "__version__", "unknown")
    except ImportError:
        return None


def _interpreter_mode():
    value = os.environ.get("TRITON_INTERPRET", "")
    on = value.strip().lower() in ("1", "true", "yes", "on")
    return {"on": on, "TRITON_INTERPRET": value or None}


def render(report):
    triton = report["triton"]
    lines = [
        f"python      {report['python']}",
        f"triton      {triton['version'] + ' (' + triton['distribution'] + ')' if triton else 'not installed'}",
        f"torch       {report['torch'] or 'not installed'}",
        f"numpy       {report['numpy'] or 'not installed'}",
        f"wrapt       {report['wrapt'] or 'not installed'}",
        f"interpreter {'on' if report['interpreter_mode']['on'] else 'off'} in this environment "
        f"(TRITON_INTERPRET={report['interpreter_mode']['TRITON_INTERPRET'] or 'unset'})",
    ]
    if report["probes"]:
        lines.append("")
        lines.append("bare interpreter, probed live:")
        for key, label in _PROBES.items():
            result = report["probes"].get(key)
            if result:
                lines.append(f"  [{'ok' if result['ok'] else 'NO'}] {label}: {result['detail']}")
    if report["advice"]:
        lines.append("")
        lines.extend(f"- {advice}" for advice in report["advice"])
    lines.append("")
    lines.append("environment: BROKEN" if report["broken"] else "environment: usable")
    return "\n".join(lines)
