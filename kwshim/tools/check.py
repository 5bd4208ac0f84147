"""``kwshim check``: find kernels that need ``@kwsafe``, and misplaced ``@kwsafe``, statically.

Parses files with ``ast`` only: no imports of the checked code, no Triton needed. Walks
statement lists alone (kernels are statements), never expressions, and skips the walk for files
that never mention ``jit`` or ``kwsafe``, so checking costs little more than parsing. A file
that cannot be checked (unreadable, not valid source, nested too deeply for the parser) is one
KWS900 finding, and the run goes on. The same checker serves flake8 (``Flake8Checker``).
"""

import ast
import io
import os
import stat
import tokenize
from typing import Iterable, Iterator, List, NamedTuple, Optional

__all__ = ["Finding", "CODES", "RESERVED_NAMES", "reserved_names", "check_paths", "check_source",
           "Flake8Checker"]

#: One code per kind of finding.
CODES = {
    "KWS001": "a @triton.jit kernel declares a reserved launch name as a parameter without @kwsafe",
    "KWS002": "@kwsafe is above @triton.autotune/@triton.heuristics (it goes between them and @triton.jit)",
    "KWS003": "@kwsafe is below @triton.jit (it must decorate the kernel @triton.jit makes)",
    "KWS004": "a @triton.jit kernel declares keyword-only parameters, which compiled Triton before 3.9 refuses",
    "KWS900": "the file could not be read or parsed",
}

#: Every name that some release's interpreter strips from a launch or that some release's autotune
#: Config injects (2.2.0 to 3.9.0); ``tests/test_check.py`` holds it against the installed release.
RESERVED_NAMES = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "enable_warp_specialization",
    "num_buffers_warp_spec", "num_consumer_groups", "reg_dec_producer", "reg_inc_consumer", "ir_override",
})

#: What ``from triton import *`` brings that the checker cares about.
_TRITON_STAR = ("jit", "autotune", "heuristics", "Config")


class Finding(NamedTuple):
    path: str
    line: int
    col: int
    code: str
    message: str

    def __str__(self):
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


def reserved_names():
    """The reserved launch names the checker looks for: every name that some release's interpreter
    strips from a launch or that some release's autotune Config injects (2.2.0 to 3.9.0). Static on
    purpose: a checker imports no Triton and starts no process, and a kernel is checked for every
    release it may meet, not only the installed one."""
    return RESERVED_NAMES


def _reserved_consequence(plural):
    """What goes wrong with a declared reserved name without @kwsafe (true for every release)."""
    it = "them" if plural else "it"
    return (f"Triton's interpreters 2.2-3.2 strip {it} from launches (a TypeError, or the default used "
            "silently), and from 3.3 the interpreter passes unknown launch keywords unseen")


def check_paths(paths, reserved) -> List[Finding]:
    findings = []
    for path, explicit in _python_files(paths):
        try:
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                if explicit:
                    findings.append(Finding(path, 1, 1, "KWS900", "not a regular file: not checked"))
                continue  # a FIFO or device in a walked directory: opening it could block forever
            with open(path, "rb") as handle:
                source = handle.read()
        except OSError as exc:
            findings.append(Finding(path, 1, 1, "KWS900", f"cannot read file: {exc.strerror or exc}"))
            continue
        findings.extend(check_source(source, path, reserved))
    return findings


def check_source(source, path, reserved) -> List[Finding]:
    text = source
    if isinstance(source, bytes):
        try:  # as Python itself reads a file: its coding line, else UTF-8, strictly
            encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
            text = source.decode(encoding)
        except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
            return [Finding(path, 1, 1, "KWS900", f"cannot decode file: {exc}")]
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        return [Finding(path, line, col, "KWS900", f"cannot parse file: {getattr(exc, 'msg', exc)}")]
    except (RecursionError, MemoryError) as exc:
        return [Finding(path, 1, 1, "KWS900", f"cannot parse file: too deeply nested for the parser "
                                              f"({type(exc).__name__})")]
    if "jit" not in text and "kwsafe" not in text:
        return []
    return list(check_tree(tree, path, reserved))


def check_tree(tree, path, reserved) -> Iterator[Finding]:
    statements = list(_statements(tree.body))
    aliases = _import_aliases(statements)
    functions: dict = {}
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, node)
            if node.decorator_list:
                yield from _check_function(node, [_decorator_kind(d, aliases) for d in node.decorator_list],
                                           node.decorator_list, aliases, path, reserved)
    for node in statements:  # k = triton.jit(fn), k = kwsafe(triton.jit(fn)), k = autotune(...)(jit(fn))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            kinds, inner = _call_chain(node.value, aliases)
            if "jit" not in kinds:
                continue
            if isinstance(inner, ast.Call):  # triton.jit(make_kernel()): what the factory returns
                inner = _factory_product(inner, functions)
            if isinstance(inner, ast.Name) and inner.id in functions:
                yield from _check_function(functions[inner.id], kinds, None, aliases, path, reserved,
                                           where=node)
            elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from _check_function(inner, kinds, None, aliases, path, reserved, where=node)


