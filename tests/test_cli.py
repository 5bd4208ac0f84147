"""The `kwshim` command line: output format, exit status, JSON, and running without Triton."""

import json
import os
import subprocess
import sys


import kwshim

from .test_check import TREE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(kwshim.__file__)))


def kwshim_cli(*args, block_triton=False):
    prefix = "import sys; sys.modules['triton'] = None; " if block_triton else ""
    code = prefix + "import sys; from kwshim.doors.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT)


def test_check_prints_flake8_style_lines_and_exits_1():
    result = kwshim_cli("check", TREE)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 7
    assert lines[0] == (
        f"{os.path.join(TREE, 'bad.py')}:8:1: KWS001 kernel 'seed' declares reserved launch name 'num_stages' "
        "without @kwsafe: Triton's interpreters 2.2-3.2 strip it from launches (a TypeError, or the default used "
        "silently), and from 3.3 the interpreter passes unknown launch keywords unseen (add @kwsafe directly above "
        "@triton.jit)")


def test_check_starts_no_process_and_imports_no_triton():
    """A static checker: no subprocess (the doctor's probe once worded KWS001), no Triton, NumPy or torch."""
    code = ("import sys\n"
            "def audit(event, args):\n"
            "    if event in ('subprocess.Popen', 'os.exec', 'os.spawn', 'os.posix_spawn', 'os.system'):\n"
            "        raise SystemExit('kwshim check started a process: ' + event)\n"
            "sys.addaudithook(audit)\n"
            "from kwshim.doors.cli import main\n"
            "status = main(sys.argv[1:])\n"
            "loaded = sorted(m for m in ('triton', 'numpy', 'torch') if m in sys.modules)\n"
            "print('loaded', loaded)\n"
            "sys.exit(status)\n")
    done = subprocess.run([sys.executable, "-c", code, "check", TREE], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "KWS001" in done.stdout and done.stdout.strip().endswith("loaded []")


def test_check_clean_file_exits_0():
    result = kwshim_cli("check", os.path.join(TREE, "good.py"))
    assert (result.returncode, result.stdout) == (0, "")


def test_check_json_format():
    result = kwshim_cli("check", "--format", "json", TREE)
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    assert [f["code"] for f in findings] == ["KWS001", "KWS002", "KWS001", "KWS001", "KWS003", "KWS001", "KWS900"]
    assert set(findings[0]) == {"path", "line", "col", "code", "message"}


def test_usage_errors_exit_2():
    assert kwshim_cli("check").returncode == 2
    missing = kwshim_cli("check", "no/such/path.py")
    assert missing.returncode == 2 and "no such file or directory: no/such/path.py" in missing.stderr
    assert missing.stderr.startswith("usage: kwshim check"), missing.stderr  # the command's usage, not the top's
    assert kwshim_cli("frobnicate").returncode == 2


def test_check_runs_without_triton_using_the_fallback_names():
    result = kwshim_cli("check", TREE, block_triton=True)
    assert result.returncode == 1, result.stderr
    assert len(result.stdout.splitlines()) == 7


def test_python_dash_m_kwshim():
    result = subprocess.run([sys.executable, "-m", "kwshim", "check", os.path.join(TREE, "good.py")],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_doctor_without_triton_reports_broken():
    result = kwshim_cli("doctor", "--json", block_triton=True)
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["broken"] is True and report["triton"] is None


def test_version_and_check_help_list_the_codes_and_exit_statuses():
    version = kwshim_cli("--version", block_triton=True)
    assert version.returncode == 0 and version.stdout.strip() == f"kwshim {kwshim.__version__}"
    helped = kwshim_cli("check", "--help", block_triton=True)
    assert helped.returncode == 0
    for code in ("KWS001", "KWS002", "KWS003", "KWS004", "KWS900"):
        assert code in helped.stdout
    assert "exit status: 0 clean, 1 findings, 2 usage errors" in helped.stdout


def test_doctor_says_what_it_is_doing_before_the_probe():
    result = kwshim_cli("doctor", "--json")
    assert result.stderr.startswith("kwshim doctor: probing the installed Triton's interpreter")
    json.loads(result.stdout)  # stdout stays machine-readable
