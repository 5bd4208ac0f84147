"""The suite runs on Triton's CPU interpreter: switch it on before anything imports triton
(``tl.sum`` and other library functions are themselves jitted at import time)."""

import os

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402


@pytest.fixture
def out():
    """A one-element buffer the kernels store what they received into."""
    import torch

    return torch.zeros(1, dtype=torch.int32)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("KWSHIM_SUITE_WITHOUT_KWSAFE") != "1":
        return
    skip = pytest.mark.skip(reason="about the KwsafeKernel object; this run has no @kwsafe (the switch binds)")
    for item in items:
        if "kwsafe_api" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def no_switch_left_on():
    """For the switch's tests: every handle a test leaves active is deactivated, and the switch is off."""
    yield
    from kwshim.doors import switch

    for handle in list(switch._HANDLES):
        handle.deactivate()
    assert not switch.is_active()
