"""Python's ``and``, ``or``, ``not`` and chained comparisons in a kernel, as compiled Triton's code
generator reads them, not as Python runs them.

The interpreter runs a kernel's Python as Python. A block is truthy, so ``r < 2 and r < 6`` is
``r < 6``: a 2-D mask combined with ``and`` keeps its second half alone, and a store under it
writes out of bounds (FlagGems' ``layer_norm_backward_kernel`` corrupted the heap and killed the
test process). Compiled Triton lowers them (``code_generator.visit_BoolOp``, ``visit_UnaryOp``,
``visit_Compare``), and so does a rewrite of the kernel's source here:

- ``a and b`` / ``a or b``: tensors combine with ``logical_and`` / ``logical_or``. How the other
  values count is the release's (``compat.boolean_operators``): ``"short_circuit"`` (3.4 on) —
  each value in order, a non-tensor that decides (falsy for ``and``, truthy for ``or``) is the
  result, one that does not is dropped, the tensors combine right to left, none left: the last
  value; ``"pairwise"`` (up to 3.3) — two values only (a chain of three is refused), both
  evaluated, a tensor's method with the other;
- ``not x``: a tensor's ``__not__`` (compiled Triton's ``not_``); Python's ``not`` otherwise;
- ``a is b``, ``a is not b``: of the values inside constexprs (``dtype is tl.int64`` in a helper
  handed the dtype, a constexpr as compiled Triton hands it: FlagGems' ``randperm``);
- ``a < b < c``: refused where compiled Triton refuses it (up to 3.8); 3.9's compiler and
  interpreter both run a chain;
- ``x if test else y`` with a block as the test: refused, as the compiler refuses it;
- ``min``/``max``: the compiler's own ``builtin_min``/``builtin_max`` where it maps them (3.6 on:
  element by element on blocks), where Python's picked one whole block.

Where no tensor is involved the result is Python's own, as before. The rewrite is applied by the
release's ``FunctionRewriter`` (its ``ast_transformer``, 3.2 on) while the switch is on
(``fixes``); the rewritten kernel reaches these functions through one global,
``__kwshim_operators__``.
"""

import ast
import builtins
import sys

__all__ = ["GLOBAL", "Operators", "uses_operators", "identity", "bool_op", "not_", "conditional", "min_max",
           "chained_comparison"]

#: the global name a rewritten kernel reaches this module by
GLOBAL = "__kwshim_operators__"


def _call(name, args):
    return ast.Call(func=ast.Attribute(value=ast.Name(id=GLOBAL, ctx=ast.Load()), attr=name, ctx=ast.Load()),
                    args=args, keywords=[])


def _thunk(expression):
    arguments = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                              defaults=[])
    return ast.Lambda(args=arguments, body=expression)


