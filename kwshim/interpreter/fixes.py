"""Interpreter fixes that are not arithmetic: where the installed interpreter cannot run what
compiled Triton runs, the gap is filled while the switch is on (probed on the installed release).

- ``~`` on booleans: builders that lack ``get_int1_ty`` or refuse int1 in ``get_all_ones_value``;
- ``tl.sort`` with NumPy: 3.0's interpreter cannot run the bitonic network on 1-D blocks;
- ``tl.map_elementwise`` (3.5 on): the interpreter has no regions (``'InterpreterBuilder' object has
  no attribute 'new_block'``); the scalar function runs once per element (``pack`` at a time);
- a ``for`` loop's variable a tensor, as compiled Triton's is: the interpreter runs the loop in
  Python, where ``for i in range(n): i.to(tl.int64)`` fails (``'int' object has no attribute
  'to'``; flash-linear-attention's delta-rule kernels do this). On 3.2 and later, whose interpreter
  rewrites a kernel's source (``ASTTransformer``); 3.0 and 3.1 keep the gap;
- a scalar's ``__index__`` (``range(0, n_cols, BLOCK)`` on an argument): up to 3.6 the interpreter takes
  ``int()`` of a one-element array, which NumPy 1.25 deprecates and NumPy 2.5 refuses ("only
  0-dimensional arrays can be converted to Python scalars"); 3.7's own form squeezes it first;
- a kernel's closure (a jitted helper defined beside it, in a test function): from 3.2 the
  interpreter compiles the kernel's source again with its globals only (``name 'compare' is not
  defined``), where compiled Triton resolves the names it closes over;

- a constexpr's arithmetic with a tensor (``scale * x`` where ``scale`` is an argument equal to 1,
  which compiled Triton, and kwshim's binding, specialise to a constexpr): compiled Triton hands the
  operation to the tensor (``x.__rmul__(scale)``); the interpreter runs ``constexpr.__mul__``, which
  wraps the tensor in a constexpr, and ``tl.sum`` of it fails (``'constexpr' object has no attribute
  'dtype'``; flash-linear-attention's ttt backward);

A new interpreter fix goes here: a probe of the gap, a replacement, one line in ``install``.
"""

import ast
import functools
import sys
import types

import numpy as np

from .. import launch_state
from ..arithmetic import scaled_dots
from . import pointer_arguments, python_operators, source_rewrite

__all__ = ["install", "rewritten"]


def _all_ones(type):
    """The interpreter's all-ones scalar of an integer or boolean type (what ``~x`` XORs with)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    scalar = getattr(type, "scalar", type)
    if scalar == tl.int1:
        return TensorHandle(np.full(1, True, dtype=np.bool_), scalar)
    numpy_type = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
                  "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}.get(getattr(scalar, "name", ""))
    if numpy_type is None:
        raise TypeError(f"unsupported type {type}")
    return TensorHandle(np.full(1, np.iinfo(numpy_type).max if np.issubdtype(numpy_type, np.unsignedinteger)
                                else -1, dtype=numpy_type), scalar)


def _builder_gaps(builder_class):
    """(name, replacement) for what the installed interpreter builder lacks for ``~`` on booleans
    (3.0-3.3: no ``get_int1_ty``, and ``get_all_ones_value`` refuses int1; 2.3: no
    ``get_all_ones_value`` at all), probed on the class."""
    import triton.language as tl

    gaps = []
    if not hasattr(builder_class, "get_int1_ty"):
        gaps.append(("get_int1_ty", lambda self: tl.int1))
    original = getattr(builder_class, "get_all_ones_value", None)
    if original is None:
        gaps.append(("get_all_ones_value", lambda self, type: _all_ones(type)))
        return gaps
    try:
        original(None, tl.int1)
    except TypeError:
        def get_all_ones_value(self, type):
            if getattr(type, "scalar", type) == tl.int1:
                return _all_ones(type)
            return original(self, type)

        gaps.append(("get_all_ones_value", get_all_ones_value))
    except Exception:  # noqa: S110  (another failure: not the gap this probe looks for)
        pass
    return gaps


def _builder_class(interpreter):
    """The installed interpreter's builder class: ``InterpreterBuilder`` (3.x) or ``Builder`` (2.x)."""
    for name in ("InterpreterBuilder", "Builder"):
        found = getattr(interpreter, name, None)
        if isinstance(found, type) and hasattr(found, "set_grid_dim"):
            return found
    return None


