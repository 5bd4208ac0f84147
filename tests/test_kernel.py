"""``launch/kernel.py``: one kernel's launch paths, shared by ``@kwsafe``, the in-place fix and the
switch, and the table that keeps them per kernel object."""

import os
import subprocess
import sys
import textwrap

import torch
import triton
import triton.language as tl

from kwshim.launch.kernel import LaunchPaths, paths_of

from ._subprocess import environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@triton.jit
def _store_sum(out_ptr, a, b: tl.constexpr):
    tl.store(out_ptr, a + b)


def test_paths_are_built_once_per_kernel_object_and_bind_keywords():
    paths = paths_of(_store_sum)
    assert paths_of(_store_sum) is paths and isinstance(paths, LaunchPaths)
    out = torch.zeros(1, dtype=torch.int32)
    paths.launcher_for((1,))(out, b=3, a=4)
    assert int(out[0]) == 7
    paths.run(out, 1, b=2, grid=(1,), warmup=False)
    assert int(out[0]) == 3


def test_a_process_that_exits_with_kernels_alive_prints_nothing_at_shutdown(tmp_path):
    """The table's weak references are called back while the interpreter shuts down, after the
    module's globals are gone: no 'Exception ignored' after the program's last line."""
    (tmp_path / "alive.py").write_text(textwrap.dedent("""
        import torch, triton, triton.language as tl
        import kwshim

        kernels = []
        for i in range(20):
            @triton.jit
            def k(out_ptr, num_warps: tl.constexpr):
                tl.store(out_ptr, num_warps)
            kernels.append(kwshim.kwsafe(k))
        with kwshim.activate():
            out = torch.zeros(1, dtype=torch.int32)
            for kernel in kernels:
                kernel[(1,)](out, num_warps=4)
        print("last line", int(out[0]))
    """))
    done = subprocess.run([sys.executable, "alive.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(TRITON_INTERPRET="1"), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "last line 4"
    assert "Exception ignored" not in done.stderr, done.stderr[-2000:]
