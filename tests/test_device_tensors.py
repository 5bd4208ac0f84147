"""The virtual GPU's tensors (``kwshim/virtual_cuda/device_tensor.py``): they say ``cuda:0``, copy
across the bus, refuse mixing with CPU tensors as CUDA does, keep themselves through autograd, and
reach kernels as their own memory."""

import copy
import io
import os
import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
try:  # torch imports it at a device tensor's first refused operation; Triton 2.2's interpreter, once it
    import torch.distributed.tensor  # noqa: F401  has run a kernel, leaves modules that break that import
except ImportError:
    pass
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import kwshim  # noqa: E402

from ._subprocess import dynamo_runs, environment  # noqa: E402
from .kernels import needs_block_loads  # noqa: E402


@triton.jit
def doubled_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@pytest.fixture
def device():
    with kwshim.activate(device="cuda"):
        yield


@pytest.fixture
def device_running_kernels():
    needs_block_loads(lambda: None)()  # probed before the device is on: the probe's tensor is the CPU's
    with kwshim.activate(device="cuda"):
        yield


def test_an_in_place_kernel_on_the_cuda_copy_leaves_the_cpu_reference_as_it_was(device_running_kernels):
    reference = torch.arange(8.0)
    on_gpu = reference.cuda()
    doubled_in_place[(1,)](on_gpu, 8, BLOCK=8)
    assert torch.equal(reference, torch.arange(8.0))  # before: .cuda() was the same tensor, doubled too
    back = on_gpu.cpu()
    assert type(back) is torch.Tensor and back.device.type == "cpu" and torch.equal(back, torch.arange(8.0) * 2)
    back.zero_()
    assert on_gpu.sum() == 56  # .cpu() copies too
    assert on_gpu.to("cuda") is on_gpu and on_gpu.cuda() is on_gpu  # already there: the tensor itself


def test_mixing_a_device_tensor_with_a_cpu_tensor_raises_torch_s_own_error(device):
    on_gpu, host = torch.ones(4, device="cuda"), torch.ones(4)
    parameter = torch.nn.Parameter(torch.ones(4))  # a CPU parameter: a subclass, not a device tensor
    for mixed in (lambda: on_gpu + host, lambda: torch.cat([on_gpu, host]), lambda: host * on_gpu,
                  lambda: torch.nn.functional.linear(on_gpu[None], torch.ones(3, 4)), lambda: on_gpu * parameter,
                  lambda: torch.add(on_gpu, on_gpu, out=torch.empty(4)), lambda: torch.stack((host, on_gpu))):
        with pytest.raises(RuntimeError) as caught:
            mixed()
        assert str(caught.value).startswith("Expected all tensors to be on the same device") \
            and "kwshim" in str(caught.value)
    assert torch.equal(on_gpu * torch.tensor(2.0), torch.full((4,), 2.0, device="cuda"))  # a 0-dim CPU tensor
    on_gpu.copy_(torch.arange(4.0))  # copies cross devices on CUDA too
    assert on_gpu[torch.tensor([3, 0])].tolist() == [3.0, 0.0]  # and indices may be on the CPU


def test_a_cpu_tensor_passed_to_a_kernel_is_refused_as_compiled_triton_refuses_it(device_running_kernels):
    host = torch.ones(8)
    with pytest.raises(ValueError) as caught:
        doubled_in_place[(1,)](host, 8, BLOCK=8)
    assert str(caught.value).startswith("Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)")
    assert "kwshim" in str(caught.value) and "'x_ptr'" in str(caught.value)
    assert torch.equal(host, torch.ones(8))  # refused before any program ran
    pinned = torch.ones(8, pin_memory=True)  # pinned host memory: a GPU reaches it
    doubled_in_place[(1,)](pinned, 8, BLOCK=8)
    assert pinned.is_pinned() and torch.equal(pinned, torch.full((8,), 2.0))
    pinned_later = torch.ones(8).pin_memory()
    doubled_in_place[(1,)](pinned_later, 8, BLOCK=8)
    assert pinned_later.sum() == 16


