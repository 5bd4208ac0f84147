"""``kwshim doctor``: what this environment's Triton does, found by running it.

The interpreter's behaviour is probed live, in a subprocess with the interpreter switched on
(see ``probe.py``, which also defines the probes' keys and labels), never inferred from version
numbers. Whether the interpreter is on is probed too: Triton up to 3.3 reads only
``TRITON_INTERPRET=1``, later releases also ``true``/``yes``/``on``. Versions are for context.
"""

import importlib.metadata
import json
import os
import subprocess
import sys

from ..compat import TRITON_DISTRIBUTIONS, ignored_interpret_hint
from .probe import PROBES

__all__ = ["diagnose", "render", "run_probe"]


def diagnose(progress=None):
    """A dict describing the environment; ``broken`` is True when Triton is missing, the probe
    cannot run, or the interpreter's stores write nothing. ``progress(line)`` is told before the
    probes start (they take a while), and only if they do."""
    report = {
        "python": sys.version.split()[0],
        "triton": _distribution_of("triton"),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "wrapt": _version("wrapt"),
        "arithmetic": arithmetic_engine(),
        "interpreter_mode": {"on": None, "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET") or None,
                             "detail": "not probed"},
        "probes": {},
        "advice": [],
        "broken": False,
    }
    if report["triton"] is None:
        report["broken"] = True
        report["advice"].append("no 'triton' module: install one of " + ", ".join(TRITON_DISTRIBUTIONS))
        folder, kept = _releases_kept()
        if kept:  # a kwshim checkout after `make demo`/`make test`: Triton is there, off the path
            report["advice"].append(f"{folder} keeps Triton releases ({', '.join(kept)}): select one with "
                                    f"PYTHONPATH={os.path.join(folder, kept[-1])} (or run `make doctor` in the clone)")
        return report
    if report["torch"] is None:
        report["advice"].append("torch is not installed: the live probes need it (skipped)")
        return report
    if progress is not None:
        progress("kwshim doctor: probing the installed Triton's interpreter in subprocesses (about 10-15 s)...")
    report["interpreter_mode"] = interpreter_mode()
    mode = report["interpreter_mode"]
    hint = None if mode["on"] is None else ignored_interpret_hint(mode["on"], report["triton"]["version"])
    if hint:
        report["advice"].append(hint)
    both, error = run_probe("--with-grid")  # one process: each costs an import of torch and Triton
    probes = report["probes"] = both.get("probes", {})
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
    if not (probes["autotune_works"]["ok"] and probes["multi_config_autotune_works"]["ok"]):
        report["advice"].append("autotuned kernels fail here bare (multi-Config tuning needs a GPU): the switch "
                                "(kwshim.activate(), kwshim run, pytest --kwshim) makes them decorate, launch and "
                                "tune on the CPU")
    report["grid"] = both.get("grid") or {"ok": False, "detail": "the grid probe did not run"}
    report["compiler"] = both.get("compiler") or {"ok": False, "detail": "the compiler probe did not run"}
    if not probes.get("bf16_arithmetic_works", {"ok": True})["ok"]:
        report["advice"].append("this interpreter computes bf16 on its raw bits: bf16 kernels store wrong values "
                                "bare; a wrapped kernel (@kwsafe or the switch) computes bf16 and fp8 as the GPU "
                                "does, with ml_dtypes installed (see the docs: explanation/numerics)")
    return report


def _releases_kept():
    """The folder ``.triton/`` (of the current directory, else of the kwshim clone this package is
    installed from in development mode) and the Triton releases it holds, where the project's
    Makefile installs them; ``(None, [])`` where neither has one."""
    clone = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for folder in (os.path.abspath(".triton"), os.path.join(clone, ".triton")):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        kept = [name for name in names if os.path.isdir(os.path.join(folder, name, "triton"))]
        if kept:
            order = sorted(kept, key=lambda name: tuple(int(p) if p.isdigit() else 0 for p in name.split(".")))
            return folder, order
    return None, []


