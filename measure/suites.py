"""Run a real library's own test suite, unedited, on the CPU interpreter: bare, under
``pytest --kwshim`` and under ``pytest --kwshim --kwshim-device cuda``, per Triton release, classify
every failure, and hold the device column to the H200's outcome for each test.

    .venv/bin/python measure/suites.py [--library liger|fla|triton] [--releases 3.0.0 3.9.0] [--per-file 3]
        [--modes bare kwshim device] [--grids batched] [--timeout 300] [--page docs/evidence/suites.md]
    python measure/suites.py --library triton --per-file 2 --h200 > measure/outcomes/h200-triton-3.6.0.txt  # a GPU

- Liger-Kernel's sdist holds its tests (``test/transformers``); it is fetched with
  ``pip download liger-kernel==0.8.5 --no-binary :all: --no-deps`` into ``.suites/``.
- flash-linear-attention's PyPI packages hold no tests: a git checkout at tag v0.5.2 goes into
  ``.suites/flash-linear-attention-0.5.2`` (``git clone``; where GitHub cannot be reached, put one
  there by hand). Its tests need Triton 3.3 or later.
- Triton's own language tests (``test_core``, ``test_standard``, ``test_random``, ``test_libdevice``)
  come from a sparse git checkout at the release's tag into ``.suites/triton-3.6.0``; they are
  sampled per test function (``--per-file`` of each), and run with the release they belong to.

For each test file the first ``--per-file`` tests run (each file in its own pytest process, with a
time limit), in each mode, with Triton from ``.triton/<release>`` (installed as ``make test`` does).
``--marker`` runs only the tests with that pytest marker (Triton's ``interpreter``: the subset
upstream runs on its interpreter), into a table and outcome files of their own; Triton's tests run
bare with ``--device cpu``, as upstream runs them there.
``--grids`` runs the kwshim modes under each ``--kwshim-grid`` given and compares their outcomes,
test by test, and their wall time. The H200's outcomes (``measure/outcomes/h200-*.txt``, compiled
Triton 3.6.0) are the reference for the device column: how many tests the H200 passes pass here,
and which pass here where the H200 fails. Each test's outcome here goes to
``.suites/outcomes-<library>-<release>-<mode>-<grid>.txt``.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "measure"))
from matrix import install  # noqa: E402  (one way to install a Triton release)
import evidence  # noqa: E402

FOLDER = os.path.join(ROOT, ".suites")
OUTCOMES = os.path.join(ROOT, "measure", "outcomes")


class Library:
    """A suite: where its tests come from, which files run, and the H200's outcomes for them."""

    def __init__(self, name, title, files, outcomes, fetch, table="suites", per_function=False, bare=()):
        self.name, self.title, self.files, self.outcomes, self.fetch = name, title, files, outcomes, fetch
        self.marker = table  # its table's markers on the suites page
        self.per_function = per_function  # sample the first tests of each test function, not of each file
        self.bare = list(bare)  # the bare interpreter's own options (Triton's: --device cpu, as upstream runs it)

    def test_files(self, source):
        """Its test files in the checkout ``source``, relative to it."""
        return sorted(os.path.relpath(path, source) for pattern in self.files
                      for path in glob.glob(os.path.join(source, pattern)))

    def h200(self):
        """{node id: outcome} as the H200 measured them ({} where none were)."""
        path = os.path.join(OUTCOMES, self.outcomes)
        if not os.path.exists(path):
            return {}
        with open(path) as handle:
            pairs = (line.rstrip("\n").split(" ", 1) for line in handle if line.strip() and line[0] != "#")
            return {node: outcome for outcome, node in pairs}


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


def fetch_liger():
    """Liger-Kernel's sdist, unpacked once; returns the folder holding ``test/``."""
    os.makedirs(FOLDER, exist_ok=True)
    found = glob.glob(os.path.join(FOLDER, "liger_kernel-*", "test"))
    if found:
        return os.path.dirname(found[0])
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "liger-kernel==0.8.5", "--no-binary", ":all:", "--no-deps", "-d", FOLDER], check=True)
    archive = glob.glob(os.path.join(FOLDER, "liger_kernel-*.tar.gz"))[0]
    with tarfile.open(archive) as tar:
        tar.extractall(FOLDER)
    return os.path.dirname(glob.glob(os.path.join(FOLDER, "liger_kernel-*", "test"))[0])


