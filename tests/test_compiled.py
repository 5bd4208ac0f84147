"""``interpreter/compiled``: the compiled fused multiply-add gives the NumPy code's bits, on millions of
random and tie-heavy operands and on the edges, and a kernel stores the same bits with and without it;
``tl.exp`` and ``tl.exp2``, computed chunk by chunk, give the bits of whole-array passes and of the C
library's scalar ``exp2``."""

import math
import sys

import pytest
import torch
import triton
import triton.language as tl

import kwshim

np = pytest.importorskip("numpy")

from kwshim.arithmetic import compiled  # noqa: E402
from kwshim.arithmetic.fma import numpy_fma  # noqa: E402

from .test_programs import batching  # noqa: E402

numba_installed = pytest.mark.skipif(compiled.engine() != "numba", reason="numba is not installed (kwshim[fast])")


def test_the_engine_is_numba_exactly_where_numba_imports():
    try:
        import numba  # noqa: F401
        importable = True
    except Exception:
        importable = False
    assert compiled.engine() == ("numba" if importable else "numpy")
    if not importable:
        assert compiled.fma_ufunc() is None


def _bits(array):
    return np.ascontiguousarray(array).view(np.uint32 if array.dtype == np.float32 else np.uint64)


def _assert_same_bits(compiled_result, numpy_result):
    assert compiled_result.dtype == numpy_result.dtype
    differ = np.flatnonzero(_bits(compiled_result) != _bits(numpy_result))
    assert differ.size == 0, f"{differ.size} differ, first at {differ[:5]}"


def _random_floats(rng, dtype, count, spread):
    return (rng.standard_normal(count) * np.exp2(rng.integers(-spread, spread, count))).astype(dtype)


def _tie_heavy(rng, dtype, count):
    """Operands whose exact ``a * b + c`` often lies on, or next to, a midpoint of the type: short
    significands, so the product has a few bits more than the type holds, and ``c`` cancelling it."""
    digits = 24 if dtype == np.float32 else 53
    short = digits // 2 + 1
    a = (1 + rng.integers(0, 2 ** short, count) / 2.0 ** short) * np.exp2(rng.integers(-20, 20, count))
    b = (1 + rng.integers(0, 2 ** short, count) / 2.0 ** short) * np.exp2(rng.integers(-20, 20, count))
    a, b = a.astype(dtype), b.astype(dtype)
    product = a.astype(np.longdouble) * b.astype(np.longdouble)
    c = np.where(rng.random(count) < 0.5, -product, product * np.exp2(-digits - rng.integers(0, 3, count)))
    c = c.astype(dtype) * np.where(rng.random(count) < 0.5, 1, -1).astype(dtype)
    return a, b, c


#: fp32's edges (a tuple: Triton 3.0's interpreter cannot launch a kernel whose module holds an array)
EDGES = (0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
         3.4028235e38, -3.4028235e38, 1.0, -1.0, 2.0 ** -126, 2.0 ** 127)


@numba_installed
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_fma_rounds_as_the_numpy_fma(dtype):
    rng = np.random.default_rng(7)
    fused = compiled.fma_ufunc()
    a, b, c = (_random_floats(rng, dtype, 2_000_000, 40 if dtype == np.float32 else 300) for _ in range(3))
    _assert_same_bits(fused(a, b, c), numpy_fma(a, b, c))
    a, b, c = _tie_heavy(rng, dtype, 1_000_000)
    _assert_same_bits(fused(a, b, c), numpy_fma(a, b, c))
    edges = np.array(EDGES, dtype=np.float32).astype(dtype)
    a, b, c = (grid.reshape(-1) for grid in np.meshgrid(edges, edges, edges))
    with np.errstate(all="ignore"):
        _assert_same_bits(fused(a, b, c), numpy_fma(a, b, c))


