"""pytest plugin (entry point ``pytest11``): ``pytest --kwshim [--kwshim-autotune POLICY] ...``.

Inert unless ``--kwshim`` is given or the ini file says ``kwshim = true``; a ``--kwshim-NAME``
option without it is a usage error (a user would believe it acted). When on, it sets
``TRITON_INTERPRET=1`` where unset and switches kwshim on before any test module (or conftest)
is imported, as pytest-cov starts coverage, and switches it off when the session ends. Each
setting of ``settings.FIELDS`` is ``--kwshim-NAME`` and the ini key ``kwshim_NAME`` (the command
line wins, then the ini file, then ``KWSHIM_NAME`` and the default). Start-up problems are written
when the session starts (pytest captures stderr while plugins start, so a printed line is lost).
Under ``grid="batched"`` or ``"check"`` the terminal summary says how many launches ran batched and
which kernels fell back to the loop, and why, gathered from every xdist worker too. Each xdist
worker takes its share of the machine's cores for torch's threads (``worker_threads``).
"""

import os
import sys
from typing import Any, Dict

import pytest

from ..errors import TritonNotFoundError
from ..settings import FIELDS, POLICIES, parse_text

_HANDLE_KEY = "_kwshim_handle"
_COMPILES_KEY = "kwshim_numba_compiles"
_PROBLEMS_KEY = "_kwshim_start_up_problems"
_WORKER_KEY = "kwshim_grid"
_IDLE_KEY = "kwshim_no_kernel"  #: (passed tests, those of them that launched no kernel), a worker's
_LAUNCHES = pytest.StashKey[int]()
_RECORDS_KEY = "_kwshim_worker_grid_records"


def pytest_addoption(parser):
    group = parser.getgroup("kwshim", "kwshim: run Triton kernels on the CPU as compiled Triton binds them")
    group.addoption("--kwshim", action="store_true", default=None,
                    help="switch kwshim on: every interpreted kernel binds as under @kwsafe, "
                         "autotuners tune on the CPU")
    parser.addini("kwshim", type="bool", default=False, help="switch kwshim on (as --kwshim)")
    group.addoption("--kwshim-no-kernel", action="store_true", default=False,
                    help="list the passed tests that launched no Triton kernel (the summary counts them)")
    for field in FIELDS:
        flag, dest = field.flag("kwshim-"), f"kwshim_{field.name}"
        if field.is_switch:
            group.addoption(flag, dest=dest, action="store_false", default=None,
                            help=f"{field.help} (this flag turns it off)")
        else:
            group.addoption(flag, dest=dest, default=None, choices=field.choices or None, type=field.value_type,
                            help=field.help)
        # A string, "" when unset, so that an unset key leaves the setting to KWSHIM_NAME and the default.
        parser.addini(dest, default="", help=f"{field.help} ({'true or false' if field.is_switch else 'as ' + flag})")


def _namespace(config):
    return getattr(config, "known_args_namespace", None) or config.option


def _given_options(config):
    """The ``--kwshim-NAME`` options on the command line."""
    namespace = _namespace(config)
    return [field.flag("kwshim-") for field in FIELDS if getattr(namespace, f"kwshim_{field.name}", None) is not None] \
        + (["--kwshim-no-kernel"] if getattr(namespace, "kwshim_no_kernel", False) else [])


def _wanted(config):
    if getattr(_namespace(config), "kwshim", None):
        return True
    return bool(config.getini("kwshim"))


def _named(config) -> Dict[str, Any]:
    """The settings this session names: the command line's, else the ini file's. The switch
    completes them (``settings.resolve``: ``KWSHIM_NAME``, then the defaults)."""
    namespace = _namespace(config)
    values: Dict[str, Any] = {}
    for field in FIELDS:
        value = getattr(namespace, f"kwshim_{field.name}", None)
        key = f"kwshim_{field.name}"
        text = config.getini(key) if value is None else ""
        if text.strip():
            try:
                value = parse_text(field, text)
            except ValueError as exc:
                raise pytest.UsageError(f"{key} = {text!r}: {str(exc).replace('kwshim: ', '', 1)}") from None
        if value is not None:
            values[field.name] = value
    return values


def _activate(config):
    from .switch import activate_with

    try:
        return activate_with(_named(config))
    except (TypeError, ValueError, RuntimeError) as exc:
        if str(exc).startswith("kwshim:"):
            raise pytest.UsageError(str(exc)) from None
        raise


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if not _wanted(early_config):
        given = _given_options(early_config)
        if given:
            one = len(given) == 1
            raise pytest.UsageError(f"kwshim: {' '.join(given)} {'needs' if one else 'need'} --kwshim (without it "
                                    f"kwshim is off and {'it does' if one else 'they do'} nothing)")
        return
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from . import preflight, worker_threads

    worker_threads.share_cores(loaded=sys.modules.get("torch"))  # before the switch loads torch

    try:
        problems = preflight.start_up_problems()
    except TritonNotFoundError as exc:
        raise pytest.UsageError(f"kwshim: {exc}") from None
    problem = preflight.interpreter_store_problem()
    if problem:  # loud, before any test shows only wrong numbers
        raise pytest.UsageError(f"kwshim: {problem}")
    setattr(early_config, _HANDLE_KEY, _activate(early_config))
    setattr(early_config, _PROBLEMS_KEY, problems)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    """The start-up problems, written as the session starts (``-q`` included), by the controller."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    for line in getattr(session.config, _PROBLEMS_KEY, ()):
        reporter.write_line(f"kwshim: {line}", yellow=True)


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

    with activate_with({"autotune": policy}):  # the rest is the session's
        yield


def _launch_total():
    """Interpreted launches through the grid seam so far in this process, or None where the seam
    does not count them (2.x, or the interpreter off): then no test is called idle."""
    from .. import compat

    if not (compat.interpreter_on() and compat.module_wide_builder()):
        return None
    counts = sys.modules.get("kwshim.batching.launch_counts")
    return 0 if counts is None else counts.total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    if getattr(item.config, _HANDLE_KEY, None) is not None:
        total = _launch_total()
        if total is not None:
            item.stash[_LAUNCHES] = total
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A passed test is counted; one that launched no kernel from its setup to its end is named."""
    report = (yield).get_result()
    before = item.stash.get(_LAUNCHES, None)
    if call.when != "call" or before is None or not report.passed:
        return
    passed, idle = getattr(item.config, _IDLE_KEY, (0, []))
    idle = idle + [item.nodeid] if _launch_total() == before else idle
    setattr(item.config, _IDLE_KEY, (passed + 1, idle))