def test_autograd_s_gradients_are_device_tensors(device_running_kernels):
    captured = {}

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = torch.empty_like(x)
            out.copy_(x)
            doubled_in_place[(1,)](out, x.numel(), BLOCK=8)
            return out

        @staticmethod
        def backward(ctx, grad_output):
            captured["grad_output"] = grad_output.device
            return grad_output * 2

    x = torch.randn(8, device="cuda", requires_grad=True)
    Doubled.apply(x).sum().backward()
    assert captured["grad_output"] == torch.device("cuda", 0) and x.grad.device.type == "cuda"
    assert torch.equal(x.grad, torch.full((8,), 2.0, device="cuda"))
    host = torch.randn(3, requires_grad=True)  # .cuda() and .cpu() are differentiable, as on CUDA
    (host.cuda().cpu() * 3).sum().backward()
    assert host.grad.device.type == "cpu" and torch.equal(host.grad, torch.full((3,), 3.0))
    linear = torch.nn.Linear(4, 2).cuda()
    linear(torch.randn(5, 4, device="cuda")).sum().backward()
    assert linear.weight.grad.device.type == "cuda" and linear.bias.grad.tolist() == [5.0, 5.0]


def test_the_zeros_autograd_makes_for_an_unused_output_are_device_tensors():
    # a recurrent kernel's final state, returned beside its output and left out of the loss: a GPU
    # hands backward CUDA zeros for it, which a kernel launched with them takes
    seen = {}

    class TwoOutputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grad_out, grad_state):
            seen["devices"] = (grad_out.device, grad_state.device)
            seen["zeros"] = torch.equal(grad_state, torch.zeros_like(grad_state))
            return grad_out * 2 + grad_state

    function, node = vars(torch.autograd.function.Function)["apply"], \
        vars(torch.autograd.function.BackwardCFunction)["apply"]
    with kwshim.activate(device="cuda"):
        x = torch.randn(4, device="cuda", requires_grad=True)
        out, state = TwoOutputs.apply(x)
        out.sum().backward()
        assert seen["devices"] == (torch.device("cuda", 0),) * 2 and seen["zeros"]
        assert x.grad.device.type == "cuda" and x.grad.tolist() == [2.0] * 4
        host = torch.randn(4, requires_grad=True)  # a CPU Function's zeros stay the CPU's
        TwoOutputs.apply(host)[0].sum().backward()
        assert seen["devices"] == (torch.device("cpu"),) * 2
    assert vars(torch.autograd.function.Function)["apply"] is function  # restored exactly
    assert vars(torch.autograd.function.BackwardCFunction)["apply"] is node


@triton.jit
def plus_one(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + 1)


@pytest.fixture
def dynamo():
    if not dynamo_runs():
        pytest.skip("torch.compile does not run beside this Triton, without kwshim")


def test_a_compiled_function_runs_eagerly_on_the_device_and_compiles_again_after(dynamo):
    # flash-linear-attention's rwkv7 backward: @torch.compile(fullgraph=True) around torch code and a
    # kernel; Dynamo cannot trace a device tensor ("does not know how to trace method dim")
    @torch.compile(fullgraph=True)
    def shifted_difference(x, previous):
        if previous.dim() == 2:
            previous = previous.unsqueeze(1)
        shifted = torch.cat((previous, x[:, :-1]), dim=1) - x
        out = torch.empty_like(shifted)
        plus_one[(1,)](shifted, out, BLOCK=16)
        return out.sum(dim=0)

    @torch.compile(backend="eager", fullgraph=True)
    def compiling(x):
        return x + torch.compiler.is_compiling()

    x, previous = torch.randn(2, 8, 1), torch.randn(2, 1)
    expected = (torch.cat((previous.unsqueeze(1), x[:, :-1]), dim=1) - x + 1).sum(dim=0)
    needs_block_loads(lambda: None)()
    with kwshim.activate(device="cuda"):
        out = shifted_difference(x.cuda(), previous.cuda())
        assert out.device.type == "cuda" and torch.equal(out.cpu(), expected)
        assert compiling(torch.zeros(1)).item() == 0  # eager: not compiling
    assert compiling(torch.zeros(1)).item() == 1  # the switch off: Dynamo traces again


