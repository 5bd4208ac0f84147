"""The pytest plugin: ``pytest --kwshim``, its options, ini keys and markers."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from kwshim.settings import resolve

from ._subprocess import environment, inherited_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLUGIN_TEST = textwrap.dedent("""
    import os
    from kwshim.doors import switch

    def test_state():
        assert switch.is_active() == (os.environ["EXPECT"] == "on")
        if switch.is_active():
            assert switch.active_settings().autotune == os.environ["POLICY"]
            assert repr(switch.active_settings()).endswith(os.environ["TOLERANCES"])
            assert os.environ["TRITON_INTERPRET"] == "1"
""")


DEFAULT_TOLERANCES = (f"rtol=None, atol=None, equal_nan=True, numerics='gpu', grid={resolve({}).grid!r}, "
                      f"device=None, compile='off', empty_fill='none', check_bounds=True)")


@pytest.mark.parametrize("args, ini, expect, policy, tolerances", [
    ([], "", "off", "all", DEFAULT_TOLERANCES),
    (["--kwshim"], "", "on", "all", DEFAULT_TOLERANCES),
    (["--kwshim", "--kwshim-autotune", "verify"], "", "on", "verify", DEFAULT_TOLERANCES),
    ([], "[pytest]\nkwshim = true\nkwshim_autotune = first\n", "on", "first", DEFAULT_TOLERANCES),
    (["--kwshim", "--kwshim-autotune", "verify", "--kwshim-rtol", "0.5", "--kwshim-atol", "0.25",
      "--kwshim-no-equal-nan", "--kwshim-numerics", "ieee", "--kwshim-grid", "batched"], "", "on", "verify",
     "rtol=0.5, atol=0.25, equal_nan=False, numerics='ieee', grid='batched', device=None, compile='off', "
     "empty_fill='none', check_bounds=True)"),
    ([], "[pytest]\nkwshim = true\nkwshim_autotune = verify\nkwshim_rtol = 0.125\nkwshim_atol = 2\n"
         "kwshim_equal_nan = false\nkwshim_numerics = ieee\nkwshim_grid = check\n", "on", "verify",
     "rtol=0.125, atol=2.0, equal_nan=False, numerics='ieee', grid='check', device=None, compile='off', "
     "empty_fill='none', check_bounds=True)"),
])
def test_pytest_plugin_is_inert_unless_asked(tmp_path, args, ini, expect, policy, tolerances):
    (tmp_path / "test_state.py").write_text(PLUGIN_TEST)
    (tmp_path / "pytest.ini").write_text(ini or "[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args, "test_state.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(EXPECT=expect, POLICY=policy, TOLERANCES=tolerances), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


MARKED_TESTS = textwrap.dedent("""
    import pytest
    from kwshim.doors import switch

    @pytest.mark.kwshim_autotune("all")
    def test_exempt():
        assert switch.active_settings().autotune == "all"

    def test_default():
        assert switch.active_settings().autotune == "verify"
""")


def test_a_marker_sets_one_tests_policy_under_the_plugin(tmp_path):
    (tmp_path / "test_marked.py").write_text(MARKED_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim",
                           "--kwshim-autotune", "verify", "test_marked.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(), timeout=300)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_plugin_refuses_to_start_where_the_interpreter_stores_nothing(tmp_path):
    """Triton <= 3.1 with numpy 2: every store writes nothing. Simulated here by a plugin loaded
    first that makes the probe report it; the real probe is checked healthy below."""
    (tmp_path / "stores_nothing.py").write_text(
        "import kwshim.doors.preflight\n"
        "kwshim.doors.preflight.interpreter_store_problem = lambda: 'stores write nothing (simulated)'\n")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "stores_nothing",
                           "--kwshim", "test_x.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT, *inherited_pythonpath()])),
                          timeout=300)
    assert done.returncode != 0 and "kwshim: stores write nothing (simulated)" in done.stderr
    assert "1 passed" not in done.stdout


def test_start_up_problems_are_shown_without_dash_s(tmp_path):
    """pytest captures stderr while plugins start: a printed line would be lost. The plugin writes
    its start-up problems when the session starts, before the first test's result, even with -q."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: compiled mode works here")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", "test_x.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=environment(TRITON_INTERPRET="0"),
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("kwshim: the interpreter is off (TRITON_INTERPRET=0)"), done.stdout
    assert lines[-1].startswith("1 passed in"), done.stdout


def run_pytest(tmp_path, *args, **env):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "test_x.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=environment(**env), timeout=300)


