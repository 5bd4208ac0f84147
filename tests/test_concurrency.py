"""Threads, and leaving Triton alone."""

import os
import threading

import torch
import triton
import triton.language as tl

from kwshim import kwsafe

from . import kernels


def _body(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    tl.store(out_ptr, num_warps * 10 + num_stages)


def test_eight_threads_store_their_own_reserved_values():
    errors, wrong = [], []

    def worker(thread):
        for i in range(40):
            out = torch.zeros(1, dtype=torch.int32)
            warps, stages = 2 ** (thread % 4), i % 9
            try:
                kernels.warps_stages[(1,)](out, num_warps=warps, num_stages=stages)
            except Exception as exc:  # collected and asserted below
                errors.append(repr(exc))
                continue
            if int(out[0]) != warps * 10 + stages:
                wrong.append((warps, stages, int(out[0])))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and wrong == []


@kwsafe
@triton.jit
def _program_ids(out_ptr, base, num_warps: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + base + num_warps * 0)


@triton.jit
def _program_ids_bare(out_ptr, base, num_warps: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + base + num_warps * 0)


def _distinct_grids(kernel, launches=200):
    """8 threads, each launching with its own grid size: (errors, wrong results)."""
    errors, wrong = [], []

    def worker(thread):
        size = thread + 1
        for i in range(launches):
            out = torch.full((size,), -1, dtype=torch.int32)
            try:
                kernel[(size,)](out, 1000 * thread + i, num_warps=4)
            except Exception as exc:  # collected and asserted below
                errors.append(repr(exc)[:200])
                continue
            if out.tolist() != [1000 * thread + i + p for p in range(size)]:
                wrong.append((thread, i, out.tolist()))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors, wrong


def test_eight_threads_with_distinct_grids_under_kwsafe_all_store_right():
    errors, wrong = _distinct_grids(_program_ids)
    assert errors == [] and wrong[:3] == []


def test_eight_threads_with_distinct_grids_under_the_switch_all_store_right():
    import kwshim

    with kwshim.activate():
        errors, wrong = _distinct_grids(_program_ids_bare)
    assert errors == [] and wrong[:3] == []


def _overlapping_launches(first, second):
    """Overlap two launches so that `first` finishes while `second` is inside the interpreter
    (a grid callable runs while triton.language is patched); return the errors raised.

    Without serialization: `first` patches, `second` patches, `first` finishes and undoes the
    patching, `second` runs its kernel unpatched. With it, `second` waits for `first`."""
    first_inside, second_inside, first_done = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def first_grid(meta):
        first_inside.set()
        second_inside.wait(2)  # times out where launches are serialized
        return (1,)

    def second_grid(meta):
        second_inside.set()
        first_done.wait(5)
        return (1,)

    def launch(kernel, grid, done=None):
        try:
            kernel[grid](torch.zeros(1, dtype=torch.int32), 1, 2)
        except Exception as exc:  # collected for the assertion
            errors.append(repr(exc))
        finally:
            if done is not None:
                done.set()

    holder = threading.Thread(target=launch, args=(first, first_grid, first_done))
    holder.start()
    first_inside.wait(5)
    launch(second, second_grid)
    holder.join()
    return errors


def _interpreter_restores_patches():
    from triton.runtime import interpreter

    return hasattr(interpreter, "_LangPatchScope")  # 3.6+: patches undone after each launch


def test_bare_interpreter_is_not_thread_safe_where_it_restores_its_patches():
    """Documents Triton's own race (not kwshim's): on releases whose interpreter undoes its
    patching of triton.language after each launch, two overlapping launches break each other."""
    first, second = triton.jit(_body), triton.jit(_body)
    errors = _overlapping_launches(first, second)
    if _interpreter_restores_patches():
        assert errors and "Did you forget to add @triton.jit" in errors[0]
    else:
        assert errors == []


def test_kwsafe_launches_are_serialized_so_overlap_is_safe():
    first, second = kwsafe(triton.jit(_body)), kwsafe(triton.jit(_body))
    assert _overlapping_launches(first, second) == []


MODULES = ("triton.runtime.interpreter", "triton.runtime.autotuner", "triton.runtime.jit")


def test_triton_modules_are_untouched_by_importing_and_using_kwshim():
    import subprocess
    import sys

    # A fresh interpreter: snapshot Triton, import kwshim, decorate and launch, snapshot again.
    code = f"""
import os; os.environ["TRITON_INTERPRET"] = "1"
import importlib, torch, triton, triton.language as tl
MODULES = {MODULES!r}
def snapshot():
    snap = {{}}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if callable(value):
                snap[(name, attr)] = value
                if isinstance(value, type):
                    for member, inner in vars(value).items():
                        snap[(name, attr, member)] = inner
    return snap
before = snapshot()
import kwshim
from tests.kernels import autotune
@autotune(configs=[triton.Config({{}}, num_warps=2)], key=[])
@kwshim.kwsafe
@triton.jit
def k(out_ptr, num_warps: tl.constexpr):
    tl.store(out_ptr, num_warps)
out = torch.zeros(1, dtype=torch.int32)
k[(1,)](out)
assert int(out[0]) == 2
after = snapshot()
changed = [key for key in before if after.get(key) is not before[key]]
print(len(before), "changed:", changed)
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    count, _, changed = result.stdout.strip().partition(" changed: ")
    assert int(count) > 50 and changed == "[]"
