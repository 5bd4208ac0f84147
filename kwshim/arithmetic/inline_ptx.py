"""Inline PTX of element-wise fp32 arithmetic, run as the GPU runs it.

The interpreter refuses every ``tl.inline_asm_elementwise`` ("inline_asm not supported in
interpreter mode"). Libraries ship a few lines of PTX where Triton has no operation of its own:
flash-linear-attention's ``softplus`` (on NVIDIA GPUs: ``setp``, then under predicates ``mov``,
``mul``, ``ex2.approx.ftz``, ``add``, ``lg2.approx.ftz``) in its gated delta rule, KDA and Mesa
kernels, and its ``safe_dot`` (a ``mov.f32``, on Blackwell). ``evaluate`` runs such assembly on
whole blocks: straight-line instructions on fp32 registers, each under its predicate where it has
one, with ``ex2.approx`` as ``tl.exp2`` is modelled (``gpu_arithmetic``) and ``lg2.approx`` as
``log2`` in fp64 rounded to fp32 (its subnormal inputs zeros under ``.ftz``). The GPU's
``lg2.approx`` is within PTX's stated bound of that, 2**-22 absolute below 1 and relative above
(measured on an H100). Anything else (another instruction, another type, ``pack`` above 1, a
special register) is None: the interpreter's own refusal stands.
"""

import sys

import numpy as np

from .fma import fma
from .special_registers import Results

__all__ = ["evaluate", "results"]

_TINY = np.float32(np.finfo(np.float32).tiny)
#: ``setp``'s ordered comparisons: false where either operand is NaN (``ne`` too, unlike NumPy's ``!=``)
_COMPARE = {"gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal, "eq": np.equal,
            "ne": lambda a, b: np.not_equal(a, b) & ~np.isnan(a) & ~np.isnan(b)}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.fmin, "max": np.fmax}
_UNARY = {"mov": lambda x: x, "neg": np.negative, "abs": np.abs}


class _Unsupported(Exception):
    pass


def _flushed(data):
    """Subnormal fp32 values as zeros of their sign (``.ftz``)."""
    return np.where(np.abs(data) < _TINY, np.copysign(np.float32(0), data), data).astype(np.float32)


def _approximation(name, data, ftz):
    """``ex2.approx`` or ``lg2.approx`` of fp32 ``data``: in fp64, rounded to fp32; under ``.ftz`` a
    subnormal input is a zero and an ``ex2`` result below fp32's normals is too (``tl.exp2``'s model)."""
    if name == "ex2" and ftz:
        from .gpu_arithmetic import exp2_approximation  # which builds on the builder that calls this

        return exp2_approximation(data)  # a subnormal input gives 1, as a zero does
    with np.errstate(divide="ignore", invalid="ignore"):
        wide = (_flushed(data) if ftz else data).astype(np.float64)
        return (np.exp2(wide) if name == "ex2" else np.log2(wide)).astype(np.float32)


def _statements(asm):
    for statement in str(asm).replace("{", ";").replace("}", ";").split(";"):
        statement = " ".join(statement.split())
        if statement:
            yield statement


