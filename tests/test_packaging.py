"""Release readiness: the built sdist and wheel pass `twine check`, and the wheel installed into a
fresh virtual environment (not the source tree) carries everything: py.typed, the license, the
console script and the pytest and flake8 entry points, and a working kwsafe launch."""

import glob
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile

import pytest
from filelock import FileLock

from ._cache import cached, source_digest
from ._subprocess import inherited_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build(out):
    with FileLock(os.path.join(ROOT, ".build.lock")):  # one build in the tree at a time
        done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT],
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="module")
def dist():
    """The sdist and wheel of this source, built once per source digest (tests/_cache.py)."""
    import pathlib

    return pathlib.Path(cached("dist", source_digest(), _build))


def _fresh_environment(wheel, *packages, env=None):
    """A virtual environment with ``wheel`` (and ``packages``) installed, once per wheel."""
    def make(path):
        venv.EnvBuilder(with_pip=True).create(path)
        no_deps = [] if packages else ["--no-deps", "--no-index"]
        done = subprocess.run([os.path.join(path, "bin", "python"), "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", *no_deps, wheel, *packages],
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-2000:]

    import pathlib

    name = "venv-" + "-".join(["wheel", *packages])
    return pathlib.Path(cached(name, source_digest(), make))


def test_sdist_and_wheel_pass_twine_check(dist):
    files = sorted(glob.glob(str(dist / "*")))
    assert any(f.endswith(".whl") for f in files) and any(f.endswith(".tar.gz") for f in files)
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_sdist_carries_the_tests_docs_and_examples(dist):
    import tarfile

    (sdist,) = glob.glob(str(dist / "*.tar.gz"))
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    for needed in ("tests/conftest.py", "tests/kernels.py", "tests/fixtures/kernel_library.py", "docs/contract.md",
                   "CHANGELOG.md", "README.md", "LICENSE", "examples/demo.py", "Makefile", "measure/matrix.py",
                   "parity/numerics_h200.json", "tests/test_numerics.py"):
        assert needed in names, needed


