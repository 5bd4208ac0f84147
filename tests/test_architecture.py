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
    for folder, _, files in os.walk(PACKAGE):
        for file in files:
            if file.endswith(".py"):
                yield os.path.join(folder, file)


def wing_of(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imported(path):
    """Every kwshim module ``path`` imports, at its top or inside a function, as ``kwshim.x.y``."""
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
            # ``from .. import compat`` imports kwshim.compat: the names are the modules
            targets = [f"{target}.{alias.name}" for alias in node.names] if target == "kwshim" else [target]
            for target in targets:
                if target == "kwshim" or target.startswith("kwshim."):
                    yield node.lineno, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kwshim" or alias.name.startswith("kwshim."):
                    yield node.lineno, alias.name


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
