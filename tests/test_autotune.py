"""Autotune on the CPU under the switch: ``all`` leaves what a GPU's tuning leaves (hooks do
their work, kwshim restores nothing); ``verify`` compares every Config from one snapshot and
the tuned launch with one clean launch, and names the hazard."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import AutotuneSideEffectError, ConfigDivergenceError

from .kernels import needs_block_loads, store_kernel

GRID = (1,)
THREE = [triton.Config({"SLOT": i}, num_warps=w) for i, w in enumerate((1, 2, 4))]


pytestmark = pytest.mark.usefixtures("no_switch_left_on")


def accumulating():
    @triton.jit
    def accumulate(x_ptr, acc_ptr, SLOT: tl.constexpr):
        tl.store(acc_ptr, tl.load(acc_ptr) + tl.load(x_ptr))

    return accumulate


def in_place():
    @triton.jit
    def increment(x_ptr, SLOT: tl.constexpr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    return increment


def tune(kernel, configs=THREE, **hooks):
    """An autotuner over ``kernel``, built while the switch is on (3.2-3.3 need it)."""
    return triton.autotune(configs=configs, key=[], **hooks)(kernel)


class _OwnRun(triton.runtime.Autotuner):
    """A tuner with its own ``run``, as FlagGems' ``LibTuner``: every Config timed through ``self._bench``."""

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))  # as LibTuner sets it: Triton's _bench reads it
        self.timings = {config: self._bench(*args, config=config, **kwargs) for config in self.configs}
        self.best_config = min(self.timings, key=self.timings.get)
        return self.fn.run(*args, **kwargs, **self.best_config.all_kwargs())


# -- all: the GPU's side effects ----------------------------------------------------------------

def test_all_accumulates_as_a_gpu_does_without_reset_to_zero():
    x, acc = torch.ones(1), torch.zeros(1)
    with kwshim.activate(autotune="all"):
        tune(accumulating())[GRID](x, acc)
    assert float(acc[0]) == 4.0  # three tuning runs and the launch (a GPU's many runs: 5130.0)


def test_all_accumulates_atomically_as_a_gpu_does_without_reset_to_zero():
    @triton.jit
    def atomic_accumulate(x_ptr, acc_ptr, SLOT: tl.constexpr):
        tl.atomic_add(acc_ptr, tl.load(x_ptr))

    x, acc = torch.ones(1), torch.zeros(1)
    with kwshim.activate(autotune="all"):
        kernel = tune(atomic_accumulate)
        try:
            kernel[GRID](x, acc)
        except AttributeError as exc:  # 2.2.0: 'Builder' object has no attribute 'get_int1'
            pytest.skip(f"this release's interpreter cannot run tl.atomic_add: {exc}")
    assert float(acc[0]) == 4.0  # the H200's figure for this kernel, compiled 3.6.0: 5130.0


def test_all_honours_reset_to_zero_as_a_gpu_does():
    x, acc = torch.ones(1), torch.zeros(1)
    with kwshim.activate(autotune="all"):
        tune(accumulating(), reset_to_zero=["acc_ptr"])[GRID](x, acc)
    assert float(acc[0]) == 1.0


def test_all_updates_in_place_each_run_without_restore_value():
    x = torch.full((1,), 10, dtype=torch.int32)
    with kwshim.activate(autotune="all"):
        tune(in_place())[GRID](x)
    assert int(x[0]) == 14


def test_all_honours_restore_value_as_a_gpu_does():
    x = torch.full((1,), 10, dtype=torch.int32)
    with kwshim.activate(autotune="all"):
        kernel = tune(in_place(), restore_value=["x_ptr"])
        kernel[GRID](x)
        assert int(x[0]) == 11
        kernel[GRID](x)  # the same key: the cached Config, no tuning
    assert int(x[0]) == 12


def test_first_is_unchanged_one_launch_only():
    x, acc = torch.ones(1), torch.zeros(1)
    with kwshim.activate(autotune="first"):
        tune(accumulating())[GRID](x, acc)
    assert float(acc[0]) == 1.0


# -- verify: side effects of tuning ---------------------------------------------------------------