def test_modules_move_their_parameters_in_place_and_back(device):
    linear = torch.nn.Linear(4, 2)
    weight = linear.weight
    held = list(linear.parameters())  # as an optimizer made before holds them
    linear.cuda()
    assert linear.weight is weight and weight.device.type == "cuda" and held[0] is weight
    assert isinstance(weight, torch.nn.Parameter)
    assert {str(v.device) for v in linear.state_dict().values()} == {"cuda:0"}
    assert copy.deepcopy(linear).weight.device.type == "cuda"
    assert torch.nn.Linear(4, 2, device="cuda").weight.device.type == "cuda"
    assert torch.nn.Linear(4, 2).to("cuda", torch.float64).weight.dtype == torch.float64
    linear.cpu()
    assert linear.weight.device.type == "cpu" and type(linear.weight) is torch.nn.Parameter


def test_what_python_sees_of_a_device_tensor_is_what_cuda_shows(device):
    x = torch.tensor([1.5, -2.0], device="cuda")
    assert repr(x) == "tensor([ 1.5000, -2.0000], device='cuda:0')"
    assert repr(torch.ones(2, dtype=torch.int32, device="cuda")) == "tensor([1, 1], device='cuda:0', dtype=torch.int32)"
    y = torch.ones(2, device="cuda", requires_grad=True)
    assert repr(y * 2) == "tensor([2., 2.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(y) == "tensor([1., 1.], device='cuda:0', requires_grad=True)"
    assert x.tolist() == [1.5, -2.0] and x[0].item() == 1.5 and f"{x[1]:.1f}" == "-2.0"
    assert x.type() == "torch.cuda.FloatTensor"
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    torch.testing.assert_close(x, x.clone())
    with pytest.raises(AssertionError, match="device"):
        torch.testing.assert_close(x, x.cpu())
    assert torch.zeros_like(x, device="cpu").device.type == "cpu"


def test_a_device_tensor_s_new_tensors_are_on_the_device_unless_another_is_asked_for(device):
    """``cu_seqlens.new_tensor([0])`` (flash-linear-attention's tests) is CUDA's, as ``new_zeros`` is."""
    x = torch.tensor([0, 3, 7], device="cuda")
    made = [x.new_tensor([0]), x.new_tensor([1.5], dtype=torch.float32), x.new_zeros(2), x.new_ones(2),
            x.new_full((2,), 4), x.new_empty(2), x.new_empty_strided((2,), (1,))]
    assert [t.device.type for t in made] == ["cuda"] * 7
    assert made[0].tolist() == [0] and made[0].dtype == x.dtype and made[1].tolist() == [1.5]
    assert torch.cat([x.new_tensor([0]), x]).tolist() == [0, 0, 3, 7]
    assert x.new_tensor([0], device="cpu").device.type == "cpu" and x.cpu().new_tensor([0]).device.type == "cpu"


def test_factories_that_take_a_device_without_documenting_it_make_device_tensors(device):
    """``torch.scalar_tensor(1024, device="cuda")`` (FlagGems' ``test_masked_fill.py`` at import) and
    ``torch.normal(mean, std, size, device=...)``: their operators take a device, their docs do not say."""
    scalar = torch.scalar_tensor(1024, device="cuda")
    drawn = torch.normal(0.0, 1.0, (3,), device="cuda")
    assert (scalar.device.type, drawn.device.type) == ("cuda", "cuda") and scalar.item() == 1024.0
    assert torch.scalar_tensor(2, device="cpu").device.type == "cpu"


def test_torch_s_default_device_makes_device_tensors_as_it_makes_cuda_tensors():
    """``with torch.device("cuda"):`` (FlagGems' flash attention tests) and ``set_default_device``:
    torch's mode hands the device to the factories it knows by identity, which the patched ones are
    not, so ``torch.randn(3)`` there was a CPU tensor, silently."""
    with kwshim.activate(device="cuda"):
        with torch.device("cuda"):
            made = [torch.randn(3), torch.empty(2), torch.arange(3), torch.tensor([1.0]), torch.zeros(2, device="cpu")]
        assert [t.device.type for t in made] == ["cuda"] * 4 + ["cpu"] and torch.ones(1).device.type == "cpu"
        with torch.device("meta"):
            assert torch.zeros(2).device.type == "meta"
        torch.set_default_device("cuda")
        try:
            assert torch.zeros(2).device.type == "cuda"
        finally:
            torch.set_default_device(None)
        assert torch.zeros(2).device.type == "cpu"
    with torch.device("meta"):  # torch's own, after the switch
        assert torch.zeros(2).device.type == "meta"


