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
    parser.addini("kwshim", type="bool", default=False, help="switch kwshim on (as --kwshim)")
    parser.addini("kwshim_autotune", default="all", help="autotune policy under kwshim (first, all, verify)")


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


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if not _wanted(early_config):
        return
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from .switch import activate

    setattr(early_config, _HANDLE_KEY, activate(autotune=_policy(early_config)))


def pytest_report_header(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        return f"kwshim: switch on, autotune policy {handle.settings.policy!r}"
    return None


def pytest_unconfigure(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        handle.deactivate()
