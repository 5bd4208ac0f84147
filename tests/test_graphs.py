"""``virtual_cuda/graphs.py``: a CUDA graph captured on the virtual device replays its torch
operations and kernel launches on the same tensors, giving the bits of running its body again; a
host sync while capturing raises as CUDA raises."""

import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402
from kwshim.compat import module_wide_builder  # noqa: E402

needs_seam = pytest.mark.skipif(not module_wide_builder(), reason="2.x: kwshim's grid seam records no launch")


@triton.jit
def silu_mul(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * tl.sigmoid(a) * tl.load(b_ptr + offsets, mask=mask), mask=mask)


def _body(a, b):
    out = torch.empty_like(a)
    silu_mul[(triton.cdiv(a.numel(), 64),)](a, b, out, a.numel(), BLOCK=64)
    return (out * 2 + a).sum(0), out


@needs_seam
def test_a_replay_gives_the_bits_of_running_the_body_again_on_new_inputs():
    with kwshim.activate(device="cuda"):
        torch.manual_seed(0)
        a, b = torch.randn(300, device="cuda"), torch.randn(300, device="cuda")
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            total, out = _body(a, b)
        assert torch.cuda.is_current_stream_capturing() is False
        fresh_a, fresh_b = torch.randn(300, device="cuda"), torch.randn(300, device="cuda")
        a.copy_(fresh_a)
        b.copy_(fresh_b)
        graph.replay()
        expected_total, expected_out = _body(fresh_a, fresh_b)
        assert torch.equal(out, expected_out) and torch.equal(total, expected_total)
        a.fill_(1.0)
        graph.replay()  # again: the same tensors, the inputs' current values
        assert torch.equal(out, _body(torch.ones(300, device="cuda"), fresh_b)[1])


def test_a_host_sync_while_capturing_raises_as_cuda_raises():
    with kwshim.activate(device="cuda"):
        x = torch.ones(4, device="cuda")
        for sync in (lambda: x.sum().item(), lambda: x.cpu(), torch.cuda.synchronize):
            graph = torch.cuda.CUDAGraph()
            with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
                with torch.cuda.graph(graph):
                    sync()
        assert x.sum().item() == 4.0  # outside a capture, as before


def test_a_graph_never_captured_refuses_to_replay_and_make_graphed_callables_gives_the_callable():
    with kwshim.activate(device="cuda"):
        with pytest.raises(RuntimeError, match="never captured"):
            torch.cuda.CUDAGraph().replay()
        model = torch.nn.Linear(4, 4).cuda()
        graphed = torch.cuda.make_graphed_callables(model, (torch.randn(2, 4, device="cuda"),))
        x = torch.randn(2, 4, device="cuda")
        assert torch.equal(graphed(x), model(x))


def test_the_graph_names_are_as_they_were_after_the_switch():
    before = (torch.cuda.CUDAGraph, torch.cuda.graph, torch.cuda.make_graphed_callables)
    with kwshim.activate(device="cuda"):
        assert torch.cuda.CUDAGraph is not before[0]
    assert (torch.cuda.CUDAGraph, torch.cuda.graph, torch.cuda.make_graphed_callables) == before
