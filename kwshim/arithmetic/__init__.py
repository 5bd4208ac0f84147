"""The H200's arithmetic: how a value is computed, element by element and block by block, as compiled
Triton computes it on the GPU (measured there: ``parity/``). Nothing here knows of launches or
programs; the seam (``kwshim.interpreter``) and the batching wing call in.

- ``formats`` (bf16 and fp8 as ``ml_dtypes`` floats), ``conversions`` (casts as ``cvt``), ``fma``
  and ``rounding_modes`` (one rounding, directed roundings), ``approximations`` (``ex2.approx``
  and the ``.ftz`` instructions);
- ``gpu_arithmetic`` (``numerics="gpu"``: fused multiply-adds, tensor-core dots), with
  ``deferred_arithmetic`` (a large block's expression computed in one pass), ``lane_order`` (sums
  in the order of the GPU's lanes), ``dot_chains`` and ``scaled_dots``;
- ``libdevice`` with ``math_table``, ``inline_ptx``, ``special_registers``: the GPU's library
  functions, inline assembly and registers on the CPU;
- ``compiled`` with ``compiled_loops``: the same bits as numba loops (``kwshim[fast]``);
  ``numpy_quiet``: NumPy's floating-point warnings off, as a GPU computes quietly.

Needs NumPy (and ``ml_dtypes``; numba where installed), imported only when a kernel is interpreted.
"""
