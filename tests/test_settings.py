"""``settings``: the switch's choices, validated once; the doors present each one from ``FIELDS``."""

import os
import subprocess
import sys

import pytest

from kwshim import Settings
from kwshim.settings import FIELDS, GRIDS, NUMERICS, POLICIES


def test_defaults_and_repr():
    grid = os.environ.get("KWSHIM_GRID") or "batched"  # the default's default
    assert Settings() == Settings("all", 1e-05, 1e-08, True, "gpu", grid)
    assert repr(Settings()) == (f"Settings('all', rtol=1e-05, atol=1e-08, equal_nan=True, numerics='gpu', "
                                f"grid={grid!r}, device=None)")
    assert Settings(device="none").device is None and Settings(device="cuda").device == "cuda"
    assert [field.name for field in FIELDS] == ["autotune", "rtol", "atol", "equal_nan", "numerics", "grid", "device"]
    assert tuple(NUMERICS) == ("gpu", "ieee")
    assert tuple(GRIDS) == ("sequential", "batched", "check")
    assert tuple(POLICIES) == ("first", "all", "verify")


@pytest.mark.parametrize("bad, message", [
    ({"autotune": "fastest"}, "kwshim: unknown autotune policy 'fastest'; choose one of first, all, verify"),
    ({"rtol": -1.0}, "kwshim: rtol must be a number >= 0, not -1.0"),
    ({"atol": "0.1"}, "kwshim: atol must be a number >= 0, not '0.1'"),
    ({"rtol": True}, "kwshim: rtol must be a number >= 0, not True"),
    ({"numerics": "exact"}, "kwshim: unknown numerics 'exact'; choose one of gpu, ieee"),
    ({"grid": "parallel"}, "kwshim: unknown grid 'parallel'; choose one of sequential, batched, check"),
    ({"device": "xpu"}, "kwshim: unknown device 'xpu'; choose None or one of cuda"),
])
def test_a_bad_value_is_refused_naming_kwshim(bad, message):
    with pytest.raises(ValueError) as caught:
        Settings(**bad)
    assert str(caught.value) == message


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
