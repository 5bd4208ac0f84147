"""How the installed interpreter launches, and what compiled ``run`` does around a launch: probed
on the installed release (each once), never read from a version string."""

import functools
import importlib
import inspect
import sys

from .classes import import_triton, kernel_classes

__all__ = ["compiler_accepts", "pristine_interpreter_methods", "interpreter_shares_launch_state",
           "interpreter_restores_patches", "run_requires_warmup", "injected_keywords", "binary_ufunc",
           "native_masked_load", "native_masked_store", "dot_scaled_reads_constexpr_formats",
           "block_pointer_masks_below_zero", "launched_function", "handle_maker", "front_end_keyword", "front_end",
           "interpreted_has_warmup", "module_wide_builder", "reserved_keywords_dropped",
           "boolean_operators", "chained_comparisons_refused", "compiler_builtins_min_max"]


@functools.lru_cache(maxsize=None)
def compiler_accepts() -> frozenset:
    """Which kinds of parameter the installed compiler's code generator takes into a kernel's
    signature, beyond positional-or-keyword ones: a subset of {"keyword_only", "variadic"}.

    Probed by running the code generator's own ``visit_arguments`` on a parsed signature
    (3.9 added both, PR #11418; earlier releases ignore them, and compiling then fails)."""
    import_triton()
    import ast

    try:
        from triton.compiler.code_generator import CodeGenerator
    except ImportError:
        return frozenset()
    definition = ast.parse("def k(a, *vals, kw): pass").body[0]
    assert isinstance(definition, ast.FunctionDef)
    node = definition.args

    class _Visitor:
        @staticmethod
        def visit(child):
            return getattr(child, "arg", None)

    try:
        names = CodeGenerator.visit_arguments(_Visitor(), node)
    except Exception:
        return frozenset()
    if isinstance(names, tuple):  # (arg_names, kwarg_names) before 3.9
        names = names[0]
    names = set(names or ())
    return frozenset(kind for kind, name in (("keyword_only", "kw"), ("variadic", "vals")) if name in names)


@functools.lru_cache(maxsize=None)
def pristine_interpreter_methods():
    """``(getitem, run)``: the interpreter kernel class's own launch methods, read once, before
    anything of kwshim's is installed. ``run`` is None where it is a per-instance closure (<= 3.5)."""
    cls = kernel_classes().interpreted
    run = cls.__dict__.get("run")
    return cls.__dict__["__getitem__"] if "__getitem__" in cls.__dict__ else cls.__getitem__, run


@functools.lru_cache(maxsize=None)
def interpreter_shares_launch_state() -> bool:
    """Whether interpreted launches share state, so that two threads launching at once break
    each other: a module-level builder holding the grid (every release: ``x >= grid_dim[0]`` when
    grids differ), or ``triton.language`` patched and restored per launch (3.6+). Probed on the
    installed interpreter module."""
    import_triton()
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return False
    shared_builder = any(hasattr(value, "set_grid_dim") and not isinstance(value, type)
                         for value in vars(interpreter).values())
    return shared_builder or interpreter_restores_patches()


@functools.lru_cache(maxsize=None)
def interpreter_restores_patches() -> bool:
    """Whether each interpreted launch patches ``triton.language`` and undoes it afterwards (3.6+,
    PR #8735), which makes overlapping launches in two threads break each other. Earlier
    releases patch and leave it patched (their shared builder needs serializing all the same)."""
    import_triton()
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return False
    return hasattr(interpreter, "_LangPatchScope")


@functools.lru_cache(maxsize=None)
def run_requires_warmup() -> bool:
    """Whether compiled ``JITFunction.run`` takes ``warmup`` as a required keyword (3.x; 2.2's
    own launch paths call ``run`` without it)."""
    try:
        param = inspect.signature(kernel_classes().jit.run).parameters.get("warmup")
    except (TypeError, ValueError, AttributeError):
        return False
    return param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is param.empty


class _ProbeStop(Exception):
    pass


