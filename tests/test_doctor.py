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


def test_the_doctor_names_the_engine_computing_the_gpu_s_arithmetic(report):
    from kwshim.arithmetic import compiled

    line = next(line for line in render(report).splitlines() if line.startswith("arithmetic "))
    assert report["arithmetic"] == compiled.engine()
    assert ("compiled by numba" in line) is (compiled.engine() == "numba")
    assert ("pip install 'kwshim[fast]'" in line) is (compiled.engine() == "numpy")


@triton.jit
def _bf16_sum(x_ptr, y_ptr, out_ptr):
    offsets = tl.arange(0, 4)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))


def test_bf16_probe_matches_a_bare_launch_here_and_is_named_in_the_advice(report):
    x, y = torch.tensor([0.5, 1.0, -2.0, 3.0]).bfloat16(), torch.tensor([0.25, 1.5, 0.5, -1.0]).bfloat16()
    out = torch.zeros(4, dtype=torch.bfloat16)
    try:
        _bf16_sum[(1,)](x, y, out)
        right = bool(torch.equal(out, x + y))
    except Exception:
        right = False
    assert report["probes"]["bf16_arithmetic_works"]["ok"] is right
    assert any("bf16" in advice for advice in report["advice"]) is not right


def test_the_probing_line_is_said_only_when_probes_run(monkeypatch, report):
    from kwshim.tools import doctor

    said = []  # the probes' own results are the report's (their subprocesses run once, for the fixture)
    monkeypatch.setattr(doctor, "interpreter_mode", lambda: said.append("mode probed") or report["interpreter_mode"])
    both = {"probes": report["probes"], "grid": report["grid"]}
    monkeypatch.setattr(doctor, "run_probe", lambda *a, **k: (both, None))
    doctor.diagnose(progress=said.append)
    assert len(said) == 2 and said[0].startswith("kwshim doctor: probing") and said[1] == "mode probed"

    monkeypatch.setattr(doctor, "_distribution_of", lambda module: None)  # as where no triton is installed
    said.clear()
    assert doctor.diagnose(progress=said.append)["broken"] is True and said == []


def test_the_grid_line_says_which_mode_is_in_force_and_whether_batching_works(report, monkeypatch):
    import triton.runtime.interpreter as interpreter

    batching = hasattr(interpreter, "interpreter_builder") and report["probes"]["stores_work"]["ok"]
    assert report["grid"]["ok"] is batching, report["grid"]
    monkeypatch.delenv("KWSHIM_GRID", raising=False)
    line = next(line for line in render(report).splitlines() if line.startswith("grid "))
    assert line.startswith(f"grid        {kwshim_default_grid()} under the switch (KWSHIM_GRID=unset); batching ")
    assert ("batching works" in line) is batching
    monkeypatch.setenv("KWSHIM_GRID", "fast")
    line = next(line for line in render(report).splitlines() if line.startswith("grid "))
    assert line.startswith("grid        nothing (KWSHIM_GRID='fast': unknown grid 'fast'; choose one of ")


def test_the_compile_line_says_whether_this_triton_compiles_for_the_h200_here(report):
    from kwshim.compiler import unavailable

    line = next(line for line in render(report).splitlines() if line.startswith("compile "))
    if unavailable() is None:
        assert line == ("compile     for the H200 works here: a one-store kernel compiled for the H200 (sm_90): "
                        "compile='check' works")
    else:
        assert line.startswith("compile     for the H200 does NOT work here: ") and line.endswith(
            ": compile='check' is skipped with a notice")


def kwshim_default_grid():
    from kwshim.settings import DEFAULT

    return DEFAULT.grid


def test_without_triton_on_the_path_it_names_the_clones_releases_from_any_directory(monkeypatch, tmp_path):
    import os

    from kwshim.tools import doctor

    clone = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".triton")
    if not os.path.isdir(clone):
        pytest.skip("this checkout has no .triton/ (an unpacked sdist)")
    monkeypatch.chdir(tmp_path)  # not the clone's directory: it used to look only in ./.triton
    monkeypatch.setattr(doctor, "_distribution_of", lambda module: None)
    advice = doctor.diagnose()["advice"]
    assert any(line.startswith(f"{clone} keeps Triton releases (") and f"PYTHONPATH={clone}{os.sep}" in line
               for line in advice), advice
