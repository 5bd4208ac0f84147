"""``device="cuda"`` (``kwshim/virtual_cuda``): a suite that says "cuda" runs on the CPU; with the
device off nothing changes, and after the switch goes off torch and Triton are as before."""

import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import compat

from ._subprocess import environment
from .kernels import needs_block_loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@needs_block_loads
def test_tensors_asked_for_on_cuda_are_device_tensors_and_kernels_run():
    with kwshim.activate(device="cuda"):
        x = torch.randn(100, device="cuda")
        y = torch.ones(100).cuda()
        z = torch.arange(100.0).to("cuda:0")
        out = torch.empty_like(x, device=torch.device("cuda"))
        linear, moved = torch.nn.Linear(3, 3).cuda(), torch.nn.Linear(3, 3).to("cuda")
        pinned = torch.zeros(2, pin_memory=True)
        made = (x, y, z, out, linear.weight, moved.bias, x + 1, x[1:], x.view(10, 10), torch.empty_like(x))
        assert {str(t.device) for t in made} == {"cuda:0"} and all(t.is_cuda and not t.is_cpu for t in made)
        assert pinned.device.type == "cpu" and not pinned.is_cuda and pinned.is_pinned()
        assert x.get_device() == 0 and torch.ones(1).get_device() == -1
        add[(4,)](x, y, out, 100, BLOCK=32)
        assert torch.equal(out, x + 1)
        generator = torch.Generator(device="cuda").manual_seed(83)  # Liger's selective_log_softmax tests
        drawn = torch.randn(4, generator=generator, device="cuda")
        assert generator.device.type == "cuda" and isinstance(generator, torch.Generator)  # CUDA's (random_state)
        assert isinstance(torch.default_generator, torch.Generator)
        again = torch.randn(4, generator=torch.Generator(device="cuda").manual_seed(83), device="cuda")
        assert torch.equal(drawn, again) and drawn.is_cuda
    assert torch.Generator is torch._C.Generator


def test_torch_cuda_answers_as_one_h200():
    with kwshim.activate(device="cuda"):
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
        assert torch.cuda.get_device_capability() == (9, 0) and torch.cuda.is_bf16_supported()
        assert torch.cuda.get_device_name(0).startswith("NVIDIA H200")
        properties = torch.cuda.get_device_properties("cuda:0")
        assert (properties.major, properties.minor, properties.multi_processor_count) == (9, 0, 132)
        torch.cuda.synchronize()
        with torch.cuda.device(0), torch.cuda.stream(torch.cuda.Stream()):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            end.record()
        assert end.query() and start.elapsed_time(end) >= 0
        torch.cuda.manual_seed(3)
        first = torch.randn(4, device="cuda")
        torch.cuda.manual_seed_all(3)
        assert torch.equal(first, torch.randn(4, device="cuda"))


@pytest.mark.parametrize("call, name", [
    (lambda: torch.cuda.set_device(1), "device 1 does not exist"),
    (lambda: torch.cuda.memory_reserved(), "torch.cuda.memory_reserved cannot be emulated"),
    (lambda: torch.cuda.memory.max_memory_reserved(), "torch.cuda.max_memory_reserved cannot be emulated"),
])
def test_what_cannot_be_emulated_fails_naming_kwshim(call, name):
    with kwshim.activate(device="cuda"), pytest.raises(RuntimeError) as caught:
        call()
    assert str(caught.value).startswith("kwshim: ") and name in str(caught.value)


def test_calls_beside_the_kernels_answer_as_the_h200_s_cuda_build():
    """Device indices, legacy tensor types, streams, generators, the version, nvtx, autocast and
    ``triton.testing.do_bench``, against what the H200 answered (``parity/cuda_answers.py``)."""
    import json

    from parity import cuda_answers

    with open(os.path.join(ROOT, "parity", "cuda_answers_h200.json")) as recorded:
        h200 = json.load(recorded)
    with kwshim.activate(device="cuda"):
        here = cuda_answers.answers()
    assert set(here) == set(h200)
    differ = {row: (h200[row], here[row]) for row in h200 if h200[row] != here[row]}
    assert not differ, differ
    assert not torch.cuda.default_generators and torch.version.cuda is None  # off again


