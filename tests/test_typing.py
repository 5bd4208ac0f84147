"""Type checkers see kwshim's public API: `kwsafe` keeps the decorated object's type, and the
package itself type-checks (mypy, with the configuration in setup.cfg)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mypy(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_the_package_type_checks():
    done = mypy("kwshim")
    assert done.returncode == 0, done.stdout[-3000:]


def test_kwsafe_keeps_the_decorated_objects_type(tmp_path):
    (tmp_path / "use.py").write_text(
        "from kwshim import kwsafe\n\nclass Kernel:\n    pass\n\nreveal_type(kwsafe(Kernel()))\n"
        "import kwshim\n\nreveal_type(kwshim.activate(autotune='all'))\n")
    done = mypy("--config-file", os.path.join(ROOT, "setup.cfg"), str(tmp_path / "use.py"),
                cwd=ROOT)
    assert 'Revealed type is "use.Kernel"' in done.stdout, done.stdout
    assert 'Revealed type is "kwshim.doors.switch.Handle"' in done.stdout, done.stdout
