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
