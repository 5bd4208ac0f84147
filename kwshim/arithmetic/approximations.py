"""The GPU's approximate fp32 instructions, modelled in NumPy: ``ex2.approx`` (``tl.exp``,
``tl.exp2``) and the ``.ftz`` approximations that read and write subnormals as zeros (``sqrt``,
``sin``, ``cos``). ``gpu_arithmetic`` builds its builder methods on them, and
``deferred_arithmetic`` computes an expression's ``exp`` and ``exp2`` with them where no compiled
loop does; measured on the H200 (``parity/numerics.py``).
"""

import numpy as np

from .formats import LOG2_E, SMALLEST_NORMAL

__all__ = ["subnormal", "flushed", "exp_approximation", "exp2_approximation", "flushing_approximation"]

_LOG2_E = LOG2_E  #: log2(e) as compiled Triton's ``tl.exp`` multiplies by it
_SMALLEST_NORMAL = SMALLEST_NORMAL


def subnormal(data):
    """Where fp32 ``data`` is subnormal (nonzero, below the smallest normal magnitude)."""
    return (np.abs(data) < _SMALLEST_NORMAL) & (data != 0)


def flushed(data, positive=False):
    """fp32 ``data`` with subnormals made zeros of their sign (``positive``: +0), as the ``.ftz``
    instructions and the GPU's libdevice read and write them; data of another type, or with no
    subnormal, as it is (the same array: nothing writes into a handle's data)."""
    if data.dtype != np.float32:
        return data
    small = np.abs(data) < _SMALLEST_NORMAL  # zeros among them: most blocks have none of either
    if not small.any():
        return data
    small &= data != 0
    if not small.any():
        return data
    return np.where(small, np.float32(0) if positive else np.copysign(np.float32(0), data), data)


#: Elements per chunk of an fp32 function computed in fp64 (``_through_fp64``): a chunk's fp64
#: temporaries stay in the cache, and no pass makes a temporary of the whole block. Measured on 2M
#: elements: ``tl.exp`` in 3.0 ms, against 10.6 ms in whole-block passes (fresh memory) and 11.0 ms
#: for a compiled loop calling the C library's scalar ``exp2`` (NumPy's own ``exp2`` is SIMD).
_CHUNK = 2 ** 15


def _through_fp64(function, data, prepare=None, finish=None):
    """fp32 ``function(prepare(data))`` computed in fp64 and rounded to fp32 (then ``finish``-ed),
    element by element, chunk by chunk: the same bits as whole-array passes, at a third of the time."""
    flat = data.reshape(-1)
    result = np.empty(flat.size, np.float32)
    wide = np.empty(min(flat.size, _CHUNK), np.float64)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start:start + _CHUNK]
        if prepare is not None:
            part = prepare(part)
        scratch = wide[:part.size]
        scratch[...] = part
        function(scratch, out=scratch)
        rounded = result[start:start + part.size]
        rounded[...] = scratch
        if finish is not None:
            rounded[...] = finish(rounded)
    return result.reshape(data.shape)


def _times_log2_e(data):
    return data * _LOG2_E  # rounded to fp32, as compiled Triton's tl.exp multiplies


def exp_approximation(data):
    """fp32 ``tl.exp``: ``ex2.approx`` of ``x * log2(e)``, the product rounded to fp32, modelled as
    ``exp2`` in fp64 rounded to fp32."""
    return _through_fp64(np.exp2, data, prepare=_times_log2_e)


def exp2_approximation(data):
    """fp32 ``tl.exp2``: ``ex2.approx.ftz``, modelled as ``exp2`` in fp64 rounded to fp32, subnormal
    results zeros. A subnormal input needs no flush: ``2 ** x`` rounds to 1 in fp64 for
    ``|x| < 2 ** -126``, as ``2 ** 0`` does. A chunk's results are flushed only where the smallest
    is below fp32's smallest normal (``flushing_approximation(np.exp2, True, data)``'s bits, at about
    half its time)."""
    return _through_fp64(np.exp2, data, finish=_flushed_if_small)


def _flushed_if_small(results):
    """Non-negative (or NaN) ``results`` with subnormals made zeros: a look at the least, first."""
    return flushed(results) if np.fmin.reduce(results) < _SMALLEST_NORMAL else results


def flushing_approximation(function, flush_result, data):
    """fp32 ``function`` of ``data`` as its ``.ftz`` approximation: rounded exactly from fp64,
    subnormal inputs (and results, where ``flush_result``) zeros of their sign."""
    return _through_fp64(function, data, prepare=flushed, finish=flushed if flush_result else None)