def _factory_product(call, functions):
    """For ``make_kernel()``, a function of this file: the function it defines and returns
    (``def make_kernel(): def k(...): ...; return k``), or None."""
    if not isinstance(call.func, ast.Name) or call.func.id not in functions:
        return None
    factory = functions[call.func.id]
    nested = {node.name: node for node in factory.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(factory):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in nested:
            return nested[node.value.id]
    return None


def _call_chain(call, aliases):
    """For ``a(b(c(fn)))`` or ``a(...)(b(...)(fn))``: the kinds outermost first, and ``fn``."""
    kinds = []
    node = call
    while isinstance(node, ast.Call):
        kind = _decorator_kind(node.func, aliases)
        if kind is None and isinstance(node.func, ast.Call):  # autotune(...)(fn): the factory's kind
            kind = _decorator_kind(node.func.func, aliases)
        if kind is None and kinds:  # jit(make_kernel()): the call that makes the function
            return kinds, node
        kinds.append(kind)
        if not node.args:
            return kinds, None
        node = node.args[0]
    return kinds, node


def _statements(body) -> Iterator[ast.stmt]:
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))


def _dotted(node) -> Optional[List[str]]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return parts


def _import_aliases(statements):
    """Local name -> dotted origin, for names from triton and kwshim: imports, ``from triton
    import *``, and plain assignments of such names (``jit = triton.jit``), in source order."""
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
                    if alias.name == "*":
                        if node.module == "triton":
                            aliases.update({name: f"triton.{name}" for name in _TRITON_STAR})
                        elif node.module == "kwshim":
                            aliases["kwsafe"] = "kwshim.kwsafe"
                        continue
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            parts = _dotted(node.value)
            if parts and parts[0] in aliases:
                aliases[node.targets[0].id] = ".".join([aliases[parts[0]]] + parts[1:])
    return aliases


def _decorator_kind(node, aliases):
    target = node.func if isinstance(node, ast.Call) else node
    parts = _dotted(target)
    if parts is None:
        return None
    origin = aliases.get(parts[0])
    dotted = ".".join([origin] + parts[1:]) if origin else ".".join(parts)
    if dotted.rsplit(".", 1)[-1] == "kwsafe":  # kwshim's, or a re-export of it
        return "kwsafe"
    if origin is None or not dotted.startswith("triton."):
        return None
    last = dotted.rsplit(".", 1)[-1]
    return last if last in ("jit", "autotune", "heuristics") else None


def _check_function(node, kinds, decorators, aliases, path, reserved, where=None):
    """``kinds``: the wrappers from outermost to innermost (decorators top to bottom, or the
    calls of ``k = a(b(fn))``)."""
    if "jit" not in kinds:
        return
    jit_index = kinds.index("jit")
    at = where or node
    for index, kind in enumerate(kinds):
        if kind != "kwsafe":
            continue
        spot = decorators[index] if decorators else at
        line, col = spot.lineno, spot.col_offset + 1
        if index > jit_index:
            yield Finding(path, line, col, "KWS003",
                          f"@kwsafe is below @triton.jit on '{node.name}': move it directly above @triton.jit")
        elif any(k in ("autotune", "heuristics") for k in kinds[index + 1:jit_index]):
            yield Finding(path, line, col, "KWS002",
                          f"@kwsafe is above @triton.autotune/@triton.heuristics on '{node.name}': "
                          "move it directly above @triton.jit")
    args = node.args
    if args.kwonlyargs:
        names = ", ".join(f"'{p.arg}'" for p in args.kwonlyargs)
        defaulted = [p.arg for p, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None]
        interpreted = ("the interpreter launches with the default instead of the value given" if defaulted
                       else "the interpreter may never pass it the value given")
        yield Finding(path, at.lineno, at.col_offset + 1, "KWS004",
                      f"kernel '{node.name}' declares keyword-only parameter{'s' if len(args.kwonlyargs) > 1 else ''} "
                      f"{names}: compiled Triton before 3.9 refuses them (CompilationError) and {interpreted}; "
                      "declare them before any '*'")
    if "kwsafe" not in kinds:
        params = args.posonlyargs + args.args + args.kwonlyargs
        hits = [p for p in params if p.arg in reserved]
        if hits:
            names = ", ".join(f"'{p.arg}'" for p in hits)
            plural = len(hits) > 1
            yield Finding(path, at.lineno, at.col_offset + 1, "KWS001",
                          f"kernel '{node.name}' declares reserved launch name{'s' if plural else ''} {names} "
                          f"without @kwsafe: {_reserved_consequence(plural)} (add @kwsafe directly above "
                          "@triton.jit)")


def _python_files(paths) -> Iterable:
    """``(path, explicit)`` for every file to check: the paths given, and ``.py`` files under
    the directories given (hidden directories and ``__pycache__`` left out)."""
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(root, name), False
        else:
            yield path, True


class Flake8Checker:
    """flake8 plugin (entry point ``flake8.extension``, prefix ``KWS``): the same checks as
    ``kwshim check``, on the tree flake8 has already parsed."""

    name = "kwshim"
    version = "0.2.0"

    def __init__(self, tree, filename="(none)"):
        self.tree, self.filename = tree, filename

    def run(self):
        for finding in check_tree(self.tree, self.filename, reserved_names()):
            yield finding.line, finding.col - 1, f"{finding.code} {finding.message}", type(self)
