"""``interpreter/refusals.py``: what compiled Triton refuses to compile (its front end raises) is
raised under the switch as compiled Triton raises it, a ``CompilationError``, which is still the
interpreter's ``InterpreterError``; what a program raises at run time stays the interpreter's."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim

from .kernels import needs_block_loads

errors = pytest.importorskip("triton.compiler.errors")
InterpreterError = getattr(pytest.importorskip("triton.runtime.interpreter"), "InterpreterError", None)
needs_both = pytest.mark.skipif(InterpreterError is None, reason="this interpreter has no InterpreterError (2.x)")


@triton.jit
def reshaped_to_another_count(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.reshape(x, (4, 2)).sum())


@triton.jit
def range_of_three(x_ptr):
    tl.store(x_ptr + tl.arange(0, 3), 1.0)


@triton.jit
def own_assert(x_ptr):
    tl.store(x_ptr + tl.arange(0, 4), 1.0)
    assert False, "the kernel's own"


@needs_both
@needs_block_loads
@pytest.mark.parametrize("grid", ["sequential", "batched"])
@pytest.mark.parametrize("kernel, message", [(reshaped_to_another_count, "cannot change total number of elements"),
                                             (range_of_three, "arange's range must be a power of 2")])
def test_what_the_front_end_refuses_is_a_compilation_error_as_on_the_h200(grid, kernel, message):
    """The H200 raises ``CompilationError`` for both (measured, Triton 3.6); the bare interpreter an
    ``InterpreterError``."""
    with kwshim.activate(grid=grid), pytest.raises(errors.CompilationError, match=message) as caught:
        kernel[(2,)](torch.zeros(16))
    assert isinstance(caught.value, InterpreterError)  # what the interpreter raised, still


@needs_both
@needs_block_loads
def test_what_a_program_raises_at_run_time_stays_the_interpreter_s():
    with kwshim.activate(grid="sequential"), pytest.raises(InterpreterError, match="the kernel's own") as caught:
        own_assert[(1,)](torch.zeros(4))
    assert not isinstance(caught.value, errors.CompilationError)
