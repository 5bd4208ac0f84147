"""``autotune/verify.py``: the clean launch ``verify`` compares the tuned launch with is the launch
Triton makes, and tuning from two threads is the tuning of one."""

import threading

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads

pytestmark = pytest.mark.usefixtures("no_switch_left_on")

TWO = [triton.Config({"X": 1}), triton.Config({"X": 2})]


@needs_block_loads
def test_reset_to_zero_on_a_non_zero_buffer_is_not_a_side_effect():
    """Triton's run zeroes ``reset_to_zero`` arguments after tuning, before the launch: the clean
    launch does the same, so a correctly hooked kernel passes, ending as a GPU's first launch does."""

    @triton.jit
    def increment(acc_ptr, X: tl.constexpr):
        tl.store(acc_ptr, tl.load(acc_ptr) + 1)

    acc = torch.full((1,), 5.0)
    with kwshim.activate(autotune="verify"):
        triton.autotune(configs=TWO, key=[], reset_to_zero=["acc_ptr"])(increment)[(1,)](acc)
    assert float(acc[0]) == 1.0  # zeroed after tuning, then one launch (compiled Triton's run)


def _accumulating_autotuner():
    @triton.jit
    def accumulate(acc_ptr, step, X: tl.constexpr):
        tl.store(acc_ptr, tl.load(acc_ptr) + step)

    return triton.autotune(configs=TWO, key=["step"])(accumulate)


@pytest.mark.parametrize("policy", ["all", "verify"])
def test_one_autotuner_tuned_from_two_threads_at_once_tunes_each_as_alone(policy):
    """Each thread's tuning runs its Configs into its own tensor: two tuning runs and the launch
    under ``all``; under ``verify`` the side effect is named, never another thread's values."""
    errors, results = [], []
    with kwshim.activate(autotune="all" if policy == "all" else "verify"):
        for _ in range(6):
            kernel = _accumulating_autotuner()
            start = threading.Barrier(2)

            def launch(step, acc):
                start.wait()
                try:
                    kernel[(1,)](acc, step)
                except kwshim.AutotuneSideEffectError as exc:
                    errors.append(str(exc))
                except Exception as exc:  # noqa: BLE001  (collected and asserted below)
                    errors.append(repr(exc))

            accs = {1.0: torch.zeros(1), 10.0: torch.zeros(1)}
            threads = [threading.Thread(target=launch, args=(step, acc)) for step, acc in accs.items()]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            results.append(tuple(float(acc[0]) for acc in accs.values()))
    if policy == "all":
        assert errors == [] and set(results) == {(3.0, 30.0)}
    else:  # tensors back as they were, each named for its own reason
        assert set(results) == {(0.0, 0.0)} and len(errors) == 12
        assert all("reset_to_zero=['acc_ptr']" in error for error in errors), errors[:2]


@needs_block_loads
@pytest.mark.skipif(not __import__("kwshim").compat.module_wide_builder(),
                    reason="2.x: the interpreter has no bf16 to compute with")
@pytest.mark.parametrize("ulps, diverges", [(1, False), (3, True)])
def test_verify_compares_bf16_with_bf16_s_tolerance_as_assert_close_picks_it(ulps, diverges):
    """Configs that round a bf16 result 1 ulp apart agree under ``verify``'s default tolerances
    (bf16's: rtol 0.016, as ``torch.testing.assert_close`` picks them); 3 ulps apart (2.3%) do not."""

    @triton.jit
    def scale(x_ptr, out_ptr, S: tl.constexpr):
        offsets = tl.arange(0, 8)
        x = tl.load(x_ptr + offsets).to(tl.float32)
        tl.store(out_ptr + offsets, (x * S).to(tl.bfloat16))

    configs = [triton.Config({"S": 1.0}), triton.Config({"S": 1.0 + ulps * 2.0 ** -7})]
    x, out = torch.ones(8, dtype=torch.bfloat16), torch.zeros(8, dtype=torch.bfloat16)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=configs, key=[])(scale)
        if diverges:
            with pytest.raises(kwshim.ConfigDivergenceError, match=r"rtol=0\.016, atol=1e-05 \(bfloat16's"):
                kernel[(1,)](x, out)
        else:
            kernel[(1,)](x, out)
            assert torch.equal(out, torch.ones(8, dtype=torch.bfloat16))  # the first Config's result