def _cpu_sort(original):
    """``tl.sort`` on the interpreter's tensors with NumPy (a stable sort of the minor dimension,
    as the bitonic network orders values); 3.0's interpreter cannot run the network on 1-D
    blocks (``operands could not be broadcast together``), nor bf16, which it keeps as its bits
    (``Cannot bitcast``): those are sorted by the fp32 value they stand for."""

    def sort(x, dim=None, descending=0, **kwargs):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        dim = dim.value if isinstance(dim, tl.constexpr) else dim
        descending = descending.value if isinstance(descending, tl.constexpr) else descending
        data = getattr(getattr(x, "handle", None), "data", None)
        if data is None or kwargs:
            return original(x, dim, descending, **kwargs)
        # counted from the end: a batch of programs puts its program axis first (``program_axis``)
        axis = -1 if dim is None else (dim - len(x.shape) if dim >= 0 else dim)
        if x.dtype == tl.bfloat16 and data.dtype.kind in "iu":
            value = (data.astype(np.uint32) << 16).view(np.float32)  # bf16 is the top half of an fp32
            result = np.take_along_axis(data, np.argsort(value, axis=axis, kind="stable"), axis=axis)
        else:
            result = np.sort(data, axis=axis, kind="stable")
        if descending:
            result = np.flip(result, axis=axis)
        return tl.tensor(TensorHandle(np.ascontiguousarray(result), x.handle.dtype), x.type)

    sort.__name__ = "sort"
    sort.__wrapped__ = original
    return sort


def _check_pack(pack, count):
    """Refuse a ``pack`` that does not divide each thread's elements, as compiled Triton's lowering
    does (measured on the H200: ``pack=2`` over 128 elements on 4 warps, one a thread, is refused)."""
    from ..errors import UncompilableError
    from ..arithmetic.special_registers import body_warps

    threads = 32 * body_warps()
    if pack > 1 and count % (threads * pack):
        raise UncompilableError(
            f"kwshim: compiled Triton cannot lower tl.map_elementwise with pack={pack} over {count} elements on "
            f"{threads // 32} warps (sm_90, as the H200's Triton 3.6 refuses it): pack size must be a divisor of "
            f"the number of elements per thread, {count / threads:g} here")


def _map_elementwise(original):
    """``tl.map_elementwise`` as compiled Triton maps it: the arguments broadcast, then the scalar
    function called on each element (``pack`` consecutive elements of every argument at a time, its
    results grouped by output: a tuple of them wherever the function returns a tuple, even of one),
    its Python control flow taken per element. A batch of programs runs it as the loop
    (``Fallback``): the per-element calls are the program's own."""

    def map_elementwise(scalar_fn, *args, pack=1, **kwargs):
        import triton.language as tl
        from triton.runtime import interpreter

        pack = pack.value if isinstance(pack, tl.constexpr) else pack
        handles = [getattr(a, "handle", None) for a in args]
        if kwargs or not args or not all(isinstance(handle, interpreter.TensorHandle) for handle in handles):
            return original(scalar_fn, *args, pack=pack, **kwargs)
        if launch_state.batch is not None:
            raise launch_state.Fallback("tl.map_elementwise calls its scalar function per element, in each program")
        shape = np.broadcast_shapes(*(handle.data.shape for handle in handles))
        columns = [np.broadcast_to(handle.data, shape).reshape(-1) for handle in handles]
        _check_pack(pack, columns[0].size)
        results = None
        for start in range(0, columns[0].size, pack):
            scalars = [tl.tensor(interpreter.TensorHandle(column[start + j:start + j + 1].copy(), handle.dtype),
                                 a.dtype) for a, handle, column in zip(args, handles, columns) for j in range(pack)]
            out = scalar_fn(*scalars)
            single = not isinstance(out, tuple)
            out = [interpreter._implicit_cvt(value) if not isinstance(value, tl.tensor) else value
                   for value in (out if isinstance(out, tuple) else (out,))]
            if results is None:
                results = [(value, []) for value in out[::pack]]
            for k, (first, values) in enumerate(results):
                for j in range(pack):
                    values.append(out[k * pack + j].handle.data.reshape(-1)[0])
        mapped = tuple(tl.tensor(interpreter.TensorHandle(np.array(values, dtype=first.handle.data.dtype)
                                                          .reshape(shape), first.handle.dtype),
                                 tl.block_type(first.dtype, list(shape)) if shape else first.dtype)
                       for first, values in results)
        return mapped[0] if single else mapped

    map_elementwise.__name__ = "map_elementwise"
    map_elementwise.__wrapped__ = original
    return map_elementwise


