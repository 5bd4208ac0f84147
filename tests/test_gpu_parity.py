"""GPU parity: the same scenarios compiled on an NVIDIA GPU and interpreted under @kwsafe must
store the same values. Marked `gpu`; skipped where CUDA is absent (as in CI)."""

import os
import subprocess
import sys

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (CUDA) for compiled Triton"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_compiled_and_interpreted_store_the_same(tmp_path):
    report = tmp_path / "REPORT.md"
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, "-m", "parity.run", "--report", str(report),
                           *(["--interpreter-pythonpath", env["KWSHIM_INTERPRETER_PYTHONPATH"]]
                             if env.get("KWSHIM_INTERPRETER_PYTHONPATH") else [])],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = report.read_text()
    assert "DIFFERENT" not in text
    assert "kwsafe(k) is k (compiled): True" in text
    assert "torch.compile(fullgraph=True) of an autotuned @kwsafe kernel: True" in text


def test_the_caching_allocator_answers_as_recorded_for_the_virtual_device():
    import json

    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, "-m", "parity.allocations"], capture_output=True, text=True, cwd=ROOT,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(os.path.join(ROOT, "parity", "allocations_h200.json")) as handle:
        assert json.loads(done.stdout) == json.load(handle)


GPU_SUITE = '''
import torch, triton, triton.language as tl
import pytest
from kwshim import AutotuneSideEffectError, ConfigDivergenceError


@triton.jit
def accumulate(x_ptr, acc_ptr, SLOT: tl.constexpr):
    tl.atomic_add(acc_ptr, tl.load(x_ptr))


def test_missing_reset_to_zero_is_named_on_the_gpu():
    kernel = triton.autotune(configs=[triton.Config({"SLOT": i}) for i in range(3)], key=[])(accumulate)
    x, acc = torch.ones(1, device="cuda"), torch.zeros(1, device="cuda")
    with pytest.raises(AutotuneSideEffectError, match="reset_to_zero=\\\\['acc_ptr'\\\\]"):
        kernel[(1,)](x, acc)
    assert float(acc[0]) == 0.0


def test_a_hooked_kernel_passes_and_is_compiled():
    kernel = triton.autotune(configs=[triton.Config({"SLOT": i}) for i in range(3)], key=[],
                             reset_to_zero=["acc_ptr"])(accumulate)
    x, acc = torch.ones(1, device="cuda"), torch.zeros(1, device="cuda")
    kernel[(1,)](x, acc)
    assert float(acc[0]) == 1.0 and type(kernel.fn).__name__ == "JITFunction"
'''


def test_pytest_kwshim_verify_checks_compiled_autotuners_with_triton_interpret_0(tmp_path):
    (tmp_path / "test_gpu_verify.py").write_text(GPU_SUITE)
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    import importlib.metadata

    installed = any(e.value.startswith("kwshim") for e in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "kwshim.doors.pytest_plugin"]  # a checkout on PYTHONPATH: no entry point
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--kwshim",
                           "--kwshim-autotune", "verify", "test_gpu_verify.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