def test_a_device_tensor_pickles_and_saves_as_one(device):
    x = torch.randn(3, device="cuda")
    for again in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert again.device.type == "cuda" and torch.equal(again, x)
    saved = io.BytesIO()
    torch.save({"x": x}, saved)
    saved.seek(0)
    loaded = torch.load(saved)["x"]  # weights_only, torch's default
    assert loaded.device.type == "cuda" and torch.equal(loaded, x)


def test_device_tensors_are_made_only_while_the_switch_is_on():
    with kwshim.activate(device="cuda"):
        kept = torch.ones(2, device="cuda")
    assert kept.device.type == "cuda"  # a tensor made then stays the device's
    assert type(torch.ones(2)) is torch.Tensor and not torch.ones(2).is_cuda
    with pytest.raises((RuntimeError, AssertionError)):  # torch's own: this build has no CUDA
        torch.ones(2, device="cuda")


@triton.jit
def ones_as_int(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.full((BLOCK,), 0x3F800000, tl.int32))  # the bits of 1.0 in fp32


def test_a_reinterpreted_device_tensor_reaches_the_kernel_as_its_memory():
    needs_block_loads(lambda: None)()
    host = torch.zeros(4)
    ones_as_int[(1,)](triton.reinterpret(host, tl.int32), BLOCK=4)
    if host.tolist() != [1.0] * 4:
        pytest.skip(f"this release's interpreter stores through triton.reinterpret as values: {host.tolist()}")
    with kwshim.activate(device="cuda"):
        on_gpu = torch.zeros(4, device="cuda")
        ones_as_int[(1,)](triton.reinterpret(on_gpu, tl.int32), BLOCK=4)
        assert on_gpu.tolist() == [1.0] * 4
        with pytest.raises(ValueError, match="cannot be accessed from Triton"):
            ones_as_int[(1,)](triton.reinterpret(torch.zeros(4), tl.int32), BLOCK=4)


def _recorded(name):
    """The answers of ``parity/<name>``, a GPU's record."""
    import json
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "parity", name)) as recorded:
        return json.load(recorded)["answers"]


def test_half_precision_log_softmax_rounds_once_as_cuda_with_the_h200_s_bits(device):
    """``parity/half_log_softmax.py`` on the H200: the device's bf16/fp16 ``log_softmax`` computes in
    fp32 and rounds once, as CUDA's kernel: the H200's bits in every element, where torch's CPU build
    differs in about a tenth; ``softmax`` and the bf16 cross entropy's gradient (``exp`` of the
    log-probabilities) too. ``half_to_float`` gives the fp32 result unrounded."""
    from parity import half_log_softmax

    answers = _recorded("half_log_softmax_h200.json")
    for index, case in enumerate(half_log_softmax.CASES):
        x, target = half_log_softmax.inputs(torch, case, index)
        on_cpu = half_log_softmax.compute(torch, case, x, target)  # kwshim leaves the CPU's own tensors alone
        on_device = half_log_softmax.compute(torch, case, x.cuda(), target.cuda())
        assert on_device.device.type == "cuda" and on_device.dtype == x.dtype
        h200 = half_log_softmax.patterns(torch, answers[index]["bits"])
        assert torch.equal(on_device.cpu().reshape(-1).view(torch.int16), h200), case
        if case[0] == "log_softmax":
            assert (on_cpu.reshape(-1).view(torch.int16) != h200).float().mean() > 0.05  # the CPU's rounds twice
    x = half_log_softmax.inputs(torch, half_log_softmax.CASES[0], 0)[0]
    widened = torch.ops.aten._log_softmax.default(x.cuda(), 1, True)
    assert widened.dtype == torch.float32 and torch.equal(widened.cpu(), torch.log_softmax(x.float(), 1))