def test_dynamo_s_cuda_interface_imported_before_the_device_answers_as_the_device():
    # Triton 3.1's do_bench synchronizes through Dynamo's CudaInterface, which copies torch.cuda's
    # functions when it is imported: imported first, it raised "torch._C has no _cuda_synchronize"
    from ._subprocess import dynamo_runs

    if not dynamo_runs():
        pytest.skip("torch.compile does not run beside this Triton, without kwshim")
    from torch._dynamo.device_interface import CudaInterface

    synchronize = vars(CudaInterface)["synchronize"]
    with kwshim.activate(device="cuda"):
        assert CudaInterface.synchronize() is None and CudaInterface.device_count() == 1
        assert CudaInterface.get_device_properties().name == torch.cuda.get_device_name()
        assert CudaInterface.Event(enable_timing=True) is not None
    assert vars(CudaInterface)["synchronize"] is synchronize  # restored


@pytest.mark.parametrize("call", [lambda: torch.randn(2, device="cuda:1"), lambda: torch.ones(2).to("cuda:3"),
                                  lambda: torch.ones(2).cuda(1), lambda: torch.zeros(2, device=1),
                                  lambda: torch.ones(2).to(torch.device("cuda", 2))])
def test_a_second_gpu_fails_as_on_a_one_gpu_machine_naming_kwshim(call):
    with kwshim.activate(device="cuda"), pytest.raises(RuntimeError) as caught:
        call()
    assert type(caught.value).__name__ == "AcceleratorError" and str(caught.value).startswith(
        "kwshim: the virtual CUDA device has one GPU (index 0)")


def test_autocast_on_cuda_computes_in_fp16_by_default_and_custom_fwd_casts():
    host = torch.randn(4, 4)

    class Cast(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
        def forward(ctx, tensor):
            return tensor * 1

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad):
            return grad

    with kwshim.activate(device="cuda"), torch.autocast("cuda"):
        x = host.cuda()
        assert (x @ x).dtype == torch.float16 and torch.is_autocast_enabled()
        assert Cast.apply(x.half()).dtype == torch.float32
        assert Cast.apply(host.half()).dtype == torch.float16  # a CPU tensor: CUDA's autocast casts none


KERNEL_TEST = """
import torch, triton, triton.language as tl

@triton.jit
def add_one(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + 1)

def test_kernel():
    x = torch.zeros(16, device="cuda")
    add_one[(1,)](x, BLOCK=16)
    assert x.eq(1).all() and torch.cuda.is_available()
"""


def _device_run(tmp_path, *args, interpret):
    """``python -m *args`` in ``tmp_path`` (holding ``test_kernel.py``) under TRITON_INTERPRET=``interpret``."""
    (tmp_path / "test_kernel.py").write_text(KERNEL_TEST)
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=environment(TRITON_INTERPRET=interpret))


@needs_block_loads
def test_triton_interpret_spelled_true_runs_the_device_on_every_release(tmp_path, monkeypatch):
    done = _device_run(tmp_path, "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", "--kwshim-device", "cuda",
                       "test_kernel.py", interpret="True")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    monkeypatch.setenv("TRITON_INTERPRET", "True")
    reads_true = compat.jit_makes_interpreted()  # 3.4 on
    assert ("kwshim: TRITON_INTERPRET=True read as TRITON_INTERPRET=1" in done.stdout) != reads_true, done.stdout


def test_the_device_with_the_interpreter_off_is_one_line_at_each_door(tmp_path):
    said = "device='cuda' runs kernels in Triton's interpreter, which is off here: set TRITON_INTERPRET=1"
    done = _device_run(tmp_path, "pytest", "-q", "-p", "no:cacheprovider", "--kwshim", "--kwshim-device", "cuda",
                       "test_kernel.py", interpret="0")
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: kwshim: {said} before importing triton", \
        done.stderr[-2000:]
    done = _device_run(tmp_path, "kwshim", "run", "--device", "cuda", "-m", "json.tool", "--help", interpret="0")
    assert done.returncode == 2 and done.stderr.strip() == f"kwshim run: {said} before importing triton", \
        done.stderr[-2000:]


