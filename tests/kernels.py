"""Kernels shared by the tests. Each stores the values it received, so a test asserts a number.

Module-level kernels are reachable by reference (pickling); ``store_kernel`` writes a kernel
with any parameter names to a real file, because the newer interpreters read kernel source.
"""

import atexit
import functools
import importlib.util
import inspect
import os
import shutil
import tempfile

import pytest
import torch
import triton
import triton.language as tl

from kwshim import kwsafe

#: The contract suite also runs with no @kwsafe anywhere, under the switch (``pytest --kwshim``):
#: then ``kwsafe`` here hands every kernel back untouched.
WITHOUT_KWSAFE = os.environ.get("KWSHIM_SUITE_WITHOUT_KWSAFE") == "1"
if WITHOUT_KWSAFE:
    def kwsafe(kernel):  # noqa: F811
        return kernel


def _never_bench(kernel_call, quantiles=None):
    raise AssertionError("a single Config never benchmarks")


def autotune(configs, key):
    """``triton.autotune`` usable on a CPU-only machine. On 3.2-3.3 the Autotuner asks the GPU
    driver for a benchmarker at decoration unless given ``do_bench`` (and 3.2's ``autotune``
    drops that argument), so there the same Autotuner is built directly with one: a single
    Config never benchmarks."""
    extra = {"do_bench": _never_bench} if "do_bench" in inspect.signature(triton.autotune).parameters else {}

    def decorator(fn):
        try:
            return triton.autotune(configs=configs, key=key, **extra)(fn)
        except RuntimeError:  # "0 active drivers"
            from triton.runtime.autotuner import Autotuner

            return Autotuner(fn, fn.arg_names, configs, key, None, None, do_bench=_never_bench)

    return decorator


def _interpreter_runs_block_loads():
    @triton.jit
    def probe(x_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + 1)

    try:
        probe[(1,)](torch.zeros(2), 2)
    except AttributeError as exc:  # 2.2.0: 'Builder' object has no attribute 'target'
        return str(exc)
    return None


_block_loads_problem = []


def needs_block_loads(test):
    """Skip a test whose kernels use block loads and stores where this release's interpreter
    cannot run them (Triton 2.2.0, bare or not). Probed when the test runs, not at collection:
    2.2.0's interpreter patches modules in ways that upset other pytest plugins."""

    @functools.wraps(test)
    def guarded(*args, **kwargs):
        if not _block_loads_problem:
            _block_loads_problem.append(_interpreter_runs_block_loads())
        if _block_loads_problem[0] is not None:
            pytest.skip(f"this release's interpreter cannot run tl.arange loads: {_block_loads_problem[0]}")
        return test(*args, **kwargs)

    return guarded


