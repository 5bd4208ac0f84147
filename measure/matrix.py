"""Run the test suite under every supported Triton release (and wrapt 1.x) and tabulate it.

    .venv/bin/python measure/matrix.py [--releases 3.0.0 3.9.0 ...] [--page docs/evidence/compatibility.md]

One torch (the project's .venv) serves every release: each Triton goes into .triton/<release>
(``pip install --no-deps --target``) and is selected with PYTHONPATH, as is wrapt 1.x from
.wrapt/<version>. For each row it runs ``kwshim doctor --json`` (the bare interpreter's bugs,
probed live) and pytest (kwsafe's result), says which row it is on as it goes, writes the results
(.matrix/results.json, ignored by git; matrix/results.json with --page), prints a table, and with
``--page`` rewrites the table between that page's matrix markers (``make matrix``: the docs site's
compatibility page). Exit status 1 if any row failed.

What each row runs (``tests/conftest.py`` marks the tests):
- the tests marked ``release_independent`` (no release changes their outcome): the newest release's row only;
- those marked ``release_sampled`` (a third-party library's bits, a subprocess each): the rows of
  ``SAMPLED_RELEASES``;
- the wrapt 1.x rows: ``WRAPT_SUITE``, the tests of the one object kwshim builds with wrapt.
Each row's Triton installs in the background while the row before it runs. The rows' processes write
bytecode even where the caller's environment says ``PYTHONDONTWRITEBYTECODE``: without it every
process compiled kwshim and the tests again, and rewrote their asserts (15% of a row's CPU).
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from kwshim.tools.probe import PROBES  # noqa: E402  (the probe contract, defined once)
from measure import evidence  # noqa: E402
RELEASES = ["2.2.0", "2.3.0", "2.3.1", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.3.1", "3.4.0", "3.5.0", "3.5.1",
            "3.6.0", "3.7.0", "3.7.1", "3.8.0", "3.9.0"]
#: wrapt 1.x rows (wrapt 2.x is the .venv's): on the oldest and the newest release.
WRAPT_1 = "1.14.1"
WRAPT_1_RELEASES = ["2.2.0", "3.9.0"]
#: What the wrapt 1.x rows run: the tests of ``KwsafeKernel`` (a ``wrapt.ObjectProxy``, the only use of
#: wrapt in kwshim), of its launch paths and of what holds it (autotune, verify, threads). The rest of
#: the suite reaches wrapt only through that object's call, which these run.
WRAPT_SUITE = ["tests/test_decorator.py", "tests/test_oracle.py", "tests/test_options.py", "tests/test_binding.py",
               "tests/test_kernel.py", "tests/test_retrofit.py", "tests/test_autotune.py", "tests/test_verify.py",
               "tests/test_concurrency.py"]
#: The rows that also run the tests marked ``release_sampled``: the oldest 3.x (the third-party library
#: needs Triton 3), the H200's release (its bits were measured there) and the newest.
SAMPLED_RELEASES = ["3.0.0", "3.6.0", "3.9.0"]
#: The contract suite, run a second time with no @kwsafe anywhere under ``pytest --kwshim``.
SWITCH_SUITE = ["tests/test_decorator.py", "tests/test_oracle.py", "tests/test_options.py"]


_INSTALLING = threading.Lock()  # one pip at a time: the next row's runs in the background


def install(package, version, folder):
    with _INSTALLING:
        _install(package, version, folder)


def _install(package, version, folder):
    marker = os.path.join(folder, ".installed")
    if os.path.exists(marker):
        return
    subprocess.run(["rm", "-rf", folder], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--target", folder, f"{package}=={version}"], check=True)
    open(marker, "w").close()


def run_row(release, wrapt_folder=None, independent=True):
    """One row under ``release``: the doctor's probes, the suite and the switch suite, the three at
    once (the doctor and the switch suite are single processes: alone, each left a core idle).
    ``independent``: the tests marked ``release_independent`` run too (the newest release's row
    only: no release changes their outcome, and none of them skips there, where a few skip on 2.x).
    With ``wrapt_folder`` the suite is ``WRAPT_SUITE``. ``seconds``: the row's wall time, its Triton
    installed."""
    triton_folder = os.path.join(ROOT, ".triton", release)
    install("triton", release, triton_folder)
    paths = [p for p in (wrapt_folder, triton_folder) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), TRITON_INTERPRET="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        junit, switch_junit = os.path.join(scratch, "junit.xml"), os.path.join(scratch, "switch.xml")
        left_out = ([] if independent else ["release_independent"]) + (
            [] if release in SAMPLED_RELEASES else ["release_sampled"])
        only = ["-m", " and ".join(f"not {marker}" for marker in left_out)] if left_out else []
        only += WRAPT_SUITE if wrapt_folder else []
        pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        processes = {
            "doctor": subprocess.Popen([sys.executable, "-m", "kwshim", "doctor", "--json"], env=env, **pipes),
            "suite": subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto",
                                       *only, f"--junitxml={junit}"], env=env, **pipes),
            # The contract suite again with no @kwsafe anywhere, under the switch (pytest --kwshim).
            "switch": subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                                        "no:xdist", "--kwshim", f"--junitxml={switch_junit}", *SWITCH_SUITE],
                                       env=dict(env, KWSHIM_SUITE_WITHOUT_KWSAFE="1"), **pipes),
        }
        outputs = {name: process.communicate() for name, process in processes.items()}
        seconds = time.perf_counter() - start
        counts, switch_counts = _junit_counts(junit), _junit_counts(switch_junit)
    try:
        report = json.loads(outputs["doctor"][0])
    except ValueError:
        report = {}
    probes = report.get("probes", {})
    bugs = []
    for key, (_, label) in PROBES.items():
        result = probes.get(key)
        if result and not result["ok"]:
            causes = result.get("causes") or []
            bugs.append(f"{label} ({', '.join(causes)})" if causes else label)
    (out, err), (switch_out, switch_err) = outputs["suite"], outputs["switch"]
    failed = processes["suite"].returncode != 0 or processes["switch"].returncode != 0
    tail = out.strip().splitlines()[-1] if out.strip() else err.strip()[-300:]
    if processes["switch"].returncode != 0:
        tail += " | switch run: " + (switch_out.strip().splitlines() or [switch_err[-300:]])[-1]
    failures = counts.pop("names") + switch_counts.pop("names")
    if failures:  # which tests: a CI log must say (the counts alone sent the reader to rerun the row)
        more = f" and {len(failures) - 10} more" if len(failures) > 10 else ""
        tail += " | failed: " + ", ".join(failures[:10]) + more
    return {
        "triton": release,
        "wrapt": report.get("wrapt") or "?",
        "bare_interpreter": bugs or ["none found"],
        "passed": counts["passed"], "failed": counts["failed"], "skipped": counts["skipped"],
        "switch_passed": switch_counts["passed"], "switch_failed": switch_counts["failed"],
        "ok": not failed, "seconds": round(seconds, 1), "summary": tail,
    }


def _junit_counts(path):
    """The run's passed, failed and skipped counts, and the names of the tests that failed."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "names": []}
    if not os.path.exists(path):
        return counts
    root = ElementTree.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    for suite in suites:
        tests, skipped = int(suite.get("tests", 0)), int(suite.get("skipped", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        counts["failed"] += failed
        counts["skipped"] += skipped
        counts["passed"] += tests - skipped - failed
        counts["names"] += [f"{case.get('classname', '')}::{case.get('name', '')}" for case in suite.iter("testcase")
                            if case.find("failure") is not None or case.find("error") is not None]
    return counts


def table(results):
    lines = [
        f"Measured by `make matrix` on {results['date']}, on {results.get('machine') or 'a 2-core machine'}. "
        f"{len(results['rows'])} rows in {results['wall_seconds'] / 60:.1f} min "
        f"(the tests' own time per row below); torch {results['torch']}, numpy {results['numpy']}, CPU interpreter.",
        "",
        "| Triton | wrapt | bug in the bare interpreter (probed live) | kwsafe: test suite | switch, no @kwsafe: "
        "contract suite | seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in results["rows"]:
        verdict = (f"{row['passed']} passed" + (f", {row['skipped']} skipped" if row["skipped"] else "")
                   if row["ok"] else f"FAILED: {row['failed']} failed, {row['passed']} passed")
        switch = (f"{row.get('switch_passed', 0)} passed" if not row.get("switch_failed")
                  else f"FAILED: {row['switch_failed']} failed")
        bugs = "; ".join(row["bare_interpreter"])
        lines.append(f"| {row['triton']} | {row['wrapt']} | {bugs} | {verdict} | {switch} | {row['seconds']:.0f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", default=RELEASES)
    parser.add_argument("--no-wrapt-1", action="store_true", help="skip the wrapt 1.x rows")
    parser.add_argument("--results", help="write the results as JSON here (default: matrix/results.json with "
                                          "--page, else .matrix/results.json, which git ignores)")
    parser.add_argument("--page", help="rewrite this page's matrix table from the results")
    parser.add_argument("--from-results", metavar="JSON",
                        help="run nothing: tabulate these results (with --page: the page from a run already made)")
    options = parser.parse_args()
    if options.from_results:
        with open(options.from_results) as handle:
            results = json.load(handle)
        print(table(results))
        if options.page:
            evidence.rewrite(options.page, "matrix", table(results))
        return 0
    start = time.perf_counter()
    rows = []
    plan = [(release, None) for release in options.releases]
    if not options.no_wrapt_1:
        wrapt_folder = os.path.join(ROOT, ".wrapt", WRAPT_1)
        plan += [(release, wrapt_folder) for release in WRAPT_1_RELEASES if release in options.releases]
    if options.results is None:
        options.results = os.path.join(ROOT, "matrix" if options.page else ".matrix", "results.json")
    print(f"kwshim test matrix: {len(plan)} rows (each Triton release installed into .triton/<release> on first "
          f"use, 0.4-1 GB each; about 20-25 min on 2 cores from a fresh clone)", flush=True)
    for number, (release, wrapt_folder) in enumerate(plan, 1):
        if number < len(plan):  # the next row's Triton installs while this row's tests run
            upcoming = plan[number][0]
            threading.Thread(target=install, args=("triton", upcoming, os.path.join(ROOT, ".triton", upcoming)),
                             daemon=True).start()
        print(f"[{number}/{len(plan)}] Triton {release}{' with wrapt ' + WRAPT_1 if wrapt_folder else ''}: "
              f"installing if needed, then the suite and the switch suite...", flush=True)
        if wrapt_folder:
            install("wrapt", WRAPT_1, wrapt_folder)
        row = run_row(release, wrapt_folder, independent=(release, wrapt_folder) == (options.releases[-1], None))
        rows.append(row)
        print(f"Triton {row['triton']:6} wrapt {row['wrapt']:7} {'ok    ' if row['ok'] else 'FAILED'} "
              f"{row['seconds']:6.1f} s  {row['summary']}", flush=True)
    import numpy
    import torch

    results = {"date": datetime.date.today().isoformat(), "machine": evidence.machine(),
               "wall_seconds": round(time.perf_counter() - start, 1),
               "torch": torch.__version__, "numpy": numpy.__version__, "rows": rows}
    os.makedirs(os.path.dirname(options.results), exist_ok=True)
    with open(options.results, "w") as handle:
        json.dump(results, handle, indent=2)
    text = table(results)
    print()
    print(text)
    if options.page:
        evidence.rewrite(options.page, "matrix", text)
    failed = [row for row in rows if not row["ok"]]
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
