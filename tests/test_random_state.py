"""``virtual_cuda/random_state.py``: CUDA's random state on the virtual device, held to what the H200
recorded (``parity/cuda_state_h200.json``, "random state"): a seed and an offset, 16 bytes, advanced
by 4 for each of ``randn(4)``, ``rand(1000)`` and ``dropout(4096)``; the same state gives the same
values, and the CPU's own random stream is left as it was."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

import kwshim  # noqa: E402
from kwshim.virtual_cuda.random_state import offset_increment  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _h200():
    with open(os.path.join(ROOT, "parity", "cuda_state_h200.json")) as recorded:
        return json.load(recorded)["random state"]


def _state(state):
    return {"bytes": len(state), "int64": state.view(torch.int64).tolist()}


def test_the_state_is_the_h200_s_seed_and_offset_after_each_operation():
    h200 = _h200()
    with kwshim.activate(device="cuda"):
        torch.cuda.manual_seed(0)
        assert _state(torch.cuda.get_rng_state()) == h200["after manual_seed(0)"]
        assert torch.cuda.initial_seed() == h200["initial_seed"]
        assert _state(torch.cuda.default_generators[0].get_state()) == h200["default_generators[0].get_state()"]
        torch.randn(4, device="cuda")
        assert _state(torch.cuda.get_rng_state()) == h200["after randn(4)"]
        torch.rand(1000, device="cuda")
        assert _state(torch.cuda.get_rng_state()) == h200["after rand(1000)"]
        torch.nn.functional.dropout(torch.ones(4096, device="cuda"), 0.5)
        assert _state(torch.cuda.get_rng_state()) == h200["after dropout(4096)"]
        own = torch.Generator(device="cuda")
        assert str(own.device) == "cuda:0" and h200["Generator(device).device"] == "cuda"
        own.manual_seed(1)
        assert _state(own.get_state()) == h200["Generator(device).get_state() after manual_seed(1)"]
        torch.manual_seed(5)
        assert torch.cuda.initial_seed() == h200["cuda initial_seed after torch.manual_seed(5)"]


def test_a_state_read_and_written_back_gives_the_same_values():
    """As on the H200: ``randn(4)`` after a state written back is the ``randn(4)`` drawn from it, and
    ``manual_seed`` starts the sequence again (the values are the CPU's, not Philox's)."""
    with kwshim.activate(device="cuda"):
        torch.cuda.manual_seed(0)
        first = torch.randn(4, device="cuda")
        state = torch.cuda.get_rng_state()
        second = torch.randn(4, device="cuda")
        torch.cuda.set_rng_state(state)
        again = torch.randn(4, device="cuda")
        torch.cuda.manual_seed(0)
        from_seed = torch.randn(4, device="cuda")
    assert torch.equal(second, again) and torch.equal(first, from_seed) and not torch.equal(first, second)


def test_flaggems_philox_helper_reads_and_advances_the_offset():
    """FlagGems' ``philox_backend_seed_offset`` (utils/random_utils.py): the state as two int64,
    the offset advanced by the increment rounded up to 4 and written back."""
    with kwshim.activate(device="cuda"):
        torch.manual_seed(7)
        generator = torch.cuda.default_generators[torch.cuda.current_device()]
        state = generator.get_state()
        seed, offset = (int(v) for v in state.view(torch.int64))
        state.view(torch.int64)[1] += (10 + 3) // 4 * 4
        generator.set_state(state)
        assert (seed, offset) == (7, 0)
        assert torch.cuda.get_rng_state().view(torch.int64).tolist() == [7, 12]
        with pytest.raises(RuntimeError, match="RNG state is wrong size"):
            generator.set_state(torch.get_rng_state())  # the CPU's mt19937 state: 5,056 bytes


def test_an_explicit_cuda_generator_advances_its_own_offset_and_reproduces():
    with kwshim.activate(device="cuda"):
        torch.cuda.manual_seed(2)
        generator = torch.Generator(device="cuda")
        generator.manual_seed(1)
        x = torch.empty(8, device="cuda").normal_(generator=generator)  # torch hands it over as a new object
        y = torch.randn(8, device="cuda", generator=generator)
        assert generator.get_state().view(torch.int64).tolist() == [1, 8]
        generator.manual_seed(1)
        assert torch.equal(torch.empty(8, device="cuda").normal_(generator=generator), x)
        assert not torch.equal(x, y)
        assert torch.cuda.get_rng_state().view(torch.int64).tolist() == [2, 0]  # the default was not drawn from


def test_the_cpu_stream_is_left_as_it_was():
    with kwshim.activate(device="cuda"):
        torch.manual_seed(3)
        plain = torch.randn(5)
        torch.manual_seed(3)
        torch.randn(100, device="cuda")
        torch.rand_like(torch.zeros(7, device="cuda"))
        assert torch.equal(torch.randn(5), plain)


def test_the_offset_advances_as_measured_on_132_sms_for_every_size_and_dtype():
    """``parity/random_offsets_h100.json``: one operation of n elements, from a fresh seed, on an H100
    (132 SMs, as the H200); on the device, the same operations give the same offsets."""
    with open(os.path.join(ROOT, "parity", "random_offsets_h100.json")) as recorded:
        measured = json.load(recorded)["offset after one operation of n elements"]
    for name, offsets in measured.items():
        for size, offset in offsets.items():
            assert offset_increment(int(size), wide=name.endswith("fp64")) == offset, (name, size)
    dtypes = {"fp32": torch.float32, "fp64": torch.float64, "fp16": torch.float16, "bf16": torch.bfloat16}
    with kwshim.activate(device="cuda"):
        for name, offsets in measured.items():
            operation, dtype = name.split()
            for size in ("1081344", "1081345", "4000000"):
                torch.cuda.manual_seed(0)
                n = int(size)
                if operation == "dropout":
                    torch.nn.functional.dropout(torch.ones(n, device="cuda", dtype=dtypes[dtype]), 0.5)
                elif operation == "normal_":
                    torch.empty(n, device="cuda", dtype=dtypes[dtype]).normal_()
                else:
                    getattr(torch, operation)(n, device="cuda", dtype=dtypes[dtype])
                assert torch.cuda.get_rng_state().view(torch.int64).tolist()[1] == offsets[size], (name, size)


def test_the_generators_are_as_they_were_after_the_switch():
    before = (torch.cuda.default_generators, torch.Generator)
    with kwshim.activate(device="cuda"):
        assert len(torch.cuda.default_generators[0].get_state()) == 16
    assert (torch.cuda.default_generators, torch.Generator) == before