def test_verify_names_a_missing_reset_to_zero_and_restores_the_tensors():
    x, acc = torch.ones(1), torch.zeros(1)
    with kwshim.activate(autotune="verify"):
        kernel = tune(accumulating())
        with pytest.raises(AutotuneSideEffectError) as info:
            kernel[GRID](x, acc)
    message = str(info.value)
    assert isinstance(info.value, AssertionError)
    assert message.startswith("accumulate: autotuning changes what the first launch leaves in argument 'acc_ptr'")
    assert "1 of 1 elements differ, largest absolute difference 3.0" in message
    assert "reset_to_zero=['acc_ptr']" in message
    assert float(acc[0]) == 0.0 and float(x[0]) == 1.0  # back to the pre-launch state


def test_verify_names_a_missing_restore_value_and_fails_again_on_the_next_launch():
    x = torch.full((1,), 10, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = tune(in_place())
        for _ in range(2):  # the failed tuning is not cached
            with pytest.raises(AutotuneSideEffectError, match=r"argument 'x_ptr'.*restore_value=\['x_ptr'\]"):
                kernel[GRID](x)
            assert int(x[0]) == 10


@pytest.mark.parametrize("hooks, start, end", [
    ({"reset_to_zero": ["acc_ptr"]}, 0.0, 1.0),
    ({"restore_value": ["acc_ptr"]}, 5.0, 6.0),
])
def test_verify_passes_correctly_hooked_kernels_which_end_as_one_launch(hooks, start, end):
    x, acc = torch.ones(1), torch.full((1,), start)
    with kwshim.activate(autotune="verify"):
        tune(accumulating(), **hooks)[GRID](x, acc)
    assert float(acc[0]) == end


def test_verify_compares_restore_value_arguments_before_they_are_restored():
    @triton.jit
    def scale_in_place(x_ptr, SLOT: tl.constexpr):
        tl.store(x_ptr, tl.load(x_ptr) * (2 + (SLOT == 2)))  # Config 2 triples

    x = torch.full((1,), 3, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = tune(scale_in_place, restore_value=["x_ptr"])
        with pytest.raises(ConfigDivergenceError, match=r"Config SLOT: 2.*argument 'x_ptr'"):
            kernel[GRID](x)
    assert int(x[0]) == 3


@needs_block_loads
def test_verify_catches_configs_that_write_disjoint_regions():
    @triton.jit
    def half(out_ptr, SLOT: tl.constexpr):
        offsets = tl.arange(0, 8)
        if SLOT == 0:  # each Config writes one half
            tl.store(out_ptr + offsets, offsets + 1, mask=offsets < 4)
        else:
            tl.store(out_ptr + offsets, offsets + 1, mask=offsets >= 4)

    configs = [triton.Config({"SLOT": 0}), triton.Config({"SLOT": 1})]
    out = torch.zeros(8, dtype=torch.int32)
    with kwshim.activate(autotune="all"):  # all: the halves mask each other, as on a GPU
        tune(half, configs)[GRID](out)
    assert out.tolist() == list(range(1, 9))
    out.zero_()
    with kwshim.activate(autotune="verify"):
        with pytest.raises(ConfigDivergenceError, match=r"argument 'out_ptr' different: 8 of 8 elements differ"):
            tune(half, configs)[GRID](out)
    assert out.tolist() == [0] * 8  # back to the pre-launch state


@needs_block_loads
def test_verify_restores_the_pre_launch_state_after_a_divergence():
    @triton.jit
    def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, 8)
        x = tl.load(x_ptr + offsets)
        tl.store(out_ptr + offsets, tl.where(offsets < BLOCK, x * 2, x))

    x, out = torch.arange(8, dtype=torch.float32), torch.full((8,), -1.0)
    with kwshim.activate(autotune="verify"):
        kernel = tune(scale, [triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 4})])
        with pytest.raises(ConfigDivergenceError):
            kernel[GRID](x, out)
    assert out.tolist() == [-1.0] * 8 and x.tolist() == list(range(8))


@pytest.mark.parametrize("equal_nan, raises", [(True, False), (False, True)])
def test_verify_treats_nan_in_the_same_place_as_agreement_by_default(equal_nan, raises):
    @triton.jit
    def nan_store(x_ptr, out_ptr, SLOT: tl.constexpr):
        x = tl.load(x_ptr)
        tl.store(out_ptr, x / x)  # 0 / 0: NaN with every Config

    x, out = torch.zeros(1), torch.zeros(1)
    with kwshim.activate(autotune="verify", equal_nan=equal_nan):
        kernel = tune(nan_store)
        if raises:
            with pytest.raises(ConfigDivergenceError, match="argument 'out_ptr'"):
                kernel[GRID](x, out)
        else:
            kernel[GRID](x, out)
            assert torch.isnan(out).all()


