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
import threading
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

    def __init__(self, name, title, files, outcomes, fetch, table="suites", per_function=False, bare=(), options=(),
                 files_per_process=1, switch=(), alone=()):
        self.name, self.title, self.files, self.outcomes, self.fetch = name, title, files, outcomes, fetch
        self.marker = table  # its table's markers on the suites page
        self.per_function = per_function  # sample the first tests of each test function, not of each file
        self.bare = list(bare)  # the bare interpreter's own options (Triton's: --device cpu, as upstream runs it)
        self.options = list(options)  # the suite's own options, in every mode and on the GPU (FlagGems' --ref cpu)
        self.files_per_process = files_per_process  # files run together in one pytest process (its start is slow)
        self.switch = list(switch)  # the kwshim modes' own options for this suite
        self.alone = set(alone)  # files run in a process of their own (one past its limit loses no other file)

    def test_files(self, source):
        """Its test files in the checkout ``source``, relative to it."""
        return sorted(os.path.relpath(path, source) for pattern in self.files
                      for path in glob.glob(os.path.join(source, pattern)))

    @property
    def gpu(self):
        """The GPU its outcomes were measured on, as their file is named (``h100-...``: H100)."""
        return self.outcomes.split("-", 1)[0].upper()

    def h200(self):
        """{node id: outcome} as the GPU measured them ({} where none were)."""
        return {node: outcome for outcome, node in self._gpu_lines() if outcome != IDLE}

    def gpu_idle(self):
        """The tests the GPU passed that launched no Triton kernel there (``IDLE`` lines), or None where
        its outcomes did not count launches (recorded before ``kernel_launches``: no such line can be)."""
        path = os.path.join(OUTCOMES, self.outcomes)
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            if not any(line.startswith("#") and f"'{IDLE}'" in line for line in handle):
                return None
        return {node for outcome, node in self._gpu_lines() if outcome == IDLE}

    def _gpu_lines(self):
        path = os.path.join(OUTCOMES, self.outcomes)
        if not os.path.exists(path):
            return []
        with open(path) as handle:
            return [line.rstrip("\n").split(" ", 1) for line in handle if line.strip() and line[0] != "#"]


#: the outcome files' line for a test that passed and launched no Triton kernel (beside its "passed")
IDLE = "launched-none"


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


def _git_checkout(name, tag, url, hint):
    """``.suites/<name>-<tag without v>``: a git checkout of ``url`` at ``tag`` (a library whose
    packages hold no tests), cloned once; ``hint`` says what to put there by hand where git fails."""
    folder = os.path.join(FOLDER, f"{name}-{tag[1:]}")
    if not os.path.isdir(os.path.join(folder, "tests")):
        done = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", tag, url, folder])
        if done.returncode:
            sys.exit(f"suites: no checkout of {name} {tag} in {folder}, and git clone failed: put one there ({hint})")
    return folder


FLA_TAG = "v0.5.2"


def fetch_fla():
    """flash-linear-attention's git checkout at ``FLA_TAG`` (its PyPI packages hold no tests)."""
    return _git_checkout("flash-linear-attention", FLA_TAG, "https://github.com/fla-org/flash-linear-attention",
                         f"git clone --branch {FLA_TAG} ...")


FLAGGEMS_TAG = "v5.0.2"


def fetch_flaggems():
    """FlagGems' git checkout at ``FLAGGEMS_TAG`` (its wheels hold no tests)."""
    return _git_checkout("FlagGems", FLAGGEMS_TAG, "https://github.com/flagos-ai/FlagGems",
                         "its src/, tests/ and pytest.ini")


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
    "liger-whole": Library("liger-whole", "Liger-Kernel 0.8.5's own `test/transformers`, whole files",
                           ["test/transformers/test_*.py"], "h100-liger_kernel-0.8.5-transformers-whole.txt",
                           fetch_liger, table="suites-liger-whole"),
    "liger-chunked": Library("liger-chunked", "Liger-Kernel 0.8.5's own `test/chunked_loss`",
                             ["test/chunked_loss/test_*.py"], "h100-liger_kernel-0.8.5-chunked_loss.txt", fetch_liger,
                             table="suites-liger-chunked"),
    "flaggems": Library("flaggems", f"FlagGems {FLAGGEMS_TAG[1:]}'s own tests (`--ref cpu --quick`, as its CI)",
                        ["tests/test_*.py"], f"h100-flaggems-{FLAGGEMS_TAG[1:]}.txt", fetch_flaggems,
                        table="suites-flaggems", options=["--ref", "cpu", "--quick"], files_per_process=12,
                        # its LibTuner times every Config, and a heavy kernel's (grouped_mm, sdpa) ran past 240 s
                        switch=["--kwshim-autotune", "first"],
                        # its kernel runs its programs one by one here (past 240 s); the H100 fails both tests
                        alone=["tests/test_grouped_mm.py"]),
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
        # FlagGems' tuning cache (SQL, in ~/.flaggems): a run's own, not the timings an earlier kwshim stored
        env.setdefault("FLAGGEMS_CACHE_DIR", os.path.join(cache, "flaggems"))
    return env


