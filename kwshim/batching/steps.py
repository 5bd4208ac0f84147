"""What a trace (``replay``) is made of: steps on numbered slots.

A step is ``(function, arguments, keywords, out, release)``: ``function`` is called with the
arguments, in which a ``Slot`` stands for the handle a slot holds, a ``TensorOf`` for a
``tl.tensor`` around it, a ``SequenceOf`` for a list or tuple of them and ``BUILDER`` for the builder
object (anything else is a constant); ``out`` says which slots the result fills, and ``release``
which slots the replay lets go after the step (while a ``Recorder`` records, that place holds the
slots the step reads instead: the trace turns them into releases). A ``Guard`` is a step that reads
a slot's value back into Python. A ``Folded`` step makes a handle from constants alone: the same
handle every replay. A step that repeats an earlier one (``merged``) is left out, and what read its
slot reads the earlier one's.
"""

import struct
import types

from . import batching_rules

__all__ = ["Slot", "TensorOf", "SequenceOf", "BUILDER", "DIVERGED", "Guard", "Folded", "foldable", "only_a_type",
           "slots_in", "OPERATION_NAMES", "operation_name", "merged"]

#: Operations on a block's shape that read nothing but their operands (``program_axis``'s).
_SHAPES = ("create_splat", "create_make_range", "create_expand_dims", "create_broadcast")
#: Operations besides the element-wise and the shapes whose handle depends on their arguments alone
#: (and on the launch: its program ids), so that two with the same arguments make the same handle.
_REPEATABLE = ("create_addptr", "create_get_program_id", "create_unsplat", "create_reshape", "create_trans",
               "create_cat", "create_join")
#: Triton's types, told apart by what they print and their address space (3.0's are unhashable).
_TYPES = ("dtype", "block_type", "pointer_type", "const_pointer_type")
#: Adds and subtracts that may contract with a product into one fma: whether they do is the launch's
#: own option (``enable_fp_fusion``), so they are made each time.
_CONTRACTING = ("create_fadd", "create_fsub")


