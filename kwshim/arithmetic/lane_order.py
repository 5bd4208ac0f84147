"""Reductions and scans in the order of the GPU's lanes, where the order decides the bits (the
NumPy code of ``gpu_reductions``).

Compiled Triton lays a block out over threads (``#ttg.blocked``: ``sizePerThread``, ``threadsPerWarp``,
``warpsPerCTA``) and combines in that layout's order (``ReduceOpToLLVM``, ``ScanOpToLLVM``):

- **a reduction**: each thread combines its own elements left to right, the lanes of a warp by a
  butterfly (partners 16, 8, 4, 2, 1 apart, the lower lane's value on the left), then the warps the
  same way. The result is lane 0's.
- **a scan**: each thread scans its own elements, the lanes scan their totals by Hillis-Steele
  (partners 1, 2, 4, ... behind), the warps' totals are added one after another, and each element
  gets what came before its thread on the left.

A float add rounds, and ``tl.argmax`` of a row holding NaN depends on which pairs meet, so the order
decides the bits. Measured on the H200 (Triton 3.6.0, ``parity/lane_orders.py``): in this order every
measured ``tl.sum`` (fp32, fp16, bf16; rows of 32 to 4096 and both axes of 2-D blocks), ``tl.cumsum``
(195 cases, fp16 sums overflowing included) and ``tl.max``/``tl.min`` with and without their indices
over rows of NaN, signed zeros and ties (36 cases of 36) is the H200's, as are 44 of 48 2-D arg
reductions. In the other 4 (rows with NaN, reduced within one warp along the last axis), the GPU
reads the result from another lane, whose copy differs, and this is why (read from their PTX, and
every one of their 320 values and indices reproduced so): each lane combines its own value on the
left, so with NaN the lanes end with different copies (lane 0's is the one modelled here); the
store's layout conversion then has every lane of a row write its copy to one shared-memory
address, and the copy that stays is the lowest lane of the access's last phase (a phase is 128
bytes: 8 lanes for 16-byte accesses, 16 for 8-byte ones, all 32 for 4 bytes or less). The access
width is the compiler's choice of conversion (it varies with the shape, the warps and the type, the
value's and the index's apart: fp16 8x256 over 4 warps stores its values from lane 0 and its
indices from lane 16), so it is not modelled.

The layout is the one the compiler gives a row-major block it loads from contiguous, aligned
memory (``blocked_layout``: every measured layout, 1-D and 2-D), of the element size it was loaded
with: a bf16 block widened to fp32 (``x.to(tl.float32)``, ``tl.max``'s own promotion) keeps the bf16
load's layout (``loaded_as``). A ``tl.dot`` result, and what is computed from it element by
element, keeps the tensor cores' layout (``from_tensor_cores``, ``keeps_layout``,
``tensor_core_order``). A kernel that makes its block otherwise (a transposed or gathered load, a
load whose alignment the compiler cannot prove) may have another layout.

A sum of a product the kernel just computed (``tl.sum(x * x)``) is contracted into fmas, as LLVM
does: the thread's first add is ``fma(x0, y0, x1 * y1)``, each later one ``fma(x, y, acc)``, and a
thread holding one element contracts its first butterfly step. In fp16 and bf16 the vectorizer pairs
the elements (``fma.rn.f16x2``), and of each later pair only the first is contracted: the second's
rounded product is added. That is every measured row: 96 in fp32, 512 in fp16 and bf16.
"""

import functools
import math

import numpy as np

from . import compiled, deferred_arithmetic
from .fma import fma_chain
from .numpy_quiet import quiet

__all__ = ["blocked_layout", "tensor_core_order", "reduce_in_lanes", "sum_of_products", "scan_in_lanes", "added",
           "arg_combine", "extremum", "loaded_as", "from_tensor_cores", "keeps_layout"]

WARP = 32