@pytest.mark.parametrize("args, message", [
    (["--kwshim-grid", "check"], "ERROR: kwshim: --kwshim-grid needs --kwshim (without it kwshim is off and it does "
                                 "nothing)"),
    (["--kwshim-device", "cuda", "--kwshim-no-equal-nan"],
     "ERROR: kwshim: --kwshim-no-equal-nan --kwshim-device need --kwshim"),
])
def test_a_kwshim_option_without_kwshim_is_a_usage_error(tmp_path, args, message):
    done = run_pytest(tmp_path, *args)
    assert done.returncode == 4 and done.stderr.strip().startswith(message), done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_bad_kwshim_variable_fails_the_switch_in_one_line_and_nothing_else(tmp_path):
    done = run_pytest(tmp_path, "-q", KWSHIM_GRID="fast")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]  # plain pytest: kwshim is off
    done = run_pytest(tmp_path, "-q", "--kwshim", KWSHIM_GRID="fast")
    assert done.returncode == 4 and done.stderr.strip() == (
        "ERROR: kwshim: KWSHIM_GRID='fast': unknown grid 'fast'; choose one of sequential, batched, check")
    done = run_pytest(tmp_path, "-q", "--kwshim", "--kwshim-grid", "sequential", KWSHIM_GRID="fast")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]  # named: the variable is not used


def test_the_header_names_every_setting_in_force(tmp_path):
    done = run_pytest(tmp_path, "--kwshim", "--kwshim-grid", "sequential", KWSHIM_AUTOTUNE="first")
    assert ("kwshim: on, autotune=first, rtol=per-dtype, atol=per-dtype, equal_nan=True, numerics=gpu, "
            "grid=sequential, device=none, compile=off, empty_fill=none, check_bounds=True\n") in done.stdout, \
        done.stdout[-2000:]


def test_the_plugin_names_a_missing_triton_as_a_usage_error(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    env = environment()
    env["PYTHONPATH"] = ROOT  # this checkout, and no Triton
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", "test_x.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 4 and "kwshim: kwshim needs the 'triton' module" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


GRID_TESTS = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def rows(out_ptr):
        tl.store(out_ptr + tl.program_id(0), tl.program_id(0))

    @triton.jit
    def prints(out_ptr):
        tl.device_print("pid", tl.program_id(0))

    def test_one():
        out = torch.zeros(8, dtype=torch.int32)
        rows[(8,)](out)
        prints[(3,)](out)
        prints[(3,)](out)

    def test_two():
        rows[(4,)](torch.zeros(4, dtype=torch.int32))
""")


def run_grid_tests(tmp_path, grid, workers):
    """``GRID_TESTS`` under ``pytest --kwshim --kwshim-grid grid`` (with xdist's ``workers``); skipped
    where the interpreter has no module-wide builder to batch with (2.x)."""
    import triton.runtime.interpreter as interpreter

    if not hasattr(interpreter, "interpreter_builder"):
        pytest.skip("2.x: no module-wide builder to batch with")
    (tmp_path / "test_grid.py").write_text(GRID_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim",
                           "--kwshim-grid", grid, *workers, "test_grid.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_summary_counts_batched_launches_and_names_each_fallback_with_its_counts(tmp_path, workers):
    done = run_grid_tests(tmp_path, "batched", workers)
    replayed = "1" if not workers else "[01]"  # each worker traces the kernel's first launch it runs
    assert re.search(rf"kwshim grid: 4 launches of 2\+ programs, 2 batched \({replayed} replayed a trace\), 2 ran the "
                     r"loop \(50\.0%\)", done.stdout), done.stdout
    assert "  device_print: 1 kernel(s), 2 launches (prints)" in done.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_under_grid_check_the_summary_says_how_many_launches_were_compared(tmp_path, workers):
    done = run_grid_tests(tmp_path, "check", workers)
    # rows' 2 launches ran batched and compared; prints' fell back to the loop, compared with nothing
    assert "kwshim grid=check: 2 batched launches compared with Triton's loop bit for bit, all the same" \
        in done.stdout, done.stdout


NUMBA_TESTS = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def row_sums(x_ptr, out_ptr, N: tl.constexpr):
        offsets = tl.arange(0, N)
        tl.store(out_ptr + offsets, tl.sum(tl.load(x_ptr + offsets)[None, :], axis=1) + tl.load(x_ptr + offsets))

    def test_a_large_block():
        x = torch.rand(2 ** 16)
        row_sums[(1,)](x, torch.empty_like(x), N=2 ** 16)
""")


def test_the_summary_says_when_numba_compiled_kwshim_s_loops_and_not_when_its_cache_had_them(tmp_path):
    """A first run's numba compiles cost several times a later run's time: the summary says so,
    once, and says nothing where numba's disk cache held every loop."""
    pytest.importorskip("numba")
    from kwshim import compat

    if not compat.module_wide_builder():
        pytest.skip("2.x: no module-wide builder, so none of kwshim's compiled arithmetic")
    (tmp_path / "test_large.py").write_text(NUMBA_TESTS)
    said = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim",
                               "test_large.py"], capture_output=True, text=True, cwd=tmp_path,
                              env=environment(NUMBA_CACHE_DIR=str(tmp_path / "numba")), timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        said.append(re.findall(r"kwshim: numba compiled (\d+) of kwshim's loops in this run \([\d.]+ s\): "
                               r"a first run's cost", done.stdout))
    assert len(said[0]) == 1 and int(said[0][0]) >= 1 and said[1] == [], said


