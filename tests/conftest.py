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


#: Tests whose outcome no Triton release changes: they import no Triton (static checks, the settings,
#: packaging without Triton, type checks, the docs' own structure), or their subject is kwshim's own
#: door (how ``kwshim run`` and the pytest plugin read their arguments, settings and environment)
#: and the switch's start under each release is the switch suite's and ``test_switch``'s, which run
#: in every row; or their subject is what a wheel carries. Marked ``release_independent``: the matrix
#: runs them once, in the newest release's row, and not again under each release
#: (``measure/matrix.py``). A plain ``pytest`` runs them with the rest.
RELEASE_INDEPENDENT = (
    "tests/test_architecture.py::",
    "tests/test_matrix.py::",
    "tests/test_suites_summary.py::",
    "tests/test_settings.py::",
    "tests/test_typing.py::",
    "tests/test_check.py::",
    "tests/test_cli.py::test_check_",
    "tests/test_cli.py::test_usage_errors_exit_2",
    "tests/test_cli.py::test_python_dash_m_kwshim",
    "tests/test_cli.py::test_doctor_without_triton_reports_broken",
    "tests/test_cli.py::test_doctor_says_what_it_is_doing_before_the_probe",  # the matrix runs the doctor each row
    "tests/test_cli.py::test_version_and_check_help_list_the_codes_and_exit_statuses",
    "tests/test_packaging.py::test_sdist_and_wheel_pass_twine_check",
    "tests/test_packaging.py::test_the_sdist_carries_the_tests_docs_and_examples",
    "tests/test_packaging.py::test_the_wheel_carries_py_typed_and_the_license",
    "tests/test_packaging.py::test_the_wheel_with_its_declared_dependencies_alone_checks_and_lints",
    "tests/test_packaging.py::test_the_installed_wheel_works_from_a_fresh_environment",
    "tests/test_docs.py::test_the_readme_is_short",
    "tests/test_docs.py::test_the_settings_tables",
    "tests/test_docs.py::test_every_exception",
    "tests/test_docs.py::test_the_site_builds",
    "tests/test_docs.py::test_the_shell_runner",
    "tests/test_pytest_plugin.py::test_pytest_plugin_is_inert_unless_asked",
    "tests/test_pytest_plugin.py::test_a_marker_sets_one_tests_policy_under_the_plugin",
    "tests/test_pytest_plugin.py::test_a_kwshim_option_without_kwshim_is_a_usage_error",
    "tests/test_pytest_plugin.py::test_a_bad_kwshim_variable_fails_the_switch_in_one_line_and_nothing_else",
    "tests/test_pytest_plugin.py::test_the_header_names_every_setting_in_force",
    # the summary gathered from xdist's workers: the door's; each release's counts are [workers0]'s
    "tests/test_pytest_plugin.py::test_the_summary_counts_batched_launches_and_names_each_fallback_with_its_counts"
    "[workers1]",
    "tests/test_pytest_plugin.py::test_the_plugin_names_a_missing_triton_as_a_usage_error",
    "tests/test_runner.py::test_kwshim_run_module",
    "tests/test_runner.py::test_kwshim_run_reports_the_targets_exception_with_status_1",
    "tests/test_runner.py::test_kwshim_run_passes_verify_tolerances_to_the_switch",
    "tests/test_runner.py::test_kwshim_run_refuses_a_negative_tolerance_with_status_2",
    "tests/test_runner.py::test_kwshim_run_passes_everything_after_the_script_verbatim_as_python_does",
    "tests/test_runner.py::test_kwshim_run_names_a_missing_target_in_one_line_with_status_2",
    "tests/test_runner.py::test_kwshim_run_finds_a_module_and_a_directory_where_python_does",
    "tests/test_runner.py::test_kwshim_run_help_explains_the_policies_and_triton_interpret",
    "tests/test_runner.py::test_kwshim_run_without_triton_says_so_in_one_line_with_status_2",
    "tests/test_compiled.py::test_the_engine_is_numba_exactly_where_numba_imports",
    "tests/test_compiled.py::test_the_compiled_fma_rounds_as_the_numpy_fma",
    "tests/test_compiled.py::test_exp_and_exp2_chunk_by_chunk_give_whole_array_passes_bits_and_the_c_librarys",
    "tests/test_compiled.py::test_the_compiled_lane_sum_adds_as_the_numpy_lane_order",
    "tests/test_compiled.py::test_the_compiled_lane_scan_adds_as_the_numpy_lane_order",
    "tests/test_compiled.py::test_compiled_bf16_rounding_",
    "tests/test_compiled.py::test_compiled_fp16_rounding_",
    "tests/test_compiled.py::test_compiled_widening_of_bf16_and_fp16_",
    "tests/test_batching_rules.py::test_the_program_axis_rule_is_exactly_what_program_axis_computes",
    "tests/test_batching_rules.py::test_no_operation_is_listed_twice_and_every_fallback_has_a_reason",
    "tests/test_virtual_cuda.py::test_a_second_gpu_fails_as_on_a_one_gpu_machine_naming_kwshim",
    "tests/test_virtual_cuda.py::test_autocast_on_cuda_computes_in_fp16_by_default_and_custom_fwd_casts",
    "tests/test_virtual_cuda.py::test_the_device_with_the_interpreter_off_is_one_line_at_each_door",
    "tests/test_docs.py::test_what_the_readme_runs_after_make_demo",
    "tests/test_docs.py::test_the_ci_page_says",
    "tests/test_docs.py::test_no_page_shows_a_directive",
    "tests/test_docs.py::test_the_api_page_documents",
    "tests/test_runner.py::test_kwshim_run_refuses_a_package_without_main",
    "tests/test_runner.py::test_kwshim_run_reads_an_abbreviated_option",
    "tests/test_packaging.py::test_the_interpreter_extras_keep_numpy_below_2_4",
    # numba's compiles of kwshim's loops, and the summary saying so: the door's, and kwshim's own loops
    "tests/test_pytest_plugin.py::test_the_summary_says_when_numba_compiled",
    "tests/test_pytest_plugin.py::test_under_grid_check_the_summary_says_how_many_launches_were_compared[workers1]",
    "tests/test_pytest_plugin.py::test_the_summary_counts_the_passed_tests_that_launched_no_kernel_and_an_option_"
    "lists_them[workers1]",
    "tests/test_pytest_plugin.py::test_kwshim_no_kernel_without_kwshim_is_a_usage_error",
    "tests/test_nvidia_smi.py::",
    "tests/test_moves.py::",  # torch's, under the device: no kernel runs
    # torch's CPU paths by instruction set, under the device: no kernel runs
    "tests/test_device_tensors.py::test_the_half_matmul_rule_holds_on_every_instruction_set",
)
#: ...but for these, which read the installed Triton.
_RELEASE_DEPENDENT = ("tests/test_check.py::test_the_static_reserved_names_cover_the_installed_releases",)
#: Tests of an unedited third-party library's bits, each a subprocess of its own (17 s of a row's CPU):
#: marked ``release_sampled``, the matrix runs them in a few rows (``measure/matrix.py``: the oldest
#: 3.x, the H200's release and the newest). What they run through is the interpreter's path that
#: the rest of the suite covers under every release; Liger's sparsemax still runs in every 3.x row.
RELEASE_SAMPLED = (
    "tests/test_third_party.py::test_bare_interpreter_fails_it_where_reserved_keywords_are_dropped",
    "tests/test_third_party.py::test_liger_geglu_stores_the_h200_s_bits_under_kwshim_run",
    "tests/test_third_party.py::test_liger_kernels_store_the_h200_s_bits_where_measured_so",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "release_independent: no Triton release changes its outcome; the matrix "
                                       "runs it once")
    config.addinivalue_line("markers", "release_sampled: the matrix runs it under a few releases, not each")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(RELEASE_INDEPENDENT) and not item.nodeid.startswith(_RELEASE_DEPENDENT):
            item.add_marker(pytest.mark.release_independent)
        if item.nodeid.startswith(RELEASE_SAMPLED):
            item.add_marker(pytest.mark.release_sampled)
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
