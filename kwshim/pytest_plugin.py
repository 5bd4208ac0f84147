"""pytest plugin (entry point ``pytest11``): ``pytest --kwshim [--kwshim-autotune POLICY]``.

Inert unless ``--kwshim`` is given or the ini file says ``kwshim = true``. When on, it sets
``TRITON_INTERPRET=1`` where unset and switches kwshim on before any test module (or conftest)
is imported, as pytest-cov starts coverage, and switches it off when the session ends.
"""

import os

import pytest

_POLICIES = ("first", "all", "verify")
_HANDLE_KEY = "_kwshim_handle"


def pytest_addoption(parser):
    group = parser.getgroup("kwshim", "kwshim: run Triton kernels on the CPU as compiled Triton binds them")
    group.addoption("--kwshim", action="store_true", default=None,
                    help="switch kwshim on: every interpreted kernel binds as under @kwsafe, "
                         "autotuners tune on the CPU")
    group.addoption("--kwshim-autotune", choices=_POLICIES, default=None,
                    help="autotune policy under --kwshim: first, all (default) or verify")
    group.addoption("--kwshim-rtol", type=float, default=None,
                    help="verify: relative tolerance for floating-point tensors (default 1e-05)")
    group.addoption("--kwshim-atol", type=float, default=None,
                    help="verify: absolute tolerance for floating-point tensors (default 1e-08)")
    group.addoption("--kwshim-no-equal-nan", dest="kwshim_equal_nan", action="store_false", default=None,
                    help="verify: NaN in the same place counts as a difference (by default it agrees)")
    parser.addini("kwshim", type="bool", default=False, help="switch kwshim on (as --kwshim)")
    parser.addini("kwshim_autotune", default="all", help="autotune policy under kwshim (first, all, verify)")
    parser.addini("kwshim_rtol", default="1e-05", help="verify: relative tolerance (as --kwshim-rtol)")
    parser.addini("kwshim_atol", default="1e-08", help="verify: absolute tolerance (as --kwshim-atol)")
    parser.addini("kwshim_equal_nan", type="bool", default=True,
                  help="verify: NaN in the same place agrees (false: as --kwshim-no-equal-nan)")


def _wanted(config):
    namespace = getattr(config, "known_args_namespace", None) or config.option
    if getattr(namespace, "kwshim", None):
        return True
    return bool(config.getini("kwshim"))


def _policy(config):
    namespace = getattr(config, "known_args_namespace", None) or config.option
    policy = getattr(namespace, "kwshim_autotune", None) or config.getini("kwshim_autotune") or "all"
    if policy not in _POLICIES:
        raise pytest.UsageError(f"kwshim_autotune = {policy!r}: choose one of {', '.join(_POLICIES)}")
    return policy


def _tolerances(config):
    """rtol, atol and equal_nan for ``activate``: the command line's, else the ini file's."""
    namespace = getattr(config, "known_args_namespace", None) or config.option
    found = {}
    for name in ("rtol", "atol"):
        value = getattr(namespace, f"kwshim_{name}", None)
        if value is None:
            text = config.getini(f"kwshim_{name}")
            try:
                value = float(text)
            except ValueError:
                raise pytest.UsageError(f"kwshim_{name} = {text!r}: not a number") from None
        found[name] = value
    equal_nan = getattr(namespace, "kwshim_equal_nan", None)
    found["equal_nan"] = config.getini("kwshim_equal_nan") if equal_nan is None else equal_nan
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if not _wanted(early_config):
        return
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from .runner import interpreter_store_problem, warn_start_up_problems
    from .switch import activate

    warn_start_up_problems()
    problem = interpreter_store_problem()
    if problem:  # loud, before any test shows only wrong numbers
        raise pytest.UsageError(f"kwshim: {problem}")

    try:
        handle = activate(autotune=_policy(early_config), **_tolerances(early_config))
    except ValueError as exc:  # a tolerance below zero
        raise pytest.UsageError(str(exc)) from None
    setattr(early_config, _HANDLE_KEY, handle)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kwshim_autotune(policy): the autotune policy for this test under --kwshim (first, all, verify), "
                   "e.g. 'all' for a kernel whose output depends on a Config value by design")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """``@pytest.mark.kwshim_autotune("all")``: the test's body runs under that policy (a nested
    handle), so one kernel or test can leave ``verify`` while the rest of the suite keeps it."""
    marker = item.get_closest_marker("kwshim_autotune")
    if marker is None or getattr(item.config, _HANDLE_KEY, None) is None:
        yield
        return
    policy = marker.args[0] if marker.args else marker.kwargs.get("policy")
    if policy not in _POLICIES:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.kwshim_autotune({policy!r}): choose one of "
                                f"{', '.join(_POLICIES)}")
    from .switch import activate

    with activate(autotune=policy, **_tolerances(item.config)):
        yield


def pytest_report_header(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        return f"kwshim: switch on, autotune {handle.settings!r}"
    return None


def pytest_unconfigure(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        handle.deactivate()