@numba_installed
def test_the_compiled_ex2_models_round_as_numpy_or_say_they_are_not_sure():
    """``tl.exp`` and ``tl.exp2`` compiled (``compiled_loops.ex2``, a polynomial): NumPy's bits
    (``exp_approximation``, ``exp2_approximation``) on 4M random bit patterns, 4M inputs where the
    result is neither 0 nor inf, subnormal results, tie-heavy inputs (integers, halves and the values
    next to them) and fp32's edges; where a value is too close to a rounding boundary to be sure, NaN
    (then ``deferred_arithmetic`` computes the expression in NumPy). Unsure values are rare: the one
    exact tie below (``2 ** -150``, halfway between 0 and fp32's least subnormal)."""
    from kwshim.arithmetic import compiled_loops
    from kwshim.arithmetic.gpu_arithmetic import exp2_approximation, exp_approximation

    rng = np.random.default_rng(13)
    every_pattern_kind = rng.integers(0, 2 ** 32, 4_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_range = (rng.random(4_000_000) * 300 - 160).astype(np.float32)
    subnormal_results = (rng.random(200_000) * 30 - 150).astype(np.float32)
    halves = np.arange(-400, 400, dtype=np.float32) / 2
    steps = np.arange(-8, 9, dtype=np.int32)
    near_ties = (halves.view(np.int32)[:, None] + steps).reshape(-1).view(np.float32)  # each tie's neighbours
    x = np.concatenate([every_pattern_kind, in_range, subnormal_results, near_ties, np.array(EDGES, np.float32)])
    ties = np.array([-150.0], np.float32)
    for name, numpy_model in (("ex2_of_exp", exp_approximation), ("ex2_flushed", exp2_approximation)):
        kernel = compiled_loops.element_wise(f"{name}(@0@)", ("full",))
        out = np.empty((1, x.size), np.float32)
        with np.errstate(all="ignore"):
            kernel(out, x.reshape(1, -1))
            expected = numpy_model(x)
        unsure = np.isnan(out[0]) & ~np.isnan(expected)
        sure = ~np.isnan(out[0])  # a NaN, of any sign and payload, sends the expression to NumPy
        _assert_same_bits(out[0][sure], expected[sure])
        assert np.isnan(out[0][np.isnan(expected)]).all()
        assert np.array_equal(np.unique(x[unsure]), ties if name == "ex2_flushed" else ties[:0]), x[unsure]
        tie_out = np.empty((1, 1), np.float32)
        kernel(tie_out, ties.reshape(1, 1) / (compiled.LOG2_E if name == "ex2_of_exp" else 1))
        if name == "ex2_flushed":
            assert np.isnan(tie_out[0, 0])  # 2 ** -150: the midpoint, which fp64's exp2 gives exactly


_LOOP_IN_A_PROCESS = """
import json
import numpy as np
from kwshim.arithmetic import compiled_loops
kernel = compiled_loops.element_wise("(ex2_of_exp((@0@ - @1@)) * @2@)", ("full", "rows", "scalar"))
out = np.empty((2, 3), np.float32)
kernel(out, np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(2, np.float32), np.float32(2))
print(json.dumps([sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()), out.tolist()]))
"""


@numba_installed
def test_an_element_wise_loop_compiles_once_and_loads_from_numba_s_disk_cache_after(tmp_path):
    """The loop of an expression's form is written to a module of its own, which numba caches: a
    second process loads it (a cache hit, no compile), and computes the same."""
    import json
    import subprocess
    import sys

    from ._subprocess import environment

    env = environment(NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _LOOP_IN_A_PROCESS], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    (hits, misses, first), (hits_again, misses_again, second) = (json.loads(run.stdout.splitlines()[-1])
                                                                 for run in runs)
    assert (hits, misses) == (0, 1) and (hits_again, misses_again) == (1, 0)
    expected = np.float32(np.exp2(np.float64(np.float32(-1.0) * compiled.LOG2_E))) * np.float32(2)
    assert first == second and np.float32(first[0][0]) == expected  # exp(0 - 1) * 2
    assert len(list((tmp_path / "kwshim_loops").glob("kwshim_loop_*.py"))) == 1


@numba_installed
def test_where_no_directory_can_be_written_an_element_wise_loop_is_made_in_memory(monkeypatch):
    from kwshim.arithmetic import compiled_loops

    monkeypatch.setattr(compiled_loops, "_loops_directory", lambda: None)
    kernel = compiled_loops.element_wise("(@0@ / @1@)", ("full", "scalar"))
    out = np.empty((1, 3), np.float32)
    assert kernel(out, np.array([[1.0, -1.0, 0.0]], np.float32), np.float32(0))  # 0 / 0 made a NaN
    assert out[0, :2].tolist() == [np.inf, -np.inf] and np.isnan(out[0, 2]) and kernel.__module__ not in sys.modules


def test_exp_and_exp2_chunk_by_chunk_give_whole_array_passes_bits_and_the_c_librarys():
    """The chunks (``_through_fp64``) change nothing: every block size around a chunk's edge, strided
    and broadcast blocks, 4M bit patterns; ``tl.exp2`` without the input flush gives the flushed
    bits; and NumPy's SIMD ``exp2`` rounds to the fp32 of the C library's scalar ``exp2``
    (``math.exp2``)."""
    from kwshim.arithmetic.approximations import (_CHUNK, exp2_approximation, exp_approximation, flushed,
                                                  flushing_approximation)

    def whole_exp(x):
        return np.exp2((x * compiled.LOG2_E).astype(np.float64)).astype(np.float32)

    def whole_exp2(x):
        return flushed(np.exp2(flushed(x).astype(np.float64)).astype(np.float32))

    rng = np.random.default_rng(11)
    every_pattern_kind = rng.integers(0, 2 ** 32, 4_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_range = (rng.random(4_000_000) * 300 - 160).astype(np.float32)  # where exp and exp2 are neither 0 nor inf
    subnormal_results = (rng.random(100_000) * 30 - 150).astype(np.float32)
    subnormal_inputs = np.arange(1, 2 ** 23, 97, dtype=np.uint32).view(np.float32)  # and their negatives
    subnormal_inputs = np.concatenate([subnormal_inputs, -subnormal_inputs])
    blocks = [every_pattern_kind, in_range, subnormal_results, subnormal_inputs, np.array(EDGES, np.float32),
              in_range[:_CHUNK - 1], in_range[:_CHUNK + 1], in_range[:3 * _CHUNK].reshape(3, _CHUNK)[:, ::2],
              np.broadcast_to(in_range[:1024], (64, 1024)), np.float32(3.5).reshape(()), in_range[:0]]
    with np.errstate(all="ignore"):
        for x in blocks:
            _assert_same_bits(exp_approximation(x), whole_exp(x))
            _assert_same_bits(flushing_approximation(np.exp2, True, x), whole_exp2(x))
            _assert_same_bits(exp2_approximation(x), whole_exp2(x))  # no input flush, results where small
            assert exp_approximation(x).shape == x.shape
        for function in (np.sqrt, np.sin, np.cos):
            x = in_range.reshape(2000, 2000)
            _assert_same_bits(flushing_approximation(function, False, x),
                              function(flushed(x).astype(np.float64)).astype(np.float32))
        powers = in_range[:200_000] * compiled.LOG2_E
        scalar = np.array([math.exp2(float(p)) for p in powers]).astype(np.float32)
        _assert_same_bits(exp_approximation(in_range[:200_000]), scalar)


@triton.jit
def fused_exp(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    x, y = tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x * y + tl.exp(x))


@triton.jit
def powers_of_two(y_ptr, out_ptr, N: tl.constexpr):  # tl.exp2 arrived in Triton 3.0
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.exp2(tl.load(y_ptr + offsets) * 3.0))


def _gpu_arithmetic():
    import triton.runtime.interpreter as interpreter

    return hasattr(interpreter, "interpreter_builder")


@numba_installed
@pytest.mark.skipif(not _gpu_arithmetic(), reason="2.x: no module-wide builder to compute the GPU's arithmetic with")
def test_a_large_launch_stores_the_same_bits_compiled_and_in_numpy(monkeypatch):
    """A launch of blocks of 2**15 elements computes its element-wise arithmetic (an fma of a
    product and ``tl.exp``, a product's ``tl.exp2``) as one compiled loop per expression
    (``deferred_arithmetic``); without numba, NumPy's code: the same bits."""
    from kwshim.arithmetic import deferred_arithmetic

    torch.manual_seed(0)
    x, y = torch.randn(2, 2 ** 15) * 30, torch.randn(2, 2 ** 15) * 40
    results, passes = [], []
    compiled_pass = deferred_arithmetic._compiled_pass

    def counted(expression):
        result, nan = compiled_pass(expression)
        passes.append((expression.tree[0], nan))
        return result, nan

    for engine in ("numba", "numpy"):
        if engine == "numpy":
            monkeypatch.setattr(compiled, "engine", lambda: "numpy")
            monkeypatch.setattr(compiled, "fma_ufunc", lambda: None)
        else:
            monkeypatch.setattr(deferred_arithmetic, "_compiled_pass", counted)
        out, powers = torch.empty_like(x), torch.empty_like(x)
        with kwshim.activate(grid="batched"):
            fused_exp[(2,)](x, y, out, N=2 ** 15)
            if hasattr(tl, "exp2"):
                powers_of_two[(2,)](y, powers, N=2 ** 15)
        results.append(torch.cat([out, powers]) if hasattr(tl, "exp2") else out)
        if engine == "numba":
            expected = [("fma", False), ("exp2", False)] if hasattr(tl, "exp2") else [("fma", False)]
            assert passes == expected  # one loop each, no NaN: no NumPy pass after it
    assert torch.equal(results[0].view(torch.int32), results[1].view(torch.int32))


@numba_installed
@pytest.mark.parametrize("contracted", [False, True])
def test_the_compiled_lane_sum_adds_as_the_numpy_lane_order(contracted, monkeypatch):
    """fp32 ``tl.sum`` in the lane order compiled (``compiled.lane_sum_kernel``) and in NumPy
    (``lane_order``): the same bits for rows of 8 to 4096 elements, one to eight warps, one element a
    thread or several, plain and of products contracted into fmas (read from the products, or computed
    from the factors alone), with magnitudes mixed so that the order shows; the loop compiled for
    every layout and for each. Once loaded, the compiled loop takes small blocks too."""
    from kwshim.arithmetic import lane_order

    rng = np.random.default_rng(7)
    compared = 0
    for n, warps in [(8, 1), (32, 1), (64, 4), (256, 8), (512, 4), (1024, 4), (4096, 8)]:
        layout = lane_order.blocked_layout((n,), 4, warps)[0]
        rows = max(8, 2 ** 16 // n)
        x = (rng.standard_normal((rows, n)) * rng.choice([1, 1e4, 1e-4], (rows, n))).astype(np.float32)
        y = rng.standard_normal((rows, n)).astype(np.float32)
        values, product = ((x * y).astype(np.float32), (x, y)) if contracted else (x, None)
        monkeypatch.setattr(compiled, "lane_sum_for", lambda size: None)
        in_numpy = lane_order.reduce_in_lanes((values,), layout, lane_order.added(np.float32), product)[0]
        if contracted:  # without the compiled loop, the product's data is read
            assert lane_order.sum_of_products(product, layout) is None
        monkeypatch.setattr(compiled, "lane_sum_for", lambda size: compiled.lane_sum_kernel())
        in_numba = lane_order.reduce_in_lanes((values,), layout, lane_order.added(np.float32), product)[0]
        assert in_numba.view(np.int32).tolist() == in_numpy.view(np.int32).tolist(), (n, warps)
        monkeypatch.undo()  # a block this large: the loop compiled for its layout
        assert rows * n >= compiled.COMPILED_FROM and compiled.lane_sum_for(rows * n) is not compiled.lane_sum_kernel()
        for_layout = lane_order.reduce_in_lanes((values,), layout, lane_order.added(np.float32), product)[0]
        assert for_layout.view(np.int32).tolist() == in_numpy.view(np.int32).tolist(), (n, warps)
        if contracted:  # from the factors alone (``deferred_arithmetic``): the products rounded in the loop
            from_factors = lane_order.sum_of_products(product, layout)
            assert from_factors.view(np.int32).tolist() == in_numpy.view(np.int32).tolist(), (n, warps)
        compared += rows
        if not contracted:  # and the order shows: NumPy's pairwise sum differs somewhere
            assert (np.sum(x, axis=-1).view(np.int32) != in_numpy.view(np.int32)).any() or n <= 8
    assert compared > 10000
    monkeypatch.undo()
    compiled.lane_sum_for(2 ** 15)  # a large block loads it: then a 2-row block takes it
    assert compiled.lane_sum_for(2 * 1024) is compiled.lane_sum_kernel()


@triton.jit
def row_dots(x_ptr, y_ptr, w_ptr, sums_ptr, out_ptr, N: tl.constexpr):
    offsets = tl.program_id(0) * N + tl.arange(0, N)
    x, y, w = tl.load(x_ptr + offsets), tl.load(y_ptr + offsets), tl.load(w_ptr + offsets)
    tl.store(sums_ptr + tl.program_id(0), tl.sum(x * y, axis=0))
    tl.store(out_ptr + offsets, x * y + w)


@numba_installed
@batching
def test_a_process_that_spent_numba_s_start_in_numpy_takes_the_compiled_loops_for_small_blocks(monkeypatch):
    """Small blocks' sums and fmas run in NumPy until they have cost about numba's start, then the
    compiled loops take them, with the bits NumPy gave (a rental's rule: a process of a few small
    launches never pays the start)."""
    monkeypatch.setattr(compiled, "_SMALL_BLOCKS", False)
    monkeypatch.setattr(compiled, "_LOADED", {})
    monkeypatch.setattr(compiled, "_NUMPY_ELEMENTS", 0)
    monkeypatch.setattr(compiled, "_WORTH_LOADING", 40_000)  # numba's start, as this test counts it
    assert compiled.lane_sum_for(2 * 1024) is None and compiled.ufunc_for("fma", 2 * 1024) is None
    torch.manual_seed(0)
    x, y, w = (torch.randn(2, 1024) * torch.tensor([1.0, 1e4]).repeat_interleave(512) for _ in range(3))
    results, spent = [], []
    with kwshim.activate(grid="batched"):
        while len(spent) < 2 or spent[-1] != spent[-2]:  # until NumPy's time stops growing: the loops run
            sums, out = torch.empty(2), torch.empty(2, 1024)
            row_dots[(2,)](x, y, w, sums, out, N=1024)
            results.append(torch.cat([sums, out.reshape(-1)]).view(torch.int32))
            spent.append(compiled._NUMPY_ELEMENTS)
            assert len(spent) < 1000
    assert spent[0] > 0 and spent[-1] >= 40_000  # NumPy ran first, as long as it was worth
    assert compiled.lane_sum_for(2 * 1024) is compiled.lane_sum_kernel()
    assert compiled.ufunc_for("fma", 2 * 1024) is compiled.fma_ufunc()
    assert all(torch.equal(result, results[0]) for result in results[1:])


@numba_installed
def test_which_engine_computes_a_small_block_never_depends_on_time(monkeypatch):
    """The switch to the compiled loops counts the elements NumPy computed, not the seconds: however
    slow the NumPy code ran, the engine changes at the same element, so a result never depends on
    the machine's speed or its load."""
    import time

    monkeypatch.setattr(compiled, "_SMALL_BLOCKS", False)
    monkeypatch.setattr(compiled, "_NUMPY_ELEMENTS", 0)
    monkeypatch.setattr(compiled, "_WORTH_LOADING", 1000)

    def slow(values):
        time.sleep(0.05)  # far past what any time-based rule would allow
        return values

    for _ in range(10):
        compiled.in_numpy(slow, np.zeros(10))
    assert not compiled._SMALL_BLOCKS and compiled._NUMPY_ELEMENTS == 100
    compiled.in_numpy(lambda values: values, np.zeros(900))
    assert compiled._SMALL_BLOCKS


@numba_installed
def test_the_compiled_lane_scan_adds_as_the_numpy_lane_order(monkeypatch):
    """fp32 ``tl.cumsum`` in the lane order compiled (``compiled.lane_scan_kernel``) and in NumPy
    (``lane_order``): the same bits for rows of 16 to 2048 and both axes of 2-D blocks, one to eight
    warps, one lane, one warp or several along the axis; the loop compiled for every layout and for
    each."""
    from kwshim.arithmetic import lane_order

    rng = np.random.default_rng(11)
    cases = [((16,), 4, 0), ((64,), 4, 0), ((512,), 1, 0), ((2048,), 8, 0), ((16, 64), 4, 0), ((16, 64), 4, 1),
             ((256, 8), 4, 0), ((8, 256), 4, 1), ((4, 1024), 4, 0), ((64, 128), 8, 1)]
    for shape, warps, axis in cases:
        layout = lane_order.blocked_layout(shape, 4, warps)[axis]
        n = shape[axis]
        x = (rng.standard_normal((2 ** 15 // n, n)) * rng.choice([1, 1e4, 1e-4], (2 ** 15 // n, n))).astype(np.float32)
        monkeypatch.setattr(compiled, "lane_scan_for", lambda size: None)
        in_numpy = lane_order.scan_in_lanes(x, layout, lane_order.added(np.float32))
        monkeypatch.setattr(compiled, "lane_scan_for", lambda size: compiled.lane_scan_kernel())
        in_numba = lane_order.scan_in_lanes(x, layout, lane_order.added(np.float32))
        assert (in_numba.view(np.int32) == in_numpy.view(np.int32)).all(), (shape, warps, axis)
        monkeypatch.undo()  # 2 ** 15 elements: the loop compiled for the layout
        assert compiled.lane_scan_for(x.size) is not compiled.lane_scan_kernel()
        for_layout = lane_order.scan_in_lanes(x, layout, lane_order.added(np.float32))
        assert (for_layout.view(np.int32) == in_numpy.view(np.int32)).all(), (shape, warps, axis)


@numba_installed
def test_compiled_bf16_rounding_gives_ml_dtypes_bits_on_random_ties_and_edges_and_leaves_nans_to_numpy():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from kwshim.arithmetic import compiled_loops
    from kwshim.arithmetic.conversions import float_to_float

    rng = np.random.default_rng(7)
    ties = (rng.integers(0, 2 ** 16, 1_000_000, dtype=np.uint64).astype(np.uint32) << np.uint32(16)) | \
        rng.choice(np.array([0x7FFF, 0x8000, 0x8001, 0x0000, 0xFFFF], dtype=np.uint32), 1_000_000)
    edges = np.concatenate([np.arange(2 ** 16, dtype=np.uint32),  # subnormals
                            np.arange(0x7F7F0000, 0x7F800001, dtype=np.uint32),  # the largest, inf
                            np.arange(0xFF7F0000, 0xFF800001, dtype=np.uint32)])
    patterns = np.concatenate([rng.integers(0, 2 ** 32, 3_000_000, dtype=np.uint64).astype(np.uint32), ties, edges])
    values = patterns.view(np.float32)
    values = values[~np.isnan(values)]
    out = np.empty(values.size, np.uint16)
    assert not compiled_loops.bf16_bits(values, out)
    differ = np.flatnonzero(out != values.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert differ.size == 0, f"{differ.size} differ, first {values[differ[:3]]}"
    with_nan = np.concatenate([values[:compiled.COMPILED_FROM], np.array([0x7FA00001], np.uint32).view(np.float32)])
    assert compiled_loops.bf16_bits(with_nan, np.empty(with_nan.size, np.uint16))
    expected = with_nan.astype(np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)  # the fp64 path
    assert np.array_equal(float_to_float(with_nan.reshape(1, -1), ml_dtypes.bfloat16).view(np.uint16),
                          expected.view(np.uint16).reshape(1, -1))
    grid = values[:compiled.COMPILED_FROM * 2].reshape(2, -1)[:, ::2]  # strided: copied before the loop
    assert np.array_equal(float_to_float(grid, ml_dtypes.bfloat16).view(np.uint16),
                          grid.astype(ml_dtypes.bfloat16).view(np.uint16))


@numba_installed
def test_compiled_widening_of_bf16_and_fp16_gives_the_fp64_path_s_bits_for_every_value():
    """bf16 and fp16 to fp32 (``compiled_loops.widened_bits``): every one of the 2 ** 16 values of
    each, NaNs of every payload included, has the bits NumPy's path through fp64 gives (exact, a
    NaN made quiet); ``float_to_float`` takes the loop from ``COMPILED_FROM`` elements on, strided
    blocks and blocks of rows too."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from kwshim.arithmetic import compiled_loops
    from kwshim.arithmetic.conversions import float_to_float

    every = np.arange(2 ** 16, dtype=np.uint16)
    for numpy_type, half in ((ml_dtypes.bfloat16, False), (np.float16, True)):
        values = every.view(numpy_type)
        with np.errstate(invalid="ignore"):
            expected = values.astype(np.float64).astype(np.float32).view(np.uint32)
        out = np.empty(every.size, np.float32)
        compiled_loops.widened_bits(every, out, half)
        differ = np.flatnonzero(out.view(np.uint32) != expected)
        assert differ.size == 0, (numpy_type, [hex(v) for v in every[differ[:3]]])
        assert np.isnan(values.astype(np.float32)).sum() >= 254  # NaNs of every payload among them
        loops = []
        with pytest.MonkeyPatch.context() as patch:
            widening_for = compiled.widening_for
            widened = widening_for(every.size)
            patch.setattr(compiled, "widening_for", lambda size: loops.append(size) or widening_for(size))
            blocks = values.reshape(4, -1)
            for block in (blocks, blocks[:, ::2], blocks[:1, :100]):
                with np.errstate(invalid="ignore"):
                    wide = block.astype(np.float64).astype(np.float32)
                got = float_to_float(block, np.float32)
                assert got.shape == block.shape and np.array_equal(got.view(np.uint32), wide.view(np.uint32))
        assert widened is compiled_loops.widened_bits and loops == [every.size, every.size // 2, 100]


@numba_installed
def test_compiled_fp16_rounding_gives_numpy_s_bits_on_random_ties_subnormals_and_edges_and_leaves_nans_to_numpy():
    """fp32 to fp16 (``compiled_loops.fp16_bits``): NumPy's ``astype`` bits on random patterns, on
    ties of the 13 bits rounded off, on every seventh pattern of the range fp16 holds as subnormals
    and just above it, and around 65504, 65520 and inf, both signs; a NaN is left to NumPy's path."""
    from kwshim.arithmetic import compiled_loops
    from kwshim.arithmetic.conversions import float_to_float

    rng = np.random.default_rng(11)
    ties = (rng.integers(0, 2 ** 19, 1_000_000, dtype=np.uint64).astype(np.uint32) << np.uint32(13)) | \
        rng.choice(np.array([0xFFF, 0x1000, 0x1001, 0x0000, 0x1FFF], dtype=np.uint32), 1_000_000)
    edges = np.concatenate([np.arange(0x33000000 - 2 ** 20, 0x38800000 + 2 ** 20, 7, dtype=np.uint32),
                            np.arange(2 ** 16, dtype=np.uint32),  # fp32's subnormals: zeros
                            np.arange(0x477F0000, 0x47810000, dtype=np.uint32),  # 65504 .. 65520 .. 66048
                            np.arange(0x7F7F0000, 0x7F800001, dtype=np.uint32)])  # the largest, inf
    patterns = np.concatenate([rng.integers(0, 2 ** 32, 2_000_000, dtype=np.uint64).astype(np.uint32), ties, edges])
    values = np.concatenate([patterns, patterns | np.uint32(0x80000000)]).view(np.float32)
    values = values[~np.isnan(values)]
    out = np.empty(values.size, np.uint16)
    assert not compiled_loops.fp16_bits(values, out)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).view(np.uint16)
    differ = np.flatnonzero(out != expected)
    assert differ.size == 0, f"{differ.size} differ, first {[hex(v) for v in values.view(np.uint32)[differ[:3]]]}"
    assert (expected & 0x7C00 == 0).sum() > 100_000 and (expected & 0x7FFF == 0x7C00).sum() > 100_000
    with_nan = np.concatenate([values[:compiled.COMPILED_FROM], np.array([0x7FA00001], np.uint32).view(np.float32)])
    assert compiled_loops.fp16_bits(with_nan, np.empty(with_nan.size, np.uint16))
    with np.errstate(over="ignore"):
        expected = with_nan.astype(np.float64).astype(np.float32).astype(np.float16)  # the fp64 path
        assert np.array_equal(float_to_float(with_nan.reshape(1, -1), np.float16).view(np.uint16),
                              expected.view(np.uint16).reshape(1, -1))
        grid = values[:compiled.COMPILED_FROM * 2].reshape(2, -1)[:, ::2]  # strided: copied before the loop
        assert np.array_equal(float_to_float(grid, np.float16).view(np.uint16), grid.astype(np.float16).view(np.uint16))


@numba_installed
@pytest.mark.parametrize("kind, step", [("float16", 16), ("bfloat16", 16), ("float8_e4m3fn", 32), ("tf32", 8)])
def test_the_compiled_tensor_core_dot_gives_the_numpy_steps_bits(kind, step, monkeypatch):
    """``gpu_arithmetic._chunked_dot`` into an fp32 accumulator: the compiled loop (``compiled_dots``)
    against the NumPy code, on 3 programs of rows that are not a multiple of 4, K not a multiple of the
    step, values over a wide range of exponents, signed zeros and infinities, a broadcast accumulator;
    and a result holding a NaN computed again in NumPy (the same NaN bits)."""
    import ml_dtypes

    from kwshim.arithmetic import gpu_arithmetic

    rng = np.random.default_rng(7)
    dtype = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
             "tf32": np.float32}[kind]

    def draw(*shape):
        values = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, shape))
        values.flat[::17] = 0.0
        values.flat[5::23] = -0.0
        values = values.astype(np.float32)
        if kind == "tf32":
            values = (values.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        return values.astype(dtype)

    a, b = draw(3, 37, 72), draw(3, 72, 40)
    d = rng.standard_normal((1, 37, 40)).astype(np.float32)  # broadcast over the programs
    d[0, 0, :4] = (np.inf, -np.inf, -0.0, 0.0)

    def both(a, b, d):
        compiled_result = gpu_arithmetic._chunked_dot(a, b, d, step, np.dtype(np.float32))
        with monkeypatch.context() as patched:
            patched.setattr(compiled, "stepped_dot_for", lambda size: None)
            numpy_result = gpu_arithmetic._chunked_dot(a, b, d, step, np.dtype(np.float32))
        return compiled_result, numpy_result

    calls = []
    loop = compiled.stepped_dot_for(2 ** 20)
    monkeypatch.setattr(compiled, "stepped_dot_for", lambda size: calls.append(size) or loop)
    ours, theirs = both(a, b, d)
    assert calls and ours.shape == theirs.shape == (3, 37, 40)
    assert (_bits(ours) == _bits(theirs)).all()
    assert np.isinf(ours).any()  # the accumulator's infinities went through
    with_nan = a.copy()
    with_nan[1, 2, 3] = np.nan
    ours, theirs = both(with_nan, b, d)
    assert np.isnan(ours[1, 2]).all() and (_bits(ours) == _bits(theirs)).all()


@numba_installed
def test_each_compiled_loop_compiles_once_for_writable_and_read_only_blocks(monkeypatch):
    """numba compiles a loop once per type of its arguments, and a read-only array is another type:
    the interpreter's blocks come both ways, and on a fresh machine the lane sum compiled three times
    in four of Liger's test files. Every input goes through ``compiled.read_only``: the loops see
    read-only inputs only, whichever way the block came, and give the same bits."""
    from kwshim.arithmetic import conversions, lane_order

    seen = []

    def recording(loop, inputs):
        def call(*args):
            seen.extend(args[index].flags.writeable for index in inputs)
            return loop(*args)
        return call

    lane_sum = recording(compiled.lane_sum_kernel(), (0, 1))
    widening = recording(compiled.widening_for(2 ** 20), (0,))
    monkeypatch.setattr(compiled, "lane_sum_for", lambda size: lane_sum)  # the generic loop, whatever the size
    monkeypatch.setattr(compiled, "widening_for", lambda size: widening)
    layout = lane_order.blocked_layout((1024,), 4, 4)[0]
    writable = np.random.default_rng(3).standard_normal((64, 1024)).astype(np.float32)
    frozen = writable.copy()
    frozen.flags.writeable = False
    halves = writable.astype(np.float16)
    frozen_halves = halves.copy()
    frozen_halves.flags.writeable = False
    sums = [lane_order.reduce_in_lanes((block,), layout, lane_order.added(np.float32))[0]
            for block in (writable, frozen)]
    widened = [conversions.float_to_float(block, np.float32) for block in (halves, frozen_halves)]
    assert len(seen) == 6 and not any(seen)  # 2 sums of 2 inputs, 2 widenings: every input read-only
    assert _bits(sums[0]).tolist() == _bits(sums[1]).tolist()
    assert _bits(widened[0]).tolist() == _bits(widened[1]).tolist()
    assert writable.flags.writeable and halves.flags.writeable  # a view was frozen, not the caller's block