class Slot:
    """The handle a slot holds."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class TensorOf:
    """A ``tl.tensor`` (or a subclass of its constructor: ``program_range``'s loop index) around the
    handle of a slot."""
    __slots__ = ("index", "type", "kind")

    def __init__(self, index, type, kind):
        self.index, self.type, self.kind = index, type, kind


class SequenceOf:
    """A list or tuple holding slots."""
    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, items


class _Builder:
    """Where a step takes the builder object (the first argument of a builder method)."""


BUILDER = _Builder()


#: What a guard read where the programs disagree (a replay's ``Miss``): every trace with a guard at that
#: step finds the same.
DIVERGED = object()


class Guard:
    """A step that reads a slot's value back into Python (``program_axis.truth`` or ``index``), and
    the slots a replay lets go after it."""
    __slots__ = ("read", "index", "value", "release")

    def __init__(self, read, index, value, release=()):
        self.read, self.index, self.value, self.release = read, index, value, release


def slots_in(template):
    """Every slot ``template`` (an argument, a keyword's value or a step's ``out``) names, in order."""
    found: list = []
    _collect(template, found)
    return found


def _collect(template, found):
    kind = type(template)
    if kind is Slot or kind is TensorOf:
        found.append(template.index)
    elif kind is SequenceOf:
        for item in template.items:
            _collect(item, found)
    elif kind is tuple or kind is list:
        for item in template:
            _collect(item, found)


#: The builder's operations by function: their names in the builder (``create_si_to_fp``), which
#: the interpreter defines some of as lambdas, whose own ``__name__`` is ``<lambda>``.
OPERATION_NAMES: dict = {}


def operation_name(function):
    """The builder operation's name of a step's function, else its ``__name__``."""
    name = OPERATION_NAMES.get(function) if type(function) is types.FunctionType else None
    return name or getattr(function, "__name__", None)


def _by_name(answer):
    """``answer(name)`` of a step's function by its name, kept per function: a trace asks it of
    every step (a reduction's bound ``apply``, made anew for each step, is asked each time)."""
    known: dict = {}

    def of(function):
        found = known.get(function) if type(function) is types.FunctionType else None
        if found is None:
            name = operation_name(function)
            found = name is not None and answer(name)
            if type(function) is types.FunctionType:
                if len(known) >= 4096:  # functions made anew for each step would fill it
                    known.clear()
                known[function] = found
        return found

    return of


@_by_name
def _a_type_maker(name):
    return batching_rules.rule(name) == batching_rules.UNIFORM and not name.startswith(("create_", "set_"))


@_by_name
def _foldable_kind(name):
    kind = batching_rules.rule(name)
    return name not in _CONTRACTING and (kind == batching_rules.ELEMENT_WISE and name.startswith("create_") or
                                         name in _SHAPES or kind == batching_rules.UNIFORM and name.startswith("get_"))


def only_a_type(step, used):
    """Whether ``step`` (which reads the slots ``used``) is a builder operation of the ``UNIFORM``
    rule that takes no slot and makes no handle (a type: ``get_block_ty``, ``get_int32_ty``): its
    value is a constant of the steps that use it, and a trace need not keep it."""
    if used or isinstance(step, Guard) or step[3] is not None and slots_in(step[3]):
        return False
    return _a_type_maker(step[0])


class Folded:
    """A step of constants alone (``foldable``): the handle it made at its first replay
    (``value``) is every later replay's, so they make no new one."""
    __slots__ = ("step", "index", "release", "value")

    def __init__(self, step):
        self.step, self.index, self.release, self.value = step, step[3].index, step[4], None


def foldable(step, used, constants):
    """Whether ``step`` (which reads the slots ``used``) makes one handle from constants and the slots
    in ``constants`` alone, by an operation that reads nothing else: element-wise, a constant
    (``get_fp32``) or a shape."""
    if isinstance(step, Guard) or type(step[3]) is not Slot or step[1][:1] != (BUILDER,):
        return False
    return _foldable_kind(step[0]) and all(slot in constants for slot in used)


@_by_name
def _repeatable(name):
    kind = batching_rules.rule(name)
    if name.startswith("get_"):  # a constant (``get_int64``); a type makes no handle (``only_a_type``)
        return kind == batching_rules.UNIFORM
    return name.startswith("create_") and (kind == batching_rules.ELEMENT_WISE or name in _SHAPES or
                                           name in _REPEATABLE)


def merged(steps):
    """``steps`` (a recording's: ``(function, arguments, keywords, out, used)`` and guards) without
    the repeats of an operation whose handle depends on its arguments alone (``_repeatable``): each
    later step reads the first one's slot instead. A body makes many twice (each pass over a row
    makes its pointers and mask again, and splats a scalar each time it meets a block): a replay
    makes them once, as a compiler's common subexpression elimination does."""
    names, first, kept = {}, {}, []
    for step in steps:
        if type(step) is Guard:
            kept.append(Guard(step.read, names.get(step.index, step.index), step.value, step.release))
            continue
        function, arguments, keywords, out, used = step
        if names:
            arguments = tuple([_renamed(argument, names) for argument in arguments])
            keywords = {name: _renamed(value, names) for name, value in keywords.items()}
            used = [names.get(slot, slot) for slot in used]
        if type(out) is Slot and _repeatable(function):
            key = (function, _key(arguments), _key(keywords))
            if key in first:
                names[out.index] = first[key]
                continue
            first[key] = out.index
        kept.append((function, arguments, keywords, out, used))
    return kept


def _renamed(template, names):
    kind = type(template)
    if kind is Slot:
        return Slot(names[template.index]) if template.index in names else template
    if kind is TensorOf:
        return TensorOf(names.get(template.index, template.index), template.type, template.kind)
    if kind is SequenceOf:
        return SequenceOf(template.kind, [_renamed(item, names) for item in template.items])
    if kind is tuple or kind is list:  # as ``slots_in`` reads them
        return kind(_renamed(item, names) for item in template)
    return template


def _key(value):
    """What tells ``value`` (an argument's template, or a constant in one) from another: a slot's
    number, a constant's type and value (a float's bits: 0.0 is not -0.0), a Triton type's text, and
    any other object itself."""
    kind = type(value)
    if kind is Slot:
        return (Slot, value.index)
    if kind is TensorOf:
        return (TensorOf, value.index, _key(value.type), value.kind)
    if kind is SequenceOf:
        return (SequenceOf, value.kind, _key(value.items))
    if kind is tuple or kind is list:
        return (kind,) + tuple([_key(item) for item in value])
    if kind is dict:
        return (dict,) + tuple([(name, _key(item)) for name, item in value.items()])
    if kind is float:
        return (float, struct.pack("<d", value))
    if value is None or kind is bool or kind is int or kind is str:
        return (kind, value)
    if kind.__name__ in _TYPES and kind.__module__.startswith("triton."):
        return (kind, str(value), getattr(value, "address_space", None), getattr(value, "const", None))
    if kind.__name__ == "constexpr" and kind.__module__.startswith("triton."):
        return (kind, _key(value.value))
    return (object, id(value))  # the same object (the step holds it: its id is not reused)
