"""A pytest plugin for measuring suites on a GPU: each test's count of compiled Triton launches, as
the junit property ``kernel_launches``, so that a pass here that launched nothing can be held to
the GPU's (``measure/suites.py --h200``; ``-p kernel_launches`` with ``measure/`` on the path).

A launch is a call of ``JITFunction.run`` (``kernel[grid](...)``, an autotuner's) or of a compiled
kernel kept and launched again (``CompiledKernel.__getitem__``/``run``: FlagGems' ``LibEntry``).
"""

import functools

import pytest

_COUNT = [0]


def _counting(method):
    @functools.wraps(method)
    def counted(*args, **kwargs):
        _COUNT[0] += 1
        return method(*args, **kwargs)

    return counted


def pytest_configure(config):
    from triton.runtime.jit import JITFunction

    JITFunction.run = _counting(JITFunction.run)
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        return
    if "__getitem__" in vars(CompiledKernel):
        CompiledKernel.__getitem__ = _counting(CompiledKernel.__getitem__)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _COUNT[0]
    item.stash[_KEY] = before
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if call.when == "call":
        item.user_properties.append(("kernel_launches", _COUNT[0] - item.stash.get(_KEY, _COUNT[0])))


_KEY = pytest.StashKey[int]()
