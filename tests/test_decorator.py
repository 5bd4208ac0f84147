"""@kwsafe on the CPU interpreter: every launch path stores the values compiled Triton gives."""

import copy
import os
import pickle
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import KwsafeKernel, LaunchArgumentError, PlacementError, UnknownLaunchKeywordError, kwsafe
from kwshim import compat as _triton
from kwshim.launch import options

from . import kernels
from .kernels import autotune, needs_block_loads, store_kernel

GRID = (1,)


def stored(out):
    return int(out[0])


# -- the seed example ------------------------------------------------------------------------

def _seed_source(a_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    a = tl.load(a_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * num_stages, mask=mask)


@autotune(configs=[triton.Config({}, num_stages=2, num_warps=1)], key=["BLOCK_SIZE"])
@kwsafe
@triton.jit
def simple_kernel(a_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    a = tl.load(a_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * num_stages, mask=mask)


@needs_block_loads
def test_seed_example_gets_num_stages_from_the_config():
    a = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    simple_kernel[GRID](a, out, 8, BLOCK_SIZE=8)
    assert out.tolist() == [2.0 * i for i in range(8)]


# -- where values come from -----------------------------------------------------------------

def test_config_values_reach_declared_reserved_parameters(out):
    kernels.autotuned_warps_stages[GRID](out)
    assert stored(out) == 43


def test_config_overrides_parameter_defaults(out):
    kernels.autotuned_defaults[GRID](out)
    assert stored(out) == 43


def test_default_used_only_when_no_value_is_given(out):
    kernels.warps_stages_defaults[GRID](out)
    assert stored(out) == 11
    kernels.warps_stages_defaults[GRID](out, num_warps=8)
    assert stored(out) == 81


def test_direct_launch_keywords_reach_reserved_parameters(out):
    kernels.warps_stages[GRID](out, num_warps=8, num_stages=5)
    assert stored(out) == 85


def test_positional_values_bind_in_declared_order(out):
    kernels.warps_stages[GRID](out, 7, 2)
    assert stored(out) == 72
    kernels.warps_stages[GRID](out, 6, num_stages=3)
    assert stored(out) == 63
    kernels.warps_stages[GRID](out_ptr=out, num_stages=4, num_warps=2)
    assert stored(out) == 24


def test_heuristic_values_reach_reserved_parameters(out):
    kernels.heuristic_stages[GRID](out, num_warps=2)
    assert stored(out) == 23


def test_autotuned_kernel_without_reserved_parameters(out):
    # Bare, 2.3.x fails every autotuned launch ('warmup') and 3.2.0 too ('num_buffers_warp_spec').
    kernel = autotune(configs=[triton.Config({"scale": 6}, num_warps=2)], key=[])(
        store_kernel(["scale"], "scale * 7"))
    kernel[GRID](out)
    assert stored(out) == 42


def test_heuristic_above_autotune(out):
    kernels.heuristic_over_autotune[GRID](out)
    assert stored(out) == 27


@pytest.mark.parametrize("name", ["num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion"])
def test_every_reserved_name_reaches_its_parameter(out, name):
    kernel = store_kernel([name], name)
    kernel[GRID](out, **{name: 8})
    assert stored(out) == 8


def test_every_launch_option_of_the_installed_triton_reaches_a_parameter_of_that_name(out):
    # 4 is a valid value of the numeric options; for the others (paths, tuples) the backend's own
    # checks refuse it, as compiled Triton would, so those names are bound only where 4 passes them.
    names = sorted(_triton.launch_options() - {"grid", "warmup"} - set(_triton.injected_keywords()))
    bound = []
    for name in names:
        try:
            options.check("k", {name: 4})
        except AssertionError:
            continue
        kernel = store_kernel([name], name)
        kernel[GRID](out, **{name: 4})
        assert stored(out) == 4, name
        bound.append(name)
    assert {"num_warps", "num_stages"} <= set(bound)


def test_launch_options_that_are_not_parameters_are_consumed(out):
    kernels.warps_stages[GRID](out, 1, 2, num_ctas=1, enable_fp_fusion=False)
    assert stored(out) == 12
    options = {name: None for name in _triton.launch_options() - {"grid", "warmup", "num_warps", "num_stages"}}
    kernels.warps_stages[GRID](out, 3, 4, **options)
    assert stored(out) == 34


@needs_block_loads
def test_a_kernel_without_reserved_parameters_is_unchanged():
    x = torch.arange(5, dtype=torch.float32)
    out = torch.zeros(5)
    kernels.plain_copy[GRID](x, out, 5, BLOCK=8, num_warps=4)
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_callable_grid_sees_every_bound_parameter(out):
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (1,)

    kernels.autotuned_warps_stages[grid](out)
    assert (seen["num_warps"], seen["num_stages"]) == (4, 3)
    assert stored(out) == 43


# -- the .run and warmup paths ----------------------------------------------------------------

def test_run_path(out):
    kernels.warps_stages.run(out, num_warps=4, num_stages=3, grid=GRID, warmup=False)
    assert stored(out) == 43


def test_run_with_warmup_binds_but_does_not_launch(out):
    assert kernels.warps_stages.run(out, num_warps=4, num_stages=3, grid=GRID, warmup=True) is None
    assert stored(out) == 0
    with pytest.raises(LaunchArgumentError, match="missing 1 required argument: 'num_stages'"):
        kernels.warps_stages.run(out, num_warps=4, grid=GRID, warmup=True)


@pytest.mark.kwsafe_api
def test_warmup_method_exactly_where_the_kernel_has_one(out):
    bare = kernels.bare(kernels.warps_stages)
    assert hasattr(kernels.warps_stages, "warmup") == hasattr(bare, "warmup")
    if hasattr(bare, "warmup"):
        kernels.warps_stages.warmup(out, 1, 2, grid=GRID)
        assert stored(out) == 0


# -- a parameter named grid -------------------------------------------------------------------

def test_grid_parameter_given_positionally(out):
    kernels.grid_param[GRID](out, 5, 2)
    assert stored(out) == 52


def test_grid_parameter_by_keyword_is_a_duplicate_as_in_compiled_triton(out):
    with pytest.raises(TypeError, match=r"grid_param\(\) got multiple values for keyword argument 'grid'"):
        kernels.grid_param[GRID](out, grid=5, num_warps=2)


def test_grid_parameter_through_run_and_its_default(out):
    kernels.grid_param.run(out, 4, 3, grid=GRID, warmup=False)
    assert stored(out) == 43
    kernels.grid_param_default[GRID](out, num_warps=4)
    assert stored(out) == 94


# -- bad launches -----------------------------------------------------------------------------

def test_missing_required_parameter_names_kernel_and_parameter(out):
    with pytest.raises(LaunchArgumentError) as info:
        kernels.warps_stages[GRID](out, num_warps=2)
    assert str(info.value) == "warps_stages() missing 1 required argument: 'num_stages'"
    assert isinstance(info.value, TypeError)


def test_several_missing_parameters_are_listed(out):
    with pytest.raises(LaunchArgumentError, match=r"warps_stages\(\) missing 2 required arguments: "
                                                  r"'num_warps' and 'num_stages'"):
        kernels.warps_stages[GRID](out)


def test_value_given_positionally_and_by_keyword(out):
    with pytest.raises(LaunchArgumentError,
                       match=r"warps_stages\(\) got multiple values for argument 'num_warps'"):
        kernels.warps_stages[GRID](out, 1, 2, num_warps=3)


def test_value_given_positionally_and_by_config(out):
    with pytest.raises(TypeError, match="got multiple values for argument 'num_warps'"):
        kernels.autotuned_warps_stages[GRID](out, 8)


def test_value_given_by_caller_and_by_config(out):
    # Triton's own Autotuner merges the caller's keywords with the Config's: Python refuses it.
    with pytest.raises(TypeError, match="multiple values for keyword argument 'num_warps'"):
        kernels.autotuned_warps_stages[GRID](out, num_warps=8)


def test_too_many_positional_values(out):
    with pytest.raises(LaunchArgumentError,
                       match=r"warps_stages\(\) takes 3 positional arguments but 4 were given"):
        kernels.warps_stages[GRID](out, 1, 2, 3)


def test_unknown_keyword_is_refused_as_keyerror_and_typeerror(out):
    with pytest.raises(UnknownLaunchKeywordError) as info:
        kernels.warps_stages[GRID](out, 1, 2, bogus=3)
    assert isinstance(info.value, KeyError) and isinstance(info.value, TypeError)
    assert "Keyword argument bogus was specified but unrecognised" in str(info.value)
    assert "warps_stages() has no parameter 'bogus'" in str(info.value)
    assert info.value.keywords == ("bogus",)
    assert stored(out) == 0  # nothing ran


@pytest.mark.parametrize("clause", [KeyError, TypeError])
def test_unknown_keyword_caught_by_either_clause(out, clause):
    with pytest.raises(clause):
        kernels.autotuned_warps_stages[GRID](out, num_wraps=3)


def test_binding_errors_come_before_unknown_keywords(out):
    with pytest.raises(LaunchArgumentError) as info:
        kernels.warps_stages[GRID](out, num_warps=1, bogus=3)
    assert not isinstance(info.value, UnknownLaunchKeywordError)
    assert "missing 1 required argument: 'num_stages'" in str(info.value)


def test_run_without_grid_is_refused(out):
    with pytest.raises(TypeError, match="grid"):
        kernels.warps_stages.run(out, 1, 2, warmup=False)


# -- placement ------------------------------------------------------------------------------

@pytest.mark.kwsafe_api
def test_kwsafe_with_parentheses(out):
    kernel = kwsafe()(store_kernel(["num_warps"], "num_warps", wrap=False))
    assert isinstance(kernel, KwsafeKernel)
    kernel[GRID](out, num_warps=8)
    assert stored(out) == 8


@pytest.mark.kwsafe_api
def test_kwsafe_twice_is_a_no_op():
    assert kwsafe(kernels.warps_stages) is kernels.warps_stages


def _plain(out_ptr, num_warps):
    pass


@pytest.mark.parametrize("thing, described", [
    (_plain, "plain function _plain() (is @kwsafe written below @triton.jit?)"),
    (int, "the class int"),
    (None, "got None"),
    (42, "an object of type int"),
])
def test_anything_but_a_kernel_is_refused_with_where_kwsafe_goes(thing, described):
    with pytest.raises(PlacementError) as info:
        kwsafe(thing)
    assert isinstance(info.value, TypeError)
    assert described in str(info.value)
    assert "@kwsafe goes directly above @triton.jit and below @triton.autotune" in str(info.value)


def test_kwsafe_written_below_jit_is_refused():
    with pytest.raises(PlacementError, match="below @triton.jit"):
        @triton.jit
        @kwsafe
        def kernel(out_ptr, num_warps: tl.constexpr):
            pass


# -- compiled mode and interpreter detection --------------------------------------------------

def test_compiled_mode_returns_the_kernel_itself(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    compiled = triton.jit(_seed_source)
    assert isinstance(compiled, _triton.kernel_classes().jit)
    assert kwsafe(compiled) is compiled
    assert kwsafe()(compiled) is compiled


@pytest.mark.kwsafe_api
def test_interpreter_switched_on_by_knobs_is_detected_from_the_kernel(monkeypatch, out):
    knobs = getattr(triton, "knobs", None)
    if knobs is None or not hasattr(knobs.runtime, "interpret"):
        pytest.skip("this Triton has no triton.knobs.runtime.interpret (added in 3.4)")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with knobs.runtime.scope():
        knobs.runtime.interpret = True
        kernel = kwsafe(store_kernel(["num_warps"], "num_warps * 2", wrap=False))
    assert isinstance(kernel, KwsafeKernel)
    kernel[GRID](out, num_warps=4)
    assert stored(out) == 8


def test_triton_without_interpreter_is_reported_as_unsupported(monkeypatch):
    classes = _triton.kernel_classes()
    monkeypatch.setattr(_triton, "kernel_classes", lambda: classes._replace(interpreted=None))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    compiled = triton.jit(_seed_source)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(kwshim.UnsupportedTritonError, match="has no interpreter"):
        kwsafe(compiled)


# -- transparency ---------------------------------------------------------------------------

@pytest.mark.kwsafe_api
def test_attributes_read_through():
    kernel, bare = kernels.warps_stages, kernels.bare(kernels.warps_stages)
    assert isinstance(kernel, type(bare))
    assert kernel.fn is bare.fn
    assert kernel.arg_names == ["out_ptr", "num_warps", "num_stages"]
    assert kernel.__name__ == "warps_stages"
    assert kernel.__wrapped__ is bare
    assert kernels.autotuned_defaults.fn.fn.__doc__ == \
        "Its reserved parameters have defaults that the Config overrides."


@pytest.mark.kwsafe_api
def test_hash_and_equality_are_stable():
    kernel = kernels.warps_stages
    another_proxy = KwsafeKernel(kernel.__wrapped__)
    assert another_proxy is not kernel
    assert hash(kernel) == hash(kernel.__wrapped__) == hash(another_proxy)
    assert kernel == kernel.__wrapped__ and kernel == another_proxy
    assert kernel != kernels.warps_stages_defaults and kernel != kernels.bare(kernels.warps_stages_defaults)
    assert {kernel: 1}[another_proxy] == 1 and {kernel.__wrapped__: 2}[kernel] == 2


@pytest.mark.kwsafe_api
def test_repr_says_it_is_wrapped():
    assert repr(kernels.warps_stages).startswith("<kwsafe ")


@pytest.mark.kwsafe_api
@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy])
def test_copies_keep_the_fix(out, duplicate):
    clone = duplicate(kernels.warps_stages)
    assert isinstance(clone, KwsafeKernel)
    clone[GRID](out, num_warps=2, num_stages=9)
    assert stored(out) == 29


@pytest.mark.kwsafe_api
def test_deep_copied_autotuner_keeps_the_fix(out):
    clone = copy.deepcopy(kernels.autotuned_warps_stages)
    assert isinstance(clone.fn, KwsafeKernel)
    clone[GRID](out)
    assert stored(out) == 43


@pytest.mark.kwsafe_api
def test_pickle_by_reference(out):
    for kernel in (kernels.warps_stages, kernels.autotuned_warps_stages.fn):
        assert pickle.loads(pickle.dumps(kernel)) is kernel
    pickle.loads(pickle.dumps(kernels.warps_stages))[GRID](out, 3, 3)
    assert stored(out) == 33


@pytest.mark.kwsafe_api
def test_pickling_a_kernel_not_reachable_by_name_says_why():
    local = store_kernel(["num_warps"], "num_warps + 100")
    with pytest.raises(pickle.PicklingError, match="pickle by reference"):
        pickle.dumps(local)


# -- without triton ---------------------------------------------------------------------------

def test_without_triton_import_works_and_kwsafe_names_the_missing_module():
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import kwshim\n"
        "try:\n    kwshim.kwsafe(lambda: 0)\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc.name, '|', exc)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(kwshim.__file__))))
    assert result.stdout.startswith("TritonNotFoundError triton |")
    assert "'triton' module" in result.stdout and "pytorch-triton-rocm" in result.stdout