def collect(source, paths, env, per_file, extra=(), per_function=False):
    """The first ``per_file`` test ids of each of ``paths`` (a file, or several collected in one process;
    with ``extra``: a suite can parametrize on the device it finds), or with ``per_function`` the first
    ``per_file`` of each test function; ``per_file`` 0: every test."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--co", *paths],
                          capture_output=True, text=True, env=env, cwd=source, timeout=600)
    lines = done.stdout.splitlines()
    sample = []
    for path in paths:
        ids = [line for line in lines if line.startswith(path + "::")]  # not a warning's text
        if not per_file:  # the whole file
            sample += ids
        elif not per_function:
            sample += ids[:per_file]
        else:
            taken = {}
            for node in ids:
                function = node.split("[")[0]
                taken[function] = taken.get(function, 0) + 1
                if taken[function] <= per_file:
                    sample.append(node)
    return sample


def run_first(source, paths, per_file, env, extra, limit):
    """``run_file`` for the first ``per_file`` tests of each of ``paths``, chosen in the process that
    runs them (``first_tests``): a suite whose test names are drawn at random cannot be run by ids."""
    env = dict(env, KWSHIM_SUITES_PER_FILE=str(per_file),
               PYTHONPATH=os.pathsep.join([env.get("PYTHONPATH", ""), os.path.join(ROOT, "measure")]))
    return run_file(source, paths, list(paths), env, ["-p", "first_tests", *extra], limit)


def run_file(source, paths, ids, env, extra, limit):
    """{'passed', 'failed', 'skipped', 'classes', 'outcomes' (node id -> passed/failed/skipped), 'idle' (passed
    tests that launched no Triton kernel, where the run says: kwshim's summary, or the GPU's
    ``kernel_launches`` property), 'seconds'} for the tests ``ids`` of the files ``paths`` (one, or several
    run together), in one pytest process."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    listing = ["--kwshim-no-kernel"] if "--kwshim" in extra else []
    with tempfile.TemporaryDirectory() as scratch:
        junit = os.path.join(scratch, "junit.xml")
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *listing,
                                   f"--junitxml={junit}", *ids], capture_output=True, text=True, env=env,
                                  cwd=source, timeout=limit)
        except subprocess.TimeoutExpired:
            failed = "timeout"
        else:
            failed = None if os.path.exists(junit) else "collection"
        seconds = time.perf_counter() - start
        if failed:
            return {"passed": 0, "failed": len(ids), "skipped": 0, "classes": {failed: len(ids)},
                    "outcomes": dict.fromkeys(ids, "failed"), "kinds": dict.fromkeys(ids, failed), "idle": set(),
                    "seconds": seconds}
        result = _read(junit, paths)
        if listing:
            result["idle"] |= _idle_listed(done.stdout)
        return dict(result, seconds=seconds)


def _idle_listed(text):
    """The node ids under kwshim's "launched no Triton kernel" summary line (``--kwshim-no-kernel``)."""
    lines, idle = text.splitlines(), set()
    for number, line in enumerate(lines):
        if "launched no Triton kernel" in line:
            for listed in lines[number + 1:]:
                if not listed.startswith("  "):
                    break
                idle.add(listed.strip())
    return idle


def _read(junit, paths):
    result = {"passed": 0, "failed": 0, "skipped": 0, "classes": {}, "outcomes": {}, "idle": set()}
    modules = sorted(((path[:-3].replace("/", "."), path) for path in paths), key=lambda pair: -len(pair[0]))
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        classname = case.get("classname") or ""
        module, path = next(((module, path) for module, path in modules
                             if classname == module or classname.startswith(module + ".")), modules[0])
        classes = classname[len(module) + 1:]
        node = "::".join([path] + (classes.split(".") if classes else []) + [case.get("name")])
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            outcome = "failed"
            kind = classify((problem.get("message") or "") + "\n" + (problem.text or ""))
            result["classes"][kind] = result["classes"].get(kind, 0) + 1
            result.setdefault("kinds", {})[node] = kind
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
            launches = [item.get("value") for item in case.iter("property") if item.get("name") == "kernel_launches"]
            if launches and launches[0] == "0":
                result["idle"].add(node)
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


def _groups(library, files, size=0):
    """The files in the groups that run in one pytest process each (``size`` of them, by default the
    library's); each of the library's ``alone`` files in a process of its own."""
    size = max(1, size or library.files_per_process)
    together = [path for path in files if path not in library.alone]
    return [together[start:start + size] for start in range(0, len(together), size)] + \
        [[path] for path in files if path in library.alone]