def test_a_nested_verify_tunes_again_a_key_an_outer_all_tuned():
    x = torch.full((1,), 10, dtype=torch.int32)
    with kwshim.activate(autotune="all"):
        kernel = tune(in_place())
        kernel[GRID](x)
        assert int(x[0]) == 14  # tuned under all: four runs
        with kwshim.activate(autotune="verify"):
            with pytest.raises(AutotuneSideEffectError):
                kernel[GRID](x)
            assert int(x[0]) == 14
        kernel[GRID](x)  # all again: the key it tuned is still cached, one launch
    assert int(x[0]) == 15


# -- what kwshim never writes into ----------------------------------------------------------------

def _interpreter_writes_into_inputs():
    """Triton 2.2's interpreter copies every argument back after a launch, bare or not."""
    @triton.jit
    def read_only(x_ptr, acc_ptr):
        tl.store(acc_ptr, tl.load(x_ptr))

    x = torch.ones(1)
    version = x._version
    read_only[GRID](x, torch.zeros(1))
    return x._version != version


@pytest.mark.parametrize("policy", ["all", "verify"])
@pytest.mark.parametrize("make_input", ["leaf requiring grad", "expanded", "inference"])
def test_inputs_the_kernel_does_not_change_are_never_written(policy, make_input):
    if _interpreter_writes_into_inputs():
        pytest.skip("this release's interpreter itself writes into every argument of a launch")
    if make_input == "leaf requiring grad":
        x = torch.full((1,), 2.0, requires_grad=True)
    elif make_input == "expanded":
        x = torch.full((1,), 2.0).expand(1)
    else:
        with torch.inference_mode():
            x = torch.full((1,), 2.0)
    version = None if x.is_inference() else x._version  # inference tensors have no version counter
    acc = torch.zeros(1)
    with kwshim.activate(autotune=policy):
        tune(accumulating(), reset_to_zero=["acc_ptr"])[GRID](x.detach() if x.requires_grad else x, acc)
    assert float(acc[0]) == 2.0 and float(x.detach()[0]) == 2.0
    assert version is None or x._version == version


def test_backward_works_after_an_autotuned_kernel_read_a_saved_tensor():
    """fla's l2norm: the forward saves its input for backward; tuning must not bump its version."""
    if _interpreter_writes_into_inputs():
        pytest.skip("this release's interpreter itself writes into every argument of a launch")
    x = torch.full((4,), 3.0, requires_grad=True)
    y = x * x  # saves x for backward
    acc = torch.zeros(1)
    with kwshim.activate(autotune="verify"):
        tune(accumulating(), reset_to_zero=["acc_ptr"])[GRID](x.detach(), acc)
    y.sum().backward()
    assert x.grad.tolist() == [6.0] * 4 and float(acc[0]) == 3.0


# -- Configs that fail to compile -----------------------------------------------------------------

def static_asserting():
    @triton.jit
    def checked(out_ptr, SLOT: tl.constexpr):
        tl.static_assert(SLOT != 0, "SLOT 0 does not fit")
        tl.store(out_ptr, tl.load(out_ptr) + 1)

    return checked


def _interpreter_raises_static_assert():
    @triton.jit
    def probe(SLOT: tl.constexpr):
        tl.static_assert(SLOT != 0)

    try:
        probe[GRID](0)
    except Exception:
        return True
    return False


@pytest.mark.parametrize("policy", ["all", "verify"])
def test_a_config_that_fails_static_assert_is_skipped_as_compiled_triton_skips_it(policy):
    if not _interpreter_raises_static_assert():
        pytest.skip("this release's interpreter does not evaluate tl.static_assert")
    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate(autotune=policy):
        kernel = tune(static_asserting(), reset_to_zero=["out_ptr"])
        kernel[GRID](out)
        assert kernel.best_config.kwargs["SLOT"] == 1 and int(out[0]) == 1
        assert [float(t[0]) for t in kernel.configs_timings.values()][0] == float("inf")


def test_when_every_config_fails_static_assert_the_launch_fails_as_compiled():
    if not _interpreter_raises_static_assert():
        pytest.skip("this release's interpreter does not evaluate tl.static_assert")
    with kwshim.activate(autotune="all"):
        kernel = tune(static_asserting(), [triton.Config({"SLOT": 0}), triton.Config({"SLOT": 0}, num_warps=2)])
        with pytest.raises(Exception, match="SLOT 0 does not fit"):
            kernel[GRID](torch.zeros(1, dtype=torch.int32))