def test_the_wheel_carries_py_typed_and_the_license(dist):
    (wheel,) = glob.glob(str(dist / "*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "kwshim/py.typed" in names
    assert any(n.endswith(".dist-info/LICENSE") or "/licenses/LICENSE" in n for n in names)
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "kwshim = kwshim.doors.pytest_plugin" in entry_points
    assert "KWS = kwshim.tools.check:Flake8Checker" in entry_points


def test_the_installed_wheel_works_from_a_fresh_environment(dist, tmp_path):
    (wheel,) = glob.glob(str(dist / "*.whl"))
    env_dir = _fresh_environment(wheel)
    python = str(env_dir / "bin" / "python")
    # wrapt, torch and the Triton under test come from the test environment, kwshim only from the wheel
    shared = inherited_pythonpath()
    shared.append(sysconfig.get_paths()["purelib"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(shared), TRITON_INTERPRET="1")
    work = tmp_path / "work"
    work.mkdir()
    (work / "k.py").write_text("import triton\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n")
    run = dict(capture_output=True, text=True, cwd=work, env=env, timeout=300)

    check = subprocess.run([str(env_dir / "bin" / "kwshim"), "check", "k.py"], **run)
    assert check.returncode == 1 and "KWS001" in check.stdout, check.stderr[-2000:]
    doctor = subprocess.run([str(env_dir / "bin" / "kwshim"), "doctor", "--json"], **run)
    assert doctor.returncode == 0, doctor.stderr[-2000:]
    assert json.loads(doctor.stdout)["probes"]["stores_work"]["ok"] is True
    launch = textwrap.dedent("""
        import importlib.metadata, kwshim, torch, triton, triton.language as tl
        assert kwshim.__file__.startswith(%r), kwshim.__file__
        groups = importlib.metadata.entry_points()
        select = (lambda g: groups.select(group=g)) if hasattr(groups, "select") else groups.get
        assert "kwshim" in [e.name for e in select("pytest11")]
        assert "KWS" in [e.name for e in select("flake8.extension")]
        @kwshim.kwsafe
        @triton.jit
        def k(out_ptr, num_warps: tl.constexpr):
            tl.store(out_ptr, num_warps)
        out = torch.zeros(1, dtype=torch.int32)
        k[(1,)](out, num_warps=8)
        print(int(out[0]))
    """ % str(env_dir))
    (work / "launch.py").write_text(launch)
    done = subprocess.run([python, "launch.py"], **run)
    assert done.returncode == 0 and done.stdout.strip() == "8", done.stderr[-2000:]


BAD_KERNEL = "import triton\n\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n"
GOOD_KERNEL = "import triton\n\n\n@triton.jit\ndef k(out_ptr, warps):\n    pass\n"


def test_the_wheel_with_its_declared_dependencies_alone_checks_and_lints(dist, tmp_path):
    """As pre-commit installs a hook: a clean environment, the wheel and what it declares (wrapt), and
    flake8; no NumPy, torch or Triton. ``kwshim check``, the flake8 plugin and ``--version`` work."""
    (wheel,) = glob.glob(str(dist / "*.whl"))
    # pip too runs without the test run's PYTHONPATH, whose wrapt would otherwise count as installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env_dir = _fresh_environment(wheel, "flake8", env=env)
    python, bin_dir = str(env_dir / "bin" / "python"), env_dir / "bin"
    run = dict(capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    absent = subprocess.run([python, "-c", "import importlib.util as u; "
                                           "print([m for m in ('numpy', 'torch', 'triton') if u.find_spec(m)])"], **run)
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr
    (tmp_path / "bad.py").write_text(BAD_KERNEL)
    (tmp_path / "good.py").write_text(GOOD_KERNEL)

    lint_bad = subprocess.run([str(bin_dir / "flake8"), "--select", "KWS", "bad.py"], **run)
    assert lint_bad.returncode == 1 and "bad.py:5:1: KWS001" in lint_bad.stdout, lint_bad.stdout + lint_bad.stderr
    lint_good = subprocess.run([str(bin_dir / "flake8"), "--select", "KWS", "good.py"], **run)
    assert lint_good.returncode == 0 and lint_good.stdout == "", lint_good.stdout + lint_good.stderr
    check_bad = subprocess.run([str(bin_dir / "kwshim"), "check", "bad.py"], **run)
    assert check_bad.returncode == 1 and "KWS001" in check_bad.stdout, check_bad.stdout + check_bad.stderr
    check_good = subprocess.run([str(bin_dir / "kwshim"), "check", "good.py"], **run)
    assert check_good.returncode == 0 and check_good.stdout == "", check_good.stdout + check_good.stderr
    version = subprocess.run([str(bin_dir / "kwshim"), "--version"], **run)
    assert version.returncode == 0 and version.stdout.startswith("kwshim "), version.stderr
    decorator = subprocess.run([python, "-c", "import kwshim\n@kwshim.kwsafe\ndef f(): pass\n"], **run)
    assert decorator.returncode == 1 and "needs the 'triton' module" in decorator.stderr, decorator.stderr[-2000:]


def test_the_interpreter_extras_keep_numpy_below_2_4_and_the_readme_says_what_triton_3_1_needs():
    """numpy 2.4 breaks Triton 3.2-3.6's interpreter (every range over a runtime argument), and
    numpy 2 breaks Triton 3.1 and older (stores write nothing); no marker can see the installed Triton."""
    import configparser

    from packaging.requirements import Requirement

    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    extras = parser["options.extras_require"]
    for extra in ("interpreter", "fast"):
        numpy = [Requirement(line) for line in extras[extra].split("\n") if line.strip().startswith("numpy")]
        assert numpy and not numpy[0].specifier.contains("2.4.0"), (extra, numpy)
    with open(os.path.join(ROOT, "README.md")) as handle:
        install = handle.read().split("## Install", 1)[1].split("\n## ", 1)[0]
    assert 'pip install "numpy<2"' in install and "Triton 3.1 and older" in install