@functools.lru_cache(maxsize=None)
def injected_keywords():
    """The keywords compiled ``JITFunction.run`` adds to every launch itself (``debug``; from 3.6
    ``instrumentation_mode``; on 3.9 ``fpsan_homomorphic_casts``), as a dict name ->
    ``(value, caller_wins)``: the value a launch that gives none receives, and whether a value the
    caller gives by keyword is kept. Probed by running the compiled ``run`` on a stand-in kernel
    up to its pre-run hooks (a detached copy of it, whose driver is a stand-in) and reading the
    keywords it built."""
    jit = kernel_classes().jit
    run = getattr(jit, "run", None)
    code = getattr(run, "__code__", None)
    if code is None or "kwargs" not in code.co_varnames:
        return {}

    import types

    class _NoGPU:  # stands in for the driver in a detached copy of run: Triton itself is untouched
        class active:
            @staticmethod
            def get_current_device():
                return 0

            @staticmethod
            def get_current_stream(device=None):
                return 0

    namespace = dict(run.__globals__, driver=_NoGPU)
    detached = types.FunctionType(code, namespace, run.__name__, run.__defaults__, run.__closure__)
    detached.__kwdefaults__ = run.__kwdefaults__

    def built_keywords(**given):
        class _Stand:
            debug = None
            pre_run_hooks = [_stop]

            def __getattr__(self, name):
                raise _ProbeStop

        try:
            detached(_Stand(), grid=(1,), warmup=False, **given)
        except _ProbeStop as exc:
            found = getattr(exc, "kwargs", None)
            if found is not None:
                return found
            traceback = exc.__traceback__
        except BaseException as exc:  # no GPU driver: read the frame the failure left behind
            traceback = exc.__traceback__
        else:
            return {}
        while traceback is not None:
            if traceback.tb_frame.f_code is code:
                return dict(traceback.tb_frame.f_locals.get("kwargs") or {})
            traceback = traceback.tb_next
        return {}

    def _stop(*args, **kwargs):
        error = _ProbeStop()
        error.kwargs = dict(kwargs)
        raise error

    plain = built_keywords()
    marker = object()
    found = {}
    for name, value in plain.items():
        kept = built_keywords(**{name: marker}).get(name) is marker
        found[name] = (value, kept)
    return found


def binary_ufunc(method):
    """The NumPy ufunc ``method`` (an interpreter builder method) hands to ``self.binary_op``, where
    that is all it does (``lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.add)`` on 3.0-3.9),
    else None. Probed by calling it on a recorder, not by reading its code."""
    import numpy as np

    class Recorder:
        def binary_op(self, lhs, rhs, op):
            return ("binary_op", lhs, rhs, op)

    lhs, rhs = object(), object()
    try:
        found = method(Recorder(), lhs, rhs)
    except Exception:
        return None
    if type(found) is tuple and found[:3] == ("binary_op", lhs, rhs) and isinstance(found[3], np.ufunc):
        return found[3]
    return None


#: The names the interpreter's masked load and store use where each is a straight call of the
#: native load or store (3.0-3.9).
_NATIVE_LOAD = frozenset({"get_element_ty", "_get_np_dtype", "TensorHandle", "np", "zeros_like", "data",
                          "_interpreter", "load"})
_NATIVE_STORE = frozenset({"_interpreter", "store", "data"})


@functools.lru_cache(maxsize=None)
def native_masked_load(builder_class) -> bool:
    """Whether ``builder_class.create_masked_load`` is one call of the interpreter's native load
    (so kwshim's own may make that call in its place): the names its code uses are exactly those."""
    return _uses_exactly(builder_class.create_masked_load, _NATIVE_LOAD)


@functools.lru_cache(maxsize=None)
def native_masked_store(builder_class) -> bool:
    """As ``native_masked_load``, for ``create_masked_store`` and the native store."""
    return _uses_exactly(builder_class.create_masked_store, _NATIVE_STORE)


def _uses_exactly(method, names) -> bool:
    code = getattr(method, "__code__", None)
    return code is not None and frozenset(code.co_names) == names


@functools.lru_cache(maxsize=None)
def dot_scaled_reads_constexpr_formats() -> bool:
    """Whether the front end's ``dot_scaled`` reads its formats' ``.value`` (3.3-3.7), which
    compiled Triton's code generator hands it as constexprs and the interpreter as strings: the
    attribute its code reads, probed on the semantic's function."""
    import_triton()
    try:
        from triton.language import semantic
    except ImportError:
        return False
    owner = getattr(semantic, "TritonSemantic", semantic)
    function = getattr(owner, "dot_scaled", None)
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    import dis

    read = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname != "CACHE"]
    return any(first == ("LOAD_FAST", "lhs_format") and second[0].startswith("LOAD_ATTR") and second[1] == "value"
               for first, second in zip(read, read[1:]))


@functools.lru_cache(maxsize=None)
def block_pointer_masks_below_zero() -> bool:
    """Whether the installed interpreter's block pointer masks an element before the start of a
    checked axis (``0 <= offset``) as well as one past its end. Probed by materializing a block of
    two from offset -1 (the first is before the start; 3.3 added the check)."""
    import numpy as np

    interpreter = importlib.import_module("triton.runtime.interpreter")
    handle_class = getattr(interpreter, "BlockPointerHandle", None)
    if handle_class is None:
        return True
    tl, TensorHandle = interpreter.tl, interpreter.TensorHandle

    def scalar(value):
        return TensorHandle(np.array([value], dtype=np.int64), tl.int64)

    base = TensorHandle(np.array([4096], dtype=np.uint64), tl.pointer_type(tl.float32))
    _, mask = handle_class(base, [scalar(4)], [scalar(1)], [scalar(-1)], [2], [0]).materialize_pointers((0,))
    return not bool(np.asarray(mask.data if isinstance(mask, TensorHandle) else mask).reshape(-1)[0])