def test_first_skips_the_configs_whose_top_level_static_assert_fails_without_running_any():
    """Under ``first`` nothing runs, yet a Config whose ``tl.static_assert`` over its parameters fails
    is not chosen, as a GPU's compile refuses it (FlagGems' attention asserts ``BLOCK_N <= HEAD_DIM``
    and lists larger blocks first): through Triton's ``Autotuner.run`` and through a tuner's own
    ``run`` (FlagGems' ``LibTuner``). The condition may read the launch's arguments; one over a value
    computed in the kernel is left to the launch."""
    if not _interpreter_raises_static_assert():
        pytest.skip("this release's interpreter does not evaluate tl.static_assert")

    @triton.jit
    def blocked(out_ptr, HEAD: tl.constexpr, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK <= HEAD)
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), BLOCK, tl.int32))

    configs = [triton.Config({"BLOCK": block}) for block in (128, 64, 16)]
    for head, chosen in ((64, 64), (16, 16), (128, 128)):
        out = torch.zeros(128, dtype=torch.int32)
        with kwshim.activate(autotune="first"):
            kernel = triton.autotune(configs=configs, key=["HEAD"])(blocked)
            kernel[GRID](out, head)
        assert kernel.best_config.kwargs["BLOCK"] == chosen and int(out[0]) == chosen and int(out[chosen:].sum()) == 0

    if hasattr(triton.Config, "all_kwargs"):
        out = torch.zeros(128, dtype=torch.int32)
        with kwshim.activate(autotune="first"):
            tuner = _OwnRun(blocked, ["out_ptr", "HEAD"], configs, key=["HEAD"], reset_to_zero=None, restore_value=None)
            tuner[GRID](out, HEAD=32)
        assert tuner.best_config.kwargs["BLOCK"] == 16 and int(out[0]) == 16
        assert [tuner.timings[config][0] for config in configs] == [float("inf"), float("inf"), 2.0]

    @triton.jit
    def computed(out_ptr, HEAD: tl.constexpr, BLOCK: tl.constexpr):
        HALF: tl.constexpr = HEAD // 2
        tl.static_assert(BLOCK <= HALF)
        tl.store(out_ptr, BLOCK)

    with kwshim.activate(autotune="first"):  # not read here: the first Config runs and its assertion fails
        kernel = triton.autotune(configs=configs, key=["HEAD"])(computed)
        with pytest.raises(Exception):
            kernel[GRID](torch.zeros(1, dtype=torch.int32), 64)


# -- host tensor descriptors (3.4+) ---------------------------------------------------------------

def _tensor_descriptor():
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        pytest.skip("this Triton has no host TensorDescriptor (3.4+)")
    return TensorDescriptor


@needs_block_loads
def test_verify_reaches_tensors_inside_host_tensor_descriptors():
    TensorDescriptor = _tensor_descriptor()

    @triton.jit
    def scale_desc(desc, SLOT: tl.constexpr):
        block = desc.load([0])
        desc.store([0], block * (2 + (SLOT == 1)))  # Config 1 triples, in place

    x = torch.arange(16, dtype=torch.float32)
    configs = [triton.Config({"SLOT": 0}), triton.Config({"SLOT": 1})]
    with kwshim.activate(autotune="all"):
        tune(scale_desc, configs)[GRID](TensorDescriptor.from_tensor(x, [16]))
    assert x.tolist() == [12.0 * i for i in range(16)]  # each run in place, as on a GPU
    x = torch.arange(16, dtype=torch.float32)
    with kwshim.activate(autotune="verify"):
        with pytest.raises(ConfigDivergenceError, match=r"argument 'desc.base' different"):
            tune(scale_desc, configs)[GRID](TensorDescriptor.from_tensor(x, [16]))
    assert x.tolist() == [float(i) for i in range(16)]


# -- settings -------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, error", [({"rtol": -1.0}, ValueError), ({"atol": "0.1"}, TypeError),
                                        ({"rtol": float("nan")}, ValueError)])
def test_tolerances_are_checked(bad, error):
    with pytest.raises(error, match="must be a number >= 0"):
        kwshim.activate(autotune="verify", **bad)


