"""The launch rules of compiled Triton that the interpreter lacks (measured on an H200 with
compiled 3.6.0): option values checked by the backend, keywords compiled ``run`` injects,
``stream``, ``.run`` needing ``warmup``, pre-run hooks, list grids, keyword-only parameters."""

import pytest
import triton
import triton.language as tl

import kwshim
from kwshim import LaunchArgumentError, LaunchOptionError, UnknownLaunchKeywordError, UnsupportedSignatureError
from kwshim import compat as _triton
from kwshim.launch import options

from . import kernels
from .kernels import debug_param, instrumentation_param, kwsafe, store_kernel

GRID = (1,)


def stored(out):
    return int(out[0])


@pytest.fixture
def target():
    """Set a target for one test; restore none afterwards."""
    yield kwshim.set_target
    kwshim.set_target(None)


def needs_backends():
    if not options.backends():
        pytest.skip("this Triton has no backend option classes to validate with (2.2.0)")


# -- option values, as the backend checks them ----------------------------------------------

@pytest.mark.parametrize("launch", ["option", "parameter"])
def test_num_warps_not_a_power_of_two_is_refused_naming_kernel_option_and_value(out, launch):
    needs_backends()
    kernel = kernels.warps_stages if launch == "parameter" else kernels.plain_store
    args = (out, 1) if launch == "option" else (out,)
    with pytest.raises(LaunchOptionError) as info:
        kernel[GRID](*args, num_warps=3, **({"num_stages": 1} if launch == "parameter" else {}))
    assert isinstance(info.value, AssertionError)
    message = str(info.value)
    assert message.startswith(f"{kernel.fn.__name__}(): launch option num_warps=3 is refused")
    assert "num_warps must be a power of 2" in message
    assert stored(out) == 0


def test_on_the_virtual_h200_a_value_is_refused_by_the_cuda_backend_alone(out):
    """Under ``device="cuda"`` the target is the stated GPU's: its reason alone, not every backend's."""
    needs_backends()
    if "cuda" not in options.installed_targets():
        pytest.skip("this Triton has no cuda backend")
    if kwshim.active_settings() is not None:
        pytest.skip("the outermost activation decides the device (the switch suite's: none)")
    with kwshim.activate(device="cuda"):
        with pytest.raises(LaunchOptionError) as info:
            kernels.plain_store[GRID](out.cuda(), 1, num_warps=3)
    message = str(info.value)
    assert message.startswith("plain_store(): launch option num_warps=3 is refused by the cuda backend: "), message
    assert "hip" not in message and message.count("refused") == 1, message


def test_an_accepted_value_does_not_vouch_for_an_equal_value_of_another_type(out):
    needs_backends()
    kernels.plain_store[GRID](out, 1, num_warps=4)  # accepted: its verdict is remembered
    with pytest.raises(LaunchOptionError, match=r"num_warps=4\.0 is refused"):
        kernels.plain_store[GRID](out, 2, num_warps=4.0)  # 4.0 == 4, but the backend refuses a float
    assert stored(out) == 1


def test_a_positional_value_is_not_an_option(out):
    kernels.warps_stages[GRID](out, 3, 1)  # compiled Triton reads options from keywords only
    assert stored(out) == 31


def test_a_config_value_is_checked_too(out):
    needs_backends()
    kernel = kernels.autotune(configs=[triton.Config({}, num_warps=6)], key=[])(store_kernel(["x"], "x"))
    with pytest.raises(AssertionError, match="num_warps=6 is refused"):
        kernel[GRID](out, 1)


def test_amd_only_option_is_unknown_for_the_cuda_target_and_accepted_with_none(out, target):
    needs_backends()
    if "hip" not in options.installed_targets() or "cuda" not in options.installed_targets():
        pytest.skip("needs both the cuda and hip backends installed")
    kernels.plain_store[GRID](out, 5, waves_per_eu=2)
    assert stored(out) == 5
    target("cuda")
    with pytest.raises(UnknownLaunchKeywordError, match="Keyword argument waves_per_eu was specified but unrecognised"):
        kernels.plain_store[GRID](out, 6, waves_per_eu=2)
    target("hip")
    kernels.plain_store[GRID](out, 7, waves_per_eu=2)
    assert stored(out) == 7


def test_an_unknown_target_is_refused(target):
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        target("tpu")


