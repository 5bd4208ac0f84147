"""A launch's specialization: what, besides the values the body reads back into Python (a trace's
guards, ``replay``), steers a kernel's body. Launches of one specialization can share a trace.

Besides the arguments, the body reads module globals and closure cells: a constant (``BLOCK = 64``,
a ``tl.constexpr``), a jitted helper chosen by a global, a ``range`` bound. Each such value the
kernel and the jitted helpers it reaches name is part of the key, a float by its bits and a
function by its identity, so a change traces again where a replay would keep the old value.
Compiled Triton refuses a plain global and raises where a constexpr global changed; a trace runs
the body again instead, which gives what the loop gives."""

import enum
import functools
import os
import struct
import sys
import types

import numpy as np


__all__ = ["key", "constant_types"]

_INTERPRETER = "triton.runtime.interpreter"


@functools.lru_cache(maxsize=None)
def constant_types():
    """What a trace may hold as a constant, and a key by value: immutable, hashable, or a function
    (a jitted one passed as a constexpr, by identity)."""
    import triton.language as tl

    kernels = tuple(kind for kind in (getattr(sys.modules.get("triton.runtime.jit"), "KernelInterface", None),
                                      getattr(sys.modules.get(_INTERPRETER), "InterpretedFunction", None))
                    if isinstance(kind, type))
    return (int, float, complex, bool, str, bytes, type(None), tl.dtype, enum.Enum, np.generic, np.dtype,
            types.FunctionType, types.BuiltinFunctionType, type) + kernels


_ENVIRONMENT = (None, ())  #: a copy of the environment last read, and its TRITON_* variables


def _knobs():
    """The ``TRITON_*`` environment variables, sorted: read again only where the environment changed
    (a comparison of ``os.environ``'s own dict with a copy, where it has one, costs less than
    reading every variable through ``os.environ`` each launch)."""
    global _ENVIRONMENT
    data = getattr(os.environ, "_data", None)
    if data is None or data != _ENVIRONMENT[0]:
        _ENVIRONMENT = (None if data is None else dict(data),
                        tuple(sorted(item for item in os.environ.items() if item[0].startswith("TRITON_"))))
    return _ENVIRONMENT[1]


def _by_bits(value):
    """A float as its bits (``0.0`` is not ``-0.0``, and a NaN is itself, its payload too), so that
    launches share a trace only where the body would see the same constant; anything else as it is."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, (complex, np.floating, np.complexfloating)):
        return np.asarray(value).tobytes()
    return value


@functools.lru_cache(maxsize=1024)
def _reads(fn):
    """Where ``fn``'s body reads values from outside its arguments: (globals, name) for each global
    that ``fn`` or a jitted helper it reaches names, (a module's dict, name) for each attribute its
    code uses of a module it names (not Triton's, NumPy's or torch's), and ``fn``'s closure cells."""
    from ..compat import reached_globals

    reached, used = reached_globals(fn)
    found = {(id(scope), name): (scope, name) for scope, name, _ in reached}
    for _, _, value in reached:  # ``config.SCALE``: a module the body names, and the attributes its code uses
        if isinstance(value, types.ModuleType) and not value.__name__.startswith(("triton", "numpy", "torch")):
            attributes = vars(value)
            found.update(((id(attributes), name), (attributes, name)) for name in used if name in attributes)
    scopes = tuple(sorted(found.values(), key=lambda pair: pair[1]))
    return scopes, tuple(getattr(fn, "__closure__", None) or ())


def _read_values(fn):
    """The constants ``fn``'s body reads now from its globals and closure (``_reads``)."""
    import triton.language as tl

    scopes, cells = _reads(fn)
    read = [(name, scope.get(name)) for scope, name in scopes]
    for cell in cells:
        try:
            read.append((None, cell.cell_contents))
        except ValueError:  # not set yet
            continue
    kinds, values = constant_types(), []
    for name, value in read:
        value = value.value if isinstance(value, tl.constexpr) else value
        if isinstance(value, kinds):
            values.append((name, _by_bits(value)))
    return tuple(values)


def key(fn, builder, args):
    """The specialization of a launch: what, besides the guards, steers the kernel's body (the
    builder's class and options, Triton's environment variables, the arguments); None where an
    argument cannot be told apart by what it is (its launches are not replayed). The launch's
    ``num_warps`` is no part of it: an autotuner's Configs that differ in warps and stages alone
    share a trace, whose reductions read the warps as they run (the lanes' order)."""
    import triton.language as tl

    options = getattr(builder, "options", None)
    try:
        hash(options)
    except TypeError:
        options = repr(options)
    parts = [fn, type(builder), options, _knobs(), _read_values(fn)]  # not num_warps: a body that reads it guards
    # its trace (replay)
    for name, value in args.items():
        if isinstance(value, tl.core.tensor):
            handle = value.handle
            if type(value) is not tl.core.tensor or type(handle) is not sys.modules[_INTERPRETER].TensorHandle:
                return None
            parts.append((name, str(value.type), handle.data.dtype.str, handle.data.shape))
        elif isinstance(value, tl.constexpr) and isinstance(value.value, constant_types()):
            parts.append((name, tl.constexpr, type(value.value), _by_bits(value.value)))
        elif isinstance(value, constant_types()):
            parts.append((name, type(value), _by_bits(value)))
        else:
            return None
    try:
        hash(tuple(parts))
    except TypeError:
        return None
    return tuple(parts)
