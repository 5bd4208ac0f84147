"""pytest plugin (entry point ``pytest11``): ``pytest --kwshim [--kwshim-autotune POLICY] ...``.

Inert unless ``--kwshim`` is given or the ini file says ``kwshim = true``. When on, it sets
``TRITON_INTERPRET=1`` where unset and switches kwshim on before any test module (or conftest)
is imported, as pytest-cov starts coverage, and switches it off when the session ends. Each
setting of ``settings.FIELDS`` is ``--kwshim-NAME`` and the ini key ``kwshim_NAME``; start-up
problems are pytest warnings (pytest captures stderr at start-up, so a printed line is lost).
Under ``grid="batched"`` or ``"check"`` the terminal summary says how many launches ran batched and
which kernels fell back to the loop, and why, gathered from every xdist worker too.
"""

import os
from typing import Any, Dict

import pytest

from ..errors import TritonNotFoundError
from ..settings import FIELDS, POLICIES, Settings

_HANDLE_KEY = "_kwshim_handle"
_WORKER_KEY = "kwshim_grid"
_RECORDS_KEY = "_kwshim_worker_grid_records"


class KwshimStartUpWarning(UserWarning):
    """A start-up problem that makes kernels fail, or run where they should not, under --kwshim."""


def pytest_addoption(parser):
    group = parser.getgroup("kwshim", "kwshim: run Triton kernels on the CPU as compiled Triton binds them")
    group.addoption("--kwshim", action="store_true", default=None,
                    help="switch kwshim on: every interpreted kernel binds as under @kwsafe, "
                         "autotuners tune on the CPU")
    parser.addini("kwshim", type="bool", default=False, help="switch kwshim on (as --kwshim)")
    for field in FIELDS:
        flag, dest = field.flag("kwshim-"), f"kwshim_{field.name}"
        if field.is_switch:
            group.addoption(flag, dest=dest, action="store_false", default=None,
                            help=f"{field.help} (this flag turns it off)")
            parser.addini(dest, type="bool", default=field.default, help=field.help)
        else:
            group.addoption(flag, dest=dest, default=None, choices=field.choices or None, type=field.value_type,
                            help=field.help)
            parser.addini(dest, default=str(field.default), help=f"{field.help} (as {flag})")


def _wanted(config):
    namespace = getattr(config, "known_args_namespace", None) or config.option
    if getattr(namespace, "kwshim", None):
        return True
    return bool(config.getini("kwshim"))


def _settings(config, **chosen) -> Settings:
    """The settings of the command line, else of the ini file, else the defaults; ``chosen`` wins."""
    namespace = getattr(config, "known_args_namespace", None) or config.option
    values: Dict[str, Any] = {}
    for field in FIELDS:
        value = getattr(namespace, f"kwshim_{field.name}", None)
        if value is None:
            value = config.getini(f"kwshim_{field.name}")
            if isinstance(field.default, float):
                try:
                    value = float(value)
                except ValueError:
                    raise pytest.UsageError(f"kwshim_{field.name} = {value!r}: not a number") from None
            elif isinstance(field.default, str):
                value = value or field.default
        values[field.name] = value
    values.update(chosen)
    try:
        return Settings(**values)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if not _wanted(early_config):
        return
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from . import preflight
    from .switch import activate_with

    settings = _settings(early_config)
    try:
        problems = preflight.start_up_problems()
    except TritonNotFoundError as exc:
        raise pytest.UsageError(f"kwshim: {exc}") from None
    for line in problems:
        early_config.issue_config_time_warning(KwshimStartUpWarning(f"kwshim: {line}"), stacklevel=2)
    problem = preflight.interpreter_store_problem()
    if problem:  # loud, before any test shows only wrong numbers
        raise pytest.UsageError(f"kwshim: {problem}")
    setattr(early_config, _HANDLE_KEY, activate_with(settings))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"kwshim_autotune(policy): the autotune policy for this test under --kwshim "
                   f"({', '.join(POLICIES)}), e.g. 'all' for a kernel whose output depends on a Config value by design")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """``@pytest.mark.kwshim_autotune("all")``: the test's body runs under that policy (a nested
    handle), so one kernel or test can leave ``verify`` while the rest of the suite keeps it."""
    marker = item.get_closest_marker("kwshim_autotune")
    if marker is None or getattr(item.config, _HANDLE_KEY, None) is None:
        yield
        return
    policy = marker.args[0] if marker.args else marker.kwargs.get("policy")
    if policy not in POLICIES:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.kwshim_autotune({policy!r}): choose one of "
                                f"{', '.join(POLICIES)}")
    from .switch import activate_with

    with activate_with(_settings(item.config, autotune=policy)):
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


def pytest_sessionfinish(session):
    """An xdist worker hands its grid record to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and getattr(session.config, _HANDLE_KEY, None) is not None:
        from ..interpreter.grid import launch_record

        workeroutput[_WORKER_KEY] = launch_record()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    record = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    if record:
        records = getattr(node.config, _RECORDS_KEY, [])
        records.append(record)
        setattr(node.config, _RECORDS_KEY, records)


def pytest_terminal_summary(terminalreporter, config):
    if getattr(config, _HANDLE_KEY, None) is None:
        return
    from ..interpreter.grid import launch_record, merge_records, summary_lines

    for line in summary_lines(merge_records([launch_record()] + getattr(config, _RECORDS_KEY, []))):
        terminalreporter.write_line(line)
