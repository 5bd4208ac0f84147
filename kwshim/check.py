"""``kwshim check``: find kernels that need ``@kwsafe``, and misplaced ``@kwsafe``, statically.

Parses files with ``ast`` only: no imports of the checked code, no Triton needed. Walks
statement lists alone (kernels are statements), never expressions, and skips the walk for files
that never mention ``jit`` or ``kwsafe``, so checking costs little more than parsing.
"""

import ast
import os
from typing import Iterator, List, NamedTuple

__all__ = ["Finding", "CODES", "FALLBACK_RESERVED_NAMES", "reserved_names", "check_paths", "check_source"]

#: One code per kind of finding.
CODES = {
    "KWS001": "a @triton.jit kernel declares a reserved launch name as a parameter without @kwsafe",
    "KWS002": "@kwsafe is above @triton.autotune/@triton.heuristics (it goes between them and @triton.jit)",
    "KWS003": "@kwsafe is below @triton.jit (it must decorate the kernel @triton.jit makes)",
    "KWS900": "the file could not be read or parsed",
}

#: Used where no ``triton`` module is installed: every name that some release's interpreter
#: strips from a launch or that some release's autotune Config injects (2.2.0 to 3.9.0).
FALLBACK_RESERVED_NAMES = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "enable_warp_specialization",
    "num_buffers_warp_spec", "num_consumer_groups", "reg_dec_producer", "reg_inc_consumer", "ir_override",
})


class Finding(NamedTuple):
    path: str
    line: int
    col: int
    code: str
    message: str

    def __str__(self):
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


def reserved_names():
    """The reserved launch names of the installed Triton (its Config fields and its
    interpreter's reserved list), or ``FALLBACK_RESERVED_NAMES`` where there is no Triton."""
    from . import _triton
    from .errors import TritonNotFoundError

    try:
        return _triton.stripped_names()
    except TritonNotFoundError:
        return FALLBACK_RESERVED_NAMES


def check_paths(paths, reserved) -> List[Finding]:
    findings = []
    for path in _python_files(paths):
        try:
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError as exc:
            findings.append(Finding(path, 1, 1, "KWS900", f"cannot read file: {exc.strerror or exc}"))
            continue
        findings.extend(check_source(source, path, reserved))
    return findings


def check_source(source, path, reserved) -> List[Finding]:
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        return [Finding(path, line, col, "KWS900", f"cannot parse file: {getattr(exc, 'msg', exc)}")]
    if isinstance(source, bytes):
        if b"jit" not in source and b"kwsafe" not in source:
            return []
    elif "jit" not in source and "kwsafe" not in source:
        return []
    statements = list(_statements(tree.body))
    aliases = _import_aliases(statements)
    findings = []
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
            findings.extend(_check_function(node, aliases, path, reserved))
    return findings


def _statements(body) -> Iterator[ast.stmt]:
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))


def _import_aliases(statements):
    """Local name -> dotted origin, for imports from triton and kwshim."""
    aliases = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("triton", "kwshim"):
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("triton", "kwshim"):
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _decorator_kind(node, aliases):
    target = node.func if isinstance(node, ast.Call) else node
    parts = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name):
        return None
    parts.append(target.id)
    parts.reverse()
    origin = aliases.get(parts[0])
    dotted = ".".join([origin] + parts[1:]) if origin else ".".join(parts)
    if dotted.rsplit(".", 1)[-1] == "kwsafe":  # kwshim's, or a re-export of it
        return "kwsafe"
    if origin is None or not dotted.startswith("triton."):
        return None
    last = dotted.rsplit(".", 1)[-1]
    return last if last in ("jit", "autotune", "heuristics") else None


def _check_function(node, aliases, path, reserved):
    kinds = [_decorator_kind(d, aliases) for d in node.decorator_list]  # top to bottom
    if "jit" not in kinds:
        return []
    jit_index = kinds.index("jit")
    findings = []
    for index, kind in enumerate(kinds):
        if kind != "kwsafe":
            continue
        decorator = node.decorator_list[index]
        where = (decorator.lineno, decorator.col_offset + 1)
        if index > jit_index:
            findings.append(Finding(path, where[0], where[1], "KWS003",
                                    f"@kwsafe is below @triton.jit on '{node.name}': move it directly above "
                                    "@triton.jit"))
        elif any(k in ("autotune", "heuristics") for k in kinds[index + 1:jit_index]):
            findings.append(Finding(path, where[0], where[1], "KWS002",
                                    f"@kwsafe is above @triton.autotune/@triton.heuristics on '{node.name}': "
                                    "move it directly above @triton.jit"))
    if "kwsafe" not in kinds:
        args = node.args
        params = args.posonlyargs + args.args + args.kwonlyargs
        hits = [p for p in params if p.arg in reserved]
        if hits:
            names = ", ".join(f"'{p.arg}'" for p in hits)
            findings.append(Finding(path, node.lineno, node.col_offset + 1, "KWS001",
                                    f"kernel '{node.name}' declares reserved launch name{'s' if len(hits) > 1 else ''} "
                                    f"{names} without @kwsafe: the Triton interpreter strips "
                                    f"{'them' if len(hits) > 1 else 'it'} from launches (add @kwsafe directly "
                                    "above @triton.jit)"))
    return findings


def _python_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(root, name)
        else:
            yield path
