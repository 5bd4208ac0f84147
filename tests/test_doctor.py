"""`kwshim doctor`: its live probes agree with what the installed interpreter really does."""

import pytest
import torch
import triton
import triton.language as tl

from kwshim.tools.doctor import diagnose, render


@pytest.fixture(scope="module")
def report():
    return diagnose()


@triton.jit
def _reserved(out_ptr, num_warps: tl.constexpr = 1):
    tl.store(out_ptr, num_warps)


@triton.jit
def _plain(out_ptr, value):
    tl.store(out_ptr, value)


def test_reports_versions(report):
    assert report["triton"]["version"] == triton.__version__
    assert report["torch"] == torch.__version__.split("+")[0] or report["torch"] == torch.__version__
    assert report["broken"] is False


def test_reserved_keyword_probe_matches_a_bare_launch_here(report):
    out = torch.zeros(1, dtype=torch.int32)
    _reserved[(1,)](out, num_warps=4)
    assert report["probes"]["reserved_keyword_overrides_default"]["ok"] is (int(out[0]) == 4)


def test_unknown_keyword_probe_matches_a_bare_launch_here(report):
    out = torch.zeros(1, dtype=torch.int32)
    try:
        _plain[(1,)](out, 5, bogus=1)
        refused = False
    except Exception:
        refused = True
    assert report["probes"]["unknown_keywords_refused"]["ok"] is refused


def test_stores_work_and_render(report):
    assert report["probes"]["stores_work"]["ok"] is True
    text = render(report)
    assert f"triton      {triton.__version__}" in text
    assert "bare interpreter, probed live:" in text
    assert text.endswith("environment: usable")