def _run_groups(groups, run, jobs):
    """``run(group)`` for each group, ``jobs`` at a time, yielded in the groups' order as they finish."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        yield from pool.map(run, groups)


def _cut_short(result):
    """Whether a pytest process ran past its limit or could not start (every test of it marked failed)."""
    classes = result.get("classes")
    return isinstance(classes, dict) and bool({"timeout", "collection"} & set(classes))


def record_h200(library, options):
    """The GPU's outcomes for the same sample, printed as ``measure/outcomes/`` holds them: run on a
    GPU machine, with compiled Triton (no ``TRITON_INTERPRET``), each group of files in its own pytest
    process; a passed test that launched no Triton kernel gets an ``IDLE`` line too."""
    import platform

    source = library.fetch()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(source, "src"), source, os.path.join(ROOT, "measure")]
                                        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    import torch
    import triton

    unit = 'test function' if library.per_function else 'file'
    print(f"# Outcomes of {library.title} on an {torch.cuda.get_device_name()} (compiled Triton {triton.__version__}, "
          f"torch {torch.__version__}, Python {platform.python_version()}), measured {time.strftime('%Y-%m-%d')} with")
    print(f"#   measure/suites.py --library {library.name} --h200 --per-file {options.per_file} "
          f"({f'the first {options.per_file} tests of each {unit}' if options.per_file else 'whole files'})")
    print(f"# One line per test: outcome, then the pytest node id; '{IDLE}' too for a pass that launched no kernel.")
    files = options.files or library.test_files(source)

    printing = threading.Lock()

    def report(result):
        """Print one pytest process's outcomes as soon as it ends: a run cut short keeps them."""
        if _cut_short(result):
            return  # they tell nothing of the GPU's outcomes (stderr says which)
        with printing:
            for node, outcome in sorted(result["outcomes"].items()):
                print(f"{outcome} {node}", flush=True)
                if node in result["idle"]:
                    print(f"{IDLE} {node}", flush=True)

    def run(group):
        extra = library.options + ["-p", "kernel_launches"] + (["-n", str(options.workers)] if options.workers else [])
        if library.files_per_process > 1:  # chosen where they run: names may be drawn at random
            result = run_first(source, group, options.per_file, env, extra, options.timeout)
            print(f"suites: {' '.join(group)}: {len(result['outcomes'])} outcomes in {result['seconds']:.0f} s "
                  f"{result.get('classes', '')}", file=sys.stderr, flush=True)
            report(result)
            return
        ids = collect(source, group, env, options.per_file, library.options, per_function=library.per_function)
        if not ids:
            print(f"suites: nothing collected from {' '.join(group)}", file=sys.stderr)
            return
        size = options.chunk or len(ids)  # a process killed at its time limit loses its chunk alone
        for start in range(0, len(ids), size):
            part = run_file(source, group, ids[start:start + size], env, extra, options.timeout)
            print(f"suites: {' '.join(group)}: tests {start}..{start + len(part['outcomes'])} of {len(ids)}: "
                  f"{part['seconds']:.0f} s {part.get('classes', '')}", file=sys.stderr, flush=True)
            report(part)

    for _ in _run_groups(_groups(library, files, options.files_per_process), run, options.jobs):
        pass  # each process's outcomes were printed as it ended (an error in the harness itself is raised here)
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
    parser.add_argument("--chunk", type=int, default=0, help="with --h200: at most this many tests per process")
    parser.add_argument("--files-per-process", type=int, default=0,
                        help="files per pytest process (default: the library's)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at a time (each a group of files)")
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
             + (f", the first {options.per_file} tests of each {unit}" if options.per_file else ", whole files")
             + ", on the CPU interpreter"
             + (f" (bare: `{' '.join(library.bare)}`)." if library.bare and "bare" in options.modes else "."), ""]
    cache = tempfile.TemporaryDirectory(prefix="kwshim-suites-triton-cache-")  # a run's own: no stale entries
    for release in options.releases:
        install("triton", release, os.path.join(ROOT, ".triton", release))
        env = environment(source, release, os.path.join(cache.name, release))
        names = [HEADINGS[mode] + ("" if len(options.grids) == 1 or mode == "bare" else f" `--kwshim-grid {grid}`")
                 for mode, grid in columns]
        rows = ["| file | " + " | ".join(f"{name}: passed/failed/skipped | failures by class" for name in names) + " |",
                "| --- |" + " --- | --- |" * len(columns)]
        totals = {column: {"passed": 0, "failed": 0, "skipped": 0, "classes": {}, "outcomes": {}, "idle": set(),
                           "seconds": 0.0} for column in columns}

        def run(group):
            """{column: result} for the group's files, in one pytest process per column."""
            results, collected = {}, {}
            for mode, grid in columns:
                own = library.bare if mode == "bare" else ["--kwshim-grid", grid] + library.switch
                extra = library.options + MODES[mode] + own
                if library.files_per_process > 1:  # chosen where they run: names may be drawn at random
                    results[mode, grid] = run_first(source, group, options.per_file, env, extra, options.timeout)
                    continue
                if mode not in collected:  # once per mode: its grids run the same tests
                    found = collect(source, group, env, options.per_file, library.options + MODES[mode] + selected,
                                    library.per_function)
                    missing = [path for path in group if not any(node.startswith(path + "::") for node in found)]
                    collected[mode] = found + (collect(source, missing, env, options.per_file,
                                                       library.options + selected,
                                                       per_function=library.per_function) if missing else [])
                if not collected[mode]:
                    break
                results[mode, grid] = run_file(source, group, collected[mode], env, extra, options.timeout)
            return results

        groups = _groups(library, files, options.files_per_process)
        for group, results in zip(groups, _run_groups(groups, run, options.jobs)):
            for path in group:
                mine = {column: _of_file(result, path, len(group)) for column, result in results.items()}
                mine = {column: result for column, result in mine.items() if result["outcomes"]}
                if not mine:
                    continue
                cells = []
                for column, result in mine.items():
                    total = totals[column]
                    for key in ("passed", "failed", "skipped", "seconds"):
                        total[key] += result[key]
                    total["outcomes"].update(result["outcomes"])
                    total["idle"] |= result["idle"]
                    for kind, count in result["classes"].items():
                        total["classes"][kind] = total["classes"].get(kind, 0) + count
                    cells += [_counts(result), _kinds(result["classes"])]
                row = f"| {os.path.basename(path)} | " + " | ".join(cells) + " |"
                rows.append(row)
                seconds = ", ".join(f"{result['seconds']:.0f} s" for result in mine.values())
                print(f"[{release}] {row} ({seconds})", flush=True)
        rows.append("| **total** | " + " | ".join(f"{_counts(totals[c])} | {_kinds(totals[c]['classes'])}"
                                                  for c in columns) + " |")
        lines += _summary(release, columns, totals, h200, library.gpu_idle(), library.gpu) + [""] + rows + [""]
        for (mode, grid), total in totals.items():  # each test's outcome, for comparisons after the run
            with open(os.path.join(FOLDER, f"outcomes-{library.name}-{release}-{mode}-{grid}{suffix}.txt"),
                      "w") as handle:
                handle.writelines(f"{outcome} {node}\n" for node, outcome in sorted(total["outcomes"].items()))
    table = "\n".join(lines).rstrip() + "\n"
    print(table)
    if options.page:
        evidence.rewrite(options.page, library.marker + suffix, table)
    return 0


