"""Run a real library's own test suite, unedited, on the CPU interpreter: bare, under
``pytest --kwshim`` and under ``pytest --kwshim --kwshim-device cuda``, per Triton release, and
classify every failure.

    .venv/bin/python tools/suites.py [--releases 3.0.0 3.9.0] [--per-file 3] [--timeout 300] [--readme README.md]

Liger-Kernel's sdist holds its tests (``test/transformers``); it is fetched with
``pip download liger-kernel==0.8.5 --no-binary :all: --no-deps`` into ``.suites/``. For each test
file the first ``--per-file`` tests run (each file in its own pytest process, with a time limit),
bare, with ``--kwshim`` and with ``--kwshim --kwshim-device cuda`` (the virtual CUDA device), with
Triton from ``.triton/<release>`` (installed as ``make test`` does).
The table shows passed/failed/skipped per file and each failure's class.
"""

import argparse
import datetime
import glob
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from matrix import install  # noqa: E402  (one way to install a Triton release)

LIBRARY = "liger-kernel==0.8.5"
FOLDER = os.path.join(ROOT, ".suites")
BEGIN, END = "<!-- suites:begin -->", "<!-- suites:end -->"

#: (class, pattern in the failure's text), first match wins
CLASSES = [
    ("timeout", r"kwshim-suites: timeout"),
    ("missing dependency", r"requires transformers|No module named"),
    ("Triton's own type rule (compiled too)", r"different signedness"),
    ("binding", r"missing \d+ required positional argument|unexpected keyword argument|got multiple values"),
    ("autotune", r"0 active drivers|active drivers|do_bench|get_benchmarker"),
    ("bf16 on CPU", r"BFloat16|bfloat16|bf16"),
    ("hard-coded CUDA", r"CUDA|cuda|Torch not compiled|nvidia|device-side|xpu|npu"),
    ("interpreter gap", r"InterpreterError|Interpreter|libdevice|NoneType|has no attribute|@triton\.jit|"
                        r"not supported|unsupported"),
]


def fetch():
    """The library's sdist, unpacked once; returns the folder holding ``test/``."""
    os.makedirs(FOLDER, exist_ok=True)
    found = glob.glob(os.path.join(FOLDER, "liger_kernel-*", "test"))
    if found:
        return os.path.dirname(found[0])
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    LIBRARY, "--no-binary", ":all:", "--no-deps", "-d", FOLDER], check=True)
    archive = glob.glob(os.path.join(FOLDER, "liger_kernel-*.tar.gz"))[0]
    with tarfile.open(archive) as tar:
        tar.extractall(FOLDER)
    return os.path.dirname(glob.glob(os.path.join(FOLDER, "liger_kernel-*", "test"))[0])


def environment(source, release):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(source, "src"), source, ROOT,
                                         os.path.join(ROOT, ".triton", release)])
    env["TRITON_INTERPRET"] = "1"
    return env


def collect(source, path, env, per_file, extra=()):
    """The first ``per_file`` test ids of ``path`` (collected with ``extra``: a suite can parametrize
    on the device it finds)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--co", path],
                          capture_output=True, text=True, env=env, cwd=source, timeout=600)
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    return ids[:per_file]


def run_file(source, ids, env, extra, limit):
    """{'passed', 'failed', 'skipped', 'classes'} for one file's tests."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = os.path.join(scratch, "junit.xml")
        try:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
                            f"--junitxml={junit}", *ids], capture_output=True, text=True, env=env, cwd=source,
                           timeout=limit)
        except subprocess.TimeoutExpired:
            return {"passed": 0, "failed": len(ids), "skipped": 0, "classes": {"timeout": len(ids)}}
        if not os.path.exists(junit):
            return {"passed": 0, "failed": len(ids), "skipped": 0, "classes": {"collection": len(ids)}}
        return _read(junit)


def _read(junit):
    result = {"passed": 0, "failed": 0, "skipped": 0, "classes": {}}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            result["failed"] += 1
            kind = classify((problem.get("message") or "") + "\n" + (problem.text or ""))
            result["classes"][kind] = result["classes"].get(kind, 0) + 1
        elif case.find("skipped") is not None:
            result["skipped"] += 1
        else:
            result["passed"] += 1
    return result