@functools.lru_cache(maxsize=256)
def blocked_layout(shape, itemsize, warps):
    """``(size_per_thread, lanes, warps)`` along each axis of a row-major block, as the compiler's
    coalescing lays out a load: 16 bytes a thread on the last axis at most, then the warp's 32 lanes
    and the warps handed out from the last axis inward."""
    count = int(np.prod(shape))
    per_thread = [1] * len(shape)
    per_thread[-1] = max(1, min(16 // itemsize, count // (WARP * warps), shape[-1]))
    lanes, warp_counts = [1] * len(shape), [1] * len(shape)
    lanes_left, warps_left = WARP, warps
    for axis in reversed(range(len(shape))):
        room = max(1, shape[axis] // per_thread[axis])
        lanes[axis] = min(lanes_left, room) if axis else lanes_left
        lanes_left //= lanes[axis]
        room = max(1, shape[axis] // (per_thread[axis] * lanes[axis]))
        warp_counts[axis] = min(warps_left, room) if axis else warps_left
        warps_left //= warp_counts[axis]
    return [(per_thread[a], lanes[a], warp_counts[a]) for a in range(len(shape))]


def _mma_warps(m, n, warps, chained=None):
    """``warpsPerCTA`` of a ``tl.dot`` result of ``m x n``: ``wgmma`` (MMA version 3) for blocks of
    64 rows or more on whole warp groups, else ``mma.sync`` (version 2), as Triton's
    ``AccelerateMatmul`` assigns them. A dot feeding another (``dot_chains``; ``chained`` its K)
    has every warp on its rows; on ``mma.sync`` only where the chain's last dot, M by flash
    attention's head dimension (the first dot's K), is at least as tall as wide, else on its columns."""
    if chained:
        if warps % 4 == 0 and m % 64 == 0:
            return 3, [warps, 1]
        return 2, ([warps, 1] if m >= chained else [1, warps])
    if warps % 4 == 0 and m % 64 == 0:
        along = [4, 1]
        while along[0] * along[1] < warps:
            along[0 if m > 16 * along[0] else 1] *= 2
        return 3, along
    along, repeats = [1, 1], [max(1, m // 16), max(1, n // 8)]
    while along[0] * along[1] < warps:
        if repeats[0] >= repeats[1]:
            along[0] *= 2
            repeats[0] = max(1, repeats[0] // 2)
        else:
            along[1] *= 2
            repeats[1] //= 2
    return 2, along


@functools.lru_cache(maxsize=256)
def tensor_core_order(shape, warps, axis, chained=None):
    """``(order, layout)`` of ``axis`` of a ``tl.dot`` result of ``shape`` (M, N) as the tensor
    cores leave it (``#ttg.nvidia_mma``): ``order`` the axis' indices as ``blocked_layout``'s order
    would hold them (a thread's registers, the warps, the lanes), ``layout`` that order's triple.
    Along N a lane holds 2 neighbours of every 8 columns, 4 lanes across; along M a lane holds rows
    ``r`` and ``r + 8`` of every 16, 8 lanes across (measured on the H200: 40 of 40 sums). A scan is
    not in this order: the compiler converts the block to a loaded block's layout to scan it.
    ``chained``: the dot's K where it feeds another dot (``_mma_warps``), else None."""
    m, n = shape
    version, (warps_m, warps_n) = _mma_warps(m, n, warps, chained)
    if axis == 1:
        warps_n = min(warps_n, n // 8)
        width = min(256, n // warps_n) if version == 3 else 8  # the instruction's N (or its repeats')
        digits = [("r", n // (width * warps_n)), ("w", warps_n), ("r", width // 8), ("l", 4), ("r", 2)]
    else:
        warps_m = min(warps_m, m // 16)
        digits = [("r", m // (16 * warps_m)), ("w", warps_m), ("r", 2), ("l", 8)]
    registers = [i for i, (kind, _) in enumerate(digits) if kind == "r"]
    warp, lane = (next(i for i, (kind, _) in enumerate(digits) if kind == wanted) for wanted in "wl")
    indices = np.arange(shape[axis]).reshape([size for _, size in digits])
    order = indices.transpose(registers[:-1] + [warp, lane, registers[-1]]).reshape(-1)
    return order, (digits[registers[-1]][1], digits[lane][1], digits[warp][1])


def _held(values, layout):
    """``values`` (each ``..., n``) as ``..., repeats, warps, lanes, per_thread``: the GPU's threads
    along the axis, those that hold copies (a short axis) left out."""
    shape = values[0].shape[:-1] + _threads(values[0].shape[-1], layout)
    return tuple(v.reshape(shape) for v in values)


def _threads(n, layout):
    """``(repeats, warps, lanes, per_thread)`` of an axis of ``n`` laid out as ``layout``."""
    per_thread, lanes, warps = layout
    per_thread = min(per_thread, n)
    lanes = min(lanes, max(1, n // per_thread))
    warps = min(warps, max(1, n // (per_thread * lanes)))
    return n // (per_thread * lanes * warps), warps, lanes, per_thread


def _halving(values, combine):
    """The butterfly over the last axis as its lane 0 ends: the lower half on the left each step."""
    while values[0].shape[-1] > 1:
        half = values[0].shape[-1] // 2
        values = combine(tuple(v[..., :half] for v in values), tuple(v[..., half:] for v in values))
    return tuple(v[..., 0] for v in values)


def reduce_in_lanes(values, layout, combine, product=None):
    """The reduction over the last axis of ``values`` (a tuple of arrays combined together: a value
    and its index) for an axis laid out as ``layout`` (``blocked_layout``'s triple). ``combine(left,
    right)`` takes and gives tuples. ``product``, for a sum of ``x * y`` the kernel just computed
    (``values[0]``, rounded), is ``(x, y)``: the adds that LLVM contracts are fmas."""
    held = _held(values, layout)
    if getattr(combine, "kwshim_sum", False) and values[0].dtype == np.float32:
        kernel = compiled.lane_sum_for(values[0].size)
        if kernel is not None:
            return (_compiled_sum(kernel, values[0].shape, product, held[0].shape[-4:], values[0]),)
        return compiled.in_numpy(_reduce_in_numpy, values, held, layout, combine, product)  # its time counted
    return _reduce_in_numpy(values, held, layout, combine, product)


def _reduce_in_numpy(values, held, layout, combine, product):
    repeats, per_thread = held[0].shape[-4], held[0].shape[-1]
    order = [(r, e) for r in range(repeats) for e in range(per_thread)]
    with quiet(over="ignore", invalid="ignore"):
        if product is not None:  # a fresh array: the butterfly adds in place
            factors = _held(np.broadcast_arrays(*product, values[0])[:2], layout)
            return (_butterfly_sum(np.array(_contracted(held[0], factors, order))),)
        if getattr(combine, "kwshim_sum", False):
            r, e = order[0]
            total = held[0][..., r, :, :, e].copy()
            for r, e in order[1:]:
                np.add(total, held[0][..., r, :, :, e], out=total)
            return (_butterfly_sum(total),)
        accumulated = tuple(h[..., 0, :, :, 0] for h in held)
        for repeat, element in order[1:]:
            accumulated = combine(accumulated, tuple(h[..., repeat, :, :, element] for h in held))
        return _halving(_halving(accumulated, combine), combine)


def sum_of_products(product, layout):
    """The fp32 ``tl.sum(x * y)`` over the last axis, contracted (``reduce_in_lanes`` with
    ``product``), from the factors ``product = (x, y)`` alone, the products rounded in the compiled
    loop; None where that loop does not run (then the product's data is what ``reduce_in_lanes``
    reads: ``deferred_arithmetic``)."""
    x, y = product
    shape = x.shape if x.shape == y.shape else np.broadcast_shapes(x.shape, y.shape)
    if x.dtype != np.float32 or y.dtype != np.float32:
        return None
    kernel = compiled.lane_sum_for(math.prod(shape))
    if kernel is None:
        return None
    return _compiled_sum(kernel, shape, product, _threads(shape[-1], layout))


def _compiled_sum(kernel, shape, product, held_shape, values=None):
    """``reduce_in_lanes`` of an fp32 sum of ``values`` (or, contracted, of the products of
    ``product``'s factors) of ``shape`` by the compiled loop (``compiled.lane_sum_kernel``)."""
    rows = shape[-1]
    if product is None:
        x = y = np.ascontiguousarray(values.reshape(-1, rows))
    else:
        x, y = (np.ascontiguousarray((f if f.shape == shape else np.broadcast_to(f, shape)).reshape(-1, rows),
                                     np.float32) for f in product)  # NumPy's shape helpers: half a small sum's time
    out = np.empty(x.shape[0], np.float32)
    kernel(compiled.read_only(x), compiled.read_only(y), *held_shape, product is not None, out)
    return out.reshape(shape[:-1])


def _butterfly_sum(total):
    """The butterfly of a sum over the lanes (the last axis), then the warps, in place."""
    for _ in range(2):
        while total.shape[-1] > 1:
            half = total.shape[-1] // 2
            np.add(total[..., :half], total[..., half:], out=total[..., :half])
            total = total[..., :half]
        total = total[..., 0]
    return total


def _contracted(held, factors, order):
    """A thread's sum of products, the adds contracted as LLVM contracts them: the first add is
    ``fma(x0, y0, x1 * y1)`` and each later one ``fma(x, y, acc)`` (16-bit: every other one); a
    thread holding one element contracts its first butterfly step instead (``fma(x, y, partner's
    product)``), of which lane 0 keeps the lower half of the lanes."""
    x, y = factors
    if len(order) == 1:
        lanes = held.shape[-2]
        if lanes == 1:
            return held[..., 0, :, :, 0]
        half = lanes // 2
        return fma_chain([x[..., 0, :, :half, 0]], [y[..., 0, :, :half, 0]], held[..., 0, :, half:, 0])
    steps = [order[0]] + order[2:]
    xs = [x[..., r, :, :, e] for r, e in steps]
    ys = [y[..., r, :, :, e] for r, e in steps]
    (r1, e1) = order[1]
    if held.dtype.itemsize == 4:
        return fma_chain(xs, ys, held[..., r1, :, :, e1])
    # 16-bit: LLVM's vectorizer pairs the elements (``fma.rn.f16x2``), and of each later pair only the
    # first is contracted; the second's rounded product is added (every measured row on the H200)
    accumulated = fma_chain(xs[:1], ys[:1], held[..., r1, :, :, e1])
    for k, (r, e) in enumerate(order[2:]):
        if k % 2:
            accumulated = np.add(accumulated, held[..., r, :, :, e])
        else:
            accumulated = fma_chain(xs[k + 1:k + 2], ys[k + 1:k + 2], accumulated)
    return accumulated


def scan_in_lanes(data, layout, combine):
    """The inclusive scan over the last axis of ``data`` for an axis laid out as ``layout``, as
    ``ScanOpToLLVM`` orders it. ``combine(left, right)`` takes and gives arrays."""
    (held,) = _held((data,), layout)
    if getattr(combine, "kwshim_sum", False) and data.dtype == np.float32:
        kernel = compiled.lane_scan_for(data.size)
        if kernel is not None:
            rows = np.ascontiguousarray(data.reshape(-1, data.shape[-1]))
            out = np.empty_like(rows)
            kernel(compiled.read_only(rows), *held.shape[-4:], out)
            return out.reshape(data.shape)
        return compiled.in_numpy(_scan_in_numpy, held, combine, data.shape)  # its time counted
    return _scan_in_numpy(held, combine, data.shape)


def _scan_in_numpy(held, combine, shape):
    with quiet(over="ignore", invalid="ignore"):
        return _scan(held, combine).reshape(shape)


def _scan(held, combine):
    repeats, warps, lanes, per_thread = held.shape[-4:]
    own = [held[..., e] for e in range(per_thread)]  # the thread's own scan, element by element
    for e in range(1, per_thread):
        own[e] = combine(own[e - 1], own[e])
    totals = own[-1]
    step = 1
    while step < lanes:  # Hillis-Steele over the lanes: each adds what lies ``step`` lanes behind
        behind = combine(totals[..., :-step], totals[..., step:])
        totals = np.concatenate([totals[..., :step], behind], axis=-1)
        step *= 2
    lasts = np.empty_like(totals)  # each thread's last element, then what came before each thread
    before = np.empty_like(totals)
    if warps > 1:
        running = None  # the warps' totals added one after another, chunk after chunk
        for repeat in range(repeats):
            prefix = [running] * warps  # what the warps before each one add up to
            for warp in range(warps):
                total = totals[..., repeat, warp, lanes - 1]
                running = total if running is None else combine(running, total)
                for later in range(warp + 1, warps):
                    prefix[later] = running
            chunk = totals[..., repeat, :, :]
            if repeat == 0:
                prefix[0] = chunk[..., 0, 0]  # the first warp adds nothing before it
                later = combine(np.stack(prefix[1:], -1)[..., None], chunk[..., 1:, :])
                last = np.concatenate([chunk[..., :1, :], later], axis=-2)
            else:
                last = combine(np.stack(prefix, -1)[..., None], chunk)
            lasts[..., repeat, :, :] = last
            before[..., repeat, :, :] = np.concatenate([np.stack(prefix, -1)[..., None], last[..., :-1]], axis=-1)
    else:
        carried = None  # the last lane's total of the chunk before
        for repeat in range(repeats):
            chunk = totals[..., repeat, :, :]
            if repeat:
                chunk = combine(carried[..., None], chunk)
            lasts[..., repeat, :, :] = chunk
            if lanes > 1:
                shifted = np.concatenate([chunk[..., :1], chunk[..., :-1]], axis=-1)
                if repeat:
                    shifted[..., 0] = carried
                before[..., repeat, :, :] = shifted
            else:
                before[..., repeat, :, :] = chunk
            carried = chunk[..., lanes - 1]
    scanned = []
    for e in range(per_thread - 1):
        value = combine(before, own[e])
        value[..., 0, 0, 0] = own[e][..., 0, 0, 0]  # the very first thread adds nothing before it
        scanned.append(value)
    scanned.append(lasts)
    return np.stack(scanned, axis=-1)


def added(dtype):
    """``combine`` for a sum: each add rounded to ``dtype`` (arrays: a scan's steps; marked, so that
    ``reduce_in_lanes`` adds in place instead of calling it)."""
    def add(left, right):
        return (left + right).astype(dtype, copy=False)

    add.kwshim_sum = True
    return add


def arg_combine(kind, tie_break_left=True):
    """``combine`` for ``tl.argmax``/``tl.argmin`` as Triton's ``_argmax_combine`` computes it: the
    left pair unless the right one compares greater (less), ties to the lower index. A NaN compares
    neither, so where it meets decides what is kept."""
    def combine(left, right):
        (value, index), (other, other_index) = left, right
        keep = value > other if kind == "max" else value < other
        if tie_break_left:
            keep |= (value == other) & (index < other_index)
        return np.where(keep, value, other), np.where(keep, index, other_index)

    return combine


def extremum(kind):
    """``combine`` for ``tl.max``/``tl.min``: ``max.f32``, which keeps the number over a NaN."""
    function = np.fmax if kind == "max" else np.fmin

    def combine(left, right):
        return (function(left[0], right[0]),)

    return combine


def loaded_as(result, *sources):
    """``result``, a float widened from narrower ones (``x.to(tl.float32)`` of a bf16 load), marked
    with their element size: the compiler keeps the layout of the narrow load (``lane_order``)."""
    types = [(s, deferred_arithmetic.element_type(s)) for s in sources]
    sizes = [getattr(s, "kwshim_loaded_itemsize", made.itemsize) for s, made in types
             if made is not None and made.kind in "fV"]
    made = deferred_arithmetic.element_type(result)  # a deferred product stays deferred
    if sizes and made is not None and min(sizes) < made.itemsize:
        result.kwshim_loaded_itemsize = min(sizes)
    return result


def from_tensor_cores(result, a, ieee):
    """``result``, a ``tl.dot`` of ``a`` by another block, marked as the tensor cores' (its shape
    and its K) where they compute it: 8-bit and 16-bit inputs, and fp32 ones unless ``ieee`` (IEEE
    precision takes the FMA path, in a blocked layout); not fp64. Reductions of it follow
    ``tensor_core_order``."""
    size = a.data.dtype.itemsize
    if size <= 2 or (size == 4 and a.data.dtype.kind == "f" and not ieee):
        result.kwshim_tensor_cores = (result.data.shape[-2:], a.data.shape[-1])
    return result


def keeps_layout(result, *sources):
    """``result`` of an elementwise operation, keeping a source's tensor-core layout (the compiler
    propagates the dot's layout through elementwise operations of its shape)."""
    for source in sources:
        mark = getattr(source, "kwshim_tensor_cores", None)
        if mark is not None and result.data.shape[-2:] == mark[0]:
            result.kwshim_tensor_cores = mark
            break
    return result