def test_config_pre_hooks_and_a_user_post_hook_act_as_on_a_gpu():
    calls = []
    has_post_hook = "post_hook" in __import__("inspect").signature(triton.autotune).parameters

    def zero(nargs):
        nargs["acc_ptr"].zero_()

    configs = [triton.Config({"SLOT": i}, pre_hook=zero) for i in range(3)]
    x, acc = torch.ones(1), torch.full((1,), 9.0)
    with kwshim.activate(autotune="all"):
        kernel = triton.autotune(configs=configs, key=[])(accumulating())
        if has_post_hook:
            kernel.post_hook = lambda *args, **kwargs: calls.append(1)
        kernel[GRID](x, acc)
    assert float(acc[0]) == 1.0  # each run, and the launch, start from the Config's zeroing
    with kwshim.activate(autotune="verify"):
        acc.fill_(9.0)
        triton.autotune(configs=configs, key=[])(accumulating())[GRID](x, acc)
    assert float(acc[0]) == 1.0
    assert calls == ([1, 1, 1] if has_post_hook else [])  # a user post-hook: once per tuning run


# -- the policies, through Triton's own Autotuner logic ---------------------------------------------------------

def three_configs():
    return [triton.Config({"SLOT": i}, num_warps=w) for i, w in enumerate((2, 4, 8))]


def add_n_kernel():
    @triton.jit
    def add(out_ptr, n, num_warps: tl.constexpr, SLOT: tl.constexpr):
        tl.store(out_ptr, tl.load(out_ptr) + num_warps + n * 0)

    return add


class Recorder:
    """A grid callable: records which Config (its SLOT) each launch ran, and its num_warps."""

    def __init__(self):
        self.slots, self.warps = [], []

    def __call__(self, meta):
        self.slots.append(meta["SLOT"])
        self.warps.append(meta["num_warps"])
        return GRID


def test_all_runs_each_config_once_then_the_first_and_caches_per_key():
    with kwshim.activate(autotune="all"):
        kernel = triton.autotune(configs=three_configs(), key=["n"])(add_n_kernel())
        out, launches = torch.zeros(1, dtype=torch.int32), Recorder()
        kernel[launches](out, 5)
        assert launches.slots == [0, 1, 2, 0]  # each Config once, then the first
        assert launches.warps == [2, 4, 8, 2]  # each run sees its own Config's num_warps
        assert int(out[0]) == 2 + 4 + 8 + 2  # each run adds to out, as on a GPU (no reset_to_zero)
        assert kernel.best_config.kwargs["SLOT"] == 0
        assert len(kernel.configs_timings) == 3
        assert all(float(t[0] if isinstance(t, list) else t) > 0 for t in kernel.configs_timings.values())
        kernel[launches](out, 5)  # same key: the cached choice only
        assert launches.slots == [0, 1, 2, 0, 0] and int(out[0]) == 18
        kernel[launches](out, 6)  # a new key tunes again
        assert launches.slots == [0, 1, 2, 0, 0, 0, 1, 2, 0]


def test_first_runs_no_config_but_the_first():
    with kwshim.activate(autotune="first"):
        kernel = triton.autotune(configs=three_configs(), key=["n"])(add_n_kernel())
        out, launches = torch.zeros(1, dtype=torch.int32), Recorder()
        kernel[launches](out, 5)
    assert launches.slots == [0] and int(out[0]) == 2
    assert kernel.best_config.kwargs["SLOT"] == 0


def test_pruning_and_hooks_keep_their_meaning():
    def prune(configs, nargs, **kwargs):
        return configs[1:]  # drop Config 0

    with kwshim.activate(autotune="all"):
        kernel = triton.autotune(configs=three_configs(), key=["n"], prune_configs_by={"early_config_prune": prune},
                                 reset_to_zero=["out_ptr"])(add_n_kernel())
        out, launches = torch.full((1,), 50, dtype=torch.int32), Recorder()
        kernel[launches](out, 5)
    assert launches.slots == [1, 2, 1]  # the first surviving Config is 1
    assert int(out[0]) == 4  # reset_to_zero zeroed out before the launch of Config 1 (num_warps=4)


def divergent_kernel():
    @triton.jit
    def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, 8)
        x = tl.load(x_ptr + offsets)
        tl.store(out_ptr + offsets, tl.where(offsets < BLOCK, x * 2, x))  # wrong beyond BLOCK

    return scale


