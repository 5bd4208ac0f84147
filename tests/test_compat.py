"""The probe of the installed Triton: launch options come from what is installed."""

import dataclasses
import inspect

import pytest

import triton

from kwshim import compat as _triton


def test_launch_options_include_every_config_field_and_the_launch_keywords():
    options = _triton.launch_options()
    assert {"grid", "warmup", "num_warps", "num_stages", "num_ctas"} <= options
    config = triton.Config({})
    if hasattr(config, "all_kwargs"):
        assert set(config.all_kwargs()) <= options
    fields = {n for n in inspect.signature(triton.Config.__init__).parameters} - {"self", "kwargs", "pre_hook"}
    assert fields <= options


def test_launch_options_include_the_interpreters_own_reserved_list_and_options():
    from triton.runtime import interpreter

    options = _triton.launch_options()
    assert set(getattr(interpreter, "RESERVED_KWS", ())) <= options
    interpreter_options = getattr(interpreter, "InterpreterOptions", None)
    if interpreter_options is not None:
        assert {f.name for f in dataclasses.fields(interpreter_options)} <= options


def test_launch_options_exclude_ordinary_names():
    assert not {"bogus", "BLOCK_SIZE", "x_ptr", "pre_hook"} & _triton.launch_options()


def test_kernel_classes_match_what_jit_makes():
    def fn(x):
        pass

    assert type(triton.jit(fn)) is _triton.kernel_classes().interpreted


def test_interpreter_requested_reads_triton_s_variable(monkeypatch):
    for value, expected in [("1", True), ("true", True), ("ON", True), ("0", False), ("", False)]:
        monkeypatch.setenv("TRITON_INTERPRET", value)
        assert _triton.interpreter_requested() is expected


def test_the_installed_release_has_the_private_triton_names_the_record_gives():
    """compat/private_names.py lists every private Triton name kwshim relies on, with the releases
    where each resolved; a new release, or a name added without measuring, fails here."""
    from importlib import metadata

    from kwshim.compat.private_names import FOUND, PRIVATE_NAMES, PROBED, found_here

    assert sorted(FOUND) == sorted(PRIVATE_NAMES), "run measure/private_names.py"
    release = metadata.version("triton")
    if release not in PROBED:
        pytest.skip(f"Triton {release} is not among the releases measure/private_names.py probed")
    expected = {name: release in releases for name, releases in FOUND.items()}
    assert found_here() == expected
