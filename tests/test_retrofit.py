"""Retrofitting kernels that are already built, where they live."""

import importlib
import sys

import pytest
import torch
import triton
import triton.language as tl

from kwshim import KwsafeKernel, PlacementError, UnsupportedSignatureError, kwsafe, kwsafe_module
from kwshim.launch.kernel import is_fixed_in_place

from .kernels import needs_block_loads


@pytest.fixture
def library():
    """A fresh import of the fixture library for each test (retrofitting changes it in place)."""
    sys.modules.pop("tests.fixtures.kernel_library", None)
    try:
        module = importlib.import_module("tests.fixtures.kernel_library")
    except RuntimeError as exc:  # 3.2-3.3: a plain @triton.autotune needs a GPU driver at import
        pytest.skip(f"this release's @triton.autotune needs a GPU driver at decoration: {exc}")
    yield module
    sys.modules.pop("tests.fixtures.kernel_library", None)


@triton.jit
def _receives_num_warps(out_ptr, num_warps: tl.constexpr):  # noqa: KWS001  (bare on purpose: the probe)
    tl.store(out_ptr, num_warps)


def _bare_interpreter_strips_reserved_keywords():
    """Probed: whether this release's bare interpreter drops ``num_warps=`` before the kernel sees it."""
    out = torch.zeros(1, dtype=torch.int32)
    try:
        _receives_num_warps[(1,)](out, num_warps=4)
    except TypeError:
        return True
    return int(out[0]) != 4


@needs_block_loads
def test_bare_library_is_broken_or_silently_wrong_on_buggy_interpreters(library):
    """Documents what the retrofit fixes: where the bare interpreter strips reserved keywords, the
    library fails or computes wrong values; where it does not, it is right."""
    try:
        result = library.scale(torch.ones(4)).tolist()
    except TypeError as exc:
        assert "num_warps" in str(exc) or "warmup" in str(exc), exc  # 2.3.x: every autotune launch fails
        result = None
    if _bare_interpreter_strips_reserved_keywords():
        assert result != [4.0] * 4
    else:
        assert result == [4.0] * 4  # releases with the upstream fix (3.3+)


@needs_block_loads
def test_kwsafe_on_an_autotuner_fixes_it_in_place_and_returns_it(library):
    stack = library._scale_kernel
    assert kwsafe(stack) is stack
    assert isinstance(stack.fn, KwsafeKernel)
    assert library.scale(torch.ones(4)).tolist() == [4.0] * 4


def test_kwsafe_on_heuristics(library):
    assert kwsafe(library._stages_kernel) is library._stages_kernel
    assert library.stages(12) == 125


def test_retrofit_twice_is_a_no_op(library):
    kwsafe(library._scale_kernel)
    inner = library._scale_kernel.fn
    kwsafe(library._scale_kernel)
    assert library._scale_kernel.fn is inner


def test_nested_stack(library):
    stack = triton.heuristics({"n": lambda args: 3})(library._scale_kernel)
    kwsafe(stack)
    assert isinstance(stack.fn.fn, KwsafeKernel)


def test_a_stack_without_a_kernel_is_refused(library):
    stack = library._scale_kernel
    stack.fn = None
    with pytest.raises(PlacementError, match="found no @triton.jit kernel under Autotuner"):
        kwsafe(stack)


def test_kwsafe_module_fixes_every_kernel_and_says_which(library):
    with pytest.warns(UserWarning, match="skipped 1 kernel"):
        fixed = kwsafe_module(library)
    assert sorted(fixed) == ["_keyword_only_kernel", "_plain_kernel", "_reserved_default_kernel", "_scale_kernel",
                             "_stages_kernel"]
    assert list(fixed.skipped) == ["add_all"] and "declares *xs" in fixed.skipped["add_all"]
    assert library.stages(9) == 92
    assert isinstance(library._scale_kernel.fn, KwsafeKernel)
    assert is_fixed_in_place(library._plain_kernel)
    with pytest.warns(UserWarning):
        assert kwsafe_module(library) == []


def test_kwsafe_module_leaves_no_keyword_only_kernel_launching_with_its_default(library):
    """Fixed in place all the same: refused at launch where the compiler refuses keyword-only
    parameters (before 3.9), bound where it accepts them."""
    import torch

    from kwshim import compat as _triton

    with pytest.warns(UserWarning):
        kwsafe_module(library)
    out = torch.zeros(1, dtype=torch.int32)
    if "keyword_only" in _triton.compiler_accepts():
        library._keyword_only_kernel[(1,)](out, num_warps=4)
        assert int(out[0]) == 4
    else:
        with pytest.raises(UnsupportedSignatureError, match="num_warps"):
            library._keyword_only_kernel[(1,)](out, num_warps=4)
        assert int(out[0]) == 0


def test_kwsafe_module_needs_a_module():
    with pytest.raises(TypeError, match="expects a module"):
        kwsafe_module("kernels")


def test_compiled_stack_is_left_alone(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")

    def fn(out_ptr, num_warps):
        pass

    try:
        stack = triton.autotune(configs=[triton.Config({})], key=[])(triton.jit(fn))
    except RuntimeError as exc:  # 3.2-3.3: @triton.autotune needs a GPU driver at decoration
        pytest.skip(f"this release's @triton.autotune needs a GPU driver: {exc}")
    inner = stack.fn
    assert kwsafe(stack) is stack and stack.fn is inner


def test_plain_kernels_are_fixed_in_place_so_imported_references_are_fixed(library):
    imported = library._reserved_default_kernel  # what `from library import ...` holds elsewhere
    with pytest.warns(UserWarning):
        kwsafe_module(library)
    assert library._reserved_default_kernel is imported and is_fixed_in_place(imported)
    out = torch.zeros(1, dtype=torch.int32)
    imported[(1,)](out, num_warps=4)
    assert int(out[0]) == 4  # bare 2.2-3.2 silently store the default, 1
    imported.run(out, num_warps=8, grid=(1,), warmup=False)
    assert int(out[0]) == 8


def test_a_kernel_fixed_in_place_survives_copies(library):
    import copy

    with pytest.warns(UserWarning):
        kwsafe_module(library)
    clone = copy.deepcopy(library._reserved_default_kernel)
    assert is_fixed_in_place(clone)
    out = torch.zeros(1, dtype=torch.int32)
    clone[(1,)](out, num_warps=2)
    assert int(out[0]) == 2