FLA_TAG = "v0.5.2"


def fetch_fla():
    """flash-linear-attention's git checkout at ``FLA_TAG`` (its PyPI packages hold no tests)."""
    folder = os.path.join(FOLDER, "flash-linear-attention-" + FLA_TAG[1:])
    if not os.path.isdir(os.path.join(folder, "tests")):
        done = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", FLA_TAG,
                               "https://github.com/fla-org/flash-linear-attention", folder])
        if done.returncode:
            sys.exit(f"suites: no checkout of flash-linear-attention {FLA_TAG} in {folder}, and git clone failed: "
                     f"put one there (git clone --branch {FLA_TAG} ...)")
    return folder


TRITON_RELEASE = "3.6.0"  # the release whose tests the H200 ran (``measure/outcomes/h200-triton-3.6.0.txt``)
TRITON_TESTS = "python/test/unit/language"


def fetch_triton():
    """Triton's own language tests at ``v{TRITON_RELEASE}`` (``python/test/conftest.py`` and
    ``python/test/unit/language``: a sparse git checkout; its wheels hold no tests)."""
    folder = os.path.join(FOLDER, "triton-" + TRITON_RELEASE)
    if not os.path.isfile(os.path.join(folder, TRITON_TESTS, "test_core.py")):
        url = "https://github.com/triton-lang/triton"
        done = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", f"v{TRITON_RELEASE}",
                               "--filter=blob:none", "--sparse", url, folder])
        done = done.returncode or subprocess.run(["git", "-C", folder, "sparse-checkout", "set",
                                                  "python/test"]).returncode
        if done:
            sys.exit(f"suites: no checkout of Triton v{TRITON_RELEASE}'s tests in {folder}, and git clone failed: put "
                     f"its python/test/conftest.py and {TRITON_TESTS} there (a release branch's git archive serves)")
    ini = os.path.join(folder, "pytest.ini")
    if not os.path.exists(ini):  # the folder its own rootdir: node ids relative to it, not to a project above
        with open(ini, "w") as handle:
            handle.write("[pytest]\n")
    return folder


LIBRARIES = {
    "liger": Library("liger", "Liger-Kernel 0.8.5's own `test/transformers`", ["test/transformers/test_*.py"],
                     "h200-liger_kernel-0.8.5.txt", fetch_liger),
    "fla": Library("fla", "flash-linear-attention v0.5.2's own tests",
                   ["tests/ops/test_gla.py", "tests/ops/test_delta.py", "tests/modules/test_l2norm.py"],
                   "h200-flash_linear_attention-0.5.2.txt", fetch_fla, table="suites-fla"),
    "triton": Library("triton", f"Triton {TRITON_RELEASE}'s own language tests",
                      [f"{TRITON_TESTS}/test_{name}.py" for name in ("core", "standard", "random", "libdevice")],
                      f"h200-triton-{TRITON_RELEASE}.txt", fetch_triton, table="suites-triton", per_function=True,
                      bare=["--device", "cpu"]),
}


def environment(source, release, cache=None):
    """The suite's environment: the release on the path, the interpreter on, and ``cache`` as Triton's
    cache directory where the caller gives none (``TRITON_CACHE_DIR``)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(source, "src"), source, ROOT,
                                         os.path.join(ROOT, ".triton", release)])
    env["TRITON_INTERPRET"] = "1"
    if cache is not None:
        env.setdefault("TRITON_CACHE_DIR", cache)
    return env


def collect(source, path, env, per_file, extra=(), per_function=False):
    """The first ``per_file`` test ids of ``path`` (collected with ``extra``: a suite can parametrize
    on the device it finds), or with ``per_function`` the first ``per_file`` of each test function."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--co", path],
                          capture_output=True, text=True, env=env, cwd=source, timeout=600)
    ids = [line for line in done.stdout.splitlines() if line.startswith(path + "::")]  # not a warning's text
    if not per_function:
        return ids[:per_file]
    taken, sample = {}, []
    for node in ids:
        function = node.split("[")[0]
        taken[function] = taken.get(function, 0) + 1
        if taken[function] <= per_file:
            sample.append(node)
    return sample