#: The loops whose variable compiled Triton makes a tensor: ``range``, ``tl.range``
#: (``tl.static_range`` is unrolled, its variable a constexpr; other iterables are unrolled too).
_TENSOR_LOOPS = ("range",)


@functools.lru_cache(maxsize=None)
def _loop_variables(transformer_class):
    """``transformer_class`` (the release's ``ASTTransformer``) also assigning a ``range`` loop's
    variable to itself at the top of the body, which the release's own ``visit_Assign`` makes a tensor,
    and reading ``and``, ``or``, ``not`` and chained comparisons as compiled Triton (``python_operators``)."""

    class LoopVariables(python_operators.Operators, transformer_class):
        def visit_For(self, node):
            node = self.generic_visit(node)
            call = node.iter
            name = getattr(call, "func", None)
            name = getattr(name, "attr", None) or getattr(name, "id", None)
            if isinstance(node.target, ast.Name) and isinstance(call, ast.Call) and name in _TENSOR_LOOPS:
                variable = node.target.id
                assign = ast.Assign(targets=[ast.Name(id=variable, ctx=ast.Store())],
                                    value=ast.Name(id=variable, ctx=ast.Load()))
                node.body.insert(0, ast.copy_location(self.visit_Assign(assign), node.body[0]))
            return node

    LoopVariables.__name__ = LoopVariables.__qualname__ = "LoopVariables"
    return LoopVariables


#: The kernels rewritten with tensor loop variables: ``InterpretedFunction``'s cache while the switch
#: is on (Triton's own, of the unmended rewrites, is put back when it goes off), kept for the next
#: activation as Triton keeps its own for the process (a rewrite reads the kernel's globals live).
_REWRITTEN: dict = {}


def rewritten(fn):
    """The rewrite of the kernel function ``fn`` made while the switch was on, or None."""
    return _REWRITTEN.get(fn)


def _install_own_rewrites(patch, interpreter):
    """Where the release rewrites no kernel (3.0, 3.1): a kernel's and a jitted helper's source
    rewritten by kwshim where ``python_operators`` needs it (``source_rewrite.rewritten``)."""
    executor, function = getattr(interpreter, "GridExecutor", None), getattr(interpreter, "InterpretedFunction", None)
    if executor is None or function is None or callable(getattr(interpreter, "FunctionRewriter", None)):
        return
    init, call = vars(executor)["__init__"], vars(function)["__call__"]

    def __init__(self, fn, *args, **kwargs):
        init(self, fn, *args, **kwargs)
        self.fn = source_rewrite.rewritten(fn)
        if self.fn is not fn:
            _REWRITTEN[fn] = self.fn

    def __call__(self, *args, **kwargs):  # a jitted helper's call, as the release's, over its rewrite
        fn = self.fn
        self.fn = source_rewrite.rewritten(fn)
        try:
            return call(self, *args, **kwargs)
        finally:
            self.fn = fn

    patch.setattr(executor, "__init__", __init__)
    patch.setattr(function, "__call__", __call__)