IDLE_TESTS = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def iota(out_ptr):
        tl.store(out_ptr + tl.arange(0, 4), tl.arange(0, 4))

    def test_launches_a_kernel():
        out = torch.zeros(4, dtype=torch.int32)
        iota[(1,)](out)
        assert out.tolist() == [0, 1, 2, 3]

    def test_compares_torch_with_torch():
        assert torch.abs(torch.tensor([-1.0])).item() == 1.0

    def test_fails():
        assert False
""")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_summary_counts_the_passed_tests_that_launched_no_kernel_and_an_option_lists_them(tmp_path, workers):
    """A suite whose kernels are never reached passes vacuously: the summary says how many passed
    tests launched nothing (a failed test is not counted), gathered from every xdist worker."""
    from kwshim import compat

    if not compat.module_wide_builder():
        pytest.skip("2.x: no grid seam to count launches at")
    (tmp_path / "test_idle.py").write_text(IDLE_TESTS)
    for listing in ([], ["--kwshim-no-kernel"]):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", *workers,
                               *listing, "test_idle.py"], capture_output=True, text=True, cwd=tmp_path,
                              env=environment(), timeout=300)
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # test_fails
        lines = done.stdout.splitlines()
        if listing:
            at = lines.index("kwshim: 1 of 2 passed tests launched no Triton kernel")
            assert lines[at + 1] == "  test_idle.py::test_compares_torch_with_torch", done.stdout
        else:
            assert "kwshim: 1 of 2 passed tests launched no Triton kernel (--kwshim-no-kernel lists them)" in lines
            assert "test_idle.py::test_compares_torch_with_torch" not in done.stdout.replace("PASSED", "")


def test_kwshim_no_kernel_without_kwshim_is_a_usage_error(tmp_path):
    done = run_pytest(tmp_path, "--kwshim-no-kernel")
    assert done.returncode == 4 and "--kwshim-no-kernel needs --kwshim" in done.stderr, done.stderr[-2000:]


THREAD_TESTS = textwrap.dedent("""
    import os
    import torch

    def test_threads():
        assert torch.get_num_threads() == int(os.environ["EXPECTED_THREADS"]), torch.get_num_threads()
""")


def _outside_xdist(**extra):
    """A subprocess's environment with none of an outer xdist worker's variables (this run's own)."""
    env = environment()
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "OMP_NUM_THREADS"):
        env.pop(name, None)
    env.update(extra)
    return env


def test_each_xdist_worker_takes_its_share_of_the_cores_for_torch_and_a_users_own_count_wins(tmp_path):
    """Two workers on this machine: torch gets ``cores // 2`` threads in each (at least one), not
    every core twice over; ``OMP_NUM_THREADS`` given by the user is left as it is."""
    pytest.importorskip("xdist")
    (tmp_path / "test_threads.py").write_text(THREAD_TESTS)
    shared = str(max(1, len(os.sched_getaffinity(0)) // 2))
    own = "2" if shared == "1" else "1"
    for extra in ({"EXPECTED_THREADS": shared}, {"EXPECTED_THREADS": own, "OMP_NUM_THREADS": own}):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", "-n", "2",
                               "test_threads.py"], capture_output=True, text=True, cwd=tmp_path,
                              env=_outside_xdist(**extra), timeout=300)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_share_cores_divides_the_cores_among_the_workers_only_in_a_worker():
    from kwshim.doors.worker_threads import share_cores

    class Torch:
        threads = None

        def set_num_threads(self, count):
            self.threads = count

    assert share_cores({}, cores=8) is None  # not a worker
    environ = {"PYTEST_XDIST_WORKER_COUNT": "3"}
    assert share_cores(environ, cores=8) == 2 and environ["OMP_NUM_THREADS"] == "2"
    torch = Torch()
    assert share_cores({"PYTEST_XDIST_WORKER_COUNT": "4"}, cores=2, loaded=torch) == 1 and torch.threads == 1
    assert share_cores({"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "5"}, cores=8) is None