def _idle_line(total, gpu, gpu_idle):
    """Of the passes here that launched no Triton kernel, those whose test the GPU passed launching one."""
    if not total["idle"]:
        return " Every pass here launched a Triton kernel."
    if gpu_idle is None:
        return (f" {len(total['idle'])} passes here launched no Triton kernel (the GPU's outcomes did not count its "
                f"launches: which of them launched one there is not known).")
    vacuous = sorted(node for node in total["idle"] if gpu.get(node) == "passed" and node not in gpu_idle)
    return (f" {len(total['idle'])} passes here launched no Triton kernel; of them, {len(vacuous)} launched one on "
            f"the GPU" + (f" ({', '.join(vacuous)})" if vacuous else "") + ".")


def _of_file(result, path, share):
    """The part of a group's ``result`` that is the file ``path``'s (its seconds: the group's / ``share``)."""
    outcomes = {node: outcome for node, outcome in result["outcomes"].items() if node.split("::")[0] == path}
    classes = {}
    for node, kind in result.get("kinds", {}).items():
        if node in outcomes and outcomes[node] == "failed":
            classes[kind] = classes.get(kind, 0) + 1
    counts = {key: sum(outcome == key for outcome in outcomes.values()) for key in ("passed", "failed", "skipped")}
    return dict(counts, outcomes=outcomes, classes=classes, idle={node for node in result["idle"] if node in outcomes},
                seconds=result["seconds"] / share)


def _summary(release, columns, totals, h200, gpu_idle=frozenset(), gpu="H200"):
    """The release's headline lines: the kwshim share, the GPU match of the device column (and its passes
    that launched no kernel where the GPU's launched one), the grids."""
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
                     f"(grid {grid})**: of the {ran} tests here that the {gpu} passes, "
                     f"{passing} pass{share}; pass here where the {gpu} fails: {len(wrong)}"
                     + (f" ({', '.join(wrong)})" if wrong else "") + f"; not run on the {gpu}: "
                     f"{sum(node not in h200 for node in total['outcomes'])}; {total['seconds']:.0f} s summed "
                     f"over its files." + _idle_line(total, h200, gpu_idle))
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
