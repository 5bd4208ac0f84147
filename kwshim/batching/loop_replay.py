"""A loop's later iterations, on a traced batch, made from its third iteration's steps, not by its body.

A specialization's first batch runs the kernel's Python body and records it (``replay``). A body
that loops (flash-linear-attention's chunked kernels walk a sequence, 1024 steps and more) runs
Triton's front end once per iteration, and that is most of a first launch. Yet where nothing the
body reads into Python differs, every iteration makes the same builder operations as the one before,
on the values the one before made. So a ``range`` whose bounds every program shares, on a batch
being recorded, watches its iterations 1 and 2 (0 may differ: an index of 0 is made another way),
and where they match, makes the iterations after 2 from iteration 2's steps: each step called again,
and recorded, as the body would have called it, on this iteration's values and the last one's.

They match where:

- iteration 2 holds only builder operations, reductions and scans, and no guard (nothing read into
  Python) but of a value made before iteration 1 (an inner loop's bound) or one it made from
  constants alone (``tl.load``'s ``other`` read by Triton's front end): the same each iteration;
- its first step makes the loop's index from the Python int (the assignment the switch adds to
  make a loop variable a tensor, 3.2 on): only that step's constant may differ, and it is each
  iteration's index;
- every other step is iteration 1's: the same function and constants, and each value it takes made
  at the same place in its iteration, or carried from the iteration before, or made before both;
- the loop's variables (the frame's locals) hold, after iteration 2, what they held after iteration
  1: the same immutable Python values, and tensors made at the same place in each iteration, or the
  same tensor. A local that holds a list, a dict or any other object the body might change stops it.

At the end, each tensor the frame holds from iteration 2 is given the handle the last iteration made
at its place, so the code after the loop reads the last iteration's values, as after the body's own.
An index that leaves the type the template made it with ends the replay there, and the body runs
the rest.
"""

import functools
import sys
import types

from . import replay
from .steps import BUILDER, Guard, SequenceOf, Slot, TensorOf, foldable, operation_name

__all__ = ["iterate", "MIN_TRIPS", "replayed_iterations"]

#: Trips below which a loop is left to Python: iterations 0-2 run the body, and what is left gains little.
MIN_TRIPS = 6
_INDEX_MAKERS = {"get_int32": (-2 ** 31, 2 ** 31), "get_int64": (-2 ** 63, 2 ** 63)}
#: Iterations made from a template since the process began (what tests and benchmarks read).
replayed_iterations = 0


def iterate(values):
    """``values`` (a ``range``) as the loop's iterable: watched while a batch is being recorded."""
    recorder = replay.recording()
    if recorder is None or len(values) < MIN_TRIPS:
        return values
    return _Loop(values, recorder)


class _Loop:
    """A shared ``range``'s iterator on a recorded batch: it notes the recording and the kernel's
    variables at the start of iterations 1, 2 and 3, and at 3 makes what it can from a template."""

    def __init__(self, values, recorder):
        self.values, self.recorder, self.position = values, recorder, 0
        self.marks = []  # (steps recorded, slots made, the frame's locals) at the start of iterations 1, 2, 3

    def __iter__(self):
        return self

    def __next__(self):
        k, values, recorder = self.position, self.values, self.recorder
        if k >= len(values):
            raise StopIteration
        if k in (1, 2, 3) and recorder is replay.recording() and recorder.broken is None:
            if k == 1:
                self.marks = []
            self.marks.append((len(recorder.steps), recorder.size, dict(sys._getframe(1).f_locals)))
            if k == 2:
                self.kept_below = recorder.keep_below
                recorder.keep_below = max(recorder.keep_below, self.marks[0][1])
            elif k == 3:
                recorder.keep_below = self.kept_below
                k = self._replay()
                if recorder.keep_below == 0:
                    recorder.kept.clear()
        self.position = k + 1
        if k >= len(values):
            raise StopIteration
        return values[k]

    def _replay(self):
        """Make iterations 3.. from iteration 2's steps; the next iteration for the body (3 where
        the iterations do not match)."""
        global replayed_iterations
        if len(self.marks) != 3:
            return 3
        recorder = self.recorder
        (n1, a1, _), (n2, a2, before), (n3, b2, after) = self.marks
        first, template = recorder.steps[n1:n2], recorder.steps[n2:n3]
        carried = _matching(first, template, a1, a2, b2, self.values[1:3])
        if carried is None:
            return 3
        made = _carried_from(before, after, a1, a2, b2)
        if made is None or not carried <= made.keys():
            return 3
        index_maker = template[0][0]
        low, high = _INDEX_MAKERS[operation_name(index_maker)]
        previous = {p: made[p].handle for p in carried}
        releases = _releases(template, a2, carried | made.keys())
        values, k = self.values, 3
        while k < len(values) and low <= values[k] < high:
            previous = _iteration(recorder, template, index_maker, values[k], previous, a1, a2, recorder.kept, releases)
            replayed_iterations += 1
            k += 1
        if k > 3:
            for position, tensor in made.items():
                tensor.handle = previous[position]
        return k


