"""``interpreter/python_operators.py``: ``and``, ``or``, ``not`` and chained comparisons in a kernel
compute as compiled Triton's code generator reads them (``parity/block_logic.py``)."""

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import compat
from parity import block_logic

pytestmark = pytest.mark.skipif(not compat.module_wide_builder(),
                                reason="2.x: its interpreter runs a kernel's Python as Python (not rewritten)")


def run(name):
    kernel, extra = block_logic.CASES[name]
    with kwshim.activate():
        return block_logic.outcome(torch, kernel, extra, "cpu")


@pytest.mark.parametrize("name, stored", [
    ("and", [1, 1, 0, 0, 0, 0, 0, 0]),  # Python's `and` gave r < 6: [1, 1, 1, 1, 1, 1, 0, 0]
    ("or", [1, 1, 0, 0, 0, 0, 1, 1]),
    ("block and scalar", [1, 1, 1, 1, 1, 0, 0, 0]),
    ("constexpr True and block", [1, 1, 1, 0, 0, 0, 0, 0]),
    ("not block", [0, 0, 0, 1, 1, 1, 1, 1]),
])
def test_and_or_not_of_blocks_are_logical_operations(name, stored):
    assert run(name) == {"stored": stored}


def test_a_mask_combined_with_and_keeps_both_halves_and_stores_nothing_out_of_bounds():
    """FlagGems' ``mask = row_mask and col_mask``: Python's ``and`` kept the column mask alone, and
    the store wrote rows past the tensor (the heap corrupted, the process killed)."""
    assert run("mask and mask, 2-D, under a store") == {"stored": [1, 0, 3, 0, 5, 0, 0, 0]}


def test_three_values_as_the_release_reads_them():
    found = run("three and")
    if compat.boolean_operators() == "pairwise":  # up to 3.3: refused
        assert found["raises"] == "CompilationRefused" and "chained boolean operators" in found["message"]
        assert "CompilationError" in found["classes"]
    else:
        assert found == {"stored": [0, 1, 1, 0, 1, 1, 0, 0]}


def test_a_deciding_constexpr_is_the_result_where_the_compiler_short_circuits():
    found = run("constexpr False and block")
    if compat.boolean_operators() == "pairwise":  # both visited: the block's logical and with False
        assert found == {"stored": [0] * 8}
    else:  # False itself, which has no .to(): refused as the compiler refuses it
        assert "raises" in found


def test_not_of_an_int_block_is_refused_as_the_compiler_refuses_its_bitcast():
    found = run("not int block")
    assert "CompilationError" in found["classes"] and "bitcast" in found["message"]


def test_a_chained_comparison_where_the_compiler_refuses_it():
    found = run("chained comparison")
    if compat.chained_comparisons_refused():
        assert "CompilationError" in found["classes"] and "simultaneous multiple comparison" in found["message"]
    else:  # 3.9 compiles a chain
        assert found == {"stored": [0, 0, 1, 1, 1, 1, 0, 0]}


@triton.jit
def _constexpr_logic(out_ptr, A: tl.constexpr, B: tl.constexpr):
    tl.store(out_ptr, (A and B) + 2 * (A or B) + 4 * (not A))


def test_python_values_keep_python_s_and_or_not():
    out = torch.zeros(1, dtype=torch.int32)
    with kwshim.activate():
        _constexpr_logic[(1,)](out, 0, 3)
    assert int(out[0]) == 0 + 2 * 3 + 4


def _h200():
    import json
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "parity", "block_logic_h200.json")) as recorded:
        return json.load(recorded)


@pytest.mark.skipif(triton.__version__ != _h200()["triton"], reason="the H200 ran these under its own release")
def test_every_case_stores_or_refuses_as_the_h200_did():
    """``parity/block_logic.py`` on the H200 (Triton 3.6.0): each kernel stores the H200's values, or
    is refused where the H200's compiler refused it (a compile error here too: the interpreter's
    ``InterpreterError`` where the compiler's class is one the interpreter cannot raise)."""
    h200 = _h200()["answers"]
    with kwshim.activate():
        ours = block_logic.results(torch, "cpu")
    for name, answer in h200.items():
        if "stored" in answer:
            assert ours[name] == answer, name
        else:
            assert "raises" in ours[name], name


def test_min_and_max_of_blocks_as_the_release_s_compiler_calls_them():
    found = run("min of blocks")
    if compat.compiler_builtins_min_max():  # 3.6 on: element by element, as measured on the H200
        assert found == {"stored": [0, 1, 2, 3, 3, 2, 1, 0]}
    assert run("max of scalars") == {"stored": [3] * 8}


def test_a_conditional_expression_on_a_block_is_refused_and_on_a_scalar_chooses():
    found = run("conditional expression on a block")
    assert "CompilationError" in found["classes"] and "conditional expression" in found["message"]
    assert run("conditional expression on a scalar") == {"stored": [0, -1, -2, -3, -4, -5, -6, -7]}
