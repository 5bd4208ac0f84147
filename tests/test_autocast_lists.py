"""``virtual_cuda/autocast_lists.py``: ``torch.autocast("cuda")`` on the virtual device gives the
dtypes CUDA's autocast gives, held to the H200's rows (``parity/cuda_state_h200.json``, "autocast"),
gradients included, and the CPU's own autocast is as it was after the switch."""

import json
import os
import warnings

import pytest

torch = pytest.importorskip("torch")

import kwshim  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_autocast_row_is_the_h200_s():
    from parity import cuda_state

    with open(os.path.join(ROOT, "parity", "cuda_state_h200.json")) as recorded:
        h200 = json.load(recorded)["autocast"]
    with kwshim.activate(device="cuda"), warnings.catch_warnings():
        warnings.simplefilter("error")  # autocast("cuda", dtype=torch.float32) warns on a CPU: not here
        found = cuda_state.autocast(torch)
    assert found == h200


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_s_fp32_lists_apply_to_low_precision_inputs_and_gradients_flow(dtype):
    with kwshim.activate(device="cuda"):
        x = torch.randn(4, 8, device="cuda", dtype=dtype, requires_grad=True)
        with torch.autocast("cuda", dtype=dtype):
            outputs = {"layer_norm": torch.nn.functional.layer_norm(x, (8,)), "softmax": torch.softmax(x, -1),
                       "log_softmax": torch.log_softmax(x, -1), "sum": x.sum(), "cumsum": torch.cumsum(x, 0),
                       "exp": torch.exp(x), "pow": x.pow(2), "mse_loss": torch.nn.functional.mse_loss(x, x.detach()),
                       "mm": x @ x.detach().T}
        assert {name: out.dtype for name, out in outputs.items()} == {
            **{name: torch.float32 for name in outputs}, "mm": dtype}
        sum(out.float().sum() for out in outputs.values()).backward()
        assert x.grad.dtype == dtype and x.grad.is_cuda and torch.isfinite(x.grad).all()


def test_the_cpu_s_autocast_is_its_own_after_the_switch():
    x = torch.randn(4, 8).half()
    with torch.autocast("cpu", dtype=torch.float16):
        before = torch.nn.functional.layer_norm(x, (8,)).dtype
    with kwshim.activate(device="cuda"):
        with torch.autocast("cpu", dtype=torch.float16):  # while the device is on, "cpu" is "cuda"'s
            assert torch.nn.functional.layer_norm(x, (8,)).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.float16):
        assert torch.nn.functional.layer_norm(x, (8,)).dtype == before == torch.float16