def run_probe(*arguments, env=None):
    """Run ``python -m kwshim.tools.probe [arguments]``; return ``(result, None)`` or ``({}, why)``.
    A probe that prints anything but one JSON object is reported with what it printed."""
    env = dict(os.environ, TRITON_INTERPRET="1") if env is None else env
    try:
        done = subprocess.run([sys.executable, "-m", "kwshim.tools.probe", *arguments], capture_output=True, text=True,
                              env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return {}, "timed out after 300 s"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return {}, lines[-1] if lines else f"exit status {done.returncode}"
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        shown = (done.stdout.strip() or "(nothing)")[-500:]
        return {}, f"the probe printed something other than its JSON report: {shown}"
    return result, None


def _distribution_of(module):
    try:
        imported = __import__(module)
    except ImportError:
        return None
    try:
        names = importlib.metadata.packages_distributions().get(module) or []
    except Exception:
        names = []

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


def arithmetic_engine():
    """Which code computes the GPU's fused multiply-add and ``ex2.approx`` on large blocks:
    ``"numba"`` (compiled loops, ``kwshim[fast]``), ``"numpy"``, or None without NumPy."""
    try:
        from ..arithmetic import compiled
    except ImportError:
        return None
    return compiled.engine()


def interpreter_mode():
    """What the installed Triton does with this environment: probed by making a kernel."""
    value = os.environ.get("TRITON_INTERPRET", "")
    found, error = run_probe("--mode", env=dict(os.environ))
    if error:
        return {"on": None, "TRITON_INTERPRET": value or None, "detail": error}
    return {"on": found["interpreted"], "TRITON_INTERPRET": value or None,
            "detail": f"triton.jit makes {found['kernel_class']}"}


def render(report):
    triton = report["triton"]
    lines = [
        f"python      {report['python']}",
        f"triton      {triton['version'] + ' (' + triton['distribution'] + ')' if triton else 'not installed'}",
        f"torch       {report['torch'] or 'not installed'}",
        f"numpy       {report['numpy'] or 'not installed'}",
        f"wrapt       {report['wrapt'] or 'not installed'}",
        _arithmetic_line(report.get("arithmetic")),
        _mode_line(report["interpreter_mode"]),
    ]
    if report["probes"]:
        lines.append("")
        lines.append("bare interpreter, probed live:")
        for key, (label, _) in PROBES.items():
            result = report["probes"].get(key)
            if result:
                lines.append(f"  [{'ok' if result['ok'] else 'NO'}] {label}: {result['detail']}")
    if report.get("grid"):
        from ..settings import resolve

        lines.append("")
        variable = os.environ.get("KWSHIM_GRID") or "unset"
        try:
            grid = resolve({}).grid
        except ValueError as exc:  # a bad KWSHIM_NAME: the switch will refuse to start, say so here
            grid = f"nothing ({str(exc).replace('kwshim: ', '', 1)})"
        lines.append(f"grid        {grid} under the switch (KWSHIM_GRID={variable}); "
                     f"batching {'works' if report['grid']['ok'] else 'does NOT work'}: {report['grid']['detail']}")
    if report.get("compiler"):
        compiled = report["compiler"]
        works = "works" if compiled["ok"] else "does NOT work"
        lines.append(f"compile     for the H200 {works} here: {compiled['detail']}")
    if report["advice"]:
        lines.append("")
        lines.extend(f"- {advice}" for advice in report["advice"])
    lines.append("")
    if report["broken"]:
        lines.append("environment: BROKEN")
    elif any(advice.startswith("TRITON_INTERPRET=") for advice in report["advice"]):
        lines.append("environment: usable once TRITON_INTERPRET=1 is set")
    else:
        lines.append("environment: usable")
    return "\n".join(lines)


def _arithmetic_line(engine):
    if engine == "numba":
        return (f"arithmetic  compiled by numba {_version('numba')}: large blocks' fused multiply-adds, fp32 sums "
                f"and cumsums (kwshim[fast])")
    if engine == "numpy":
        return "arithmetic  NumPy (pip install 'kwshim[fast]' compiles the fused multiply-add: the same bits)"
    return "arithmetic  none (NumPy is not installed)"


def _mode_line(mode):
    state = {True: "on", False: "off", None: "unknown"}[mode["on"]]
    return (f"interpreter {state} in this environment (TRITON_INTERPRET={mode['TRITON_INTERPRET'] or 'unset'}; "
            f"{mode.get('detail', 'not probed')})")