@needs_block_loads
def test_verify_names_the_divergent_config_argument_and_index():
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 4})],
                                 key=[])(divergent_kernel())
        with pytest.raises(ConfigDivergenceError) as info:
            kernel[GRID](x, out)
    message = str(info.value)
    assert isinstance(info.value, AssertionError)
    assert "scale" in message and "BLOCK: 4" in message and "BLOCK: 8" in message
    assert "argument 'out_ptr'" in message and "4 of 8 elements differ" in message
    assert "largest absolute difference 7.0 (14.0 against 7.0)" in message and "first at index (4,)" in message
    assert message.index("BLOCK: 4") < message.index("BLOCK: 8")  # the divergent Config, then the first
    assert message.endswith("compared with rtol=1.3e-06, atol=1e-05 (float32's, as torch.testing.assert_close picks "
                            "them): if it is rounding (a sum in another order), "
                            "allow it with --kwshim-atol/--kwshim-rtol (kwshim run --atol/--rtol, activate(atol=...))")


@needs_block_loads
def test_verify_passes_agreeing_configs_and_leaves_the_chosen_result():
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16})],
                                 key=[])(divergent_kernel())
        kernel[GRID](x, out)
    assert out.tolist() == [2.0 * i for i in range(8)]


def test_an_exception_in_one_config_names_it():
    def grid(meta):
        if meta["BLOCK"] == 16:
            raise RuntimeError("this Config cannot launch")
        return GRID

    with kwshim.activate(autotune="all"):
        kernel = triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 16})], key=[])(
            store_kernel(["BLOCK"], "BLOCK", wrap=False))
        with pytest.raises(RuntimeError, match="this Config cannot launch") as info:
            kernel[grid](torch.zeros(1, dtype=torch.int32))
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "while autotuning generated" in notes and "BLOCK: 16" in notes


def test_cache_results_autotuners_tune_on_the_cpu():
    import inspect as _inspect

    if "cache_results" not in _inspect.signature(triton.autotune).parameters:
        pytest.skip("this Triton's autotune has no cache_results (added in 3.4)")
    with kwshim.activate(autotune="all"):
        kernel = triton.autotune(configs=three_configs(), key=["n"], cache_results=True)(add_n_kernel())
        launches = Recorder()
        kernel[launches](torch.zeros(1, dtype=torch.int32), 3)
    assert launches.slots == [0, 1, 2, 0]


def test_heuristics_above_and_below_the_autotuner_keep_their_meaning():
    with kwshim.activate(autotune="all"):
        @triton.jit
        def add(out_ptr, n, num_warps: tl.constexpr, SLOT: tl.constexpr, EXTRA: tl.constexpr):
            tl.store(out_ptr, tl.load(out_ptr) + num_warps * 100 + EXTRA + n * 0)

        kernel = triton.heuristics({"EXTRA": lambda args: args["n"] + 1})(
            triton.autotune(configs=three_configs(), key=["n"], reset_to_zero=["out_ptr"])(add))
        out, launches = torch.zeros(1, dtype=torch.int32), Recorder()
        kernel[launches](out, 6)
    assert int(out[0]) == 207 and launches.slots == [0, 1, 2, 0]


def test_first_runs_no_config_of_an_autotuner_whose_own_run_benchmarks_each_config():
    """FlagGems' ``LibTuner`` overrides ``Autotuner.run``: it times every Config through ``self._bench``
    and keeps the fastest. Under ``first`` none of them runs on the CPU and the first is chosen (each
    ran, on every launch of a new key, before); under ``all`` each still runs once, as on a GPU, and
    ``verify``, which cannot compare Configs it does not see together, says so and runs them so."""
    if not hasattr(triton.Config, "all_kwargs"):
        pytest.skip("Config.all_kwargs arrived in 3.0: a tuner of its own, as FlagGems', needs it")

    import warnings

    for policy, slots in (("first", [0]), ("all", [0, 1, 2, 0]), ("verify", [0, 1, 2, 0])):
        with kwshim.activate(autotune=policy), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = add_n_kernel()
            tuner = _OwnRun(kernel, kernel.arg_names, three_configs(), key=["n"], reset_to_zero=None,
                            restore_value=None)
            out, launches = torch.zeros(1, dtype=torch.int32), Recorder()
            tuner[launches](out, 5)
        said = [str(w.message) for w in caught if "cannot compare the Configs of _OwnRun" in str(w.message)]
        assert len(said) == (policy == "verify"), (policy, said)  # verify says it once, not per Config
        assert launches.slots == slots, policy
        assert tuner.best_config.kwargs["SLOT"] == 0
        timings = [timing for config in tuner.configs for timing in tuner.timings[config]]
        assert {type(timing) for timing in timings} == {float}, policy  # FlagGems stores them by type (SQL)
        assert timings == [0.0] * 3 + [1.0] * 3 + [2.0] * 3, policy  # each Config's place: the first wins
