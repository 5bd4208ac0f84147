"""The switch's other two doors: ``kwshim run`` and the pytest plugin (``pytest --kwshim``)."""

import os
import subprocess
import sys
import textwrap

import pytest

from ._subprocess import inherited_pythonpath
from .kernels import needs_block_loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = textwrap.dedent("""
    import sys
    import torch, triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"X": x}, num_warps=w) for x, w in ((1, 4), (2, 8))], key=[])
    @triton.jit
    def k(out_ptr, X: tl.constexpr, num_warps: tl.constexpr = 1):
        tl.store(out_ptr, num_warps * 10 + X)

    if __name__ == "__main__":
        out = torch.zeros(1, dtype=torch.int32)
        k[(1,)](out)
        print("argv", sys.argv[1:], "stored", int(out[0]))
        sys.exit(int(sys.argv[-1]))
""")


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    inherited = inherited_pythonpath()
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *inherited])
    env.update(extra)
    return env


def kwshim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "kwshim", *args], capture_output=True, text=True, cwd=cwd,
                          env=environment(), timeout=300)


def test_kwshim_run_script_keeps_argv_and_exit_status_and_tunes_on_the_cpu(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = kwshim("run", "--autotune", "all", "prog.py", "--flag", "3", cwd=tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "argv ['--flag', '3'] stored 41" in done.stdout  # Config 0 chosen, its num_warps bound


def test_kwshim_run_module(tmp_path):
    (tmp_path / "progmod.py").write_text(PROGRAM)
    done = kwshim("run", "-m", "progmod", "0", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "argv ['0'] stored 41" in done.stdout


def test_kwshim_run_reports_the_targets_exception_with_status_1(tmp_path):
    (tmp_path / "boom.py").write_text("raise ValueError('from the target')\n")
    done = kwshim("run", "boom.py", cwd=tmp_path)
    assert done.returncode == 1 and "ValueError: from the target" in done.stderr


def test_kwshim_run_passes_verify_tolerances_to_the_switch(tmp_path):
    (tmp_path / "show.py").write_text("from kwshim import switch\nprint(switch.active_settings())\n")
    done = kwshim("run", "--autotune", "verify", "--rtol", "0.5", "--atol", "0.25", "--no-equal-nan", "show.py",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Settings('verify', rtol=0.5, atol=0.25, equal_nan=False)" in done.stdout
    done = kwshim("run", "show.py", cwd=tmp_path)
    assert "Settings('all', rtol=1e-05, atol=1e-08, equal_nan=True)" in done.stdout


def test_kwshim_run_refuses_a_negative_tolerance_with_status_2(tmp_path):
    (tmp_path / "show.py").write_text("print('ran')\n")
    done = kwshim("run", "--atol", "-1", "show.py", cwd=tmp_path)
    assert done.returncode == 2 and "atol must be a number >= 0" in done.stderr and "ran" not in done.stdout


def test_kwshim_run_passes_everything_after_the_script_verbatim_as_python_does(tmp_path):
    (tmp_path / "argv.py").write_text("import sys\nprint(sys.argv[1:])\n")
    done = kwshim("run", "argv.py", "--", "x", "--rtol", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "['--', 'x', '--rtol', '3']" in done.stdout


@pytest.mark.parametrize("args, message", [
    (["missing.py"], "kwshim run: no such file: 'missing.py'"),
    (["-m", "no_such_module_here"], "kwshim run: no module named 'no_such_module_here'"),
])
def test_kwshim_run_names_a_missing_target_in_one_line_with_status_2(tmp_path, args, message):
    done = kwshim("run", *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == message


def test_kwshim_run_help_explains_the_policies_and_triton_interpret(tmp_path):
    done = kwshim("run", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "usage: kwshim run [--autotune POLICY]" in done.stdout and "(SCRIPT | -m MODULE) [ARGS ...]" in done.stdout
    assert "TRITON_INTERPRET=1" in done.stdout and "AutotuneSideEffectError" in done.stdout


def test_an_ignored_triton_interpret_spelling_is_named_at_start_up(tmp_path):
    (tmp_path / "mode.py").write_text(
        "import triton\n\ndef f(x):\n    pass\n\nprint(type(triton.jit(f)).__name__)\n")
    done = subprocess.run([sys.executable, "-m", "kwshim", "run", "mode.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(TRITON_INTERPRET="true"), timeout=300)
    hinted = "TRITON_INTERPRET=true leaves the interpreter off" in done.stderr and "set TRITON_INTERPRET=1" in done.stderr
    interpreted = "InterpretedFunction" in done.stdout
    assert hinted != interpreted, (done.stdout, done.stderr[-1000:])  # the hint exactly where it is off


PLUGIN_TEST = textwrap.dedent("""
    import os
    from kwshim import switch

    def test_state():
        assert switch.is_active() == (os.environ["EXPECT"] == "on")
        if switch.is_active():
            assert switch.active_settings().policy == os.environ["POLICY"]
            assert repr(switch.active_settings()).endswith(os.environ["TOLERANCES"])
            assert os.environ["TRITON_INTERPRET"] == "1"
""")


DEFAULT_TOLERANCES = "rtol=1e-05, atol=1e-08, equal_nan=True)"


@pytest.mark.parametrize("args, ini, expect, policy, tolerances", [
    ([], "", "off", "all", DEFAULT_TOLERANCES),
    (["--kwshim"], "", "on", "all", DEFAULT_TOLERANCES),
    (["--kwshim", "--kwshim-autotune", "verify"], "", "on", "verify", DEFAULT_TOLERANCES),
    ([], "[pytest]\nkwshim = true\nkwshim_autotune = first\n", "on", "first", DEFAULT_TOLERANCES),
    (["--kwshim", "--kwshim-autotune", "verify", "--kwshim-rtol", "0.5", "--kwshim-atol", "0.25",
      "--kwshim-no-equal-nan"], "", "on", "verify", "rtol=0.5, atol=0.25, equal_nan=False)"),
    ([], "[pytest]\nkwshim = true\nkwshim_autotune = verify\nkwshim_rtol = 0.125\nkwshim_atol = 2\n"
         "kwshim_equal_nan = false\n", "on", "verify", "rtol=0.125, atol=2.0, equal_nan=False)"),
])
def test_pytest_plugin_is_inert_unless_asked(tmp_path, args, ini, expect, policy, tolerances):
    (tmp_path / "test_state.py").write_text(PLUGIN_TEST)
    (tmp_path / "pytest.ini").write_text(ini or "[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args, "test_state.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(EXPECT=expect, POLICY=policy, TOLERANCES=tolerances), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@needs_block_loads
def test_the_demo_under_kwshim_run_credits_the_switch(tmp_path):
    done = kwshim("run", os.path.join(ROOT, "examples", "demo.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "binds the parameter itself" not in done.stdout and "OK" in done.stdout
    if "bare Triton:   stored" in done.stdout:  # the switch fixed the bare kernel: say so
        assert "the switch (kwshim run / pytest --kwshim) fixed the bare kernel too" in done.stdout


MARKED_TESTS = textwrap.dedent("""
    import pytest
    from kwshim import switch

    @pytest.mark.kwshim_autotune("all")
    def test_exempt():
        assert switch.active_settings().policy == "all"

    def test_default():
        assert switch.active_settings().policy == "verify"
""")


def test_a_marker_sets_one_tests_policy_under_the_plugin(tmp_path):
    (tmp_path / "test_marked.py").write_text(MARKED_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim",
                           "--kwshim-autotune", "verify", "test_marked.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(), timeout=300)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_plugin_refuses_to_start_where_the_interpreter_stores_nothing(tmp_path):
    """Triton <= 3.1 with numpy 2: every store writes nothing. Simulated here by a plugin loaded
    first that makes the probe report it; the real probe is checked healthy below."""
    (tmp_path / "stores_nothing.py").write_text(
        "import kwshim.runner\nkwshim.runner.interpreter_store_problem = lambda: 'stores write nothing (simulated)'\n")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "stores_nothing",
                           "--kwshim", "test_x.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT, *inherited_pythonpath()])),
                          timeout=300)
    assert done.returncode != 0 and "kwshim: stores write nothing (simulated)" in done.stderr
    assert "1 passed" not in done.stdout


def test_the_real_store_probe_launches_and_finds_this_environment_healthy(monkeypatch):
    """The probe launches only under numpy 2; made to launch here (numpy < 2), it finds stores working."""
    import numpy

    from kwshim import _triton, runner

    probed = []
    real = _triton.jit_makes_interpreted

    def counting():
        probed.append(1)
        return real()

    monkeypatch.setattr(numpy, "__version__", "2.0.0")
    monkeypatch.setattr(_triton, "jit_makes_interpreted", counting)
    assert runner.interpreter_store_problem() is None and probed == [1]


def test_kwshim_run_says_when_the_interpreter_is_off_and_no_gpu_driver_exists(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: compiled mode works here")
    (tmp_path / "noop.py").write_text("print('ran')\n")
    done = subprocess.run([sys.executable, "-m", "kwshim", "run", "noop.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(TRITON_INTERPRET="0"), timeout=300)
    assert "the interpreter is off (TRITON_INTERPRET=0) and Triton finds no GPU driver" in done.stderr
    assert "set TRITON_INTERPRET=1" in done.stderr and "ran" in done.stdout