def test_half_precision_layer_norm_computes_in_fp32_and_rounds_once_as_cuda(device):
    """``parity/half_norms.py`` on an H100: the device's bf16/fp16 ``layer_norm`` computes in fp32 and
    rounds each result once, as CUDA's kernels. Its input, weight and bias gradients are the GPU's
    bits in all but a thousandth of the elements, each of those within an ulp (an fp32 sum in
    another order), where torch's CPU build differs in a fifth to two thirds of the input gradient's;
    the mean and 1/std the backward takes stay fp32, as CUDA's (the CPU's are rounded to bf16)."""
    from parity import half_norms

    answers = _recorded("half_norms_h100.json")
    checked = 0
    for index, case in enumerate(half_norms.CASES):
        if not case[0].startswith("layer_norm"):
            continue
        values = half_norms.inputs(torch, case, index)
        on_cpu = half_norms.compute(torch, case, *values)  # kwshim leaves the CPU's own tensors alone
        on_device = half_norms.compute(torch, case, *(value.cuda() for value in values))
        for place, (mine, cpus, bits, dtype) in enumerate(zip(on_device, on_cpu, answers[index]["bits"],
                                                              answers[index]["dtypes"])):
            assert mine.device.type == "cuda" and str(mine.dtype) == dtype, (case, mine.dtype)
            gpu = half_norms.patterns(torch, bits, dtype).view(mine.dtype).reshape(mine.shape).double()
            mine = mine.cpu().double()
            if case[0] == "layer_norm_statistics":  # fp32 statistics, summed in another order than the GPU's
                assert cpus.dtype == values[0].dtype and float((mine - gpu).abs().max()) < 2.0 ** -18, case
                continue
            ulp = torch.finfo(on_device[place].dtype).eps * torch.maximum(mine.abs(), gpu.abs())
            off = mine != gpu
            assert int(off.sum()) <= max(2, mine.numel() // 1000), (case, place, int(off.sum()))
            assert bool(((mine - gpu).abs() <= ulp).all()), (case, place)
            if case[0] == "layer_norm_backward" and place == 0:
                assert float((cpus.double() != gpu).double().mean()) > 0.15, case  # the CPU rounds along the way
            checked += 1
    assert checked == 12 + 36


def _ulps(a, b):
    """Each element's distance in fp32 ulps (of the larger magnitude)."""
    a, b = a.double(), b.double()
    scale = torch.maximum(a.abs(), b.abs()).float().double()
    return (a - b).abs() / (scale * 2.0 ** -23).clamp_min(2.0 ** -149)


def test_fp32_softmax_backwards_sum_their_rows_as_exactly_as_cuda(device):
    """``parity/softmax_backward.py`` on the H200: the device's fp32 ``_log_softmax_backward_data``
    and ``_softmax_backward_data`` (a cross entropy's and a softmax's gradient) sum each row as
    nearly exactly as CUDA's tree: every element within one ulp of its row's largest (the GPU's
    fp32 sum is not exact either, so the bits are not all its), where torch's CPU build, adding in
    one chain per SIMD lane, is 4 away; a label-smoothed cross entropy's gradient a median 1 ulp
    from the GPU's, where the CPU's is a hundred."""
    from parity import softmax_backward

    answers = _recorded("softmax_backward_h200.json")
    for index, case in enumerate(softmax_backward.CASES):
        grad, output = softmax_backward.inputs(torch, case, index)
        on_cpu = softmax_backward.compute(torch, case, grad, output)  # kwshim leaves the CPU's own tensors alone
        on_device = softmax_backward.compute(torch, case, grad.cuda(), output.cuda())
        assert on_device.device.type == "cuda" and on_device.dtype == torch.float32
        gpu = softmax_backward.patterns(torch, answers[index]["bits"]).view(torch.float32).reshape(grad.shape)
        row_ulp = gpu.abs().amax(-1, keepdim=True).double() * 2.0 ** -23
        device_off, cpu_off = ((r.double() - gpu.double()).abs() / row_ulp for r in (on_device.cpu(), on_cpu))
        assert device_off.max() <= 1, (case, device_off.max())
        if case[0] == "_log_softmax_backward_data":
            assert cpu_off.max() > 2, (case, cpu_off.max())  # the CPU's own chains
        if case[1] == "smoothed":
            assert _ulps(on_device.cpu(), gpu).median() <= 2 and _ulps(on_cpu, gpu).median() > 50
    half = torch.randn(4, 64, dtype=torch.bfloat16)  # bf16: the CPU's own, already CUDA's bits
    out = torch.log_softmax(half.float(), -1).to(torch.bfloat16)
    assert torch.equal(torch.ops.aten._log_softmax_backward_data.default(half.cuda(), out.cuda(), -1, torch.bfloat16)
                       .cpu(), torch.ops.aten._log_softmax_backward_data.default(half, out, -1, torch.bfloat16))


def test_a_large_fp32_softmax_backward_computed_a_slice_of_rows_at_a_time_gives_the_whole_one_s_bits(device):
    """Past 2M elements the fp64 backward runs a slice of rows at a time (Liger's 8192x32000 cross
    entropy: 6 s whole in 2 GB copies, under 1 s sliced): rows are independent, so the bits are the
    whole computation's, along the last axis and along the first, for both backwards."""
    generator = torch.Generator().manual_seed(5)
    for name in ("_log_softmax_backward_data", "_softmax_backward_data"):
        op = getattr(torch.ops.aten, name).default
        for shape, dim in (((70, 32001), 1), ((4097, 600), 0), ((3, 700, 1100), -1)):
            grad = torch.randn(shape, generator=generator)
            output = torch.randn(shape, generator=generator).log_softmax(dim)
            if name == "_softmax_backward_data":
                output = output.exp()
            whole = op(grad.double(), output.double(), dim, torch.float64).float()
            on_device = op(grad.cuda(), output.cuda(), dim, torch.float32)
            assert grad.numel() > 2 ** 21 and on_device.device.type == "cuda"
            assert torch.equal(on_device.cpu().view(torch.int32), whole.view(torch.int32)), (name, shape, dim)


def test_a_matmul_with_out_dtype_runs_on_the_device_as_on_cuda(device):
    a, b = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(8, 3, dtype=torch.bfloat16)
    with pytest.raises((NotImplementedError, RuntimeError, TypeError)):  # torch's CPU build has no such kernel
        torch.mm(a, b, out_dtype=torch.float32)
    product = torch.mm(a.cuda(), b.cuda(), out_dtype=torch.float32)  # Liger's fused linear JSD, on cuda
    assert product.dtype == torch.float32 and product.device.type == "cuda"
    assert torch.equal(product.cpu(), a.float() @ b.float())


def half_matmuls_against_the_h200():
    """``parity/half_matmul.py`` on the H200, against the device's bf16/fp16 ``mm``, ``addmm`` and
    ``bmm`` (the device on): each sums in fp32 and rounds once, as cuBLAS, and is within the error of
    two fp32 sums in other orders of the H200's bits in every element, differing in at most 2% of
    them. The fp32 sum's order is the CPU's (oneDNN's and ATen's paths by instruction set): none of
    this may depend on it, nor on torch's own half-precision path (on a CPU with ``avx512_bf16`` that
    gives the H200's bits where the fp32 sum misses one)."""
    from parity import half_matmul

    answers = _recorded("half_matmul_h200.json")
    for index, case in enumerate(half_matmul.CASES):
        a, b, c = half_matmul.inputs(torch, case, index)
        on_device = half_matmul.compute(torch, case, a.cuda(), b.cuda(), None if c is None else c.cuda())
        assert on_device.device.type == "cuda" and on_device.dtype == a.dtype and on_device.is_contiguous()
        widened = half_matmul.compute(torch, case, a.float(), b.float(), None if c is None else c.float())
        assert torch.equal(on_device.cpu(), widened.to(a.dtype)), case
        h200 = torch.tensor(answers[index]["bits"], dtype=torch.int16).view(a.dtype).reshape(on_device.shape)
        magnitude = (2.0 if case[0] == "addmm" else 1.0) * (a.double().abs() @ b.double().abs())
        if c is not None:
            magnitude = magnitude + 0.5 * c.double().abs()
        bound = torch.finfo(a.dtype).eps * h200.double().abs() + 2 * a.shape[-1] * 2.0 ** -24 * magnitude
        assert bool(((on_device.cpu().double() - h200.double()).abs() <= bound).all()), case
        assert int((on_device.cpu() != h200).sum()) <= 0.02 * h200.numel(), case


def test_half_precision_matmuls_sum_in_fp32_and_round_once_as_cublas(device):
    half_matmuls_against_the_h200()


@pytest.mark.parametrize("paths", [{"ATEN_CPU_CAPABILITY": "default"}, {"ATEN_CPU_CAPABILITY": "avx2"},
                                   {"ONEDNN_MAX_CPU_ISA": "AVX2"}, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}])