def _matching(first, template, a1, a2, b2, indices):
    """The places in iteration 1 that iteration 2 takes values from, where the two make the same
    operations (see the module) and each begins by making its index (``indices``); None where not."""
    if len(first) != len(template) or b2 - a2 != a2 - a1 or not template:
        return None
    carried = set()

    def same(one, two):
        kind = type(two)
        if kind is not type(one):
            return False
        if kind is Slot or kind is TensorOf:
            if kind is TensorOf and (one.kind is not two.kind or one.type != two.type):
                return False
            s1, s2 = one.index, two.index
            if s2 >= a2:
                return a1 <= s1 < a2 and s2 - a2 == s1 - a1
            if s2 >= a1:
                carried.add(s2 - a1)
                return s1 < a1
            return s1 == s2
        if kind is SequenceOf:
            return one.kind is two.kind and len(one.items) == len(two.items) and all(map(same, one.items, two.items))
        if kind is tuple or kind is list:
            return len(one) == len(two) and all(map(same, one, two))
        if kind is dict:
            return one.keys() == two.keys() and all(same(one[name], two[name]) for name in two)
        return _equal_constants(one, two)

    constants = set()  # iteration 2's slots made from constants alone, the index aside: the same each iteration
    for number, (one, two) in enumerate(zip(first, template)):
        if type(one) is Guard or type(two) is Guard:
            if type(one) is not type(two) or one.read is not two.read or one.value != two.value or not (
                    two.index in constants and two.index - a2 == one.index - a1 or two.index == one.index < a1):
                return None
            continue
        if not _replayable(two[0], two[1]):
            return None
        if one[0] is not two[0] and not _same_partial(one[0], two[0]):
            return None
        if number == 0:
            if operation_name(two[0]) not in _INDEX_MAKERS or len(two[1]) != 2 or two[2] or \
                    (one[1][1], two[1][1]) != tuple(indices) or type(two[1][1]) is not int:
                return None
        elif not same(one[1], two[1]) or not same(one[2], two[2]):
            return None
        out1, out2 = one[3], two[3]
        if not (out1 is None and out2 is None or same(out1, out2)):
            return None
        if number and foldable(two, two[4], constants):
            constants.add(two[3].index)
    return carried


def _replayable(function, arguments):
    """A builder operation, or a reduction's or scan's ``apply`` (``replay.recording_class``)."""
    return arguments[:1] == (BUILDER,) and type(function) is types.FunctionType or \
        type(function) is functools.partial


def _same_partial(one, two):
    """Two reductions' bound ``apply`` of the same kind: the same function, on reduce or scan objects
    of one class with the same attributes (axis, combine function)."""
    if type(one) is not functools.partial or type(two) is not functools.partial or one.func is not two.func:
        return False
    if one.keywords != two.keywords or len(one.args) != len(two.args):
        return False
    return all(a is b or type(a) is type(b) and vars(a) == vars(b) for a, b in zip(one.args, two.args))


_IMMUTABLE = (int, float, bool, str, bytes, complex, type(None))