def _install_helper_dtypes(patch, interpreter):
    """A ``tl.dtype`` handed to a jitted helper arrives as compiled Triton hands it: a constexpr
    (``dtype.value`` is the dtype), whose other attributes still read through (``dtype.is_fp16()``,
    which compiled Triton's code generator unwraps). Bare, the interpreter passed the dtype itself:
    FlagGems' ``get_dtype_min(inp.type.element_ty)`` failed on ``dtype.value``."""
    import triton.language as tl

    function = getattr(interpreter, "InterpretedFunction", None)
    call = vars(function).get("__call__") if isinstance(function, type) else None
    if call is None:
        return
    argument = _dtype_argument(tl.constexpr)

    def __call__(self, *args, **kwargs):
        if any(isinstance(value, tl.dtype) for value in (*args, *kwargs.values())):
            args = tuple(argument(value) if isinstance(value, tl.dtype) else value for value in args)
            kwargs = {name: argument(value) if isinstance(value, tl.dtype) else value for name, value in kwargs.items()}
        return call(self, *args, **kwargs)

    patch.setattr(function, "__call__", __call__)


@functools.lru_cache(maxsize=None)
def _dtype_argument(constexpr):
    class DtypeArgument(constexpr):
        """A ``tl.dtype`` as a jitted helper's argument: a constexpr reading through to its dtype."""

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(self.value, name)

    return DtypeArgument


def _install_loop_variables(patch, interpreter):
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    transformer = getattr(rewriter, "ast_transformer", None)
    function = getattr(interpreter, "InterpretedFunction", None)
    if transformer is None or function is None or not isinstance(vars(function).get("rewritten_fn"), dict) \
            or not callable(vars(rewriter).get("_compile_and_exec")):  # where the rewrite is compiled: its global
        return
    patch.setattr(rewriter, "ast_transformer", _loop_variables(type(transformer))())
    patch.setattr(rewriter, "_compile_and_exec", _closure_exec(vars(rewriter)["_compile_and_exec"]))
    patch.setattr(function, "rewritten_fn", _REWRITTEN)


def _closure_exec(original):
    """The release's ``FunctionRewriter._compile_and_exec``, the rewritten kernel keeping the cells
    of the names the kernel closes over (``source_rewrite.in_closure``)."""

    def _compile_and_exec(self, transformed_ast):
        return source_rewrite.in_closure(self.fn, transformed_ast, lambda module: original(self, module))

    return _compile_and_exec


class _StrictArray(np.ndarray):
    """An array as NumPy 2.5 converts it: ``int()`` of one with dimensions is a TypeError (a probe
    that raises no warning, which would leave a registry in the interpreter's module)."""

    def __int__(self):
        if self.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return int(self.item())


def _scalar_index(self):
    return int(self.handle.data.squeeze())  # 3.7's own


def _installed_index(patch_tensor):
    """The ``__index__`` that the interpreter's ``_patch_lang_tensor`` gives a tensor class, or None:
    through a scope's ``set_attr`` (3.6+) or set directly (up to 3.5)."""
    installed = {}
    recorder = types.SimpleNamespace(set_attr=lambda owner, name, value: installed.setdefault(name, value))
    probe = type("Probe", (), {})
    try:
        patch_tensor(probe, recorder)  # 3.6+: (tensor, scope); 2.3: (tensor, builder)
    except TypeError:
        try:
            patch_tensor(probe)  # 2.2, 3.0-3.5: (tensor)
        except Exception:  # noqa: S110  (another signature: not what this probe looks for)
            return None
    except Exception:
        return None
    return installed.get("__index__") or vars(probe).get("__index__")


