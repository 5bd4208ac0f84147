"""What a trace (``replay``) is made of: steps on numbered slots.

A step is ``(function, arguments, keywords, out, release)``: ``function`` is called with the
arguments, in which a ``Slot`` stands for the handle a slot holds, a ``TensorOf`` for a
``tl.tensor`` around it, a ``SequenceOf`` for a list or tuple of them and ``BUILDER`` for the builder
object (anything else is a constant); ``out`` says which slots the result fills, and ``release``
which slots the replay lets go after the step. A ``Guard`` is a step that reads a slot's value back
into Python.
"""

__all__ = ["Slot", "TensorOf", "SequenceOf", "BUILDER", "Guard", "slots_in"]


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


class Guard:
    """A step that reads a slot's value back into Python (``program_axis.truth`` or ``index``), and
    the slots a replay lets go after it."""
    __slots__ = ("read", "index", "value", "release")

    def __init__(self, read, index, value, release=()):
        self.read, self.index, self.value, self.release = read, index, value, release


def slots_in(template):
    """Every slot ``template`` (an argument, a keyword's value or a step's ``out``) names."""
    if isinstance(template, (Slot, TensorOf)):
        yield template.index
    elif isinstance(template, SequenceOf):
        for item in template.items:
            yield from slots_in(item)
    elif isinstance(template, (tuple, list)):
        for item in template:
            yield from slots_in(item)
