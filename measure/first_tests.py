"""A pytest plugin for sampling a suite: only the first ``KWSHIM_SUITES_PER_FILE`` tests of each file
run, chosen as they are collected, in the process that runs them. A suite whose parameters are drawn
at random (FlagGems' ``test_diagonal_backward.py``) names its tests anew in each process, so a list of
node ids collected in another process finds nothing ("ERROR: not found"), and the whole run stops."""

import os


def pytest_collection_modifyitems(session, config, items):
    most = int(os.environ.get("KWSHIM_SUITES_PER_FILE", "0"))
    if not most:
        return
    taken, kept, dropped = {}, [], []
    for item in items:
        path = item.nodeid.split("::")[0]
        taken[path] = taken.get(path, 0) + 1
        (kept if taken[path] <= most else dropped).append(item)
    items[:] = kept
    config.hook.pytest_deselected(items=dropped)
