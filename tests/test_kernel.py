"""``launch/kernel.py``: one kernel's launch paths, shared by ``@kwsafe``, the in-place fix and the
switch, and the table that keeps them per kernel object."""

import torch
import triton
import triton.language as tl

from kwshim.launch.kernel import LaunchPaths, paths_of


@triton.jit
def _store_sum(out_ptr, a, b: tl.constexpr):
    tl.store(out_ptr, a + b)


def test_paths_are_built_once_per_kernel_object_and_bind_keywords():
    paths = paths_of(_store_sum)
    assert paths_of(_store_sum) is paths and isinstance(paths, LaunchPaths)
    out = torch.zeros(1, dtype=torch.int32)
    paths.launcher_for((1,), _store_sum)(out, b=3, a=4)
    assert int(out[0]) == 7
    paths.run(out, 1, b=2, grid=(1,), warmup=False)
    assert int(out[0]) == 3


def _stores_one(out_ptr):
    tl.store(out_ptr, 1)


def test_the_table_of_paths_keeps_no_kernel_alive():
    """A kernel launched under the switch (kernels made in a test, in a loop) is freed when its
    last reference goes, and its paths with it."""
    import gc

    import kwshim
    from kwshim.launch import kernel as kernel_module

    kernel = triton.jit(_stores_one)
    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate():
        kernel[(1,)](out)
        kernel.run(out, grid=(1,), warmup=False)
    key = id(kernel)
    assert int(out[0]) == 1 and key in kernel_module._PATHS
    del kernel
    gc.collect()
    assert key not in kernel_module._PATHS


def test_forgetting_a_dead_kernel_needs_no_module_global(monkeypatch):
    """At interpreter shutdown module globals become None before the last kernels die; the table's
    weak-reference callback must not need them ('Exception ignored in ... forget' after pytest's
    summary line, otherwise)."""
    from kwshim.launch import kernel as kernel_module

    kernel = triton.jit(_stores_one)
    paths_of(kernel)
    table = kernel_module._PATHS
    reference = table[id(kernel)][0]
    monkeypatch.setattr(kernel_module, "_PATHS", None)  # as the interpreter leaves it at shutdown
    reference.__callback__(reference)  # what the weak reference calls when the kernel dies
    monkeypatch.undo()
    assert id(kernel) not in table


def test_a_launcher_holds_its_kernel_as_compiled_triton_s_does():
    """``make_kernel()[grid](...)``: nothing else holds the kernel, and the launcher keeps it alive
    (before, the table's weak reference was dead by the call: 'NoneType' has no 'pre_run_hooks')."""
    import gc

    import kwshim

    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate():
        launcher = triton.jit(_stores_one)[(1,)]
        gc.collect()
        launcher(out)
    assert int(out[0]) == 1
