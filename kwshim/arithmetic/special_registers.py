"""The GPU's special registers in an interpreted kernel: ``tl.extra.cuda``'s ``globaltimer``, ``smid``,
``num_warps`` and ``num_threads``, answered as on the H200.

Bare, each raises in the interpreter: its patch of ``triton.language`` for a launch does not reach
``tl.extra.cuda`` ("Did you forget to add @triton.jit?"); ``globaltimer`` and ``smid`` are inline
assembly reading ``%globaltimer`` and ``%smid`` ("inline_asm not supported in interpreter mode");
``num_warps`` and ``num_threads`` read the compiler's options, which the interpreter's builder lacks.

- ``read``: inline assembly that only moves one special register into its result (the PTX
  Triton's functions emit, or a kernel's own) is answered: ``%globaltimer`` with the CPU's clock in
  nanoseconds (it rises, so a kernel that spins on it ends), ``%smid`` with the program's linear
  index modulo the stated GPU's 132 SMs (in range; which SM runs a program is the hardware's
  choice). Any other assembly raises as before.
- ``install``: ``tl.extra.cuda``'s four functions run their release's own code with the
  interpreter's front end (so its ``inline_asm_elementwise`` reaches the builder), ``num_warps``
  being the launch's (``launch_state.launch_warps``, set by the launch paths; 4, Triton's NVIDIA default, where
  the launch gives none) and ``num_threads`` 32 times it.
"""

import importlib
import sys
import time

import numpy as np

from .. import launch_state
from ..compat import front_end, front_end_keyword

__all__ = ["read", "Results", "install", "originals", "warps_reads", "body_warps", "SMS"]

_INTERPRETER = "triton.runtime.interpreter"
_MODULES = ("triton.language.extra.cuda", "triton.language.extra.cuda.utils")

#: The stated GPU's SM count (the H200's), which ``%smid`` stays below.
SMS = 132
#: How often a kernel's body has read ``launch_warps`` (``body_warps``): a trace recorded across such a
#: read holds it as a constant, so it is good for its launch's warps alone (``replay``).
warps_reads = 0

_REGISTERS = {"mov.u64 $0, %globaltimer;": "globaltimer", "mov.u32 $0, %smid;": "smid"}


def read(builder, asm, values, types):
    """The results of ``asm`` (an ``inline_asm_elementwise`` of no operands reading one special
    register) as ``builder``'s program sees them, or None where it is other assembly."""
    register = _REGISTERS.get(" ".join(str(asm).split()))
    if register is None or values or len(types) != 1:
        return None
    interpreter = sys.modules[_INTERPRETER]
    element = types[0]
    if register == "globaltimer":
        value = time.time_ns()
    else:
        x, y, z = builder.grid_idx
        _, rows, columns = builder.grid_dim
        value = ((x * rows + y) * columns + z) % SMS
    data = np.array([value], dtype=interpreter._get_np_dtype(element))
    return Results([interpreter.TensorHandle(data, element)])


class Results:
    """What the builder's ``create_inline_asm`` returns: its results by index."""

    def __init__(self, handles):
        self._handles = handles

    def get_result(self, index):
        return self._handles[index]


#: {id(a replacement ``install`` made): (the replacement, the ``tl.extra.cuda`` function it stands
#: for)}: one replacement per function, made once, kept (so that no id is reused).
_MADE: dict = {}


def originals():
    """{id(a replacement ``install`` made): the ``tl.extra.cuda`` function it stands for}: what compiled
    Triton must see where a kernel was given one (``func: tl.constexpr``) or bound it by name."""
    return {key: original for key, (_, original) in _MADE.items()}


def _replacement(original, make):
    """The one replacement ``make(original)`` of ``original``."""
    for replacement, stood_for in _MADE.values():
        if stood_for is original:
            return replacement
    replacement = make(original)
    _MADE[id(replacement)] = (replacement, original)
    return replacement


def _through_front_end(stub):
    """``stub`` (a ``tl.extra.cuda`` function) run with the interpreter's front end."""
    keyword = front_end_keyword(stub)

    def function(*args, **ignored):
        return stub(*args, **{keyword: front_end(keyword)})

    function.__name__ = stub.__name__
    return function


def body_warps():
    """The launch's ``num_warps``, read by a kernel's body (counted in ``warps_reads``)."""
    global warps_reads
    warps_reads += 1
    return 4 if launch_state.launch_warps is None else launch_state.launch_warps


def _warps(original):
    def num_warps(*args, **ignored):
        import triton.language as tl

        return tl.constexpr(body_warps())

    return num_warps


def _threads(original):
    def num_threads(*args, **ignored):
        import triton.language as tl

        return tl.constexpr(32 * body_warps())

    return num_threads


def _modules():
    """Every module object holding ``tl.extra.cuda``'s functions: ``sys.modules``' and the ones reached
    as ``tl.extra.cuda`` (``triton.language.extra`` execs its backends' packages again, 3.2 on)."""
    found = {}
    for module_name in _MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a release without tl.extra.cuda
            continue
        found[id(module)] = module
    language = sys.modules.get("triton.language")
    cuda = getattr(getattr(language, "extra", None), "cuda", None)
    for module in (cuda, getattr(cuda, "utils", None)):
        if module is not None:
            found[id(module)] = module
    return list(found.values())


def install(patch):
    """``tl.extra.cuda``'s ``globaltimer``, ``smid``, ``num_warps`` and ``num_threads`` answering in the
    interpreter, through ``patch`` (the switch's)."""
    for module in _modules():
        for name in ("globaltimer", "smid"):
            stub = vars(module).get(name)
            if callable(stub) and front_end_keyword(stub) is not None:
                patch.setattr(module, name, _replacement(stub, _through_front_end))
        for name, make in (("num_warps", _warps), ("num_threads", _threads)):
            original = vars(module).get(name)
            if callable(original):
                patch.setattr(module, name, _replacement(original, make))