def test_a_cuda_graph_class_can_still_be_named_in_an_annotation():
    with kwshim.activate(device="cuda"):
        assert isinstance(torch.cuda.CUDAGraph | None, type(int | None))  # transformers 5, at import


def test_triton_s_driver_answers_as_the_same_gpu_without_loading_cuda():
    import importlib

    if not hasattr(importlib.import_module("triton.runtime.driver"), "DriverConfig"):
        pytest.skip("this Triton has no DriverConfig")
    from triton.runtime import driver

    with kwshim.activate(device="cuda"):
        assert driver.active.utils.get_device_properties(0)["multiprocessor_count"] == 132
        assert driver.active.get_current_device() == 0
        target = driver.active.get_current_target()
        assert (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)


def test_with_the_device_off_torch_is_untouched():
    functions = {name: getattr(torch.cuda, name) for name in ("is_available", "device_count", "synchronize")}
    with kwshim.activate():
        assert {name: getattr(torch.cuda, name) for name in functions} == functions
        assert not torch.cuda.is_available() and not torch.zeros(1).is_cuda
        assert "is_cuda" not in vars(torch.Tensor)


def test_a_nested_activation_cannot_change_the_device():
    with kwshim.activate(device="cuda"):
        with pytest.raises(ValueError) as caught:
            kwshim.activate(device=None)
        assert "kwshim: the switch is on with device='cuda'; a nested activation cannot make it None" \
            in str(caught.value)
        with kwshim.activate(autotune="first"):  # not named: inherited
            assert torch.cuda.is_available()
        with kwshim.activate(device="cuda", autotune="first"):
            assert torch.cuda.is_available()
        assert torch.cuda.is_available()
    assert not torch.cuda.is_available()


SNAPSHOT = """
import os; os.environ["TRITON_INTERPRET"] = "1"
import importlib, torch, torch.cuda.nvtx, triton
import torch.nn.attention.flex_attention as flex
def snapshot():
    snap = {}
    for owner in (torch, torch.cuda, torch.cuda.memory, torch.Tensor, torch.Tensor.__mro__[1], torch.autocast, flex,
                  torch.version, torch.cuda.nvtx, torch.amp.autocast_mode):
        for name, value in list(vars(owner).items()):
            snap[(str(owner), name)] = value
    try:
        config = importlib.import_module("triton.runtime.driver").driver
        snap.update({("driver", k): v for k, v in vars(config).items()})
    except ImportError:
        pass
    return snap
before = snapshot()
import kwshim
handle = kwshim.activate(device="cuda")
kept = torch.zeros(1, device="cuda")
assert torch.cuda.is_available() and kept.is_cuda
assert torch.cuda.memory_allocated() >= 512  # counting: a dispatch mode on torch's stack
during = snapshot()
handle.deactivate()
after = snapshot()
changed = [key for key in set(before) | set(after) if after.get(key) is not before.get(key)]
patched = [key for key in before if during.get(key) is not before[key]]
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
print(len(patched), "changed:", changed, torch.cuda.is_available(), torch._C._is_torch_function_mode_enabled(),
      _get_current_dispatch_mode_stack())
try:
    torch.zeros(1, device="cuda")
except (AssertionError, RuntimeError):
    print("cuda refused again")
"""


def test_after_the_switch_goes_off_torch_cuda_and_triton_are_as_before():
    result = subprocess.run([sys.executable, "-c", SNAPSHOT], capture_output=True, text=True, cwd=ROOT,
                            env=environment())
    assert result.returncode == 0, result.stderr[-2000:]
    first, second = result.stdout.strip().splitlines()
    count, rest = first.split(" changed: ")
    assert int(count) > 60 and rest == "[] False False []"  # 39 factories, the Tensor methods, torch.cuda
    assert second == "cuda refused again"