def test_stream_is_refused_as_compiled_triton_refuses_it(out):
    with pytest.raises(LaunchOptionError, match="stream option is deprecated; current stream will be used"):
        kernels.plain_store[GRID](out, 1, stream=0)
    assert stored(out) == 0


# -- keywords compiled run injects ------------------------------------------------------------

def injected(name):
    found = _triton.injected_keywords().get(name)
    if found is None:
        pytest.skip(f"compiled run of this Triton does not inject '{name}'")
    return found


def test_debug_parameter_binds_as_compiled_run_injects_it(out):
    value, caller_wins = injected("debug")
    if value is None:
        pytest.skip("this release injects debug=None, which a kernel cannot store")
    debug_param[GRID](out)
    assert stored(out) == int(value)  # the injected value, not the default 5
    with pytest.raises(LaunchArgumentError, match=r"debug_param\(\) got multiple values for argument 'debug'"):
        debug_param[GRID](out, 7)
    debug_param[GRID](out, debug=7)
    assert stored(out) == (7 if caller_wins else int(value))


def test_instrumentation_mode_parameter_sees_the_injected_value(out):
    value, _ = injected("instrumentation_mode")
    assert value == ""
    instrumentation_param[GRID](out)
    assert stored(out) == 1


# -- launch paths -----------------------------------------------------------------------------

def test_run_needs_warmup_where_compiled_run_does(out):
    if not _triton.run_requires_warmup():
        pytest.skip("this Triton's compiled run takes no required warmup")
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'warmup'"):
        kernels.plain_store.run(out, 3, grid=GRID)


def test_a_list_grid_launches(out):
    kernels.plain_store[[1]](out, 9)
    assert stored(out) == 9
    kernels.plain_store.run(out, 8, grid=[1], warmup=False)
    assert stored(out) == 8


def test_a_grid_callable_returning_a_list_launches(out):
    kernels.plain_store[lambda meta: [1]](out, 7)
    assert stored(out) == 7
    kernels.plain_store.run(out, 6, grid=lambda meta: [1], warmup=False)
    assert stored(out) == 6


def test_pre_run_hooks_receive_what_compiled_triton_gives_them(out):
    kernel = store_kernel(["a"], "a + 40", wrap=False)
    if not hasattr(kernel, "add_pre_run_hook"):
        pytest.skip("this Triton's interpreter has no pre-run hooks (3.6+)")
    kernel = kwsafe(kernel)
    calls = []
    kernel.add_pre_run_hook(lambda *args, **kwargs: calls.append((args, kwargs)))
    try:
        kernel[GRID](out, a=1)
    finally:
        getattr(kernel, "__wrapped__", kernel).pre_run_hooks.clear()
    assert stored(out) == 41
    assert len(calls) == 1
    args, kwargs = calls[0]
    assert len(args) == 1 and args[0] is out
    assert set(kwargs) == {"a"} | set(_triton.injected_keywords()) and kwargs["a"] == 1


# -- keyword-only and variadic parameters -----------------------------------------------------

@triton.jit
def keyword_only(out_ptr, *, num_warps: tl.constexpr = 1, X: tl.constexpr = 1):
    tl.store(out_ptr, num_warps * 10 + X)


@triton.jit
def variadic(out_ptr, *vals):
    tl.store(out_ptr, 1)


def test_keyword_only_parameters_are_refused_where_the_compiler_refuses_them(out):
    if "keyword_only" in _triton.compiler_accepts():
        kernel = kwsafe(keyword_only)
        kernel[GRID](out, num_warps=4, X=5)
        assert stored(out) == 45  # 3.9: the launched values reach them
        return
    with pytest.raises(UnsupportedSignatureError) as info:
        kwshim.kwsafe(keyword_only)
        keyword_only[GRID](out, num_warps=4)  # under the switch the refusal comes at launch
    assert "keyword_only() declares the keyword-only parameter 'num_warps'" in str(info.value)
    assert stored(out) == 0


def test_variadic_kernels_are_refused_with_a_message_true_for_the_release():
    with pytest.raises(UnsupportedSignatureError) as info:
        kwshim.kwsafe(variadic)
    message = str(info.value)
    assert "variadic() declares *vals" in message
    if "variadic" in _triton.compiler_accepts():
        assert "accepts variadic kernels" in message
    else:
        assert "takes no variadic kernel parameters" in message
