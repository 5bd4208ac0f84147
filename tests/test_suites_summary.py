"""The headline lines ``make suites`` writes (``measure/suites.py``): a kwshim column is held to the
bare interpreter test by test, not only in its counts."""

from measure import suites


def _column(outcomes):
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    return {"passed": passed, "failed": len(outcomes) - passed, "skipped": 0, "classes": {}, "outcomes": outcomes,
            "seconds": 1.0}


def test_a_kwshim_column_names_each_test_that_passes_bare_and_not_under_it():
    totals = {("bare", "sequential"): _column({"t::a": "passed", "t::b": "passed", "t::c": "failed"}),
              ("kwshim", "batched"): _column({"t::a": "passed", "t::b": "failed", "t::c": "passed"}),
              ("device", "batched"): _column({"t::a": "passed", "t::b": "passed", "t::c": "passed"})}
    lines = suites._summary("3.0.0", list(totals), totals, {})
    against = [line for line in lines if "against bare" in line]
    assert against[0].endswith("2 passed, against 2 bare; passing bare and not here: 1 (t::b).\n")
    assert against[1].endswith("3 passed, against 2 bare; passing bare and not here: 0.\n")


def test_the_device_column_is_held_to_the_gpu_its_outcomes_file_names():
    """An outcome file's GPU (``h100-...``) is the one the summary names, with its passes matched test by test."""
    column = dict(_column({"t::a": "passed", "t::b": "failed", "t::c": "passed"}), idle=set())
    gpu = {"t::a": "passed", "t::b": "passed", "t::c": "failed"}
    lines = suites._summary("3.6.0", [("device", "batched")], {("device", "batched"): column}, gpu,
                            suites.LIBRARIES["flaggems"].gpu_idle(), suites.LIBRARIES["flaggems"].gpu)
    assert suites.LIBRARIES["flaggems"].gpu == "H100" and suites.LIBRARIES["liger"].gpu == "H200"
    assert "of the 2 tests here that the H100 passes, 1 pass (50.0%); pass here where the H100 fails: 1 (t::c)" \
        in lines[0]


def test_a_library_s_slow_file_runs_in_a_process_of_its_own():
    """A file past its limit loses only itself: FlagGems' ``test_grouped_mm.py`` ran past 240 s and
    took the 11 files of its group along."""
    library = suites.LIBRARIES["flaggems"]
    files = [f"tests/test_{name}.py" for name in ("a", "grouped_mm", "b", "c")]
    assert suites._groups(library, files, 2) == [["tests/test_a.py", "tests/test_b.py"], ["tests/test_c.py"],
                                                 ["tests/test_grouped_mm.py"]]
    assert suites._groups(suites.LIBRARIES["liger"], files, 2) == [files[:2], files[2:]]
