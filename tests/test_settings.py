"""``settings``: the switch's choices, validated once; the doors present each one from ``FIELDS``."""

import os
import subprocess
import sys

import pytest

from kwshim import Settings
from kwshim.settings import FIELDS, GRIDS, NUMERICS, POLICIES, resolve


def test_defaults_and_repr():
    grid = "batched"  # KWSHIM_GRID is read when the switch starts, never into the defaults
    assert Settings() == Settings("all", None, None, True, "gpu", grid)
    assert repr(Settings()) == (f"Settings('all', rtol=None, atol=None, equal_nan=True, numerics='gpu', "
                                f"grid={grid!r}, device=None, compile='off', empty_fill='none', check_bounds=True)")
    assert Settings(device="none").device is None and Settings(device="cuda").device == "cuda"
    assert [field.name for field in FIELDS] == ["autotune", "rtol", "atol", "equal_nan", "numerics", "grid", "device",
                                                "compile", "empty_fill", "check_bounds"]
    assert tuple(NUMERICS) == ("gpu", "ieee")
    assert tuple(GRIDS) == ("sequential", "batched", "check")
    assert tuple(POLICIES) == ("first", "all", "verify")


@pytest.mark.parametrize("bad, message", [
    ({"autotune": "fastest"}, "kwshim: unknown autotune policy 'fastest'; choose one of first, all, verify"),
    ({"rtol": -1.0}, "kwshim: rtol must be a number >= 0, not -1.0"),
    ({"numerics": "exact"}, "kwshim: unknown numerics 'exact'; choose one of gpu, ieee"),
    ({"grid": "parallel"}, "kwshim: unknown grid 'parallel'; choose one of sequential, batched, check"),
    ({"device": "xpu"}, "kwshim: unknown device 'xpu'; choose one of none, cuda (or None, which is none)"),
])
def test_a_bad_value_is_refused_naming_kwshim(bad, message):
    with pytest.raises(ValueError) as caught:
        Settings(**bad)
    assert str(caught.value) == message


@pytest.mark.parametrize("bad, message", [
    ({"atol": "0.1"}, "kwshim: atol must be a number >= 0 (or None: per dtype), not '0.1'"),
    ({"rtol": True}, "kwshim: rtol must be a number >= 0 (or None: per dtype), not True"),
    ({"equal_nan": "false"}, "kwshim: equal_nan must be True or False, not 'false'"),
    ({"equal_nan": 0}, "kwshim: equal_nan must be True or False, not 0"),
    ({"grid": ["batched"]}, "kwshim: grid must be a string, not ['batched']"),
    ({"numerics": {"gpu"}}, "kwshim: numerics must be a string, not {'gpu'}"),
    ({"autotune": None}, "kwshim: autotune must be a string, not None"),
    ({"device": ["cuda"]}, "kwshim: device must be None or a string, not ['cuda']"),
])
def test_a_value_of_the_wrong_type_is_a_type_error_naming_kwshim(bad, message):
    with pytest.raises(TypeError) as caught:
        Settings(**bad)
    assert str(caught.value) == message


def test_resolve_reads_the_environment_only_for_what_is_not_named_and_inherits_from_a_base():
    environ = {"KWSHIM_GRID": "check", "KWSHIM_EQUAL_NAN": "off", "KWSHIM_ATOL": "0.5", "KWSHIM_DEVICE": ""}
    assert resolve({}, environ=environ) == Settings(grid="check", equal_nan=False, atol=0.5)
    assert resolve({"grid": "sequential"}, environ=environ).grid == "sequential"
    # a bad variable fails only where its setting is used, in one line naming it
    assert resolve({"grid": "batched"}, environ={"KWSHIM_GRID": "fast"}).grid == "batched"
    with pytest.raises(ValueError) as caught:
        resolve({}, environ={"KWSHIM_GRID": "fast"})
    assert str(caught.value) == ("kwshim: KWSHIM_GRID='fast': unknown grid 'fast'; choose one of sequential, "
                                 "batched, check")
    with pytest.raises(ValueError, match=r"^kwshim: KWSHIM_RTOL='tight': rtol must be a number >= 0, not 'tight'$"):
        resolve({}, environ={"KWSHIM_RTOL": "tight"})
    with pytest.raises(ValueError, match="^kwshim: KWSHIM_EQUAL_NAN='maybe': equal_nan must be one of 1, true"):
        resolve({}, environ={"KWSHIM_EQUAL_NAN": "maybe"})
    with pytest.raises(ValueError) as caught:  # the values as a variable spells them: none, cuda
        resolve({}, environ={"KWSHIM_DEVICE": "gpu"})
    assert str(caught.value) == ("kwshim: KWSHIM_DEVICE='gpu': unknown device 'gpu'; choose one of none, cuda "
                                 "(or None, which is none)")
    # a base (the enclosing activation) is inherited whole; the environment is not read again
    outer = Settings("verify", device="cuda", grid="sequential")
    assert resolve({"autotune": "first"}, outer, environ=environ) == Settings("first", device="cuda",
                                                                              grid="sequential")
    with pytest.raises(TypeError, match="^kwshim: unknown setting 'gird'"):
        resolve({"gird": "check"})


def test_a_bad_environment_variable_does_not_break_import_kwshim_or_the_tools():
    env = dict(os.environ, KWSHIM_GRID="fast")
    done = subprocess.run([sys.executable, "-c", "import kwshim; print(kwshim.Settings().grid)"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "batched", done.stderr[-2000:]
    done = subprocess.run([sys.executable, "-m", "kwshim", "check", __file__], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]


def test_settings_are_immutable_and_hashable():
    settings = Settings("verify", rtol=0.5)
    with pytest.raises(AttributeError):
        settings.autotune = "all"  # type: ignore[misc]
    assert {settings: 1}[Settings("verify", rtol=0.5)] == 1


def test_every_door_offers_every_setting():
    """kwshim run's --NAME and pytest's --kwshim-NAME come from FIELDS, so a new setting reaches both."""
    run_help = subprocess.run([sys.executable, "-m", "kwshim", "run", "--help"], capture_output=True, text=True)
    plugin_help = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
                                 capture_output=True, text=True)
    for field in FIELDS:
        flag = field.name.replace("_", "-")
        expected = f"--no-{flag}" if isinstance(field.default, bool) else f"--{flag}"
        assert expected in run_help.stdout, expected
        assert expected.replace("--", "--kwshim-", 1) in plugin_help.stdout, expected
        assert f"kwshim_{field.name}" in plugin_help.stdout
    for policy, meaning in POLICIES.items():
        assert meaning.split(":")[0] in " ".join(run_help.stdout.split())