def test_the_half_matmul_rule_holds_on_every_instruction_set_torch_takes(paths):
    """The same check where torch's CPU kernels take another instruction set's path, as on another
    CPU (an unavailable one leaves torch on the best it has)."""
    code = ("import kwshim\nfrom tests.test_device_tensors import half_matmuls_against_the_h200\n"
            "with kwshim.activate(device='cuda'):\n    half_matmuls_against_the_h200()\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                          env=environment(TRITON_INTERPRET="1", **paths), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_function_compiled_while_the_device_is_on_runs_eagerly_and_compiles_after(dynamo):
    code = ("import torch, kwshim\n"
            "assert 'torch._dynamo' not in __import__('sys').modules\n"
            "with kwshim.activate(device='cuda'):\n"
            "    compiling = torch.compile(lambda x: x + torch.compiler.is_compiling(), backend='eager',\n"
            "                              fullgraph=True)\n"
            "    print(compiling(torch.zeros(1, device='cuda')).item())\n"
            "print(compiling(torch.zeros(1)).item(), torch.compile.__module__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=environment(TRITON_INTERPRET="1"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["0.0", "1.0", "torch"]  # eager under the device; compiled, and torch's own, after


@pytest.mark.parametrize("make", [
    lambda: torch.empty(64, device="cuda"), lambda: torch.empty_like(torch.zeros(64, device="cuda")),
    lambda: torch.empty_strided((8, 8), (8, 1), device="cuda"), lambda: torch.zeros(2, device="cuda").new_empty(64),
    lambda: torch.zeros(2, device="cuda").new_empty_strided((64,), (1,)),
])
def test_empty_fill_poison_fills_what_the_device_hands_out_uninitialized(make):
    with kwshim.activate(device="cuda", empty_fill="poison"):
        made = make()
        assert made.is_cuda and bool(torch.isnan(made).all())
        written = torch.empty(64, device="cuda").fill_(1.0) + torch.zeros(64, device="cuda")
        assert bool((written == 1).all())  # what an operation writes is its own


def test_empty_fill_poison_is_nan_for_floats_and_the_largest_value_for_integers():
    with kwshim.activate(device="cuda", empty_fill="poison"):
        assert torch.isnan(torch.empty(8, dtype=torch.bfloat16, device="cuda")).all()
        assert (torch.empty(8, dtype=torch.int32, device="cuda") == 2 ** 31 - 1).all()
        assert (torch.empty(8, dtype=torch.int64, device="cuda") == 2 ** 63 - 1).all()
        assert torch.empty(8, dtype=torch.bool, device="cuda").all()
        assert torch.isnan(torch.empty(8, dtype=torch.complex64, device="cuda")).all()
        cpu = torch.zeros(8)
        assert not torch.isnan(torch.empty_like(cpu).zero_()).any()  # the CPU's own tensors are left as they are


def test_operations_that_make_tensors_of_their_own_give_device_tensors_as_cuda_does():
    """``F.one_hot`` makes ``arange(num_classes, self.options())`` in C++ and compares the input with
    it: on the device that was a CPU tensor, refused beside the device's ("Expected all tensors to
    be on the same device"); ``torch.vander`` returned its result on the CPU. Run on the host and
    copied back, each gives the CPU's values on the device, with gradients back to the device."""
    import torch.nn.functional as F

    original = F.one_hot
    host = torch.tensor([0.5, -1.0, 2.0, 0.25])
    with kwshim.activate(device="cuda"):
        index = torch.tensor([1, 3, 0], device="cuda")
        x = host.cuda().requires_grad_(True)
        results = {"one_hot": (F.one_hot(index, 5), F.one_hot(index.cpu(), 5)),
                   "combinations": (torch.combinations(x.detach()), torch.combinations(host)),
                   "vander": (torch.vander(x.detach(), 3), torch.vander(host, 3)),
                   "nanquantile": (x.detach().nanquantile(0.25), host.nanquantile(0.25))}
        for name, (on_device, on_cpu) in results.items():
            assert on_device.device.type == "cuda" and torch.equal(on_device.cpu(), on_cpu), name
        median = torch.quantile(x, torch.tensor([0.5], device="cuda"))
        median.sum().backward()
        assert median.device.type == "cuda" and x.grad.device.type == "cuda"
        assert torch.equal(x.grad.cpu(), torch.tensor([0.5, 0.0, 0.0, 0.5]))  # between 0.25 and 0.5
        assert F.one_hot is not original
    assert F.one_hot is original and torch.equal(original(torch.tensor([1]), 2), torch.tensor([[0, 1]]))
