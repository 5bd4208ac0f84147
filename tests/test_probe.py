"""`kwshim doctor` reports what Triton does with the environment, and survives a bad probe."""

import json
import os
import subprocess
import sys

import pytest

from kwshim.tools import doctor

from ._subprocess import inherited_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment(**extra):
    inherited = inherited_pythonpath()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=os.pathsep.join([ROOT, *inherited]), **extra)
    return env


def kernel_class_made_with(env):
    """Independently of kwshim: the class of a kernel triton.jit makes in this environment."""
    code = ("import sys; sys.path.insert(0, 'tests/fixtures'); import kernel_library; "
            "print(type(kernel_library._plain_kernel).__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    if done.returncode != 0 and "active drivers" in done.stderr:  # 3.2-3.3 compiled: autotune at import
        code = ("import triton, importlib.util, sys; sys.path.insert(0, 'tests/fixtures'); "
                "import kwshim.tools.probe as p; print(p.interpreter_mode()['kernel_class'])")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("value", ["1", "true", "0"])
def test_interpreter_mode_is_what_triton_does_with_the_value(value):
    env = environment(TRITON_INTERPRET=value)
    done = subprocess.run([sys.executable, "-c", "import json; from kwshim.tools.doctor import interpreter_mode; "
                                                 "print(json.dumps(interpreter_mode()))"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    mode = json.loads(done.stdout)  # doctor's line, without the probes it runs after it
    assert mode["TRITON_INTERPRET"] == value
    assert mode["on"] is (kernel_class_made_with(env) == "InterpretedFunction")
    if value == "1":
        assert mode["on"] is True


def test_a_probe_that_prints_something_else_is_reported_not_a_crash(monkeypatch):
    def fake_run(*args, **kwargs):
        return subprocess.CompletedProcess(args, 0, stdout="Some banner a plugin printed\n", stderr="")

    monkeypatch.setattr(doctor.subprocess, "run", fake_run)
    report = doctor.diagnose()
    assert report["broken"] is True
    assert any("Some banner a plugin printed" in line for line in report["advice"])
    assert "environment: BROKEN" in doctor.render(report)