def _equal_constants(one, two):
    if one is two:
        return True
    if type(one) is not type(two):
        return False
    if type(two) is float:
        return repr(one) == repr(two)  # -0.0 is not 0.0, and NaN is itself
    if type(two) in _IMMUTABLE:
        return one == two
    if type(two) is tuple:
        return len(one) == len(two) and all(map(_equal_constants, one, two))
    try:
        return bool(one == two)  # a type, a dtype, a block's type, an enum: a trace keeps them as constants too
    except Exception:
        return False


def _carried_from(before, after, a1, a2, b2):
    """{place in iteration 2: the tensor a local holds from there}, where the frame's locals after
    iteration 2 (``after``) correspond to those after iteration 1 (``before``); else None."""
    import triton.language as tl

    if before.keys() != after.keys():
        return None
    made = {}
    for name, value in after.items():
        old = before[name]
        if type(value) is tl.core.tensor:
            slot = _slot(value.handle)
            if slot is None or type(old) is not tl.core.tensor or old.type != value.type:
                return None
            if a2 <= slot < b2:
                if _slot(old.handle) != slot - a2 + a1:
                    return None
                made[slot - a2] = value
            elif old is not value:
                return None
        elif not _unchanging(value, old):
            return None
    return made


def _slot(handle):
    tag = getattr(handle, "_kwshim_slot", None)
    return None if tag is None or tag[0] is not replay.recording() else tag[1]


def _unchanging(value, old):
    """Whether a local that is no tensor is one the body cannot have changed, and the same as before."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        return isinstance(old, tl.constexpr) and _equal_constants(value.value, old.value)
    if type(value) in _IMMUTABLE or type(value) is tuple:
        return _equal_constants(value, old) and _immutable(value)
    if isinstance(value, tl.dtype):  # made anew by the front end (``x.dtype.element_ty``), and never changed
        return _equal_constants(value, old)
    if isinstance(value, (types.FunctionType, types.ModuleType, type)) or callable(value) and \
            hasattr(value, "fn"):  # a jitted function
        return value is old
    return False


def _immutable(value):
    return type(value) in _IMMUTABLE or type(value) is tuple and all(map(_immutable, value))


def _releases(template, a2, held):
    """For each step of ``template``, the places of its iteration it is the last to take, but those
    ``held`` (the next iteration's, or the frame's): an iteration holds no more than the body would."""
    last = {}
    for number, step in enumerate(template):
        for slot in [step.index] if type(step) is Guard else step[4]:
            if slot >= a2:
                last[slot - a2] = number
    releases: list = [()] * len(template)
    for place, number in last.items():
        if place not in held:
            releases[number] += (place,)
    return releases


def _iteration(recorder, template, index_maker, index, previous, a1, a2, kept, releases):
    """One iteration from ``template`` (iteration 2's steps), recorded: {place: handle} of it."""
    import triton.language as tl

    current = {}

    def value(template_item):
        kind = type(template_item)
        if kind is Slot or kind is TensorOf:
            slot = template_item.index
            handle = current[slot - a2] if slot >= a2 else previous[slot - a1] if slot >= a1 else kept[slot]
            return handle if kind is Slot else template_item.kind(handle, template_item.type)
        if kind is SequenceOf:
            return template_item.kind(value(item) for item in template_item.items)
        return template_item

    def bind(out, result):
        kind = type(out)
        if kind is Slot:
            current[out.index - a2] = result.handle if isinstance(result, tl.core.tensor) else result
        elif kind is SequenceOf:
            for item, each in zip(out.items, result):
                bind(item, each)

    builder = recorder.builder
    result = recorder.call(index_maker, (index,), {}, builder)
    bind(template[0][3], result)
    for step, released in zip(template[1:], releases[1:]):
        if type(step) is Guard:  # of a constant, or of a value made before the loop: what it read before
            recorder.read(step.read, current[step.index - a2] if step.index >= a2 else kept[step.index], step.value)
        else:
            function, arguments, keywords, out, _ = step
            if arguments[:1] == (BUILDER,):
                result = recorder.call(function, tuple([value(a) for a in arguments[1:]]),
                                       {name: value(v) for name, v in keywords.items()}, builder)
            else:
                result = recorder.call(function, tuple([value(a) for a in arguments]),
                                       {name: value(v) for name, v in keywords.items()})
            if out is not None:
                bind(out, result)
        for place in released:
            del current[place]
    return current