def classify(text):
    last = text.strip().splitlines()[-40:]
    tail = "\n".join(last)
    for kind, pattern in CLASSES:
        if re.search(pattern, tail):
            return kind
    return "wrong result" if "AssertionError" in tail or "assert" in tail else "other"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", default=["3.0.0", "3.9.0"])
    parser.add_argument("--per-file", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per file and mode")
    parser.add_argument("--files", nargs="*", help="test files (default: all of test/transformers)")
    parser.add_argument("--readme", help="rewrite the table between the suites markers of this file")
    options = parser.parse_args(argv)
    source = fetch()
    files = options.files or sorted(os.path.relpath(p, source) for p in
                                    glob.glob(os.path.join(source, "test", "transformers", "test_*.py")))
    lines = [f"Produced by `make suites` (tools/suites.py) on {datetime.date.today()}: {LIBRARY}'s own "
             f"`test/transformers`, the first {options.per_file} tests of each file, on the CPU interpreter.", ""]
    for release in options.releases:
        install("triton", release, os.path.join(ROOT, ".triton", release))
        env = environment(source, release)
        totals = {"bare": [0, 0, 0], "kwshim": [0, 0, 0], "device": [0, 0, 0]}
        rows = ["| file | bare: passed/failed/skipped | `--kwshim`: passed/failed/skipped | `--kwshim` failures by "
                "class | `--kwshim --kwshim-device cuda`: passed/failed/skipped | its failures by class |",
                "| --- | --- | --- | --- | --- | --- |"]
        device_kinds: dict = {}
        kinds_all: dict = {}
        for path in files:
            ids = collect(source, path, env, options.per_file)
            if not ids:
                continue
            bare = run_file(source, ids, env, [], options.timeout)
            fixed = run_file(source, ids, env, ["--kwshim"], options.timeout)
            on_cuda = ["--kwshim", "--kwshim-device", "cuda"]
            device = run_file(source, collect(source, path, env, options.per_file, on_cuda) or ids, env, on_cuda,
                              options.timeout)
            for mode, result in (("bare", bare), ("kwshim", fixed), ("device", device)):
                for i, key in enumerate(("passed", "failed", "skipped")):
                    totals[mode][i] += result[key]
            for kind, count in fixed["classes"].items():
                kinds_all[kind] = kinds_all.get(kind, 0) + count
            for kind, count in device["classes"].items():
                device_kinds[kind] = device_kinds.get(kind, 0) + count
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(fixed["classes"].items()))
            on_device = ", ".join(f"{k} {n}" for k, n in sorted(device["classes"].items()))
            row = (f"| {os.path.basename(path)} | {bare['passed']}/{bare['failed']}/{bare['skipped']} | "
                   f"{fixed['passed']}/{fixed['failed']}/{fixed['skipped']} | {kinds} | "
                   f"{device['passed']}/{device['failed']}/{device['skipped']} | {on_device} |")
            rows.append(row)
            print(f"[{release}] {row}", flush=True)
        excluded = sum(kinds_all.get(k, 0) for k in ("hard-coded CUDA", "bf16 on CPU", "timeout"))
        eligible = totals["kwshim"][0] + totals["kwshim"][1] - excluded
        share = f"{totals['kwshim'][0]}/{eligible}" if eligible > 0 else "n/a"
        rows.append(f"| **total** | {'/'.join(map(str, totals['bare']))} | {'/'.join(map(str, totals['kwshim']))} | "
                    f"{', '.join(f'{k} {n}' for k, n in sorted(kinds_all.items()))} | "
                    f"{'/'.join(map(str, totals['device']))} | "
                    f"{', '.join(f'{k} {n}' for k, n in sorted(device_kinds.items()))} |")
        lines += [f"**Triton {release}**: `--kwshim` passes {share} of the tests that fail for none of: "
                  f"hard-coded CUDA, bf16 on a CPU, a timeout.", ""] + rows + [""]
    table = "\n".join(lines).rstrip() + "\n"
    print(table)
    if options.readme:
        with open(options.readme) as handle:
            text = handle.read()
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        with open(options.readme, "w") as handle:
            handle.write(text[:start] + "\n" + table + text[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