def _mended_tensor_patch(interpreter):
    """The interpreter's ``_patch_lang_tensor`` also giving ``tl.tensor`` an ``__index__`` that takes a
    one-element array, where the installed one does not (probed on a scalar handle), or None."""
    patch_tensor = vars(interpreter).get("_patch_lang_tensor")
    index = None if patch_tensor is None else _installed_index(patch_tensor)
    if index is None:
        return None
    scalar = types.SimpleNamespace(handle=types.SimpleNamespace(data=np.array([3], np.int32).view(_StrictArray)))
    try:
        if index(scalar) == 3:
            return None
    except TypeError:
        pass

    def patch_lang_tensor(tensor, *args, **kwargs):
        result = patch_tensor(tensor, *args, **kwargs)
        scope = args[0] if args else kwargs.get("scope")
        if hasattr(scope, "set_attr"):
            scope.set_attr(tensor, "__index__", _scalar_index)  # the scope restores the interpreter's afterwards
        else:
            tensor.__index__ = _scalar_index  # up to 3.5, set for good: the switch's patch puts it back
        return result

    patch_lang_tensor.__wrapped__ = patch_tensor
    return patch_lang_tensor


def _constexpr_operators(constexpr, tensor):
    """(name, replacement) for each binary operator of ``constexpr`` that wraps a tensor operand in a
    constexpr where compiled Triton's code generator calls the tensor's reflected method (probed with
    a tensor whose reflected method answers)."""

    class Probe(tensor):
        def __init__(self):
            pass

    found = []
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift",
                 "gt", "ge", "lt", "le"):
        forward, reflected = f"__{name}__", f"__r{name}__"
        original = vars(constexpr).get(forward)
        if original is None or reflected not in vars(tensor):
            continue
        setattr(Probe, reflected, lambda self, other: self)  # the code generator's call
        mirror = {"gt": "__lt__", "ge": "__le__", "lt": "__gt__", "le": "__ge__"}.get(name)
        if mirror is not None:
            setattr(Probe, mirror, lambda self, other: self)  # Python's, in ``1 > x``
        try:
            gap = isinstance(original(constexpr(1), Probe()), constexpr)
        except Exception:  # noqa: BLE001 (an operator that refuses a tensor: the front end's answer stands)
            gap = False
        if gap:
            found.append((forward, _deferring(original, reflected, tensor, constexpr)))
    return found


def _deferring(original, reflected, tensor, constexpr):
    def operator(self, other):
        if isinstance(other, tensor) and not isinstance(other, constexpr):
            return getattr(other, reflected)(self)
        return original(self, other)

    operator.__name__ = original.__name__
    return operator


def install(patch):
    """Fill the installed interpreter's gaps through ``patch``: ``tl.sort``, ``tl.map_elementwise``, the builder's,
    ``tl.dot_scaled`` (``scaled_dots``), loop variables, a constexpr's operators, a scalar's index."""
    import triton.language as tl
    from triton.runtime import interpreter

    original_sort = vars(tl).get("sort")
    if original_sort is not None:
        cpu_sort = _cpu_sort(original_sort)
        patch.setattr(tl, "sort", cpu_sort)
        standard = sys.modules.get("triton.language.standard")
        if standard is not None and vars(standard).get("sort") is original_sort:
            patch.setattr(standard, "sort", cpu_sort)
    original_map = vars(tl).get("map_elementwise")
    if original_map is not None:
        mapping = _map_elementwise(original_map)
        patch.setattr(tl, "map_elementwise", mapping)
        if vars(tl.core).get("map_elementwise") is original_map:
            patch.setattr(tl.core, "map_elementwise", mapping)
    builder_class = _builder_class(interpreter)
    if builder_class is not None:
        for name, replacement in _builder_gaps(builder_class):
            patch.setattr(builder_class, name, replacement)
    scaled_dots.install(patch, builder_class)
    _install_loop_variables(patch, interpreter)
    _install_own_rewrites(patch, interpreter)
    _install_helper_dtypes(patch, interpreter)
    if isinstance(getattr(interpreter, "GridExecutor", None), type):
        pointer_arguments.install(patch, interpreter.GridExecutor)
    for name, operator in _constexpr_operators(tl.core.constexpr, tl.core.tensor):
        patch.setattr(tl.core.constexpr, name, operator)
    mended = _mended_tensor_patch(interpreter)
    if mended is not None:
        patch.setattr(tl.core.tensor, "__index__", _scalar_index)  # what a launch sets, put back at the end
        patch.setattr(interpreter, "_patch_lang_tensor", mended)
