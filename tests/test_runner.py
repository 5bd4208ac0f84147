"""``kwshim run``: the switch's door for a script or a module."""

import os
import subprocess
import sys
import textwrap

import pytest

from kwshim import compat
from kwshim.settings import resolve

from ._subprocess import environment
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
    (tmp_path / "show.py").write_text("from kwshim.doors import switch\nprint(switch.active_settings())\n")
    done = kwshim("run", "--autotune", "verify", "--rtol", "0.5", "--atol", "0.25", "--no-equal-nan",
                  "--numerics", "ieee", "--grid", "check", "show.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("Settings('verify', rtol=0.5, atol=0.25, equal_nan=False, numerics='ieee', grid='check', "
            "device=None, compile='off', empty_fill='none', check_bounds=True)") in done.stdout
    done = kwshim("run", "show.py", cwd=tmp_path)
    assert (f"Settings('all', rtol=None, atol=None, equal_nan=True, numerics='gpu', grid={resolve({}).grid!r}, "
            f"device=None, compile='off', empty_fill='none', check_bounds=True)") in done.stdout
    done = kwshim("run", "--numerics", "exact", "show.py", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice: 'exact' (choose from 'gpu', 'ieee')" in done.stderr


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
    (["missing.py"], "kwshim run: no such file or directory: 'missing.py'"),
    (["."], "kwshim run: '.' is a directory with no __main__.py"),
    (["-m", "no_such_module_here"], "kwshim run: no module named 'no_such_module_here'"),
])
def test_kwshim_run_names_a_missing_target_in_one_line_with_status_2(tmp_path, args, message):
    done = kwshim("run", *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == message


def test_kwshim_run_refuses_a_package_without_main_in_one_line_with_status_2(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "__init__.py").write_text("")
    done = kwshim("run", "-m", "plain", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == (
        "kwshim run: 'plain' is a package with no __main__ module, which python -m needs"), done.stderr[-2000:]


def test_kwshim_run_reads_an_abbreviated_option_with_its_value_as_argparse_does(tmp_path):
    """``--dev cuda`` is ``--device cuda`` (argparse's abbreviation), so the script is the next
    word; ``--device=cuda`` holds its value; an unknown option shows ``kwshim run``'s own usage."""
    show = "from kwshim import settings\nimport sys\nprint(settings.in_force().device, sys.argv[1:])\n"
    (tmp_path / "show.py").write_text(show)
    for spelling in (["--dev", "cuda"], ["--device=cuda"]):
        done = kwshim("run", *spelling, "show.py", "x", cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == "cuda ['x']\n", (spelling, done.stderr[-2000:])
    done = kwshim("run", "--devise", "cuda", "show.py", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("usage: kwshim run ") and \
        "unrecognized arguments: --devise" in done.stderr, done.stderr


def test_kwshim_run_finds_a_module_and_a_directory_where_python_does(tmp_path):
    show = "from kwshim.doors import switch\nprint('on' if switch.is_active() else 'off', __name__)\n"
    (tmp_path / "here.py").write_text(show)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(show)
    for args in (["-m", "here"], ["app"]):
        done = kwshim("run", *args, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == "on __main__\n", (args, done.stderr[-2000:])


def test_kwshim_run_help_explains_the_policies_and_triton_interpret(tmp_path):
    done = kwshim("run", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "usage: kwshim run [--autotune POLICY]" in done.stdout
    assert "(SCRIPT | DIRECTORY | -m MODULE) [ARGS ...]" in done.stdout
    assert "[--asm KERNEL[:FORM]]" in done.stdout.split("\n\n")[0]  # every option is in the usage line
    assert "TRITON_INTERPRET=1" in done.stdout and "AutotuneSideEffectError" in done.stdout


def test_triton_interpret_spelled_true_is_read_as_1_on_every_release(tmp_path, monkeypatch):
    (tmp_path / "mode.py").write_text(
        "import triton\n\ndef f(x):\n    pass\n\nprint(type(triton.jit(f)).__name__)\n")
    done = subprocess.run([sys.executable, "-m", "kwshim", "run", "mode.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(TRITON_INTERPRET="true"), timeout=300)
    assert done.returncode == 0 and done.stdout == "InterpretedFunction\n", (done.stdout, done.stderr[-1000:])
    monkeypatch.setenv("TRITON_INTERPRET", "true")
    reads_true = compat.jit_makes_interpreted()  # bare: 3.4 on
    said = "kwshim: TRITON_INTERPRET=true read as TRITON_INTERPRET=1 (Triton " in done.stderr
    assert said != reads_true, done.stderr[-1000:]  # said exactly where the release ignores it


@needs_block_loads
def test_the_demo_under_kwshim_run_credits_the_switch(tmp_path):
    done = kwshim("run", os.path.join(ROOT, "examples", "demo.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "binds the parameter itself" not in done.stdout and "OK" in done.stdout
    if "bare Triton:   stored" in done.stdout:  # the switch fixed the bare kernel: say so
        assert "the switch (kwshim run / pytest --kwshim) fixed the bare kernel too" in done.stdout


def test_kwshim_run_says_when_the_interpreter_is_off_and_no_gpu_driver_exists(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: compiled mode works here")
    (tmp_path / "noop.py").write_text("print('ran')\n")
    done = subprocess.run([sys.executable, "-m", "kwshim", "run", "noop.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(TRITON_INTERPRET="0"), timeout=300)
    assert "the interpreter is off (TRITON_INTERPRET=0) and Triton finds no GPU driver" in done.stderr
    assert "set TRITON_INTERPRET=1" in done.stderr and "ran" in done.stdout


def test_kwshim_run_without_triton_says_so_in_one_line_with_status_2(tmp_path):
    (tmp_path / "noop.py").write_text("print('ran')\n")
    env = environment()
    env["PYTHONPATH"] = ROOT  # this checkout, and no Triton
    done = subprocess.run([sys.executable, "-m", "kwshim", "run", "noop.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert done.stderr.startswith("kwshim run: kwshim needs the 'triton' module") and len(done.stderr.splitlines()) == 1


ASM_SCRIPT = textwrap.dedent("""
    import torch, triton, triton.language as tl

    @triton.jit
    def scale(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    x = torch.ones(8)
    scale[(1,)](x, 8, BLOCK=8)
    scale[(1,)](x, 8, BLOCK=16)
    print("stored", x.tolist())
""")


def test_kwshim_run_asm_prints_what_the_gpus_compiler_made_of_a_kernel_run_on_the_cpu(tmp_path):
    from kwshim.compiler import unavailable

    if unavailable() is not None:
        pytest.skip(unavailable())
    (tmp_path / "asm.py").write_text(ASM_SCRIPT)
    done = kwshim("run", "--asm", "scale", "asm.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stored [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]" in done.stdout
    headers = [line for line in done.stdout.splitlines() if line.startswith("// kwshim: scale")]
    assert [header.split(",")[1] for header in headers] == [" specialization 1 of 2", " specialization 2 of 2"]
    assert done.stdout.count(".target sm_90") == 2
    done = kwshim("run", "--asm", "scale:ttgir", "asm.py", cwd=tmp_path)
    assert done.returncode == 0 and 'target = "cuda:90"' in done.stdout, done.stdout[-2000:]


def test_kwshim_run_asm_refuses_a_bad_form_a_kernel_never_launched_and_compile_off(tmp_path):
    (tmp_path / "asm.py").write_text(ASM_SCRIPT)
    done = kwshim("run", "--asm", "scale:sass", "asm.py", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == (
        "kwshim run: --asm takes KERNEL or KERNEL:FORM with FORM one of ttir, ttgir, llir, ptx, not 'scale:sass'")
    done = kwshim("run", "--compile", "off", "--asm", "scale", "asm.py", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == (
        "kwshim run: --asm needs --compile check (what it prints is what the check compiles)")
    from kwshim.compiler import unavailable

    if unavailable() is None:
        done = kwshim("run", "--asm", "shift", "asm.py", cwd=tmp_path)
        assert done.returncode == 1 and done.stderr.strip().endswith(
            "kwshim run: --asm: the target launched no kernel named 'shift'"), done.stderr[-2000:]
