"""Which Configs a kernel's own ``tl.static_assert`` refuses, read without running the kernel.

A GPU's autotuner compiles each Config, and one whose ``tl.static_assert`` fails does not compile
(``CompileTimeAssertionFailure``): its time is infinite and another Config wins. Libraries rely on
it: FlagGems' attention lists Configs with ``BLOCK_N`` up to 128 and asserts ``BLOCK_N <= HEAD_DIM``
at the kernel's top, so that a head of 64 prunes the larger ones. Under ``autotune="first"`` nothing
runs, so the first Config was launched and failed its assertion ("AssertionError", a test failed
that the H100 passes). Here the assertions at the top of the kernel's body whose condition reads
only its parameters (constexpr values: the Config's, the launch's) are evaluated for each Config;
anything else (a condition over values computed in the kernel, an assertion inside a branch) is
left to the launch, as before.
"""

import ast
import inspect
import textwrap
import weakref

__all__ = ["refuses"]

#: kernel function -> (its parameters in order, [(a condition's compiled code, the names it reads)]) (read once)
_CONDITIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

#: the expression nodes a condition may hold: arithmetic, comparisons and logic over names and constants
_PLAIN_NODES = (ast.Expression, ast.Compare, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load,
                ast.cmpop, ast.boolop, ast.operator, ast.unaryop)


def refuses(kernel, args, config, meta) -> bool:
    """Whether ``config`` fails one of ``kernel``'s top-level static assertions for this launch
    (``args`` positional, ``meta`` its keywords): a GPU's compiler refuses it."""
    fn = getattr(kernel, "fn", None)
    if fn is None:
        return False
    names, conditions = _conditions(fn)
    if not conditions:
        return False
    values = dict(zip(names, args))
    values.update(meta)
    values.update(getattr(config, "kwargs", {}))
    for code, reads in conditions:
        if not all(type(values.get(name)) in (int, bool, float) for name in reads):
            continue  # reads something that is not a plain number here: the launch decides
        try:
            if not eval(code, {"__builtins__": {}}, {name: values[name] for name in reads}):  # noqa: S307
                return True
        except ArithmeticError:
            continue
    return False


def _conditions(fn):
    found = _CONDITIONS.get(fn)
    if found is None:
        try:
            found = _CONDITIONS[fn] = _read(fn)
        except TypeError:  # a function weakref cannot hold
            return _read(fn)
    return found


def _read(fn):
    """``fn``'s parameters, and the conditions of the ``static_assert`` calls among its top-level statements."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return [], []
    function = next((node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if function is None:
        return [], []
    names = [argument.arg for argument in function.args.args]
    parameters = set(names) | {argument.arg for argument in function.args.kwonlyargs}
    conditions = []
    for statement in function.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call) or not call.args or not _is_static_assert(call.func):
            continue
        expression = ast.Expression(call.args[0])
        if not all(isinstance(node, _PLAIN_NODES) for node in ast.walk(expression)):
            continue
        reads = sorted({node.id for node in ast.walk(expression) if isinstance(node, ast.Name)})
        if reads and set(reads) <= parameters:
            conditions.append((compile(expression, "<static_assert>", "eval"), reads))
    return names, conditions


def _is_static_assert(func) -> bool:
    """``tl.static_assert``, ``triton.language.static_assert`` or a bare ``static_assert``."""
    return (isinstance(func, ast.Attribute) and func.attr == "static_assert") or \
        (isinstance(func, ast.Name) and func.id == "static_assert")