def _flex_attention_against_sdpa(device):
    """flex attention (eager, causal) and SDPA with the same mask: outputs and gradients."""
    from torch.nn.attention.flex_attention import create_block_mask, create_mask, flex_attention

    def causal(batch, head, q_index, kv_index):
        return q_index >= kv_index

    torch.manual_seed(0)
    inputs = [torch.randn(1, 2, 256, 16, device=device, requires_grad=True) for _ in range(3)]
    copies = [tensor.detach().clone().requires_grad_(True) for tensor in inputs]
    flex = flex_attention(*inputs, block_mask=create_block_mask(causal, 1, 2, 256, 256, device=device))
    mask = create_mask(causal, 1, 2, 256, 256, device=device)
    sdpa = torch.nn.functional.scaled_dot_product_attention(*copies, attn_mask=mask)
    flex.sum().backward()
    sdpa.sum().backward()
    return [(flex, sdpa)] + [(mine.grad, theirs.grad) for mine, theirs in zip(inputs, copies)]


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_attention_runs_its_eager_backward_on_the_device_as_on_cuda():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    try:  # torch's eager flex attention goes through Dynamo, which imports Triton 3's modules
        flex.flex_attention(*[torch.ones(1, 1, 16, 16)] * 3)
    except Exception as exc:  # noqa: BLE001 (whatever this torch raises beside this Triton)
        pytest.skip(f"torch's flex attention does not run beside this Triton, without kwshim: {exc!r:.200}")
    with pytest.raises(NotImplementedError, match="FlexAttention does not support backward on CPU"):
        _flex_attention_against_sdpa("cpu")  # torch's refusal, without the device
    with kwshim.activate(device="cuda"):
        pairs = _flex_attention_against_sdpa("cuda")
    for mine, theirs in pairs:
        assert mine.shape == theirs.shape and torch.allclose(mine, theirs, atol=1e-5, rtol=1e-4)
        assert mine.abs().sum() > 0
    with pytest.raises(NotImplementedError, match="FlexAttention does not support backward on CPU"):
        _flex_attention_against_sdpa("cpu")  # and again after the switch