def launched_function(fn):
    """The function the interpreter's grid runs for a kernel's ``fn``: on 3.6+ its rewrite of the
    source (``InterpretedFunction.rewritten_fn``, made at the first launch and kept), before that
    ``fn`` itself."""
    interpreted = getattr(sys.modules.get("triton.runtime.interpreter"), "InterpretedFunction", None)
    rewritten = getattr(interpreted, "rewritten_fn", None)
    return rewritten.get(fn, fn) if isinstance(rewritten, dict) else fn


@functools.lru_cache(maxsize=None)
def handle_maker(handle_class):
    """``make(data, dtype)``: a ``handle_class`` (the interpreter's ``TensorHandle``) holding ``data``,
    ``dtype`` and an empty ``attr``, made without its constructor, whose dataclass ``__init__``,
    ``__post_init__`` and size check (3.4 on) cost about a microsecond. Where a handle the
    constructor makes holds anything else, or the class keeps its fields in slots: the constructor."""
    import numpy as np
    import triton.language as tl

    try:
        fields = vars(handle_class(np.zeros(1, np.float32), tl.float32))
    except Exception:
        return handle_class
    if set(fields) != {"data", "dtype", "attr"} or fields["attr"] != {} or hasattr(handle_class, "__slots__"):
        return handle_class
    new = object.__new__

    def make(data, dtype):
        handle = new(handle_class)
        handle.data, handle.dtype, handle.attr = data, dtype, {}
        return handle

    return make


def front_end_keyword(builtin):
    """The keyword a ``triton.language`` builtin takes its front end by (``_semantic`` from 3.4,
    ``_builder`` before), or None."""
    try:
        parameters = inspect.signature(builtin).parameters
    except (TypeError, ValueError):
        return None
    return next((k for k in ("_semantic", "_builder") if k in parameters), None)


def front_end(keyword):
    """The interpreter's front end for ``keyword`` (``front_end_keyword``): its semantic or builder."""
    interpreter = sys.modules["triton.runtime.interpreter"]
    return interpreter.interpreter_semantic if keyword == "_semantic" else interpreter.interpreter_builder


def interpreted_has_warmup() -> bool:
    """Whether the interpreter's kernel class has compiled Triton's ``warmup`` (3.6 on; not up to 3.5)."""
    return hasattr(kernel_classes().interpreted, "warmup")


@functools.lru_cache(maxsize=None)
def module_wide_builder() -> bool:
    """Whether the installed interpreter runs every program through one module-wide builder object
    and a ``GridExecutor`` (3.0 on; 2.x has neither): what a batch of programs needs."""
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return False
    return hasattr(interpreter, "interpreter_builder") and hasattr(interpreter, "GridExecutor")


def reserved_keywords_dropped():
    """The launch keywords the interpreter strips before binding (its ``RESERVED_KWS``, up to 3.2),
    or None where it drops every keyword that names no parameter instead (3.3 on)."""
    return getattr(sys.modules.get("triton.runtime.interpreter"), "RESERVED_KWS", None)


@functools.lru_cache(maxsize=None)
def boolean_operators() -> str:
    """How the installed compiler's code generator reads ``and``/``or`` between Triton values:
    ``"short_circuit"`` (3.4 on: any number of values, a constexpr that decides is the result, the
    tensors combined) or ``"pairwise"`` (up to 3.3: two values, both visited, a chain of three
    refused). Read from its ``visit_BoolOp`` (what it refuses), once."""
    import_triton()
    try:
        from triton.compiler.code_generator import CodeGenerator

        source = inspect.getsource(CodeGenerator.visit_BoolOp)
    except (ImportError, AttributeError, OSError, TypeError):
        return "short_circuit"
    return "pairwise" if "chained boolean operators" in source else "short_circuit"


@functools.lru_cache(maxsize=None)
def chained_comparisons_refused() -> bool:
    """Whether the installed compiler refuses ``a < b < c`` ("simultaneous multiple comparison is not
    supported": up to 3.8; 3.9 compiles a chain). Read from its ``visit_Compare``, once."""
    import_triton()
    try:
        from triton.compiler.code_generator import CodeGenerator

        return "simultaneous multiple comparison" in inspect.getsource(CodeGenerator.visit_Compare)
    except (ImportError, AttributeError, OSError, TypeError):
        return False


@functools.lru_cache(maxsize=None)
def compiler_builtins_min_max() -> bool:
    """Whether the installed compiler's code generator calls its own ``builtin_min``/``builtin_max``
    for Python's ``min``/``max`` in a kernel (3.6 on), rather than Python's."""
    import_triton()
    try:
        from triton.compiler.code_generator import CodeGenerator
    except ImportError:
        return False
    namespace = getattr(CodeGenerator, "builtin_namespace", {})
    return getattr(namespace.get("min"), "__name__", "") == "builtin_min"