def run_file(source, path, ids, env, extra, limit):
    """{'passed', 'failed', 'skipped', 'classes', 'outcomes' (node id -> passed/failed/skipped), 'seconds'}
    for one file's tests."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = os.path.join(scratch, "junit.xml")
        start = time.perf_counter()
        try:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
                            f"--junitxml={junit}", *ids], capture_output=True, text=True, env=env, cwd=source,
                           timeout=limit)
        except subprocess.TimeoutExpired:
            failed = "timeout"
        else:
            failed = None if os.path.exists(junit) else "collection"
        seconds = time.perf_counter() - start
        if failed:
            return {"passed": 0, "failed": len(ids), "skipped": 0, "classes": {failed: len(ids)},
                    "outcomes": dict.fromkeys(ids, "failed"), "seconds": seconds}
        return dict(_read(junit, path), seconds=seconds)


def _read(junit, path):
    result = {"passed": 0, "failed": 0, "skipped": 0, "classes": {}, "outcomes": {}}
    module = path[:-3].replace("/", ".")
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        classes = (case.get("classname") or "")[len(module) + 1:]
        node = "::".join([path] + (classes.split(".") if classes else []) + [case.get("name")])
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            outcome = "failed"
            kind = classify((problem.get("message") or "") + "\n" + (problem.text or ""))
            result["classes"][kind] = result["classes"].get(kind, 0) + 1
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        result[outcome] += 1
        result["outcomes"][node] = outcome
    return result


def classify(text):
    last = text.strip().splitlines()[-40:]
    tail = "\n".join(last)
    for kind, pattern in CLASSES:
        if re.search(pattern, tail):
            return kind
    return "wrong result" if "AssertionError" in tail or "assert" in tail else "other"


MODES = {"bare": [], "kwshim": ["--kwshim"], "device": ["--kwshim", "--kwshim-device", "cuda"],
         "compile": ["--kwshim", "--kwshim-device", "cuda", "--kwshim-compile", "check"]}
HEADINGS = {"bare": "bare", "kwshim": "`--kwshim`", "device": "`--kwshim --kwshim-device cuda`",
            "compile": "`--kwshim --kwshim-device cuda --kwshim-compile check`"}


def _h200_match(outcomes, h200):
    """(tests the H200 passes that pass here, tests the H200 passes that ran here, ids that pass here
    where the H200 fails)."""
    ran = [node for node in outcomes if h200.get(node) == "passed"]
    wrong = sorted(node for node, outcome in outcomes.items() if outcome == "passed" and h200.get(node) == "failed")
    return sum(outcomes[node] == "passed" for node in ran), len(ran), wrong


def _counts(result):
    return f"{result['passed']}/{result['failed']}/{result['skipped']}"


def _kinds(classes):
    return ", ".join(f"{k} {n}" for k, n in sorted(classes.items()))


def record_h200(library, options):
    """The H200's outcomes for the same sample, printed as ``measure/outcomes/`` holds them: run on a
    GPU machine, with compiled Triton (no ``TRITON_INTERPRET``), each file in its own pytest process."""
    import platform

    source = library.fetch()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(source, "src"), source])
    import torch
    import triton

    print(f"# Outcomes of {library.title} on an {torch.cuda.get_device_name()} (compiled Triton {triton.__version__}, "
          f"torch {torch.__version__}, Python {platform.python_version()}), measured {time.strftime('%Y-%m-%d')} with")
    print(f"#   measure/suites.py --library {library.name} --h200 --per-file {options.per_file} "
          f"(the first {options.per_file} tests of each {'test function' if library.per_function else 'file'})")
    print("# One line per test: outcome, then the pytest node id.")
    files = options.files or library.test_files(source)
    for path in files:
        ids = collect(source, path, env, options.per_file, per_function=library.per_function)
        if not ids:
            print(f"suites: nothing collected from {path}", file=sys.stderr)
            continue
        extra = ["-n", str(options.workers)] if options.workers else []
        result = run_file(source, path, ids, env, extra, options.timeout)
        print(f"suites: {path}: {len(ids)} collected, {len(result['outcomes'])} outcomes in {result['seconds']:.0f} s "
              f"{result.get('classes', '')}", file=sys.stderr)
        for node, outcome in sorted(result["outcomes"].items()):
            print(f"{outcome} {node}", flush=True)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=sorted(LIBRARIES), default="liger")
    parser.add_argument("--releases", nargs="+", default=["3.0.0", "3.9.0"])
    parser.add_argument("--per-file", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--grids", nargs="+", choices=["sequential", "batched", "check"], default=["batched"],
                        help="the kwshim modes run under each (outcomes and wall time compared)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per file and mode")
    parser.add_argument("--files", nargs="*", help="test files (default: the library's)")
    parser.add_argument("--marker", help="only the tests with this pytest marker (Triton's: interpreter); "
                                         "its own table on the page and its own outcome files")
    parser.add_argument("--h200", action="store_true", help="record the H200's outcomes for the sample (on a GPU)")
    parser.add_argument("--workers", type=int, default=0, help="with --h200: pytest-xdist workers per file")
    parser.add_argument("--page", help="rewrite the library's table between its markers on this page "
                                       "(docs/evidence/suites.md)")
    options = parser.parse_args(argv)
    library = LIBRARIES[options.library]
    if options.h200:
        return record_h200(library, options)
    source = library.fetch()
    h200 = library.h200()
    files = options.files or library.test_files(source)
    columns = [(mode, grid) for mode in options.modes for grid in (["sequential"] if mode == "bare" else options.grids)]
    unit = "test function" if library.per_function else "file"
    selected = ["-m", options.marker] if options.marker else []
    suffix = f"-{options.marker}" if options.marker else ""
    lines = [f"{evidence.stamp('make suites')} {library.title}"
             + (f" marked `{options.marker}`" if options.marker else "")
             + f", the first {options.per_file} tests of each {unit}, on the CPU interpreter"
             + (f" (bare: `{' '.join(library.bare)}`)." if library.bare and "bare" in options.modes else "."), ""]
    cache = tempfile.TemporaryDirectory(prefix="kwshim-suites-triton-cache-")  # a run's own: no stale entries
    for release in options.releases:
        install("triton", release, os.path.join(ROOT, ".triton", release))
        env = environment(source, release, os.path.join(cache.name, release))
        names = [HEADINGS[mode] + ("" if len(options.grids) == 1 or mode == "bare" else f" `--kwshim-grid {grid}`")
                 for mode, grid in columns]
        rows = ["| file | " + " | ".join(f"{name}: passed/failed/skipped | failures by class" for name in names) + " |",
                "| --- |" + " --- | --- |" * len(columns)]
        totals = {column: {"passed": 0, "failed": 0, "skipped": 0, "classes": {}, "outcomes": {}, "seconds": 0.0}
                  for column in columns}
        for path in files:
            results, collected = {}, {}
            for mode, grid in columns:
                extra = MODES[mode] + (library.bare if mode == "bare" else ["--kwshim-grid", grid])
                if mode not in collected:  # once per mode: its grids run the same tests
                    collected[mode] = collect(source, path, env, options.per_file, MODES[mode] + selected,
                                              library.per_function) \
                        or collect(source, path, env, options.per_file, selected, per_function=library.per_function)
                if not collected[mode]:
                    break
                results[mode, grid] = run_file(source, path, collected[mode], env, extra, options.timeout)
            if not results:
                continue
            cells = []
            for column, result in results.items():
                total = totals[column]
                for key in ("passed", "failed", "skipped", "seconds"):
                    total[key] += result[key]
                total["outcomes"].update(result["outcomes"])
                for kind, count in result["classes"].items():
                    total["classes"][kind] = total["classes"].get(kind, 0) + count
                cells += [_counts(result), _kinds(result["classes"])]
            row = f"| {os.path.basename(path)} | " + " | ".join(cells) + " |"
            rows.append(row)
            seconds = ", ".join(f"{result['seconds']:.0f} s" for result in results.values())
            print(f"[{release}] {row} ({seconds})", flush=True)
        rows.append("| **total** | " + " | ".join(f"{_counts(totals[c])} | {_kinds(totals[c]['classes'])}"
                                                  for c in columns) + " |")
        lines += _summary(release, columns, totals, h200) + [""] + rows + [""]
        for (mode, grid), total in totals.items():  # each test's outcome, for comparisons after the run
            with open(os.path.join(FOLDER, f"outcomes-{library.name}-{release}-{mode}-{grid}{suffix}.txt"),
                      "w") as handle:
                handle.writelines(f"{outcome} {node}\n" for node, outcome in sorted(total["outcomes"].items()))
    table = "\n".join(lines).rstrip() + "\n"
    print(table)
    if options.page:
        evidence.rewrite(options.page, library.marker + suffix, table)
    return 0


def _summary(release, columns, totals, h200):
    """The release's headline lines: the kwshim share, the H200 match of the device column, the grids."""
    lines = []
    kwshim = next((column for column in totals if column[0] == "kwshim"), None)  # its first grid
    if kwshim is not None:
        kinds = totals[kwshim]["classes"]
        excluded = sum(kinds.get(k, 0) for k in ("hard-coded CUDA", "bf16 on CPU", "timeout"))
        eligible = totals[kwshim]["passed"] + totals[kwshim]["failed"] - excluded
        share = f"{totals[kwshim]['passed']}/{eligible}" if eligible > 0 else "n/a"
        lines.append(f"**Triton {release}**: `--kwshim` passes {share} of the tests that fail for none of: "
                     f"hard-coded CUDA, bf16 on a CPU, a timeout.")
    for (mode, grid), total in totals.items():
        if mode not in ("device", "compile") or not h200:
            continue
        passing, ran, wrong = _h200_match(total["outcomes"], h200)
        share = f" ({100 * passing / ran:.1f}%)" if ran else ""
        lines.append(f"**Triton {release}, {'the device' if mode == 'device' else 'the device and the compile check'} "
                     f"(grid {grid})**: of the {ran} tests here that the H200 passes, "
                     f"{passing} pass{share}; pass here where the H200 fails: {len(wrong)}"
                     + (f" ({', '.join(wrong)})" if wrong else "") + "; not run on the H200: "
                     f"{sum(node not in h200 for node in total['outcomes'])}; {total['seconds']:.0f} s summed "
                     f"over its files.")
    bare = totals.get(("bare", "sequential"))
    for (mode, grid), total in totals.items():
        if bare is not None and mode != "bare":
            lost = sorted(node for node, outcome in bare["outcomes"].items()
                          if outcome == "passed" and total["outcomes"].get(node) != "passed")
            lines.append(f"**Triton {release}, {HEADINGS[mode]} (grid {grid}) against bare**: {total['passed']} "
                         f"passed, against {bare['passed']} bare; passing bare and not here: {len(lost)}"
                         + (f" ({', '.join(lost)})" if lost else "") + ".")
    for mode in ("kwshim", "device"):
        grids = [grid for m, grid in totals if m == mode]
        for grid in grids[1:]:
            first, other = totals[mode, grids[0]], totals[mode, grid]
            differ = sorted(node for node, outcome in first["outcomes"].items()
                            if other["outcomes"].get(node) != outcome)
            lines.append(f"**Triton {release}, {HEADINGS[mode]}, grid {grid} against {grids[0]}**: "
                         f"{len(differ)} outcomes differ" + (f" ({', '.join(differ)})" if differ else "") +
                         f"; wall time {other['seconds']:.0f} s against {first['seconds']:.0f} s "
                         f"({first['seconds'] / max(other['seconds'], 1e-9):.1f}x).")
    return [line + "\n" for line in lines]


if __name__ == "__main__":
    sys.exit(main())
