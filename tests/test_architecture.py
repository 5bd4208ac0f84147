"""The house of ``docs/architecture.md``: imports run one way, down its list of wings, and no
module outgrows a room."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "kwshim")
#: The most lines a module may have: past it, a module holds more than one concept.
MOST_LINES = 450


def wings():
    """The wings in the order ``docs/architecture.md`` lists them, top floor first; the ground
    floor (the modules at the package's top level below the wings) shares the last rank."""
    with open(os.path.join(ROOT, "docs", "architecture.md")) as handle:
        block = re.search(r"^```text\nkwshim/\n(.*?)^```", handle.read(), re.M | re.S).group(1)
    order = {}
    for line in block.splitlines():
        names = re.findall(r"(\S+?)(/|\.py)(?=\s)", " " + line.strip() + " ")
        if not line.startswith("  ") or line.startswith("   ") or not names:
            continue
        for name, kind in names:
            if kind == "/":
                order[name] = len(order)
            elif name not in order:  # __init__.py, __main__.py above the wings; the rest the ground floor
                order[name] = 0 if name.startswith("__") else -1
    ground = len(order)
    return {name: (ground if rank == -1 else rank) for name, rank in order.items()}


def modules():
    """The package's own source files: not what runs write under ``__pycache__`` (the compiled loops'
    generated modules, ``kwshim_loops``, which counted as package lines where a run had made them)."""
    for folder, folders, files in os.walk(PACKAGE):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for file in files:
            if file.endswith(".py"):
                yield os.path.join(folder, file)


def wing_of(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(dotted):
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def imported(path):
    """Every kwshim module ``path`` imports, at its top or inside a function, as ``kwshim.x.y``
    (``from . import a`` imports the module ``a`` where there is one)."""
    relative = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    package = relative.rsplit(".", 1)[0] if not relative.endswith("__init__") else relative[:-len(".__init__")]
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "kwshim" or target.startswith("kwshim.")):
                continue
            for alias in node.names:  # ``from .. import compat``: the names are the modules
                yield node.lineno, f"{target}.{alias.name}" if _is_module(f"{target}.{alias.name}") else target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kwshim" or alias.name.startswith("kwshim."):
                    yield node.lineno, alias.name


def import_graph():
    """{module: the package's modules it imports}, dotted, ``__init__`` files as their package."""
    graph = {}
    for path in modules():
        name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        name = name[:-len(".__init__")] if name.endswith(".__init__") else name
        graph.setdefault(name, set()).update(target for _, target in imported(path) if target != name)
    return graph


def circles(graph):
    """Every strongly connected set of two or more modules in ``graph`` (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_architecture_lists_every_wing_and_ground_floor_module():
    order = wings()
    for entry in os.listdir(PACKAGE):
        name = entry[:-3] if entry.endswith(".py") else entry
        if entry.endswith(".py") or os.path.isfile(os.path.join(PACKAGE, entry, "__init__.py")):
            assert name in order, f"docs/architecture.md does not place kwshim/{entry}"


def test_no_module_imports_from_a_wing_above_its_own():
    order = wings()
    upward = []
    for path in modules():
        own = wing_of(os.path.relpath(path, ROOT)[:-3].replace(os.sep, "."))
        for line, target in imported(path):
            other = wing_of(target)
            if other != own and order[other] < order[own]:
                upward.append(f"{os.path.relpath(path, ROOT)}:{line} imports {target} ({other} is above {own})")
    assert not upward, "\n".join(upward)


def test_no_module_is_over_the_limit():
    long = []
    for path in modules():
        with open(path) as handle:
            count = sum(1 for _ in handle)
        if count > MOST_LINES:
            long.append(f"{os.path.relpath(path, ROOT)}: {count} lines")
    assert not long, f"over {MOST_LINES} lines: " + ", ".join(long)


def test_no_circle_of_imports_inside_a_wing():
    graph = import_graph()
    inside = {name: {other for other in targets if wing_of(other) == wing_of(name)} for name, targets in graph.items()}
    assert not circles(inside), "circles of imports: " + "; ".join(" <-> ".join(c) for c in circles(inside))


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_wing_holds_more_than_two_fifths_of_the_package():
    lines = {}
    for path in modules():
        with open(path) as handle:
            count = sum(1 for _ in handle)
        wing = wing_of(os.path.relpath(path, ROOT)[:-3].replace(os.sep, "."))
        lines[wing] = lines.get(wing, 0) + count
    total = sum(lines.values())
    heavy = {wing: f"{count / total:.0%}" for wing, count in lines.items() if count > 0.4 * total}
    assert not heavy, f"wings over 40% of the package's {total} lines: {heavy}"