def pytest_report_header(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        return f"kwshim: on, {handle.settings.describe()}"
    return None


def pytest_unconfigure(config):
    handle = getattr(config, _HANDLE_KEY, None)
    if handle is not None:
        handle.deactivate()


def pytest_sessionfinish(session):
    """An xdist worker hands its grid record to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and getattr(session.config, _HANDLE_KEY, None) is not None:
        from ..batching.programs import launch_record

        workeroutput[_WORKER_KEY] = launch_record()
        workeroutput[_COMPILES_KEY] = _numba_compiles()
        workeroutput[_IDLE_KEY] = getattr(session.config, _IDLE_KEY, (0, []))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    passed, idle = getattr(node, "workeroutput", {}).get(_IDLE_KEY, (0, []))
    if passed:
        mine = getattr(node.config, _IDLE_KEY, (0, []))
        setattr(node.config, _IDLE_KEY, (mine[0] + passed, mine[1] + list(idle)))
    compiles = getattr(node, "workeroutput", {}).get(_COMPILES_KEY)
    if compiles:
        setattr(node.config, _COMPILES_KEY, [*getattr(node.config, _COMPILES_KEY, []), compiles])
    record = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
    if record:
        records = getattr(node.config, _RECORDS_KEY, [])
        records.append(record)
        setattr(node.config, _RECORDS_KEY, records)


def pytest_terminal_summary(terminalreporter, config):
    if getattr(config, _HANDLE_KEY, None) is None:
        return
    from ..batching.programs import launch_record, merge_records

    checking = getattr(config, _HANDLE_KEY).settings.grid == "check"
    for line in _summary_lines(merge_records([launch_record()] + getattr(config, _RECORDS_KEY, [])), checking):
        terminalreporter.write_line(line)
    passed, idle = getattr(config, _IDLE_KEY, (0, []))
    if passed:
        listing = "" if config.getoption("kwshim_no_kernel") else " (--kwshim-no-kernel lists them)"
        terminalreporter.write_line(f"kwshim: {len(idle)} of {passed} passed tests launched no Triton kernel{listing}",
                                    yellow=bool(idle))
        if config.getoption("kwshim_no_kernel"):
            for nodeid in sorted(idle):
                terminalreporter.write_line(f"  {nodeid}")
    compiles = [_numba_compiles()] + getattr(config, _COMPILES_KEY, [])
    loops, seconds = sum(count for count, _ in compiles), sum(spent for _, spent in compiles)
    if loops:
        terminalreporter.write_line(
            f"kwshim: numba compiled {loops} of kwshim's loops in this run ({seconds:.1f} s): a first run's cost; "
            f"later runs load them from numba's disk cache (in CI, keep NUMBA_CACHE_DIR between runs)")


def _numba_compiles():
    """(loops, seconds) numba compiled for kwshim in this process; none where no loop was needed."""
    compiled = sys.modules.get("kwshim.arithmetic.compiled")
    return compiled.compile_record() if compiled is not None else (0, 0.0)


def _gib(size):
    return f"{size / 2 ** 30:g} GiB"


def _summary_lines(record: Dict[str, dict], checking: bool = False) -> list:
    """What ran batched and what fell back, and why, with counts (kernels and launches); under
    ``grid="check"`` (``checking``), how many launches were compared with the loop."""
    batched = sum(entry["batched"] for entry in record.values())
    replayed = sum(entry.get("replayed", 0) for entry in record.values())
    looped = sum(entry["looped"] for entry in record.values())
    total = batched + looped
    checked = sum(entry.get("checked", 0) for entry in record.values())
    large = sum(entry.get("too_large", 0) for entry in record.values())
    if large:
        from ..batching.programs import CHECK_MOST_BYTES
    too_large = f"; {large} launches ran the loop alone, their tensors over {_gib(CHECK_MOST_BYTES)} (too large " \
        f"to copy)" if large else ""
    compared = [f"kwshim grid=check: {checked} batched launches compared with Triton's loop bit for bit, "
                f"all the same{too_large}"] if checking else []
    if not total:
        return compared
    lines = [f"kwshim grid: {total} launches of 2+ programs, {batched} batched ({replayed} replayed a trace), "
             f"{looped} ran the loop ({100 * looped / total:.1f}%)"] + compared
    reasons: Dict[str, list] = {}
    for name, entry in record.items():
        if entry["reason"]:
            reasons.setdefault(entry["reason"], []).append((name, entry["looped"]))
    for reason, kernels in sorted(reasons.items(), key=lambda item: -sum(n for _, n in item[1])):
        names = ", ".join(sorted(name for name, _ in kernels))
        lines.append(f"  {reason}: {len(kernels)} kernel(s), {sum(n for _, n in kernels)} launches ({names})")
    return lines