@kwsafe
@triton.jit
def warps_stages(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    tl.store(out_ptr, num_warps * 10 + num_stages)


@kwsafe
@triton.jit
def warps_stages_defaults(out_ptr, num_warps: tl.constexpr = 1, num_stages: tl.constexpr = 1):
    tl.store(out_ptr, num_warps * 10 + num_stages)


@autotune(configs=[triton.Config({}, num_warps=4, num_stages=3)], key=[])
@kwsafe
@triton.jit
def autotuned_warps_stages(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    tl.store(out_ptr, num_warps * 10 + num_stages)


@autotune(configs=[triton.Config({}, num_warps=4, num_stages=3)], key=[])
@kwsafe
@triton.jit
def autotuned_defaults(out_ptr, num_warps: tl.constexpr = 1, num_stages: tl.constexpr = 1):
    """Its reserved parameters have defaults that the Config overrides."""
    tl.store(out_ptr, num_warps * 10 + num_stages)


@triton.heuristics({"num_stages": lambda args: args["num_warps"] + 1})
@kwsafe
@triton.jit
def heuristic_stages(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    tl.store(out_ptr, num_warps * 10 + num_stages)


@triton.heuristics({"scale": lambda args: 7})
@autotune(configs=[triton.Config({}, num_warps=2)], key=[])
@kwsafe
@triton.jit
def heuristic_over_autotune(out_ptr, num_warps: tl.constexpr, scale):
    """A heuristic for an ordinary parameter above an autotuner that gives num_warps."""
    tl.store(out_ptr, num_warps * 10 + scale)


@kwsafe
@triton.jit
def grid_param(out_ptr, grid: tl.constexpr, num_warps: tl.constexpr):
    tl.store(out_ptr, grid * 10 + num_warps)


@kwsafe
@triton.jit
def grid_param_default(out_ptr, num_warps: tl.constexpr, grid: tl.constexpr = 9):
    tl.store(out_ptr, grid * 10 + num_warps)


@kwsafe
@triton.jit
def plain_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """An ordinary kernel with no reserved parameter: kwsafe must not change it."""
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@kwsafe
@triton.jit
def times_scalar(x_ptr, out_ptr, eps):
    tl.store(out_ptr, tl.load(x_ptr) * eps)


@kwsafe
@triton.jit
def doubled_as_int64(out_ptr, n):
    tl.store(out_ptr, (n + n).to(tl.int64))


@kwsafe
@triton.jit
def annotated_int64_times(out_ptr, n: tl.int64, m):
    tl.store(out_ptr, n * m)


@kwsafe
@triton.jit(do_not_specialize=["n"])
def unspecialised_to_int64(out_ptr, n):
    tl.store(out_ptr, n.to(tl.int64) * 3)


@kwsafe
@triton.jit
def debug_param(out_ptr, debug: tl.constexpr = 5):
    """A parameter named as a keyword compiled ``run`` injects itself."""
    tl.store(out_ptr, debug)


@kwsafe
@triton.jit
def instrumentation_param(out_ptr, instrumentation_mode: tl.constexpr = 5):
    tl.store(out_ptr, 1 if instrumentation_mode == "" else 2)


def bare(kernel):
    """The jit kernel under a kwsafe kernel (walking autotune/heuristics)."""
    while not hasattr(kernel, "__wrapped__"):
        kernel = kernel.fn
    return kernel.__wrapped__


_generated = {}


def store_kernel(params, stored, defaults=None, wrap=True):
    """A kwsafe kernel ``k(out_ptr, *params)`` that stores the expression ``stored``.

    ``params`` are names (all ``tl.constexpr``), ``defaults`` maps some of them to a default.
    Kernels are written to a file once per signature and imported (the interpreter of newer
    releases reads the kernel's source).
    """
    defaults = defaults or {}
    declared = ", ".join(
        f"{name}: tl.constexpr" + (f" = {defaults[name]!r}" if name in defaults else "") for name in params)
    kernel = _load_generated(f"@triton.jit\ndef generated(out_ptr, {declared}):\n    tl.store(out_ptr, {stored})\n")
    return kernel if wrap else getattr(kernel, "__wrapped__", kernel)


def store_all_kernel(params, constexpr, defaults):
    """A kwsafe kernel ``k(out_ptr, *params)`` storing parameter i at ``out_ptr + i``; ``constexpr``
    flags which are ``tl.constexpr``; ``defaults`` maps some trailing names to a default."""
    declared = ", ".join(
        name + (": tl.constexpr" if is_constexpr else "") + (f" = {defaults[name]!r}" if name in defaults else "")
        for name, is_constexpr in zip(params, constexpr))
    body = "".join(f"    tl.store(out_ptr + {i}, {name})\n" for i, name in enumerate(params))
    return _load_generated(f"@triton.jit\ndef generated(out_ptr, {declared}):\n{body}")


@functools.lru_cache(maxsize=None)
def _generated_directory():
    """One directory a process writes its generated kernels into (their source must be a file's, for
    compiled Triton and ``inspect``), removed when the process ends."""
    directory = tempfile.mkdtemp(prefix="kwshim-kernels-")
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _load_generated(kernel_source):
    source = "import triton\nimport triton.language as tl\n\n" + kernel_source
    if source not in _generated:
        index = len(_generated)
        path = os.path.join(_generated_directory(), f"generated_{index}.py")
        with open(path, "w") as handle:
            handle.write(source)
        spec = importlib.util.spec_from_file_location(f"kwshim_generated_{index}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _generated[source] = kwsafe(module.generated)
    return _generated[source]


@kwsafe
@triton.jit
def plain_store(out_ptr, value):
    tl.store(out_ptr, value)
