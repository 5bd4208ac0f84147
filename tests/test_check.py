"""`kwshim check` on a fixture tree of good and bad kernels: exact findings."""

import os
import subprocess
import sys

import pytest

from kwshim.tools.check import RESERVED_NAMES, check_paths, check_source, reserved_names

from ._subprocess import inherited_pythonpath

TREE = os.path.join(os.path.dirname(__file__), "fixtures", "check_tree")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rel(path):
    return os.path.relpath(path, TREE)


def test_exact_findings_on_the_fixture_tree():
    assert reserved_names() is RESERVED_NAMES  # static: the checker imports no Triton
    found = [(rel(f.path), f.line, f.col, f.code) for f in check_paths([TREE], reserved_names())]
    assert found == [
        ("bad.py", 8, 1, "KWS001"),
        ("bad.py", 12, 2, "KWS002"),
        ("bad.py", 21, 5, "KWS001"),
        ("sub/aliases.py", 8, 1, "KWS001"),
        ("sub/aliases.py", 13, 2, "KWS003"),
        ("sub/aliases.py", 20, 5, "KWS001"),
        ("sub/broken.py", 4, 11, "KWS900"),
    ]


def test_messages_name_the_kernel_and_the_parameters():
    findings = {(rel(f.path), f.line): f.message for f in check_paths([TREE], RESERVED_NAMES)}
    assert findings[("bad.py", 8)].startswith(
        "kernel 'seed' declares reserved launch name 'num_stages' without @kwsafe")
    assert "'num_warps', 'num_ctas'" in findings[("bad.py", 21)]
    assert findings[("sub/aliases.py", 13)] == \
        "@kwsafe is below @triton.jit on 'below': move it directly above @triton.jit"
    assert "above @triton.autotune/@triton.heuristics on 'above'" in findings[("bad.py", 12)]


def test_the_static_reserved_names_cover_the_installed_releases():
    """The checker's list holds every name the installed Triton strips or its Config injects."""
    import triton

    from kwshim import compat

    config = triton.Config({})
    expected = set(config.all_kwargs()) if hasattr(config, "all_kwargs") else {"num_warps", "num_stages"}
    assert expected - {"grid"} <= set(reserved_names())
    assert compat.stripped_names() <= reserved_names()
    assert "grid" not in reserved_names() and "BLOCK" not in reserved_names()


def test_unreadable_file_is_reported(tmp_path):
    missing_target = tmp_path / "dangling.py"
    missing_target.symlink_to(tmp_path / "nowhere.py")
    (finding,) = check_paths([str(tmp_path)], RESERVED_NAMES)
    assert finding.code == "KWS900" and finding.message.startswith("cannot read file")


def test_files_that_never_mention_jit_are_parsed_but_not_walked():
    assert check_source(b"x = 1\n", "a.py", RESERVED_NAMES) == []
    (finding,) = check_source(b"def (:\n", "b.py", RESERVED_NAMES)
    assert finding.code == "KWS900"


# -- never crash or hang on input -------------------------------------------------------------

def test_a_file_too_deep_for_the_parser_is_kws900_and_later_files_are_checked(tmp_path):
    (tmp_path / "a_deep.py").write_text("x = " + "+".join(["1"] * 200_000) + "\n")
    (tmp_path / "b_unary.py").write_text("x = " + "-" * 200_000 + "1\n")
    (tmp_path / "c_kernel.py").write_text(
        "import triton\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n")
    found = [(os.path.basename(f.path), f.code) for f in check_paths([str(tmp_path)], RESERVED_NAMES)]
    assert found == [("a_deep.py", "KWS900"), ("b_unary.py", "KWS900"), ("c_kernel.py", "KWS001")]


def test_a_fifo_in_a_walked_directory_is_skipped(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n")
    code = ("import sys; from kwshim.tools.check import check_paths, RESERVED_NAMES; "
            f"print([f.code for f in check_paths([{str(tmp_path)!r}], RESERVED_NAMES)])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stdout.strip() == "['KWS001']"
    (finding,) = check_paths([str(tmp_path / "pipe.py")], RESERVED_NAMES)  # named: reported, not opened
    assert finding.code == "KWS900" and "not a regular file" in finding.message


def test_a_file_python_cannot_decode_is_kws900():
    (finding,) = check_source(b"# caf\xe9\nimport triton\n", "latin.py", RESERVED_NAMES)
    assert finding.code == "KWS900" and "cannot decode" in finding.message
    declared = b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport triton\n@triton.jit\ndef k(o, num_warps):\n    pass\n"
    assert [f.code for f in check_source(declared, "ok.py", RESERVED_NAMES)] == ["KWS001"]


# -- kernels made every way -------------------------------------------------------------------

@pytest.mark.parametrize("source, line", [
    ("import triton\n\ndef k(out_ptr, num_warps):\n    pass\n\nkernel = triton.jit(k)\n", 6),
    ("import triton\njit = triton.jit\n\n@jit\ndef k(out_ptr, num_warps):\n    pass\n", 5),
    ("from triton import *\n\n@jit\ndef k(out_ptr, num_warps):\n    pass\n", 4),
    ("import triton\n\ndef k(out_ptr, num_warps):\n    pass\n\nkernel = triton.autotune(configs=[], key=[])("
     "triton.jit(k))\n", 6),
    ("import triton\n\ndef make():\n    def k(out_ptr, num_warps):\n        pass\n    return k\n\n"
     "kernel = triton.autotune(configs=[], key=[])(triton.jit(make()))\n", 8),
])
def test_kernels_built_by_a_call_an_alias_or_a_star_import_are_found(source, line):
    (finding,) = check_source(source.encode(), "k.py", RESERVED_NAMES)
    assert (finding.code, finding.line) == ("KWS001", line)


def test_the_demo_is_flagged_for_its_bare_kernel_only():
    import os

    demo = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "demo.py")
    findings = check_paths([demo], RESERVED_NAMES)
    assert [(f.code, f.line) for f in findings] == [("KWS001", 31)] and "'simple_kernel'" in findings[0].message


def test_a_kernel_built_by_a_call_under_kwsafe_is_clean():
    source = (b"import triton\nfrom kwshim import kwsafe\n\ndef k(o, num_warps):\n    pass\n\n"
              b"kk = kwsafe(triton.jit(k))\n")
    assert check_source(source, "k.py", RESERVED_NAMES) == []


def test_keyword_only_kernel_parameters_are_kws004():
    source = b"import triton\n\n@triton.jit\ndef k(out_ptr, *, X, Y=1):\n    pass\n"
    (finding,) = check_source(source, "k.py", RESERVED_NAMES)
    assert finding.code == "KWS004" and "keyword-only parameters 'X', 'Y'" in finding.message
    assert "before 3.9" in finding.message


# -- the ecosystem's conventions --------------------------------------------------------------

def test_flake8_reports_kws_codes(tmp_path):
    (tmp_path / "k.py").write_text("import triton\n\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "KWS", "k.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.lstrip("./").startswith("k.py:5:1: KWS001 kernel 'k' declares reserved launch name 'num_warps'")


def test_pre_commit_hook_definition_runs_the_checker(tmp_path):
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as handle:
        text = handle.read()
    assert "- id: kwshim-check" in text and "language: python" in text and "types: [python]" in text
    entry = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("entry:"))
    assert entry == "kwshim check"
    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef k(out_ptr, num_warps):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "kwshim", *entry.split()[1:], "k.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *inherited_pythonpath()])))
    assert done.returncode == 1 and "KWS001" in done.stdout
