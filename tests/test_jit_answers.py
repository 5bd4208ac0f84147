"""``launch/jit_answers.py``: under the switch an interpreted kernel answers as compiled Triton's
``JITFunction`` where code written for it asks (FlagGems' ``@libentry()``, torch's ``wrap_triton``),
and ``run`` returns a kernel that launches again."""

import inspect

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.compat import module_wide_builder

from .kernels import needs_block_loads

pytestmark = pytest.mark.skipif(not module_wide_builder(), reason="2.x: the interpreter's kernels are not reached")


@triton.jit
def scaled(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr = 16):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * SCALE, mask=mask)


def _tuned():
    """``scaled`` under an autotuner, made under the switch (3.2-3.3's needs a GPU driver bare)."""
    return triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])(scaled)


class LibEntry:
    """FlagGems' ``LibEntry`` (utils/libentry.py, v5.0.2), cut to what it asks of a kernel: it walks
    ``.fn`` down to the ``JITFunction``, reads its params and signature, runs the first launch of a
    key through ``fn.run(...)`` and launches the kernel that returns itself after that, with the
    arguments that are not constexprs (the interpreted kernel's launch must keep the constexprs)."""

    def __init__(self, fn):
        self.fn, self.arg_names, self.cache = fn, fn.arg_names, {}
        while not isinstance(fn, triton.runtime.JITFunction):
            fn = fn.fn
        self.jit_function = fn
        self.specialize = [p.num for p in fn.params if not p.is_constexpr and not p.do_not_specialize]
        self.signature = fn.signature
        self.key_of_source = fn.cache_key

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def run(self, *args, grid, **kwargs):
        key = tuple(kwargs.items())
        if key not in self.cache:
            self.cache[key] = self.fn.run(*args, grid=grid, **kwargs)
            return self.cache[key]
        kernel = self.cache[key]
        names = list(self.signature.parameters)
        plain = [arg for name, arg in zip(names, args) if name not in ("SCALE", "BLOCK")]
        kernel[grid](*plain)
        return kernel


@needs_block_loads
@pytest.mark.parametrize("tuned", [False, True], ids=["jit", "autotuned"])
def test_a_libentry_walks_to_the_jit_function_and_launches_the_kernel_run_returned(tuned):
    x = torch.arange(40, dtype=torch.float32)
    with kwshim.activate():
        entry = LibEntry(_tuned() if tuned else scaled)
        assert [(p.num, p.name, p.is_constexpr) for p in entry.jit_function.params] == \
            [(0, "x_ptr", False), (1, "out_ptr", False), (2, "n", False), (3, "SCALE", True), (4, "BLOCK", True)]
        assert entry.specialize == [0, 1, 2] and list(entry.signature.parameters)[3] == "SCALE"
        assert isinstance(entry.key_of_source, str) and "tl.load" in entry.jit_function.src
        assert entry.jit_function.__globals__ is globals()
        first, again = torch.zeros(40), torch.zeros(40)
        returned = entry[(3,)](x, first, 40, SCALE=2.0)
        assert repr(returned).startswith("<kwshim InterpretedKernel")
        entry[(3,)](x, again, 40, SCALE=2.0)  # the kernel run returned, launched without its constexprs
    assert torch.equal(first, x * 2) and torch.equal(again, x * 2)


def test_an_interpreted_kernel_is_a_jit_function_under_every_name_while_the_switch_is_on():
    import triton.runtime.jit as jit_module

    before = (triton.JITFunction, triton.runtime.JITFunction, jit_module.JITFunction)
    assert not isinstance(scaled, jit_module.JITFunction)  # the interpreter's kernel, bare
    kind = type(scaled)
    with kwshim.activate():
        for name in before:  # FlagGems imports it from triton.runtime.jit, its libentry from triton.runtime
            assert isinstance(scaled, name)
        assert scaled.__class__ is jit_module.JITFunction and type(scaled) is kind
        assert not isinstance(object(), jit_module.JITFunction)
    assert (triton.JITFunction, triton.runtime.JITFunction, jit_module.JITFunction) == before
    assert not isinstance(scaled, jit_module.JITFunction) and scaled.__class__ is kind
    with pytest.raises(AttributeError):
        scaled.params


def test_a_kwsafe_kernel_stays_interpreted_to_kwshim_while_it_answers_as_a_jit_function():
    """kwsafe's proxy passes ``__class__`` through, so ``isinstance`` sees a ``JITFunction``; kwshim's own
    checks must still see the interpreter's kernel (3.2-3.3's autotuner asked a GPU driver for its
    benchmarker at decoration when they did not: ``kwshim run examples/demo.py`` failed)."""
    with kwshim.activate():
        safe = kwshim.kwsafe(scaled)
        assert isinstance(safe, triton.runtime.JITFunction)
        assert kwshim.compat.is_interpreted(safe) and kwshim.compat.is_interpreted(scaled)
        tuned = triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])(safe)
        x = torch.arange(20, dtype=torch.float32)
        out = torch.zeros(20)
        tuned[(2,)](x, out, 20, SCALE=3)
    assert torch.equal(out, x * 3)


def test_only_jit_function_attributes_are_answered():
    with kwshim.activate():
        with pytest.raises(AttributeError, match="no attribute 'not_an_attribute'"):
            scaled.not_an_attribute
        assert inspect.signature(scaled.fn) == scaled.signature
