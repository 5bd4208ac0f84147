"""`kwshim check` on a fixture tree of good and bad kernels: exact findings."""

import os

import pytest

from kwshim.check import FALLBACK_RESERVED_NAMES, check_paths, check_source, reserved_names

TREE = os.path.join(os.path.dirname(__file__), "fixtures", "check_tree")


def rel(path):
    return os.path.relpath(path, TREE)


@pytest.mark.parametrize("reserved", [reserved_names(), FALLBACK_RESERVED_NAMES], ids=["installed", "fallback"])
def test_exact_findings_on_the_fixture_tree(reserved):
    found = [(rel(f.path), f.line, f.col, f.code) for f in check_paths([TREE], reserved)]
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
    findings = {(rel(f.path), f.line): f.message for f in check_paths([TREE], FALLBACK_RESERVED_NAMES)}
    assert findings[("bad.py", 8)].startswith("kernel 'seed' declares reserved launch name 'num_stages' without @kwsafe")
    assert "'num_warps', 'num_ctas'" in findings[("bad.py", 21)]
    assert findings[("sub/aliases.py", 13)] == "@kwsafe is below @triton.jit on 'below': move it directly above @triton.jit"
    assert "above @triton.autotune/@triton.heuristics on 'above'" in findings[("bad.py", 12)]


def test_installed_reserved_names_cover_the_config_fields():
    import triton

    config = triton.Config({})
    expected = set(config.all_kwargs()) if hasattr(config, "all_kwargs") else {"num_warps", "num_stages"}
    assert expected - {"grid"} <= set(reserved_names())
    assert "grid" not in reserved_names() and "BLOCK" not in reserved_names()


def test_unreadable_file_is_reported(tmp_path):
    missing_target = tmp_path / "dangling.py"
    missing_target.symlink_to(tmp_path / "nowhere.py")
    (finding,) = check_paths([str(tmp_path)], FALLBACK_RESERVED_NAMES)
    assert finding.code == "KWS900" and finding.message.startswith("cannot read file")


def test_files_that_never_mention_jit_are_parsed_but_not_walked():
    assert check_source(b"x = 1\n", "a.py", FALLBACK_RESERVED_NAMES) == []
    (finding,) = check_source(b"def (:\n", "b.py", FALLBACK_RESERVED_NAMES)
    assert finding.code == "KWS900"
