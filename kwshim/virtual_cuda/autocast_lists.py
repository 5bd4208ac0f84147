"""``torch.autocast("cuda")``'s own lists on the virtual device: what CUDA's autocast runs in fp32.

Under the device, ``torch.autocast("cuda", dtype)`` is the CPU's autocast with that dtype
(``torch_cuda``): a device tensor is a CPU tensor to autocast's dispatch key. The CPU's lists of
what runs in low precision match CUDA's for matmuls, but not what CUDA runs in fp32: on the H200,
``layer_norm`` and ``softmax`` of a matmul's fp16 result come back fp32 (CUDA's fp32 lists), on the
CPU fp16 (``parity/cuda_state_h200.json``, "autocast"), and a test's torch reference came back in
another dtype than the kernel's output ("dtype float32 != float16").

While the device is on, each operator of CUDA's two fp32 lists (torch's ``autocast_mode.h``:
``AT_FORALL_FP32``, every floating-point argument but fp64 cast to fp32; ``AT_FORALL_FP32_SET_OPT_DTYPE``,
``dtype=torch.float32`` where none is given and the first argument is low precision) gets a kernel
for the ``AutocastCPU`` key, through one ``torch.library.Library`` made and destroyed with the
switch (destroying it puts the CPU's own kernels back). A CPU autocast of the suite's own follows
CUDA's lists too while the device is on: under the device, "cuda" autocast is the CPU's.
"""

import warnings

import torch

__all__ = ["install", "FP32", "FP32_SET_OPT_DTYPE"]

#: ``AT_FORALL_FP32``: (operator, overload) run with their floating-point arguments in fp32.
FP32 = (
    ("acos", ""), ("asin", ""), ("cosh", ""), ("erfinv", ""), ("exp", ""), ("expm1", ""), ("log", ""),
    ("log10", ""), ("log2", ""), ("log1p", ""), ("reciprocal", ""), ("rsqrt", ""), ("sinh", ""), ("tan", ""),
    ("pow", "Tensor_Scalar"), ("pow", "Tensor_Tensor"), ("pow", "Scalar"), ("softplus", ""), ("layer_norm", ""),
    ("native_layer_norm", ""), ("group_norm", ""), ("frobenius_norm", "dim"), ("nuclear_norm", ""),
    ("nuclear_norm", "dim"), ("cosine_similarity", ""), ("poisson_nll_loss", ""), ("cosine_embedding_loss", ""),
    ("nll_loss", ""), ("nll_loss2d", ""), ("hinge_embedding_loss", ""), ("kl_div", ""), ("l1_loss", ""),
    ("smooth_l1_loss", ""), ("huber_loss", ""), ("mse_loss", ""), ("margin_ranking_loss", ""),
    ("multilabel_margin_loss", ""), ("soft_margin_loss", ""), ("triplet_margin_loss", ""), ("multi_margin_loss", ""),
    ("binary_cross_entropy_with_logits", ""), ("dist", ""), ("pdist", ""), ("cdist", ""), ("renorm", ""),
    ("logsumexp", ""), ("upsample_nearest1d", ""), ("_upsample_nearest_exact1d", ""), ("upsample_nearest2d", ""),
    ("_upsample_nearest_exact2d", ""), ("upsample_nearest3d", ""), ("_upsample_nearest_exact3d", ""),
    ("upsample_linear1d", ""), ("upsample_bilinear2d", ""), ("_upsample_bilinear2d_aa", ""),
    ("upsample_trilinear3d", ""), ("upsample_bicubic2d", ""), ("_upsample_bicubic2d_aa", ""),
)
#: ``AT_FORALL_FP32_SET_OPT_DTYPE``: (operator, overload) given ``dtype=torch.float32`` where the caller
#: gave none and the first argument is low precision.
FP32_SET_OPT_DTYPE = (
    ("prod", ""), ("prod", "dim_int"), ("prod", "dim_Dimname"), ("softmax", "int"), ("softmax", "Dimname"),
    ("log_softmax", "int"), ("log_softmax", "Dimname"), ("cumprod", ""), ("cumprod", "dimname"), ("cumsum", ""),
    ("cumsum", "dimname"), ("linalg_vector_norm", ""), ("linalg_matrix_norm", ""), ("linalg_matrix_norm", "str_ord"),
    ("sum", ""), ("sum", "dim_IntList"), ("sum", "dim_DimnameList"),
)

_BELOW = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
_LOW = (torch.float16, torch.bfloat16)


def _to_fp32(value):
    """``value`` with every floating-point tensor but fp64 (and those in a list) in fp32."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() and value.dtype != torch.float64 else value
    if isinstance(value, (list, tuple)) and any(isinstance(item, torch.Tensor) for item in value):
        return type(value)(_to_fp32(item) for item in value)
    return value


def _fp32_kernel(overload):
    def in_fp32(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_BELOW):
            return overload(*(_to_fp32(arg) for arg in args), **{k: _to_fp32(v) for k, v in kwargs.items()})

    return in_fp32


def _set_dtype_kernel(overload):
    names = [argument.name for argument in overload._schema.arguments]
    at = names.index("dtype") if "dtype" in names else None

    def in_fp32(*args, **kwargs):
        first = args[0] if args else None
        given = kwargs.get("dtype") if at is None or len(args) <= at else args[at]
        if at is not None and given is None and isinstance(first, torch.Tensor) and first.dtype in _LOW:
            if len(args) > at:
                args = args[:at] + (torch.float32,) + args[at + 1:]
            else:
                kwargs = {**kwargs, "dtype": torch.float32}
        with torch._C._ExcludeDispatchKeyGuard(_BELOW):
            return overload(*args, **kwargs)

    return in_fp32


def install(patch) -> None:
    """CUDA's fp32 lists as ``AutocastCPU`` kernels, through ``patch`` (the library destroyed on undo)."""
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": the CPU's, put back after
        warnings.simplefilter("ignore")
        for table, make in ((FP32, _fp32_kernel), (FP32_SET_OPT_DTYPE, _set_dtype_kernel)):
            for name, overload_name in table:
                packet = getattr(torch.ops.aten, name, None)
                overload = None if packet is None else getattr(packet, overload_name or "default", None)
                if overload is None:  # not in this torch
                    continue
                library.impl(f"{name}.{overload_name}" if overload_name else name, make(overload), "AutocastCPU")
    patch.on_undo(library._destroy)
