"""A kernel's source rewritten, and compiled again as a function with the kernel's own globals and
closure cells.

From 3.2 the interpreter rewrites each kernel's source itself (``FunctionRewriter``), and ``fixes``
gives that rewrite kwshim's transformer; ``in_closure`` keeps the names the kernel closes over,
which the release's rewrite drops. 3.0 and 3.1 rewrite nothing: there ``rewritten`` makes kwshim's
own rewrite of a kernel or jitted helper whose source needs it (``python_operators``: ``and``,
``or``, ``not``), once per function, and the grid seam and a helper's call run it instead.
"""

import ast
import inspect
import textwrap
import types

from . import python_operators

__all__ = ["in_closure", "rewritten"]

#: function -> its rewrite (the function itself where nothing needed rewriting), for 3.0 and 3.1
_REWRITES: dict = {}


def in_closure(fn, transformed_ast, compile_and_exec):
    """The function ``compile_and_exec(transformed_ast)`` makes of ``fn``'s rewritten definition,
    over ``fn``'s own closure cells: the definition is compiled inside a function of those names,
    and the function it gives is made again over the kernel's cells."""
    fn.__globals__.setdefault(python_operators.GLOBAL, python_operators)  # what a rewrite calls
    code, cells = fn.__code__, fn.__closure__
    if not cells or len(transformed_ast.body) != 1 or not isinstance(transformed_ast.body[0], ast.FunctionDef):
        return compile_and_exec(transformed_ast)
    definition = transformed_ast.body[0]
    generic = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}  # Python 3.12 on
    outer = ast.FunctionDef(name=fn.__name__, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=name) for name in code.co_freevars], kwonlyargs=[], kw_defaults=[],
        defaults=[]), body=[definition, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, **generic)
    module = ast.fix_missing_locations(ast.Module(body=[ast.copy_location(outer, definition)], type_ignores=[]))
    made = compile_and_exec(module)(*([None] * len(code.co_freevars)))
    own = dict(zip(code.co_freevars, cells))
    kept = types.FunctionType(made.__code__, made.__globals__, made.__name__, made.__defaults__,
                              tuple(own[name] for name in made.__code__.co_freevars))
    kept.__kwdefaults__, kept.__annotations__ = made.__kwdefaults__, made.__annotations__
    kept.__qualname__, kept.__module__ = made.__qualname__, made.__module__
    return kept


class _Transformer(python_operators.Operators, ast.NodeTransformer):
    pass


def rewritten(fn):
    """``fn`` with ``python_operators``' rewrite of its source, where its source uses what that
    rewrites; else ``fn`` itself (also where its source cannot be read). Made once per function."""
    found = _REWRITES.get(fn)
    if found is not None:
        return found
    found = fn
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        lines = None
    if lines is not None:
        start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
        tree = ast.parse(textwrap.dedent("".join(lines[start:])))
        if python_operators.uses_operators(tree):
            tree = ast.fix_missing_locations(_Transformer().visit(tree))
            ast.increment_lineno(tree, first + start - 1)
            found = in_closure(fn, tree, lambda module: _compiled(fn, module))
    _REWRITES[fn] = found
    return found


def _compiled(fn, module):
    namespace: dict = {}
    exec(compile(module, fn.__code__.co_filename, "exec"), fn.__globals__, namespace)
    return namespace[fn.__name__]