def _run(asm, registers, shape):
    predicates = {}

    def read(operand):
        if operand in registers:
            return registers[operand]
        try:
            return np.float32(float(operand))  # a literal: PTX's fp64 value, rounded to fp32
        except ValueError:
            raise _Unsupported(operand) from None

    for statement in _statements(asm):
        guard = None
        if statement.startswith("@"):
            condition, statement = statement.split(" ", 1)
            negated = condition.startswith("@!")
            name = condition[2:] if negated else condition[1:]
            if name not in predicates:
                raise _Unsupported(name)
            guard = ~predicates[name] if negated else predicates[name]
        opcode, _, rest = statement.partition(" ")
        parts = opcode.split(".")
        operands = [operand.strip() for operand in rest.split(",")] if rest else []
        if opcode == ".reg":  # .reg .pred p; .reg .f32 t0, t1
            kind, _, names = rest.partition(" ")
            for declared in (name.strip() for name in names.split(",")):
                if kind == ".pred":
                    predicates[declared] = np.zeros(shape, bool)
                elif kind in (".f32", ".b32"):
                    registers.setdefault(declared, np.zeros(shape, np.float32))
                else:
                    raise _Unsupported(kind)
            continue
        if parts[-1] not in ("f32", "b32") and parts[0] != "setp":
            raise _Unsupported(opcode)
        ftz = "ftz" in parts
        if parts[0] == "setp" and parts[-1] == "f32" and parts[1] in _COMPARE and len(operands) == 3:
            left, right = (_flushed(read(o)) if ftz else read(o) for o in operands[1:])
            value = _COMPARE[parts[1]](left, right)
            predicates[operands[0]] = value if guard is None else np.where(guard, value, predicates[operands[0]])
            continue
        if parts[0] in _UNARY and len(operands) == 2:
            value = _UNARY[parts[0]](read(operands[1]))
        elif parts[0] in _BINARY and len(operands) == 3 and set(parts[1:-1]) <= {"rn", "ftz"}:
            left, right = (_flushed(read(o)) if ftz else read(o) for o in operands[1:])
            with np.errstate(over="ignore", invalid="ignore"):
                value = _BINARY[parts[0]](left, right).astype(np.float32)
            value = _flushed(value) if ftz else value
        elif parts[0] == "fma" and len(operands) == 4 and set(parts[1:-1]) <= {"rn", "ftz"}:
            factors = [_flushed(read(o)) if ftz else read(o) for o in operands[1:]]
            value = fma(*[np.broadcast_to(np.asarray(f, np.float32), shape) for f in factors]).astype(np.float32)
            value = _flushed(value) if ftz else value
        elif parts[0] in ("ex2", "lg2") and "approx" in parts and len(operands) == 2:
            value = _approximation(parts[0], np.broadcast_to(np.asarray(read(operands[1]), np.float32), shape), ftz)
        else:
            raise _Unsupported(opcode)
        if operands[0] not in registers:
            raise _Unsupported(operands[0])
        value = np.broadcast_to(np.asarray(value, np.float32), shape)
        registers[operands[0]] = value if guard is None else np.where(guard, value, registers[operands[0]])


def evaluate(asm, constraints, values, pack):
    """The result arrays of ``asm`` on ``values`` (fp32 arrays, one per input), each of their
    broadcast shape, or None where the assembly is not element-wise fp32 arithmetic this runs."""
    kinds = [kind.strip() for kind in str(constraints).split(",")]
    outputs = [kind for kind in kinds if kind.startswith("=")]
    if pack != 1 or not outputs or any(kind.lstrip("=") not in ("r", "f") for kind in kinds) or \
            len(kinds) - len(outputs) != len(values) or any(np.asarray(v).dtype != np.float32 for v in values):
        return None
    shape = np.broadcast_shapes(*[np.shape(v) for v in values]) if values else ()
    registers = {f"${index}": np.zeros(shape, np.float32) for index in range(len(outputs))}
    for index, value in enumerate(values):
        registers[f"${len(outputs) + index}"] = np.broadcast_to(value, shape)
    try:
        _run(asm, registers, shape)
    except _Unsupported:
        return None
    return [np.ascontiguousarray(registers[f"${index}"]) for index in range(len(outputs))]


def results(asm, constraints, values, types, pack):
    """What the builder's ``create_inline_asm`` returns for ``asm`` on ``values`` (the interpreter's
    handles) where ``evaluate`` runs it and every result is fp32; else None."""
    import triton.language as tl

    if any(getattr(kind, "scalar", kind) != tl.float32 for kind in types):  # a block's type, or a scalar's
        return None
    found = evaluate(asm, constraints, [value.data for value in values], pack)
    if found is None:
        return None
    handle = sys.modules["triton.runtime.interpreter"].TensorHandle
    return Results([handle(data, tl.float32) for data in found])
