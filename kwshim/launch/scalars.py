"""Scalar launch arguments typed as compiled Triton types them.

Compiled Triton hands a kernel a Python or NumPy ``float`` as an fp32 scalar (or the parameter's
annotated type, ``val: tl.float16``), a ``bool`` as i1, an ``int`` as i32, i64 (from 2**31 on) or
u64, or as the annotated type (``n: tl.int64``), and an ``int`` equal to 1 as the constant 1 (unless
the parameter is in ``do_not_specialize``). The interpreter hands floats over as bare Python
floats (so ``eps.to(tl.float32)`` fails, and ``fp16_x * eps`` silently computes in fp16), and on
some releases bools as i32. The launch paths (``kernel.py``) pass the bound positional values
through ``ScalarTyping.convert`` just before the interpreter sees them: each value is made the
interpreter's own scalar tensor of the compiled type, which its ``_implicit_cvt`` leaves as it
is. What the installed interpreter already converts right is probed once, and left alone.
"""

import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .. import compat

__all__ = ["ScalarTyping", "converter"]


@functools.lru_cache(maxsize=None)
def _interpreter():
    """(module, implicit_cvt, converts floats to fp32, converts bools to i1, whether the constant 1
    works as compiled Triton's specialisation), probed once."""
    compat.import_triton()
    import triton.language as tl
    from triton.runtime import interpreter

    implicit_cvt = getattr(interpreter, "_implicit_cvt", None)
    if implicit_cvt is None or getattr(interpreter, "TensorHandle", None) is None:
        return interpreter, None, True, True, False  # an interpreter kwshim cannot type for
    floats, bools = (_converts(implicit_cvt, value, dtype) for value, dtype in ((1.5, tl.float32), (True, tl.int1)))
    try:  # 2.3's constexpr cannot multiply a Python int: the constant 1 would break kernels there
        specialises = (tl.constexpr(1) * 3) == 3
    except Exception:
        specialises = False
    return interpreter, implicit_cvt, floats, bools, specialises


def _converts(implicit_cvt, value, dtype) -> bool:
    import triton.language as tl

    try:
        converted = implicit_cvt(value)
    except Exception:  # 3.6 builds an i32 array under an i1 type for True, and refuses it
        return False
    return isinstance(converted, tl.tensor) and converted.dtype == dtype


def _scalar(value, dtype):
    """The interpreter's scalar tensor of ``dtype`` holding ``value``, rounded (floats) or wrapped
    (integers) as compiled Triton passes it."""
    import numpy as np
    import triton.language as tl

    interpreter = _interpreter()[0]
    if dtype == tl.bfloat16:
        from ..arithmetic.formats import numpy_type as format_type

        numpy_type = format_type("bf16")
        if numpy_type is not None:  # held as an ml_dtypes float while kwshim computes as the GPU
            data = np.array([value], dtype=np.float32).astype(numpy_type)
        else:  # the bare interpreter keeps bf16 as its bits, in uint16
            import torch

            data = torch.tensor([value], dtype=torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    elif dtype.is_int() and not dtype.is_bool():
        numpy_type = np.dtype(f"{'u' if dtype.is_int_unsigned() else ''}int{dtype.int_bitwidth}")
        data = np.array([int(value) & ((1 << dtype.int_bitwidth) - 1)], dtype=np.uint64).astype(numpy_type)
    else:
        numpy_type = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64, tl.int1: np.bool_}
        data = np.array([value], dtype=numpy_type[dtype])
    return tl.tensor(interpreter.TensorHandle(data, dtype), dtype)


_TYPE_NAMES = {"float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
               "float32": "float32", "fp32": "float32", "float64": "float64", "fp64": "float64",
               "bool": "int1", "i1": "int1", "int1": "int1",
               **{f"{p}{w}": f"{'u' if p[0] == 'u' else ''}int{w}"
                  for p in ("i", "int", "u", "uint") for w in (8, 16, 32, 64)}}


def _annotation_kind(annotation) -> Tuple[bool, Optional[Any], bool]:
    """(constexpr, the dtype it names or None, annotated at all) for a parameter annotation."""
    import inspect

    import triton.language as tl

    if annotation is inspect.Parameter.empty or annotation is None or annotation == "":
        return False, None, False
    if annotation is tl.constexpr or "constexpr" in str(annotation):
        return True, None, True
    if isinstance(annotation, tl.dtype):
        return False, (None if isinstance(annotation, tl.pointer_type) else annotation), True
    if annotation is bool:
        return False, tl.int1, True
    name = str(annotation).strip().rsplit(".", 1)[-1]
    type_name = _TYPE_NAMES.get(name)
    return False, (getattr(tl, type_name) if type_name else None), True


