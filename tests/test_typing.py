"""Type checkers see kwshim's public API: `kwsafe` keeps the decorated object's type, and the
package itself type-checks (mypy, with the configuration in setup.cfg)."""

import os
import subprocess
import sys

from ._cache import cached, source_digest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mypy(*args, cache, cwd=ROOT):
    """mypy, incremental in a cache of its own per source digest (each matrix row checks the same
    source: mypy reads no PYTHONPATH, so the Triton under test does not change its answer)."""
    cache_dir = cached(f"mypy-{cache}", source_digest(), lambda path: None)
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", cache_dir, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_the_package_type_checks():
    done = mypy("kwshim", cache="package")
    assert done.returncode == 0, done.stdout[-3000:]


def test_kwsafe_keeps_the_decorated_objects_type(tmp_path):
    (tmp_path / "use.py").write_text(
        "from kwshim import kwsafe\n\nclass Kernel:\n    pass\n\nreveal_type(kwsafe(Kernel()))\n"
        "import kwshim\n\nreveal_type(kwshim.activate(autotune='all'))\n")
    done = mypy("--config-file", os.path.join(ROOT, "setup.cfg"), str(tmp_path / "use.py"), cache="use",
                cwd=ROOT)
    assert 'Revealed type is "use.Kernel"' in done.stdout, done.stdout
    assert 'Revealed type is "kwshim.doors.switch.Handle"' in done.stdout, done.stdout
