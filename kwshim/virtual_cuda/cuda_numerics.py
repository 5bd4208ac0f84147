"""Where CUDA computes an operation otherwise than torch's CPU build, the device computes it as CUDA.

Each rule is measured on a GPU first (``parity/``) and applies to device tensors only; a CPU tensor
keeps the CPU's own arithmetic:

- an operation CUDA has and the CPU build lacks (a matmul with ``out_dtype``) computes on the CPU
  in that dtype;
- a bf16 or fp16 matmul sums in fp32 and rounds once, as cuBLAS does;
- a bf16 or fp16 ``log_softmax`` computes in fp32 and rounds once, as CUDA's kernel does;
- a bf16 or fp16 ``layer_norm``, forward and backward, computes in fp32 and rounds each result once,
  with its mean and 1/std kept in fp32, as CUDA's kernels do;
- an fp32 softmax backward sums its rows as nearly exactly as CUDA's tree.
"""

import torch

__all__ = ["differs", "rule_for"]

_PLAIN = torch.Tensor
_aten = torch.ops.aten

#: torch's matmuls with a CUDA-only overload (``out_dtype``) and a half-precision path of their own
_MATMULS = ("mm", "bmm", "addmm", "baddbmm")


def _into(out, result):
    """``result`` written into an ``out=`` tensor, as an ``_out`` overload writes it."""
    return out.resize_(result.shape).copy_(result)


def _cuda_only():
    """The operations CUDA has and torch's CPU build lacks, as the CPU computes them: a matmul with
    ``out_dtype`` (torch 2.8+, which Liger's fused linear JSD calls on cuda only) in that dtype."""
    def product(multiply):
        return lambda a, b, out_dtype, out=None: (lambda r: r if out is None else _into(out, r))(
            multiply(a.to(out_dtype), b.to(out_dtype)))

    def accumulated(add):
        return lambda c, a, b, out_dtype, beta=1, alpha=1, out=None: (lambda r: r if out is None else _into(out, r))(
            add(c.to(out_dtype), a.to(out_dtype), b.to(out_dtype), beta=beta, alpha=alpha))

    table = {}
    for name in _MATMULS:
        make = accumulated if name in ("addmm", "baddbmm") else product
        packet = getattr(_aten, name, None)
        for overload in ("dtype", "dtype_out"):
            op = getattr(packet, overload, None) if packet is not None and overload in packet.overloads() else None
            if op is not None:
                table[op] = make(getattr(torch, name))
    return table


_CUDA_ONLY = _cuda_only()


def _half_matmuls():
    """bf16 and fp16 matmuls as cuBLAS computes them: products summed in fp32, rounded once.
    torch's CPU build rounds in another order, and for a row-major second operand it takes a
    scalar path (229 s for a 4096x2048x4096 bf16 ``mm`` on 2 cores, 3.4 s transposed): Liger's and
    fla's reference modules sat in it. Measured on the H200 (``parity/half_matmul.py``), this is as
    near its bits as the CPU's own path, nearer in 3 of 5 cases."""
    def in_fp32(op):
        def compute(*args, **kwargs):
            dtype = args[0].dtype
            widened = [a.float() if isinstance(a, _PLAIN) else a for a in args]
            return op(*widened, **kwargs).to(dtype)
        return compute

    table = {}
    for name in _MATMULS:
        op = getattr(getattr(_aten, name, None), "default", None)
        if op is not None:
            table[op] = in_fp32(op)
    return table


def _half_log_softmax(x, dim, half_to_float):
    """CUDA's ``log_softmax`` of bf16 or fp16 rows: ``x - max - log(sum(exp(x - max)))`` in fp32,
    rounded once. torch's CPU build rounds twice, 11% of the elements an ulp away (0.0625 for a
    vocabulary's log-probabilities in bf16), and so a bf16 cross entropy's gradient, ``exp`` of
    them: Liger's bf16 cross entropy tests failed their 5% here, and pass on the H200. Measured on
    the H200 (``parity/half_log_softmax.py``)."""
    result = _aten._log_softmax.default(x.float(), dim, False)
    return result if half_to_float else result.to(x.dtype)


def _half_layer_norm(x, normalized_shape, weight, bias, eps):
    """CUDA's ``native_layer_norm`` of bf16 or fp16 rows: the statistics and the result in fp32, the
    result rounded once, the mean and 1/std returned in fp32 (torch's CPU build returns them in the
    input's dtype, rounded, and the backward then starts from those). Measured on an H100
    (``parity/half_norms.py``): the forward is the GPU's in all but a few elements, as the CPU's own."""
    layer_norm = _aten.native_layer_norm.default
    out, mean, rstd = layer_norm(x.float(), normalized_shape, _widened(weight), _widened(bias), eps)
    return out.to(x.dtype), mean, rstd


