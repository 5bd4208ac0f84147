"""Whether a kernel chains its dots: a ``tl.dot`` result that flows, through the kernel's own
assignments, into another ``tl.dot``'s operands (flash attention's ``p = exp2(q @ k - m)`` then
``p @ v``). Triton's ``AccelerateMatmul`` puts every warp of such a dot on its rows, so that each row
is reduced within one warp; a lone dot's warps may split its columns too. ``lane_order`` reads
``launch_chained``, which the grid seam (``programs``) sets for each launch from the kernel's source.

Read from the source, once per function: the interpreter runs the body as Python, and a dot's
consumers come after the reductions of its result. A chain through a helper's return is not seen.
"""

import ast
import functools
import inspect
import textwrap

__all__ = ["chains_dots", "launch_chained"]

#: Whether the kernel launched now chains its dots (``programs`` sets it per launch).
launch_chained = False


def _is_dot(node):
    return isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == "dot" or
                                           getattr(node.func, "id", None) == "dot")


def _labels(node, tainted, dots):
    """The dots whose results ``node`` (an expression) depends on: its names' and its own dots'."""
    found = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found |= tainted.get(child.id, set())
        elif _is_dot(child):
            found.add(dots[id(child)])
    return found


def _targets(node):
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)]


@functools.lru_cache(maxsize=256)
def chains_dots(fn) -> bool:
    """Whether a ``tl.dot`` in ``fn``'s body feeds another's first or second operand (not its
    accumulator); False where the source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _is_dot(node)]
    if len(calls) < 2:
        return False
    dots = {id(call): number for number, call in enumerate(calls)}
    assignments = [node for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                   and node.value is not None]
    tainted: dict = {}
    changed = True
    while changed:  # to a fixed point: a loop's later assignment reaches its earlier lines
        changed = False
        for node in assignments:
            labels = _labels(node.value, tainted, dots)
            if isinstance(node, ast.AugAssign):
                labels |= _labels(node.target, tainted, dots)
            for name in _targets(node):
                if not labels <= tainted.get(name, set()):
                    tainted[name] = tainted.get(name, set()) | labels
                    changed = True
    for call in calls:
        for operand in call.args[:2]:
            if _labels(operand, tainted, dots) - {dots[id(call)]}:
                return True
    return False
