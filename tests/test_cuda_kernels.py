"""``virtual_cuda/cuda_kernels.py``: an operator on a device tensor runs the kernel a library
registered for ``CUDA`` (``torch.library``), as a CUDA tensor does; torch's CPU kernel otherwise."""

import importlib

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads


@triton.jit
def _shifted_abs(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.abs(tl.load(x_ptr + offsets, mask=offsets < n)) + 100, mask=offsets < n)


def _library_abs(calls):
    """FlagGems' pattern: an aten operator's CUDA kernel, a Triton launch on a tensor made like its input."""

    def gems_abs(x):
        calls.append(x.device.type)
        out = torch.empty_like(x)
        _shifted_abs[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
        return out

    return gems_abs


@needs_block_loads
@pytest.mark.parametrize("registered", ["while on", "before"])
def test_an_aten_kernel_registered_for_cuda_runs_on_device_tensors_and_not_on_cpu_tensors(registered):
    calls = []
    library = None
    if registered == "before":
        library = torch.library.Library("aten", "IMPL")
        library.impl("abs", _library_abs(calls), "CUDA")
    try:
        with kwshim.activate(device="cuda"):
            if library is None:
                library = torch.library.Library("aten", "IMPL")
                library.impl("abs", _library_abs(calls), "CUDA")
            x = torch.tensor([-1.0, 2.0, -3.0], device="cuda")
            y = torch.abs(x)
            assert y.device.type == "cuda" and y.tolist() == [101.0, 102.0, 103.0] and calls == ["cuda"]
            assert torch.abs(torch.tensor([-1.0])).tolist() == [1.0] and calls == ["cuda"]  # the CPU's own
            library._destroy()
            assert torch.abs(x).tolist() == [1.0, 2.0, 3.0] and calls == ["cuda"]  # gone: torch's again
    finally:
        library._destroy() if hasattr(library, "m") and library.m is not None else None


def test_a_custom_op_for_cuda_alone_and_a_registered_cuda_kernel_run_on_device_tensors():
    try:
        import torch._inductor.runtime.hints  # noqa: F401  (a custom op's call imports it)
    except ImportError as error:  # it imports Triton's backends, which 2.x lacks
        pytest.skip(f"torch.library.custom_op beside this Triton: {error}")

    @torch.library.custom_op("kwshim_test::twice_cuda", mutates_args=(), device_types="cuda")
    def twice_cuda(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @torch.library.custom_op("kwshim_test::plus", mutates_args=())
    def plus(x: torch.Tensor) -> torch.Tensor:
        return x + 1  # the default kernel, for every device

    @plus.register_kernel("cuda")
    def _(x):
        return x + 10

    with kwshim.activate(device="cuda"):
        x = torch.ones(2, device="cuda")
        assert twice_cuda(x).tolist() == [2.0, 2.0] and twice_cuda(x).device.type == "cuda"
        assert plus(x).tolist() == [11.0, 11.0]
        assert plus(torch.ones(2)).tolist() == [2.0, 2.0]  # a CPU tensor: the default kernel
        with pytest.raises(NotImplementedError):
            twice_cuda(torch.ones(2))  # no kernel for the CPU, as on a GPU machine


@needs_block_loads
def test_torch_s_wrap_triton_and_triton_op_launch_an_interpreted_kernel_with_the_device_s_tensors():
    """``wrap_triton`` checks ``isinstance(kernel, triton.runtime.jit.JITFunction)`` and launches through
    a higher-order operator, which had no rule for a device tensor; a ``triton_op`` (a kernel for every
    device) ran its body with CPU tensors, and the launch inside refused them."""
    wrap_triton = getattr(torch.library, "wrap_triton", None)
    if wrap_triton is None:
        pytest.skip("this torch has no torch.library.wrap_triton")
    try:
        importlib.import_module("torch._inductor.runtime.hints")  # a custom op's call imports it
    except ImportError as error:
        pytest.skip(f"torch.library.triton_op beside this Triton: {error}")
    mutation = importlib.import_module("torch._higher_order_ops.triton_kernel_wrap").triton_kernel_wrapper_mutation

    with kwshim.activate(device="cuda"):
        @torch.library.triton_op("kwshim_test::shifted_abs", mutates_args={})
        def shifted_abs(x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            wrap_triton(_shifted_abs)[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
            return out

        x = torch.tensor([-1.0, 2.0, -3.0], device="cuda")
        out = torch.empty_like(x)
        wrap_triton(_shifted_abs)[(1,)](x, out, 3, BLOCK=64)
        assert out.device.type == "cuda" and out.tolist() == [101.0, 102.0, 103.0]
        assert shifted_abs(x).tolist() == [101.0, 102.0, 103.0] and shifted_abs(x).device.type == "cuda"
        assert torch.ops.kwshim_test.shifted_abs(x).tolist() == [101.0, 102.0, 103.0]
    assert not any("DeviceTensor" in getattr(kind, "__name__", "") for kind in mutation.python_key_table)


def test_a_number_reaches_a_library_s_cuda_kernel_as_the_dispatcher_wraps_it():
    """``x + 1`` is ``aten::add.Tensor(x, 1)`` in ``__torch_dispatch__``; on a GPU the CUDA kernel gets
    a 0-dim CPU tensor (FlagGems' ``test_equal.py``: "Expected a value of type 'Tensor' for argument
    'other'")."""
    seen = []

    def add(x, other, alpha=1):
        seen.append((other.device.type, other.dim(), other.dtype))
        return torch.full_like(x, 7.0)

    library = torch.library.Library("aten", "IMPL")
    library.impl("add.Tensor", add, "CUDA")
    try:
        with kwshim.activate(device="cuda"):
            x = torch.ones(3, device="cuda")
            assert (x + 1).tolist() == [7.0] * 3 and (x + 2.5).tolist() == [7.0] * 3
    finally:
        library._destroy()
    assert seen[0] == ("cpu", 0, torch.int64) and seen[-1] == ("cpu", 0, torch.float32), seen


def test_the_registry_watch_is_undone_with_the_switch():
    library = torch.library.Library
    before = (vars(library)["impl"], vars(library)["_destroy"])
    with kwshim.activate(device="cuda"):
        assert vars(library)["impl"] is not before[0]
    assert (vars(library)["impl"], vars(library)["_destroy"]) == before


@needs_block_loads
@pytest.mark.parametrize("registered", ["while on", "before"])
def test_a_composite_operator_with_a_cuda_kernel_runs_it_on_device_tensors_before_it_decomposes(registered):
    """``square`` is torch's composition (``pow(x, 2)``): it decomposed above the device's dispatch,
    and a library's CUDA kernel for it never ran (FlagGems' ``square`` ran as its ``pow``). On the
    device it runs now, as on a GPU; CPU tensors keep torch's composition; and with the library's
    registration gone, or the switch off, everything is torch's again."""
    calls = []

    def library_square(x):
        calls.append(x.device.type)
        out = torch.empty_like(x)
        _shifted_abs[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)  # |x| + 100: not a square
        return out

    library = None
    if registered == "before":
        library = torch.library.Library("aten", "IMPL")
        library.impl("square", library_square, "CUDA")
    try:
        with kwshim.activate(device="cuda"):
            if library is None:
                library = torch.library.Library("aten", "IMPL")
                library.impl("square", library_square, "CUDA")
            assert "aten::square" in kwshim.virtual_cuda.cuda_kernels.routed_composites
            x = torch.tensor([-1.0, 2.0, -3.0], device="cuda", requires_grad=True)
            y = torch.square(x)
            assert y.device.type == "cuda" and y.tolist() == [101.0, 102.0, 103.0] and calls == ["cuda"]
            assert y.grad_fn is None  # below autograd, as a GPU runs a library's kernel with no autograd of its own
            host = torch.tensor([-1.5, 2.0], requires_grad=True)
            torch.square(host).sum().backward()  # the CPU's: torch's composition, with its gradient
            assert host.grad.tolist() == [-3.0, 4.0] and calls == ["cuda"]
            library._destroy()
            assert torch.square(x.detach()).tolist() == [1.0, 4.0, 9.0] and calls == ["cuda"]
        assert not kwshim.virtual_cuda.cuda_kernels.routed_composites
        assert not torch._C._dispatch_has_kernel_for_dispatch_key("aten::square", "AutogradCPU")
        assert torch.square(torch.tensor([3.0])).tolist() == [9.0]
    finally:
        library._destroy() if hasattr(library, "m") and library.m is not None else None


@needs_block_loads
def test_a_factory_with_a_library_s_cuda_kernel_runs_it_for_a_cuda_device():
    """FlagGems registers ``arange``, ``zeros``, ``rand``... for ``CUDA``: on a GPU ``torch.zeros(2, 3,
    device="cuda")`` runs its kernel (23 of FlagGems' sampled tests passed here launching none, where
    the H100 launched one). On the device the same call runs it, whatever form the size takes; a CPU
    factory, and one after the library is gone, are torch's own."""
    calls = []

    def gems_zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None):
        calls.append(str(device))
        out = torch.empty(size, dtype=dtype or torch.get_default_dtype(), device=device)
        _shifted_abs[(triton.cdiv(out.numel(), 64),)](out.fill_(0), out, out.numel(), BLOCK=64)  # 100s: its kernel's
        return out

    with kwshim.activate(device="cuda"):
        library = torch.library.Library("aten", "IMPL")
        try:
            library.impl("zeros", gems_zeros, "CUDA")
            for made in (torch.zeros(2, 3, device="cuda"), torch.zeros((2, 3), device="cuda"),
                         torch.zeros([2, 3], device="cuda", requires_grad=True)):
                assert made.device.type == "cuda" and made.shape == (2, 3) and made.cpu().eq(100).all()
            assert calls == ["cuda"] * 3 and made.requires_grad and made.is_leaf
            assert torch.zeros(2, 3).eq(0).all() and len(calls) == 3  # the CPU's own
            assert torch.zeros(2, 3, dtype=torch.int64, device="cuda").cpu().eq(100).all() and len(calls) == 4
        finally:
            library._destroy()
        assert torch.zeros(2, 3, device="cuda").cpu().eq(0).all() and len(calls) == 4  # gone: torch's again


def test_a_composite_run_on_the_host_runs_a_library_s_cuda_kernel_where_it_has_one():
    """``torch.quantile`` runs on host copies under the device (its C++ body makes CPU tensors), unless
    a library registered a CUDA kernel for it (FlagGems): then that kernel runs, as on a GPU."""
    calls = []

    def gems_quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
        calls.append(x.device.type)
        return torch.full((), 42.0, device=x.device)

    with kwshim.activate(device="cuda"):
        x = torch.arange(10.0, device="cuda")
        q = torch.tensor(0.5, device="cuda")
        assert torch.quantile(x, q).item() == 4.5 and calls == []  # on the host: torch's
        library = torch.library.Library("aten", "IMPL")
        try:
            library.impl("quantile", gems_quantile, "CUDA")
            result = torch.quantile(x, q)
            assert result.device.type == "cuda" and result.item() == 42.0 and calls == ["cuda"]
        finally:
            library._destroy()
        assert torch.quantile(x, q).item() == 4.5 and calls == ["cuda"]