def _half_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    """CUDA's ``native_layer_norm_backward`` for bf16 or fp16: the three gradients summed in fp32 and
    each rounded once to its tensor's dtype. torch's CPU build rounds along the way: on an H100's
    record (``parity/half_norms.py``) it differed in 298-4,136 of the input gradient's elements and
    37-957 of the weight's and bias's per case, where this differs in at most 8, each an fp32 sum in
    another order; Liger's bf16 ``test_liger_layer_norm`` compares its kernel's weight gradient with
    this one at 0.05 and failed on the CPU's alone."""
    grads = _aten.native_layer_norm_backward.default(
        grad_out.float(), x.float(), normalized_shape, mean.float(), rstd.float(), _widened(weight), _widened(bias),
        output_mask)
    dtypes = (x.dtype, x.dtype if weight is None else weight.dtype, x.dtype if bias is None else bias.dtype)
    return tuple(None if grad is None else grad.to(dtype) for grad, dtype in zip(grads, dtypes))


def _widened(tensor):
    return None if tensor is None else tensor.float()


#: bf16 and fp16 operations that CUDA computes in fp32, rounding once, where torch's CPU build does not
_HALF_IN_FP32 = {**_half_matmuls(), _aten._log_softmax.default: _half_log_softmax,
                 _aten.native_layer_norm.default: _half_layer_norm,
                 _aten.native_layer_norm_backward.default: _half_layer_norm_backward}
_HALVES = (torch.bfloat16, torch.float16)


def _summed_as_a_tree(op):
    """An fp32 softmax backward (``grad - exp(output) * sum(grad)``, ``output * (grad - sum(grad *
    output))``) whose row sum is as near the exact one as CUDA's, a tree over a block's threads:
    computed in fp64 and rounded once. torch's CPU build adds a row in 8 or 16 long chains, one per
    SIMD lane: over a 32000-wide row a label-smoothed cross entropy's gradient came out a median
    1.7e-5 from the exact one, which Liger's fp32 cross entropy tests (1e-6, 1e-5) fail and the
    H200 passes. Measured on the H200 (``parity/softmax_backward.py``): within one ulp of each row's
    largest element of its result, where the CPU's was 4 away.

    A large one is computed a slice of rows at a time (rows are independent: the same bits): Liger's
    cross entropy of 8192 rows of 32000 took 4.5-6.2 s whole, in 2 GB fp64 copies, and 0.75-0.94 s
    in slices of 2M elements."""
    def compute(grad_output, output, dim, input_dtype):
        dim = dim % grad_output.dim() if grad_output.dim() else 0
        axis = next((axis for axis in range(grad_output.dim()) if axis != dim), None)
        if axis is None or grad_output.numel() <= _SLICE:
            return op(grad_output.double(), output.double(), dim, torch.float64).float()
        result = torch.empty(grad_output.shape, dtype=torch.float32)
        step = max(1, _SLICE * grad_output.shape[axis] // grad_output.numel())
        for start in range(0, grad_output.shape[axis], step):
            rows = min(step, grad_output.shape[axis] - start)
            sliced = op(grad_output.narrow(axis, start, rows).double(), output.narrow(axis, start, rows).double(),
                        dim, torch.float64)
            result.narrow(axis, start, rows).copy_(sliced)  # rounded to fp32, as .float() rounds
        return result
    return compute


#: the elements of a slice of ``_summed_as_a_tree``'s rows (16 MB of fp64)
_SLICE = 2 ** 21


#: fp32 operations whose sums CUDA adds as a tree, computed here in fp64 and rounded once
_FP32_SUMS = {op: _summed_as_a_tree(op)
              for op in (_aten._log_softmax_backward_data.default, _aten._softmax_backward_data.default)}


def differs(func) -> bool:
    """Whether CUDA computes ``func`` otherwise than the CPU for some operands (a rule here)."""
    return func in _CUDA_ONLY or func in _HALF_IN_FP32 or func in _FP32_SUMS


def rule_for(func, args):
    """How CUDA computes ``func`` on these operands where the CPU computes otherwise; None where the
    CPU's own kernel is CUDA's answer."""
    if func in _CUDA_ONLY:
        return _CUDA_ONLY[func]
    if func in _HALF_IN_FP32 and args[_HALF_OPERAND.get(func, 0)].dtype in _HALVES:
        return _HALF_IN_FP32[func]
    if func in _FP32_SUMS and args[0].dtype == torch.float32 and args[3] == torch.float32:
        return _FP32_SUMS[func]
    return None


#: the operand whose dtype chooses the rule, where it is not the first (a backward's input, not its gradient)
_HALF_OPERAND = {_aten.native_layer_norm_backward.default: 1}