def test_the_device_needs_the_interpreter():
    code = "import kwshim\ntry:\n    kwshim.activate(device='cuda')\nexcept RuntimeError as e:\n    print(e)\n"
    env = environment()
    env.pop("TRITON_INTERPRET", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    if "0 active drivers" in result.stderr or "active drivers" in result.stdout:
        pytest.skip("this Triton cannot run compiled here at all")
    assert "kwshim: device='cuda' runs kernels in Triton's interpreter, which is off here" in result.stdout, \
        result.stdout + result.stderr[-1000:]


def test_autocast_on_cuda_is_the_cpu_s_autocast_with_the_same_dtype():
    x = torch.randn(4, 4)
    with kwshim.activate(device="cuda"):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            assert (x @ x).dtype == torch.bfloat16  # bare on a CPU: autocast disables itself, fp32
    with torch.autocast("cpu", enabled=False):
        assert (x @ x).dtype == torch.float32


def test_free_memory_is_what_this_machine_can_hold():
    with kwshim.activate(device="cuda"):
        free, total = torch.cuda.mem_get_info()
    assert total == 150_110_011_392 and 0 < free <= total
    assert free <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_allocation_statistics_count_live_storages_rounded_as_a_gpu_rounds_them():
    with kwshim.activate(device="cuda"):
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        x = torch.empty(1000, device="cuda")  # 4000 bytes: 8 blocks of 512
        assert torch.cuda.memory_allocated() - start == 4096
        one = torch.ones(1, dtype=torch.int8, device="cuda")  # 1 byte: a whole block
        assert torch.cuda.memory_allocated() - start == 4096 + 512
        y = x * 2
        views = (y[::2], y.view(10, 100), y[10:])
        assert torch.cuda.memory_allocated() - start == 2 * 4096 + 512  # a view allocates nothing
        del y, views, one
        assert torch.cuda.memory_allocated() - start == 4096
        assert torch.cuda.max_memory_allocated() - start == 2 * 4096 + 512
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated()
        stats = torch.cuda.memory.memory_stats()
        assert stats["allocated_bytes.all.current"] == torch.cuda.memory_allocated()
        assert stats["requested_bytes.all.current"] - stats["allocated_bytes.all.current"] <= 0
        del x
        assert torch.cuda.memory_allocated() - start == 0


def test_a_storage_an_autograd_graph_saves_is_counted_until_the_graph_frees_it():
    with kwshim.activate(device="cuda"):
        a = torch.randn(1000, device="cuda", requires_grad=True)
        start = torch.cuda.memory_allocated()
        b = a.exp()  # exp saves its result for the backward
        loss = b.sum()
        del b
        assert torch.cuda.memory_allocated() - start == 4096 + 512  # the graph holds b
        loss.backward()  # frees b, makes a.grad
        assert torch.cuda.memory_allocated() - start == 4096 + 512
        del loss
        assert torch.cuda.memory_allocated() - start == 4096  # a.grad
        a.grad = None
        assert torch.cuda.memory_allocated() == start


def test_tensors_alive_before_the_first_statistic_and_out_tensors_resized_are_counted():
    with kwshim.activate(device="cuda"):
        before = torch.empty(10_000, device="cuda")  # before counting started: found once, through gc
        start = torch.cuda.memory_allocated()
        del before
        assert start - torch.cuda.memory_allocated() == 40_448
        start = torch.cuda.memory_allocated()
        out = torch.empty(0, device="cuda")
        torch.add(torch.ones(3, device="cuda"), 1, out=torch.empty(0, device="cuda"))  # temporaries, made and freed
        torch.add(torch.ones(1000, device="cuda"), 1, out=out)  # resized in place: the same storage, 4000 bytes
        assert torch.cuda.memory_allocated() - start == 4096
        host = torch.ones(1000)  # the CPU's memory is not the GPU's
        assert torch.cuda.memory_allocated() - start == 4096 and host.sum() == 1000


def test_memory_stats_refuses_the_keys_it_does_not_count_naming_kwshim():
    with kwshim.activate(device="cuda"):
        stats = torch.cuda.memory_stats()
        for read in (lambda: stats["reserved_bytes.all.peak"], lambda: stats.get("reserved_bytes.all.peak", 0)):
            with pytest.raises(KeyError) as caught:
                read()
            assert "kwshim: torch.cuda.memory_stats()['reserved_bytes.all.peak'] is not counted" in str(caught.value)


def test_counting_stops_with_the_switch_from_under_a_mode_pushed_above_it():
    from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

    class Other(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls):  # as kwshim's: torch._dynamo does not import under Triton 2.x
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    handle = kwshim.activate(device="cuda")
    torch.cuda.memory_allocated()
    counting, = _get_current_dispatch_mode_stack()
    with Other() as other:
        handle.deactivate()
        assert _get_current_dispatch_mode_stack() == [other]
        assert torch.equal(torch.ones(2) + 1, torch.full((2,), 2.0))
    assert _get_current_dispatch_mode_stack() == [] and counting is not other


def test_allocation_statistics_answer_as_the_h200_s_caching_allocator_did_step_by_step():
    """``parity/allocations.py`` on the H200 (torch 2.11, 2026-12-02), against the virtual device here."""
    import json

    with open(os.path.join(ROOT, "parity", "allocations_h200.json")) as handle:
        h200 = [tuple(step) for step in json.load(handle)]
    result = subprocess.run([sys.executable, "-m", "parity.allocations", "--virtual"], capture_output=True,
                            text=True, cwd=ROOT, env=environment(TRITON_INTERPRET="1"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert [tuple(step) for step in json.loads(result.stdout)] == h200 and len(h200) == 15
