"""A batched launch of plain arguments, bound without the interpreter's per-launch copies.

Before its programs run, the interpreter's ``GridExecutor.__call__`` reads the kernel's signature
(``inspect.getfullargspec`` and ``getcallargs``, twice per launch), copies every tensor argument to
the host and, after, copies it back, and converts each argument (``_implicit_cvt``). For a tensor
already in CPU memory the copies are the same memory, so they change nothing, yet for a replayed
launch of a few programs they are a quarter of its time.

``bound`` gives a launch's converted arguments, as ``GridExecutor`` gives them to the grid, where
every argument is plain: a CPU ``torch.Tensor`` or ``nn.Parameter`` (not another subclass, a
wrapper, a tuple or a tensor descriptor), a Python scalar, ``None``, a string, a ``tl.constexpr``
or a ``tl.tensor`` (a scalar kwshim's launch converted); the launch has no pre-run hooks; its
keywords are parameters, or launch keywords that the release drops. The signature is read once per
function, and the types ``_implicit_cvt`` gives once per tensor dtype and int value. Anything else
returns None, and the interpreter's own path runs, as before. Under ``grid="batched"`` the grid
seam (``programs``) then runs the programs on these arguments itself.
"""

import inspect
import sys
import weakref
from typing import Dict, Optional

import numpy as np

from .. import compat

__all__ = ["bound", "remembering_init"]

_INTERPRETER = "triton.runtime.interpreter"
_SCALARS = (int, float, bool, str, type(None))

_SIGNATURES: Dict[object, tuple] = {}


def _signature(fn):
    """(parameter names, {name: default}) of ``fn``, or None where it takes ``*args``, ``**kwargs`` or
    keyword-only parameters (read once; again where its defaults were replaced)."""
    known = _SIGNATURES.get(fn)
    if known is not None and known[0] is getattr(fn, "__defaults__", None):
        return known[1]
    spec = inspect.getfullargspec(fn)
    signature = None
    if spec.varargs is None and spec.varkw is None and not spec.kwonlyargs:
        defaults = dict(zip(spec.args[len(spec.args) - len(spec.defaults or ()):], spec.defaults or ()))
        signature = (tuple(spec.args), defaults)
    _SIGNATURES[fn] = (getattr(fn, "__defaults__", None), signature)
    return signature


def _plain(value, tensor_classes, language_classes) -> bool:
    kind = type(value)
    if kind in tensor_classes:
        return value.is_cpu
    return kind in _SCALARS or kind in language_classes


def bound(executor, args_dev, kwargs) -> Optional[dict]:
    """``{parameter: converted argument}`` in ``inspect.getcallargs``' order, as the interpreter's grid is
    handed them, or None where the launch is not plain (see the module)."""
    if getattr(executor, "pre_run_hooks", None) or "torch" not in sys.modules:
        return None
    import torch
    import triton.language as tl

    signature = _signature(executor.fn)
    if signature is None or len(args_dev) > len(signature[0]):
        return None
    names, defaults = signature
    dropped = compat.reserved_keywords_dropped()  # up to 3.2; later releases drop any non-parameter
    args = dict(zip(names, args_dev))
    for name, value in kwargs.items():
        if name in names:
            if name in args or dropped is not None and name in dropped:
                return None  # given twice, or a parameter the release strips: Triton's path decides
            args[name] = value
        elif name == "warmup" or dropped is not None and name not in dropped:
            return None  # a warm-up (which runs nothing), or a keyword the release refuses
    if len(args) < len(names):
        for name in names[len(args_dev):]:
            if name not in args:
                if name not in defaults:
                    return None
                args[name] = defaults[name]
    tensor_classes, language_classes = (torch.Tensor, torch.nn.Parameter), (tl.constexpr, tl.core.tensor)
    for value in args.values():
        if not _plain(value, tensor_classes, language_classes):
            return None
    constexprs, interpreter = executor.constexprs, sys.modules[_INTERPRETER]
    return {name: value if name in constexprs else _converted(value, tensor_classes, interpreter)
            for name, value in args.items()}


#: (torch dtype) or (int or bool, value) -> (NumPy type, handle type, the tensor's other fields, tensor
#: class) of what ``_implicit_cvt`` made of it: a one-element handle in a ``tl.tensor``. Bounded
#: (``_MOST_MADE``).
_MADE: Dict[object, tuple] = {}
_MOST_MADE = 4096


def _converted(value, tensor_classes, interpreter):
    """``interpreter._implicit_cvt(value)``, made from what it made of the same dtype (a tensor) or
    value (an int) before: its types are read once, not per launch, and the ``tl.tensor`` is given
    the fields the first one's constructor made (3.9's builds a ``tl.tuple`` of its shape, a third
    of a small launch's binding), a new handle among them."""
    kind = type(value)
    if kind in tensor_classes:
        key, element = value.dtype, value.data_ptr()
    elif kind is int or kind is bool:
        key, element = (kind, value), value
    else:
        return interpreter._implicit_cvt(value)
    made = _MADE.get(key)
    if made is not None:
        numpy_type, handle_type, fields, tensor_class = made
        tensor = object.__new__(tensor_class)
        tensor.__dict__.update(fields)
        tensor.handle = compat.handle_maker(interpreter.TensorHandle)(np.array([element], numpy_type), handle_type)
        return tensor
    result = interpreter._implicit_cvt(value)
    handle = getattr(result, "handle", None)
    if type(handle) is interpreter.TensorHandle and handle.data.shape == (1,) and handle.data[0] == element \
            and not hasattr(type(result), "__slots__"):
        if len(_MADE) >= _MOST_MADE:
            _MADE.clear()
        fields = {name: field for name, field in vars(result).items() if name != "handle"}
        _MADE[key] = (handle.data.dtype, handle.dtype, fields, type(result))
    return result


def remembering_init(original):
    """``GridExecutor.__init__`` (``original``) reading each kernel's annotations once: it reads them
    on every launch (``inspect.get_annotations`` and ``_normalize_ty`` of each: 30 µs, a tenth of a
    small launch) to list the constexprs, which depend on the kernel and its parameter names alone.
    The first launch of a kernel runs ``original`` and keeps what it derived; later ones set the
    parameters and that. Where ``original`` does not keep a parameter under its own name, it always runs."""
    parameters = list(inspect.signature(original).parameters)[1:]
    derived_by_kernel: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def __init__(self, *args, **kwargs):
        given = dict(zip(parameters, args), **kwargs)
        fn, names = given.get("fn"), given.get("arg_names")
        try:
            known = derived_by_kernel.get(fn)
            key = tuple(names)
        except TypeError:  # not a function, or names that are not a sequence
            return original(self, *args, **kwargs)
        derived = None if known is None else known.get(key)
        if derived is None:
            original(self, *args, **kwargs)
            state = vars(self)
            if all(name in state and state[name] is value for name, value in given.items()):
                derived_by_kernel.setdefault(fn, {})[key] = {name: value for name, value in state.items()
                                                             if name not in given}
            return None
        vars(self).update({name: list(value) if type(value) is list else value for name, value in derived.items()})
        vars(self).update(given)
        return None

    __init__.__wrapped__ = original
    return __init__
