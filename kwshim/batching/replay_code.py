"""A trace's steps as one Python function: each step a line on local variables.

``Trace.replay`` walks its steps and resolves each argument template (``Slot``, ``TensorOf``,
``SequenceOf``) into a value, call by call. For a small launch that walk is a tenth of the launch:
the arithmetic on a few rows costs about what the walk costs. A trace replayed often enough
(``replay.Trace``) is turned into source once, with every constant, function and folded handle
bound by name, and ``exec``'d: a replay is then the steps' own calls, one line each, and the same
calls in the same order as the walk makes (the same bits, the same ``Miss``).
"""

from . import program_axis
from .steps import BUILDER, DIVERGED, Folded, Guard, SequenceOf, Slot, TensorOf

__all__ = ["compiled", "read_guard"]


def compiled(trace, miss):
    """``trace`` (a ``replay.Trace`` replayed once in full: each folded step holds its handle) as
    ``run(builder, args)``, raising ``miss`` as the walk does; None where a folded step has none."""
    import triton.language as tl

    source = _Source()
    lines = ["def run(builder, args):"]
    for name, slot in trace.inputs:
        lines.append(f"    v{slot} = args[{source.constant(name)}].handle")
    folded = set()
    for position, step in enumerate(trace.steps):
        if type(step) is Folded:
            if step.value is None:
                return None
            source.names[f"v{step.index}"] = step.value  # a module-level name: the same handle each run
            folded.add(step.index)
            lines.extend(_releases(step.release, folded))
            continue
        if type(step) is Guard:
            read = "_truth" if step.read is program_axis.truth else source.constant(step.read)
            lines.append(f"    g = _read({read}, v{step.index}, _miss, {position})")
            lines.append(f"    if g != {source.constant(step.value)}: raise _miss({position}, g)")
            lines.extend(_releases(step.release, folded))
            continue
        function, arguments, keywords, out, release = step
        call = ", ".join([source.argument(a) for a in arguments] +
                         [f"{name}={source.argument(v)}" for name, v in keywords.items()])
        call = f"{source.constant(function)}({call})"
        if type(out) is Slot:
            lines.append(f"    r = {call}")
            lines.append(f"    v{out.index} = r.handle if isinstance(r, _tensor) else r")
        elif type(out) is SequenceOf:
            lines.append(f"    r = {call}")
            lines.extend(_bound(out, "r"))
        else:
            lines.append(f"    {call}")
        lines.extend(_releases(release, folded))
    lines.append("    return None")
    source.names.update(_tensor=tl.core.tensor, _miss=miss, _read=read_guard, _truth=program_axis.truth)
    exec(compile("\n".join(lines), f"<kwshim trace of {len(trace.steps)} steps>", "exec"), source.names)
    return source.names["run"]


class _Source:
    """The names the generated source reads: each constant, function and type bound once."""

    def __init__(self):
        self.names: dict = {}
        self._known: dict = {}

    def constant(self, value):
        found = self._known.get(id(value))
        if found is None:
            found = self._known[id(value)] = f"c{len(self._known)}"
            self.names[found] = value
        return found

    def argument(self, template):
        kind = type(template)
        if kind is Slot:
            return f"v{template.index}"
        if kind is TensorOf:
            return f"{self.constant(template.kind)}(v{template.index}, {self.constant(template.type)})"
        if kind is SequenceOf:
            items = [self.argument(item) for item in template.items]
            if template.kind is list:
                return "[" + ", ".join(items) + "]"
            return "(" + "".join(item + ", " for item in items) + ")"
        if template is BUILDER:
            return "builder"
        return self.constant(template)


def _bound(template, result):
    """The lines binding the slots of ``template`` (a ``SequenceOf``) from ``result``, as the walk's
    ``bind`` does (item by item; a tensor's handle)."""
    lines = []
    for number, item in enumerate(template.items):
        if type(item) is Slot:
            lines.append(f"    v{item.index} = {result}[{number}].handle if isinstance({result}[{number}], _tensor) "
                         f"else {result}[{number}]")
        elif type(item) is SequenceOf:
            lines.extend(_bound(item, f"{result}[{number}]"))
    return lines


def _releases(slots, folded):
    return [f"    v{slot} = None" for slot in slots if slot not in folded]


def read_guard(reader, handle, miss, position):
    """A guard's read of ``handle`` (the walk's and the generated function's; ``position``: its step):
    a ``Diverged`` at an ``if`` is the body's own (it diverges there too: every trace would); at an
    index, ``miss`` is raised as ``DIVERGED`` there (a range may run in lockstep: a trace of that, or
    the body, decides), and at any other ``Fallback`` with no position."""
    try:
        return reader(handle)
    except program_axis.Diverged:
        if reader is program_axis.truth:
            raise
        raise miss(position, DIVERGED) from None
    except program_axis.Fallback:
        raise miss() from None