class Operators:
    """A mix-in for an ``ast.NodeTransformer``: ``and``/``or``, ``not`` and chained comparisons as
    calls of this module's functions (each operand of ``and``/``or`` a thunk, so that a value that
    decides skips the rest, as the code generator skips visiting it)."""

    def visit_Assign(self, node):
        node.value = self.visit(node.value)  # the release's own visit_Assign wraps the value unvisited
        return super().visit_Assign(node) if hasattr(super(), "visit_Assign") else node

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        method = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        return ast.copy_location(_call("bool_op", [ast.Constant(value=method)] +
                                       [_thunk(value) for value in node.values]), node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        return ast.copy_location(_call("conditional", [node.test, _thunk(node.body), _thunk(node.orelse)]), node)

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and not node.keywords:
            return ast.copy_location(_call("min_max", [ast.Constant(value=node.func.id), node.func] + node.args),
                                     node)
        return node

    def visit_Compare(self, node):
        from .. import compat

        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            node = self.generic_visit(node)
            return ast.copy_location(_call("identity", [node.left, node.comparators[0],
                                                        ast.Constant(value=isinstance(node.ops[0], ast.IsNot))]), node)
        if len(node.ops) > 1 and compat.chained_comparisons_refused():
            return ast.copy_location(_call("chained_comparison", []), self.generic_visit(node))
        if hasattr(super(), "visit_Compare"):  # 3.9's interpreter runs a chain as its compiler does
            return super().visit_Compare(node)
        return self.generic_visit(node)


def uses_operators(tree) -> bool:
    """Whether a kernel's AST holds anything ``Operators`` rewrites."""
    return any(isinstance(node, (ast.BoolOp, ast.IfExp))
               or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
               or isinstance(node, ast.Compare) and (len(node.ops) > 1 or isinstance(node.ops[0], (ast.Is, ast.IsNot)))
               or isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max")
               for node in ast.walk(tree))


def _is_tensor(value) -> bool:
    import triton.language as tl

    return isinstance(value, tl.tensor)


def identity(left, right, negated):
    """``left is right`` (``is not``: ``negated``) of the values inside constexprs, as compiled
    Triton's ``visit_Compare`` unwraps them."""
    import triton.language as tl

    left, right = (value.value if isinstance(value, tl.constexpr) else value for value in (left, right))
    return (left is not right) if negated else (left is right)


def bool_op(method, *thunks):
    """``and`` (``method="logical_and"``) or ``or`` of the thunks' values, as compiled Triton."""
    from .. import compat

    if compat.boolean_operators() == "pairwise":
        return _pairwise(method, thunks)
    tensors, value = [], None
    for thunk in thunks:
        value = thunk()
        if _is_tensor(value):
            tensors.append(value)
        elif bool(value) is (method == "logical_or"):  # it decides: the result, the rest unvisited
            return value
    if not tensors:  # every value a non-tensor that did not decide: the last one
        return value
    while len(tensors) >= 2:
        rhs, lhs = tensors.pop(), tensors.pop()
        tensors.append(getattr(lhs, method)(rhs))
    return tensors[0]


def _pairwise(method, thunks):
    if len(thunks) != 2:
        from ..errors import UncompilableError

        raise UncompilableError("kwshim: compiled Triton refuses this: chained boolean operators (A or B or C) "
                                "are not supported; use parentheses to split the chain.")
    lhs, rhs = thunks[0](), thunks[1]()
    if _is_tensor(lhs):
        return getattr(lhs, method)(rhs)
    if _is_tensor(rhs):
        return getattr(rhs, method)(lhs)
    return (lhs and rhs) if method == "logical_and" else (lhs or rhs)


def not_(operand):
    """``not operand``: a tensor's ``__not__``, as compiled Triton; Python's for anything else."""
    if _is_tensor(operand):
        return operand.__not__()
    return not operand


def conditional(test, body, orelse):
    """``body() if test else orelse()``: a block as the test is refused, as the compiler refuses it
    (measured on the H200: "error encountered during parsing"); a scalar or a Python value decides."""
    if _is_tensor(test) and test.type.is_block():
        from ..errors import UncompilableError

        raise UncompilableError("kwshim: compiled Triton refuses a conditional expression whose test is a block "
                                "(error encountered during parsing): use tl.where")
    return body() if test else orelse()


def min_max(name, function, *args):
    """``min(*args)``/``max(*args)`` as the code generator calls them: its own ``builtin_min``/
    ``builtin_max`` where it maps Python's builtin to one (3.6 on: element by element for blocks),
    Python's otherwise; a ``min`` the kernel's module defines is that one."""
    from .. import compat

    if function is getattr(builtins, name) and compat.compiler_builtins_min_max():
        builtin = getattr(sys.modules["triton.language.core"], f"builtin_{name}")
        keyword = compat.front_end_keyword(builtin)  # the interpreter's semantic, as a launch hands it
        return builtin(*args, **({} if keyword is None else {keyword: compat.front_end(keyword)}))
    return function(*args)


def chained_comparison():
    from ..errors import UncompilableError

    raise UncompilableError("kwshim: compiled Triton refuses this: simultaneous multiple comparison is not "
                            "supported (write a < b and b < c)")
