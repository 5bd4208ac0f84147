"""Every operation of the interpreter's builder, with how a batch of programs runs it.

After JAX's batching rules (``jax/_src/interpreters/batching.py``): an operation is listed with its
rule, and one that is not listed falls back to the loop. A batched value carries a leading program
axis (``program_axis``), so an operation that looks at shapes, or at where the values of a block
live, can mix programs silently; a new operation of a new Triton release therefore runs the loop
until it is classified here (``tests/test_batching_rules.py`` holds this table to the installed
interpreter's builder).

The rules:

- ``PROGRAM_AXIS``: kwshim's own method (``program_axis.ProgramAxisOperations``) shifts it one axis;
- ``ELEMENT_WISE``: element by element over blocks NumPy broadcasts together, a program axis
  included (1 where uniform);
- ``TRAILING_AXES``: it reads only a block's last axes (``tl.dot``'s matmul, ``tl.split``'s last
  axis), which the program axis never is;
- ``HELD``: it keeps its operands' handles, program axis and all, for operations with a rule of their
  own (a tensor descriptor or a block pointer, which their loads and stores read);
- ``UNIFORM``: a type, a constant or a count the programs share, or nothing at all (a barrier);
- ``FALLS_BACK``: only the loop gives its bits (``FALLBACKS`` says why).
"""

__all__ = ["PROGRAM_AXIS", "ELEMENT_WISE", "TRAILING_AXES", "HELD", "UNIFORM", "FALLS_BACK", "RULES", "FALLBACKS",
           "rule", "operations"]

PROGRAM_AXIS = "program axis"
ELEMENT_WISE = "element-wise"
TRAILING_AXES = "trailing axes"
HELD = "held"
UNIFORM = "uniform"
FALLS_BACK = "falls back"

#: What a batch cannot run as the loop does, and why (the reason a kernel remembers).
FALLBACKS = {
    "create_atomic_cas": "an atomic compare-and-swap",
    "create_atomic_load": "an atomic",
    "create_atomic_store": "an atomic",
    "create_atomic_poll": "an atomic",
    "create_print": "device_print",
    "create_histogram": "tl.histogram",
    "create_gather": "tl.gather",
    "create_dot_scaled": "tl.dot_scaled",
    "create_descriptor_gather": "a tensor descriptor's gather",
    "create_descriptor_scatter": "a tensor descriptor's scatter",
}

_PROGRAM_AXIS = (
    "create_get_program_id", "create_make_range", "create_splat", "create_unsplat", "create_addptr",
    "create_expand_dims", "create_broadcast", "create_reshape", "create_trans", "create_cat", "create_join",
    "create_load", "create_store", "create_masked_load", "create_masked_store", "create_atomic_rmw",
    "create_descriptor_load", "create_descriptor_store", "create_assert", "create_advance",
    "create_tensor_pointer_load", "create_tensor_pointer_store",
    "create_inline_asm",  # element-wise fp32 arithmetic (``inline_ptx``); any other assembly falls back
)

_ELEMENT_WISE = (
    # integer and float arithmetic, comparisons and bit operations
    "create_add", "create_sub", "create_mul", "create_sdiv", "create_udiv", "create_idiv", "create_srem",
    "create_urem", "create_umulhi", "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem",
    "create_fneg", "create_fma", "create_clampf", "create_precise_divf", "create_approx_divf",
    "create_precise_sqrt", "create_and", "create_or", "create_xor", "create_shl", "create_lshr", "create_ashr",
    "create_iabs", "create_fabs", "create_maxsi", "create_maxui", "create_minsi", "create_minui",
    "create_maximumf", "create_minimumf", "create_maxnumf", "create_minnumf", "create_select",
    "create_icmpEQ", "create_icmpNE", "create_icmpSGE", "create_icmpSGT", "create_icmpSLE", "create_icmpSLT",
    "create_icmpUGE", "create_icmpUGT", "create_icmpULE", "create_icmpULT",
    "create_fcmpOEQ", "create_fcmpOGE", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOLT", "create_fcmpONE",
    "create_fcmpUEQ", "create_fcmpUGE", "create_fcmpUGT", "create_fcmpULE", "create_fcmpULT", "create_fcmpUNE",
    # the math functions
    "create_exp", "create_exp2", "create_log", "create_log2", "create_cos", "create_sin", "create_sqrt",
    "create_rsqrt", "create_erf", "create_floor", "create_ceil", "create_extern_elementwise",
    # conversions
    "create_bitcast", "create_int_cast", "create_fp_to_fp", "create_fp_ext", "create_fp_trunc",
    "create_fp_to_si", "create_fp_to_ui", "create_si_to_fp", "create_ui_to_fp", "create_int_to_ptr",
    "create_ptr_to_int", "cast_impl",
    # the interpreter's helpers behind the operations above
    "binary_op", "unary_op", "ternary_op",
)

_TRAILING_AXES = ("create_dot", "create_split")

_HELD = ("create_make_tensor_descriptor", "create_make_block_ptr")

_UNIFORM = (
    "create_get_num_programs", "create_barrier", "create_assume",
    "get_null_value", "get_all_ones_value", "get_cache_policy", "get_block_ty", "get_ptr_ty",
    "get_int1", "get_int8", "get_int16", "get_int32", "get_int64",
    "get_uint8", "get_uint16", "get_uint32", "get_uint64", "get_fp16", "get_fp32", "get_fp64", "get_bf16",
    "get_int1_ty", "get_int8_ty", "get_int16_ty", "get_int32_ty", "get_int64_ty",
    "get_uint8_ty", "get_uint16_ty", "get_uint32_ty", "get_uint64_ty",
    "get_half_ty", "get_bf16_ty", "get_float_ty", "get_double_ty", "get_void_ty",
    "get_fp8e4nv_ty", "get_fp8e4b8_ty", "get_fp8e4b15_ty", "get_fp8e5_ty", "get_fp8e5b16_ty",
    "ir_rmw_op_to_interpreter_rmw_op", "ir_sem_to_interpreter_sem", "set_grid_dim", "set_grid_idx",
)


def _table():
    table = {}
    for kind, names in ((PROGRAM_AXIS, _PROGRAM_AXIS), (ELEMENT_WISE, _ELEMENT_WISE), (TRAILING_AXES, _TRAILING_AXES),
                        (HELD, _HELD), (UNIFORM, _UNIFORM), (FALLS_BACK, tuple(FALLBACKS))):
        for name in names:
            assert name not in table, f"{name} is listed twice"
            table[name] = kind
    return table


#: operation name -> its rule.
RULES = _table()


def rule(name):
    """The rule of the builder operation ``name``, or None where it is not listed (it falls back)."""
    return RULES.get(name)


def operations(builder_class):
    """The builder's operations: its public methods (what the front end calls)."""
    return sorted(name for name in dir(builder_class)
                  if not name.startswith("_") and callable(getattr(builder_class, name, None)))
