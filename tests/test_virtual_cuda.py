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

from ._subprocess import environment
from .kernels import needs_block_loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@needs_block_loads
def test_tensors_asked_for_on_cuda_live_on_the_cpu_and_kernels_run():
    with kwshim.activate(device="cuda"):
        x = torch.randn(100, device="cuda")
        y = torch.ones(100).cuda()
        z = torch.arange(100.0).to("cuda:0")
        out = torch.empty_like(x, device=torch.device("cuda"))
        linear, moved = torch.nn.Linear(3, 3).cuda(), torch.nn.Linear(3, 3).to("cuda")
        pinned = torch.zeros(2, pin_memory=True)
        assert {t.device.type for t in (x, y, z, out, linear.weight, moved.bias, pinned)} == {"cpu"}
        assert x.is_cuda and linear.weight.is_cuda  # Liger's `assert input.is_cuda`
        add[(4,)](x, y, out, 100, BLOCK=32)
        assert torch.equal(out, x + 1)
        generator = torch.Generator(device="cuda").manual_seed(83)  # Liger's selective_log_softmax tests
        drawn = torch.randn(4, generator=generator, device="cuda")
        assert generator.device.type == "cpu" and isinstance(generator, torch.Generator)
        assert isinstance(torch.default_generator, torch.Generator)
        assert torch.equal(drawn, torch.randn(4, generator=torch.Generator().manual_seed(83)))
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
    (lambda: torch.cuda.max_memory_allocated(), "torch.cuda.max_memory_allocated cannot be emulated"),
    (lambda: torch.cuda.CUDAGraph(), "torch.cuda.CUDAGraph cannot be emulated"),
    (lambda: torch.cuda.graph(None), "torch.cuda.graph cannot be emulated"),
])
def test_what_cannot_be_emulated_fails_naming_kwshim(call, name):
    with kwshim.activate(device="cuda"), pytest.raises(RuntimeError) as caught:
        call()
    assert str(caught.value).startswith("kwshim: ") and name in str(caught.value)


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
            kwshim.activate()
        assert "kwshim: the switch is on with device='cuda'; a nested activation cannot make it None" \
            in str(caught.value)
        with kwshim.activate(device="cuda", autotune="first"):
            assert torch.cuda.is_available()
        assert torch.cuda.is_available()
    assert not torch.cuda.is_available()


SNAPSHOT = """
import os; os.environ["TRITON_INTERPRET"] = "1"
import importlib, torch, triton
def snapshot():
    snap = {}
    for owner in (torch, torch.cuda, torch.Tensor, torch.Tensor.__mro__[1], torch.autocast):
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
assert torch.cuda.is_available() and torch.zeros(1, device="cuda").is_cuda
during = snapshot()
handle.deactivate()
after = snapshot()
changed = [key for key in set(before) | set(after) if after.get(key) is not before.get(key)]
patched = [key for key in before if during.get(key) is not before[key]]
print(len(patched), "changed:", changed, torch.cuda.is_available(), torch._C._is_torch_function_mode_enabled())
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
    assert int(count) > 60 and rest == "[] False False"  # 39 factories, the Tensor methods, torch.cuda
    assert second == "cuda refused again"


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
