"""``snapshot.py``: the tensors ``verify`` and ``grid="check"`` reach, and their whole storage."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import AutotuneSideEffectError, ConfigDivergenceError

from .kernels import needs_block_loads

pytestmark = pytest.mark.usefixtures("no_switch_left_on")

TWO = [triton.Config({"X": 1}), triton.Config({"X": 2})]


def test_configs_that_differ_only_between_a_strided_views_elements_diverge():
    """The view shows elements 0, 2, 4, 6; the Configs write 1, 3, 5, 7 differently."""

    @triton.jit
    def between(view_ptr, X: tl.constexpr):
        offsets = tl.arange(0, 4)
        tl.store(view_ptr + offsets * 2 + 1, tl.full((4,), X, tl.int32))

    storage = torch.zeros(8, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=TWO, key=[])(between)
        with pytest.raises(ConfigDivergenceError, match=r"argument 'view_ptr\.storage' different: 4 of 8 elements"):
            kernel[(1,)](storage[::2])
    assert storage.tolist() == [0] * 8  # back as before the launch


@needs_block_loads
def test_tuning_that_accumulates_between_a_strided_views_elements_is_a_side_effect():
    """Two tuning runs and the launch leave 3 between the elements, where one clean launch leaves 1."""

    @triton.jit
    def bump_between(view_ptr, X: tl.constexpr):
        offsets = tl.arange(0, 4) * 2 + 1
        tl.store(view_ptr + offsets, tl.load(view_ptr + offsets) + 1)

    storage = torch.zeros(8, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=TWO, key=[])(bump_between)
        with pytest.raises(AutotuneSideEffectError,
                           match=r"argument 'view_ptr\.storage'.*reset_to_zero=\['view_ptr'\]"):
            kernel[(1,)](storage[::2])
    assert storage.tolist() == [0] * 8


def test_a_view_that_covers_its_storage_is_compared_as_itself():
    """A whole tensor is not snapshotted twice; its differences are named and indexed as before."""

    @triton.jit
    def by_config(out_ptr, X: tl.constexpr):
        tl.store(out_ptr + 3, X)

    out = torch.zeros(2, 4, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=TWO, key=[])(by_config)
        with pytest.raises(ConfigDivergenceError, match=r"argument 'out_ptr' different: 1 of 8 elements differ, "
                                                        r"largest absolute difference 1.0 \(1 against 2\), "
                                                        r"first at index \(0, 3\)$"):
            kernel[(1,)](out)


def test_an_fp8_argument_is_snapshotted_and_compared():
    """torch has no isclose for fp8: kwshim compares it in float32, which holds every fp8 value."""

    @triton.jit
    def store_config(out_ptr, unused_ptr, X: tl.constexpr):
        tl.store(out_ptr, X)

    out, unused = torch.zeros(1, dtype=torch.int32), torch.ones(4).to(torch.float8_e4m3fn)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=TWO, key=[])(store_config)
        with pytest.raises(ConfigDivergenceError, match="argument 'out_ptr' different"):
            kernel[(1,)](out, unused)
    same = [triton.Config({"X": 5}), triton.Config({"X": 5})]
    with kwshim.activate(autotune="verify"):
        triton.autotune(configs=same, key=[])(store_config)[(1,)](out, unused)
    assert int(out[0]) == 5 and unused.to(torch.float32).tolist() == [1.0] * 4


def test_fp8_values_that_differ_are_found():
    from kwshim.snapshot import difference
    from kwshim.settings import Settings

    want = torch.tensor([1.0, 2.0, 448.0]).to(torch.float8_e4m3fn)
    got = torch.tensor([1.0, 2.5, 448.0]).to(torch.float8_e4m3fn)
    found = difference(want, got, Settings())
    assert found[:4] == (1, 3, 0.5, (1,)) and (found.want, found.got) == (2.0, 2.5)
    assert difference(want, want.clone(), Settings()) is None


@needs_block_loads
def test_a_reinterpreted_argument_is_reached_through_its_base():
    @triton.jit
    def store_config(out_ptr, X: tl.constexpr):
        tl.store(out_ptr, X)

    base = torch.zeros(4, dtype=torch.int32)
    with kwshim.activate(autotune="verify"):
        kernel = triton.autotune(configs=TWO, key=[])(store_config)
        with pytest.raises(ConfigDivergenceError, match=r"argument 'out_ptr\.base' different"):
            kernel[(1,)](triton.reinterpret(base, tl.float32))
    assert base.tolist() == [0] * 4