def _not_specialised(kernel, names) -> set:
    """The parameters compiled Triton never specialises (``do_not_specialize``), names or positions:
    from the interpreter kernel where it keeps the list (3.4+), else from the literal list in the
    kernel's own ``@triton.jit(do_not_specialize=[...])`` line (3.0-3.3 drop it)."""
    listed = (getattr(kernel, "kwargs", None) or {}).get("do_not_specialize") or _declared_unspecialised(kernel.fn)
    return {names[item] if isinstance(item, int) and item < len(names) else item for item in listed}


def _declared_unspecialised(fn) -> tuple:
    """The ``do_not_specialize`` list written in ``fn``'s ``jit`` decorator, read from its source
    (a literal list or tuple of names or positions); () where there is none or it cannot be read."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return ()
    definition = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    for decorator in definition.decorator_list if definition is not None else ():
        if not isinstance(decorator, ast.Call):
            continue
        for keyword in decorator.keywords:
            if keyword.arg == "do_not_specialize":
                try:
                    return tuple(ast.literal_eval(keyword.value))
                except ValueError:
                    return ()
    return ()


class ScalarTyping:
    """For one kernel: which positions take runtime scalars, and how compiled Triton types them."""

    def __init__(self, slots: List[Tuple[int, Any, bool]], floats: bool, bools: bool):
        #: (position, the annotated dtype or None, whether an int 1 is specialised)
        self.slots = slots
        self.floats, self.bools = floats, bools
        #: the types seen whose values are never typed (tensors, None, strings, ...)
        self.passing: set = set()

    def convert(self, args: Sequence[Any]) -> Sequence[Any]:
        converted: Optional[List[Any]] = None
        passing, count = self.passing, len(args)
        for position, dtype, specialise_one in self.slots:
            if position >= count:
                break
            value = args[position]
            kind = type(value)
            if kind in passing:  # a tensor, None, ...: the common case, one set lookup
                continue
            if kind is int and dtype is None and 1 < value < 2 ** 31:  # an int as it is (``typed``'s answer)
                continue
            new = self.typed(value, dtype, specialise_one)
            if new is _KEPT:
                continue
            if converted is None:
                converted = list(args)
            converted[position] = new
        return args if converted is None else converted

    def typed(self, value, dtype, specialise_one):
        """``value`` as compiled Triton hands it to a slot annotated ``dtype`` (None: not), or ``_KEPT``."""
        kind = type(value)
        if kind is float or (kind.__module__ == "numpy" and kind.__name__ in _NUMPY_FLOATS):
            if kind is float and self.floats and dtype is None:
                return _KEPT
            if kind.__name__ != "float64" and kind is not float:  # compiled: not a float subclass
                from ..errors import LaunchArgumentError

                raise LaunchArgumentError(f"failed to specialize argument of type: numpy.{kind.__name__} "
                                          f"(kwshim: compiled Triton refuses it; pass float(value))")
            import triton.language as tl

            return _scalar(float(value), dtype if dtype is not None and dtype.is_floating() else tl.float32)
        if kind is bool:
            if self.bools and dtype is None:
                return _KEPT
            import triton.language as tl

            return _scalar(value, tl.int1)
        if kind is int:
            if dtype is not None and dtype.is_int() and not dtype.is_bool():
                return _scalar(value, dtype)  # ``n: tl.int64`` receives an int64, as compiled
            if value == 1 and specialise_one:
                import triton.language as tl

                return tl.constexpr(1)
            if 2 ** 31 <= value < 2 ** 32:  # compiled Triton types it i64; the interpreter u32
                import triton.language as tl

                return _scalar(value, tl.int64)
            return _KEPT
        self.passing.add(kind)  # no value of this type is ever typed here
        return _KEPT


_KEPT = object()  #: ``typed``'s answer for a value handed over as it is

_NUMPY_FLOATS = frozenset({"float64", "float32", "float16"})


def converter(kernel) -> Optional[Callable[[Sequence[Any]], Sequence[Any]]]:
    """``convert(args)`` for an interpreter kernel object, or None where nothing needs typing."""
    import inspect

    _, implicit_cvt, floats, bools, specialises = _interpreter()
    if implicit_cvt is None:
        return None
    parameters = list(inspect.signature(kernel.fn).parameters.values())
    names = [parameter.name for parameter in parameters]
    fixed = _not_specialised(kernel, names)
    slots = []
    for position, parameter in enumerate(parameters):
        constexpr, dtype, annotated = _annotation_kind(parameter.annotation)
        if constexpr or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        slots.append((position, dtype, specialises and not annotated and parameter.name not in fixed))
    if not slots:
        return None
    return ScalarTyping(slots, floats, bools).convert
