"""BindingPlan on plain Python signatures: the rules of compiled Triton's binder, exactly."""

import pytest

from kwshim.launch.binding import BindingPlan
from kwshim.errors import LaunchArgumentError, PlacementError, UnknownLaunchKeywordError

OPTIONS = {"grid", "warmup", "num_warps", "num_stages", "future_option"}


def signature(a, num_warps, num_stages=3, *, tail=9):
    pass


@pytest.fixture
def plan():
    return BindingPlan("k", signature, OPTIONS)


@pytest.mark.parametrize("args, kwargs, expected", [
    ((1, 2), {}, ((1, 2, 3), {"tail": 9})),
    ((1,), {"num_warps": 4}, ((1, 4, 3), {"tail": 9})),
    ((), {"a": 1, "num_warps": 4, "num_stages": 5, "tail": 6}, ((1, 4, 5), {"tail": 6})),
    ((1, 2, 7), {"future_option": True}, ((1, 2, 7), {"tail": 9})),
])
def test_binds_like_python(plan, args, kwargs, expected):
    assert plan.bind(*args, **kwargs) == expected


def test_any_option_name_a_future_triton_adds_reaches_a_parameter_of_that_name():
    def kernel(x, future_option):
        pass

    plan = BindingPlan("k", kernel, OPTIONS)
    assert plan.bind(1, future_option=8) == (1, 8)
    assert plan.arity == 2


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((1,), {}, LaunchArgumentError, "k() missing 1 required argument: 'num_warps'"),
    ((), {}, LaunchArgumentError, "k() missing 2 required arguments: 'a' and 'num_warps'"),
    ((1, 2), {"a": 3}, LaunchArgumentError, "k() got multiple values for argument 'a'"),
    ((1, 2, 3, 4), {}, LaunchArgumentError, "k() takes 3 positional arguments but 4 were given"),
    ((1, 2), {"bogus": 1}, UnknownLaunchKeywordError,
     "Keyword argument bogus was specified but unrecognised: k() has no parameter 'bogus' and it is "
     "not a launch option of the installed Triton"),
    ((1, 2), {"x": 1, "y": 2}, UnknownLaunchKeywordError,
     "Keyword arguments x, y were specified but unrecognised: k() has no parameter 'x' or 'y' and "
     "they are not launch options of the installed Triton"),
    ((1,), {"bogus": 1}, LaunchArgumentError, "k() missing 1 required argument: 'num_warps'"),
])
def test_faults_name_kernel_and_parameter_in_compiled_order(plan, args, kwargs, error, message):
    with pytest.raises(error) as info:
        plan.bind(*args, **kwargs)
    assert type(info.value) is error
    assert str(info.value) == message


def test_generated_names_never_collide_with_parameters():
    def kernel(_kwshim_options, _kwshim_known, _kwshim_refuse, _kwshim_defaults=1):
        pass

    plan = BindingPlan("k", kernel, OPTIONS)
    assert plan.bind(1, 2, 3, num_warps=4) == (1, 2, 3, 1)
    with pytest.raises(UnknownLaunchKeywordError):
        plan.bind(1, 2, 3, nope=1)


def test_variadic_kernels_are_refused():
    def kernel(a, *rest):
        pass

    with pytest.raises(PlacementError, match=r"declares \*rest"):
        BindingPlan("k", kernel, OPTIONS)


def test_generated_binders_show_their_source_and_name_the_kernel():
    import inspect
    import traceback

    def kernel(a, num_warps=4):
        pass

    plan = BindingPlan("kernel", kernel, OPTIONS)
    source = inspect.getsource(plan.fast_bind)
    assert source.startswith("def kernel(a, num_warps=")
    assert plan.fast_bind.__qualname__.endswith("kernel.<kwshim binder>")
    assert plan.fast_bind.__module__ == __name__
    try:
        plan.fast_bind(1, bogus=2)
    except TypeError as exc:
        shown = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    assert f'File "<kwshim binder of {__name__}.' in shown and "\n    _kwshim_refuse()\n" in shown


def test_launch_errors_carry_no_internal_chain(plan):
    with pytest.raises(UnknownLaunchKeywordError) as info:
        plan.bind(1, 2, bogus=1)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(LaunchArgumentError) as info:
        plan.bind(1, 2, a=1)
    assert info.value.__suppress_context__
