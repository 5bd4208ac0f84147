"""Trace a batch once, replay it after: a kernel's Python body runs once per specialization.

A batch (``program_axis``) runs the kernel's Python body once per chunk of programs, and for a small
block the front end (``semantic``, ``core``, the interpreter's ``_patch_lang`` for every jitted
helper) costs more than the arithmetic. Yet the body makes the same operations every time, as long
as what steers its Python is the same. Those are the guards:

- the specialization (``specialization.key``): the kernel, the builder's class (the numerics) and options,
  Triton's environment variables (``TRITON_*``: knobs the front end reads), each tensor argument's
  Triton type and its handle's NumPy type and shape, and every other argument's value (constexprs,
  and floats, which the body turns into constants);
- every value the body reads from a tensor: ``bool()`` and ``index()``, that is ``if``, ``while``
  and ``range`` (``program_axis.on_read``), each recorded with the value it had;
- the launch's ``num_warps``, where the body read it (``tl.extra.cuda.num_warps()``); else any warps.

The first batch of a specialization runs the body and records its builder operations, reductions
and scans as steps on numbered slots (``Recorder``); the launch's tensor arguments are the inputs.
Later batches replay the steps on their own arguments (``Trace.replay``): no front end runs. A guard
is read again there; another value is a ``Miss``, and the body runs and is recorded again. Stores
wait in the batch's ``StoreLog`` until it commits, so a replay that misses has written nothing.

A loop whose bounds differ between programs (``program_range``'s lockstep ``range``) records its trip
count and each index as steps (``recorded``), and its index's arithmetic with ints too. A body
that hands a recorded step a value no step made cannot be replayed (``tl.sort``'s CPU path, a
tuple or tensor descriptor argument): its batches run the body each time, as before. A replay
releases each slot after its last use, so it holds no more than the body's own run would; the
traces kept are bounded (``_KEYS``, ``_PER_KEY``).
"""

import functools
import sys
import threading
from collections import OrderedDict

from .. import launch_state
from ..arithmetic import special_registers
from . import program_axis, replay_code
from .specialization import constant_types as _constant_types, key
from .steps import (BUILDER, DIVERGED, OPERATION_NAMES, Folded, Guard, SequenceOf, Slot, TensorOf, foldable,
                    merged, only_a_type, slots_in)

__all__ = ["Miss", "DIVERGED", "Recorder", "Trace", "key", "traces", "keep", "seen_before", "clear",
           "tracing_builder_class", "recording_class", "recorded", "recording"]

_INTERPRETER = "triton.runtime.interpreter"
#: Specializations whose traces are kept (least recently used dropped), and traces per specialization
#: (one per set of guard values: a scalar that reaches ``range`` makes one for each value it takes).
_KEYS = 256
_PER_KEY = 32
#: Replays walked before a trace becomes one function (``replay_code``): compiling its source costs
#: about as much as two walks, so a trace replayed once or twice never pays it.
_COMPILED_AFTER = 3

_TRACES: "OrderedDict[tuple, list]" = OrderedDict()
#: Specializations of one-program launches seen once (``seen_before``), least recently seen dropped.
_SEEN: "OrderedDict[tuple, None]" = OrderedDict()
_SEEN_KEYS = 4096
_LOCK = threading.Lock()
#: The recorder of the batch now running its body, or None.
_RECORDING = None


class Miss(Exception):
    """A replayed guard read another value than the trace's: the body must run. Where the guard is
    known, ``position`` is its step and ``value`` what it read there (``DIVERGED``: the programs
    disagree). The traces of one key share their steps up to the first guard whose values differ,
    so the miss tells which other traces could hold (``Trace.may_hold``)."""

    def __init__(self, position=None, value=None):
        super().__init__()
        self.position, self.value = position, value


#: The interpreter's handles that hold others (``batching_rules.HELD``): a step's result, kept in a slot.
_HELD_HANDLES = ("TensorDescHandle", "BlockPointerHandle")


class _Unrecordable(Exception):
    pass


def traces(launch_key, hint=None):
    """The traces kept for ``launch_key``: those recorded under ``hint`` first (a group of programs'
    value, ``program_groups``: a group tries the trace its value made before the others'), then
    the rest, most recent first."""
    with _LOCK:
        found = _TRACES.get(launch_key)
        if found is None:
            return ()
        _TRACES.move_to_end(launch_key)
        if hint is None:
            return tuple(found)
        return tuple(sorted(found, key=lambda trace: trace.hint != hint))  # stable: most recent first


def keep(launch_key, trace):
    with _LOCK:
        kept = _TRACES.setdefault(launch_key, [])
        kept.insert(0, trace)
        del kept[_PER_KEY:]
        _TRACES.move_to_end(launch_key)
        while len(_TRACES) > _KEYS:
            _TRACES.popitem(last=False)


def seen_before(launch_key):
    """Whether a launch of ``launch_key`` was seen before; this one is noted. A launch of one program
    gains nothing from a batch but the replays after it, so its body is recorded at its
    specialization's second launch: a kernel launched once (a test's) never pays the recording."""
    if launch_key is None:
        return False
    with _LOCK:
        if launch_key in _SEEN:
            _SEEN.move_to_end(launch_key)
            return True
        _SEEN[launch_key] = None
        while len(_SEEN) > _SEEN_KEYS:
            _SEEN.popitem(last=False)
        return False


def clear():
    """Forget every trace, and every launch seen (the switch going off)."""
    with _LOCK:
        _TRACES.clear()
        _SEEN.clear()


def _interpreter():
    return sys.modules[_INTERPRETER]


class Recorder:
    """The steps of one run of a kernel's body, on slots: the launch's tensor arguments first, then
    every handle a recorded step made (each handle carries its slot as ``_kwshim_slot``)."""

    def __init__(self, args):
        import triton.language as tl

        self.size, self.steps, self.inputs, self.depth, self.broken = 0, [], [], 0, None
        self.warps_reads = special_registers.warps_reads  #: the body's reads of num_warps before it ran
        self.builder = None  #: the builder object of the body's builder operations
        #: handles of slots below ``keep_below`` that steps take, kept for ``loop_replay`` while it
        #: watches an iteration (0: none)
        self.keep_below, self.kept = 0, {}
        self._language, self._handle = tl, _interpreter().TensorHandle  # looked up once: every argument asks
        for name, value in args.items():
            if isinstance(value, tl.core.tensor):
                self.inputs.append((name, self._tag(value.handle)))

    def _tag(self, handle):
        slot = self.size
        self.size += 1
        handle._kwshim_slot = (self, slot)
        return slot

    def _slot_of(self, handle):
        tag = getattr(handle, "_kwshim_slot", None)
        if tag is None or tag[0] is not self:
            raise _Unrecordable(f"a {type(handle).__name__} that no recorded step made")
        return tag[1]

    def _argument(self, value, used):
        """The template of ``value``, an argument of a step; the slots it names are added to ``used``."""
        tl = self._language
        if isinstance(value, self._handle) or type(value).__name__ in _HELD_HANDLES:
            slot = self._slot_of(value)
            used.append(slot)
            if slot < self.keep_below:
                self.kept[slot] = value
            return Slot(slot)
        if isinstance(value, tl.core.tensor):
            if type(value).__init__ is not tl.core.tensor.__init__:
                raise _Unrecordable(f"a {type(value).__name__}")
            slot = self._slot_of(value.handle)
            used.append(slot)
            if slot < self.keep_below:
                self.kept[slot] = value.handle
            return TensorOf(slot, value.type, type(value))
        if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
            named = len(used)
            items = [self._argument(item, used) for item in value]
            if type(value) is tuple and len(used) == named and SequenceOf not in map(type, items):  # constants
                return value
            return SequenceOf(type(value), items)
        if isinstance(value, getattr(tl.core, "tuple", ())) and type(value) is not tuple:  # a tl.tuple of constants
            if any(isinstance(self._argument(item, []), (Slot, TensorOf, SequenceOf)) for item in value.values):
                raise _Unrecordable("a tl.tuple of tensors")
            return value
        if isinstance(value, tl.constexpr):
            self._argument(value.value, [])
            return value
        if isinstance(value, _constant_types()) or hasattr(type(value), "__members__"):  # pybind11's enums
            return value
        raise _Unrecordable(f"an argument of type {type(value).__name__}")

    def _result(self, value):
        if isinstance(value, self._handle) or type(value).__name__ in _HELD_HANDLES:
            return Slot(self._tag(value))
        if isinstance(value, self._language.core.tensor):
            return Slot(self._tag(value.handle)) if isinstance(value.handle, self._handle) else None
        if type(value) in (list, tuple):
            return SequenceOf(type(value), [self._result(item) for item in value])
        return None

    def call(self, function, args, kwargs, builder=None):
        """``function(*args, **kwargs)`` (``function(builder, *args, **kwargs)`` for a builder method),
        recorded as a step where it is the body's own call (not one a recorded step makes inside)."""
        given = args if builder is None else (builder,) + args
        if self.depth or self.broken is not None:
            return function(*given, **kwargs)
        used: list = []  # the slots the step reads, in order
        try:
            arguments = tuple([self._argument(a, used) for a in args])
            keywords = {name: self._argument(v, used) for name, v in kwargs.items()} if kwargs else {}
        except _Unrecordable as exc:
            self.broken = str(exc)
            return function(*given, **kwargs)
        if builder is not None:
            arguments = (BUILDER,) + arguments
            self.builder = builder
        self.depth += 1
        try:
            result = function(*given, **kwargs)
        finally:
            self.depth -= 1
        self.steps.append((function, arguments, keywords, self._result(result), used))
        return result

    def read(self, read, handle, value):
        """The body read ``value`` from ``handle`` into Python (``program_axis.on_read``): a guard."""
        if self.depth or self.broken is not None:
            return
        try:
            slot = self._slot_of(handle)
        except _Unrecordable as exc:
            self.broken = f"Python read {exc}"
            return
        if slot < self.keep_below:
            self.kept[slot] = handle
        self.steps.append(Guard(read, slot, value))

    def trace(self, per_program):
        """The recorded run as a ``Trace``, or None where it cannot be replayed."""
        return None if self.broken is not None else Trace(self, per_program)


_ANY_WARPS = object()


class Trace:
    """A recorded run of a kernel's body, replayed on another launch's arguments (see the module)."""

    def __init__(self, recorder, per_program):
        self.size, self.inputs, self.per_program = recorder.size, tuple(recorder.inputs), per_program
        self.hint = None  #: the value of the group of programs it was recorded for (``traces``)
        #: the launch's num_warps where the body read it (a constant of the steps), else any
        self.warps = launch_state.launch_warps if special_registers.warps_reads != recorder.warps_reads \
            else _ANY_WARPS
        recorded = merged([step for step in recorder.steps if type(step) is Guard or not only_a_type(step, step[4])])
        last = {}
        for number, step in enumerate(recorded):
            if type(step) is Guard:
                last[step.index] = number
                continue
            for slot in step[4]:
                last[slot] = number
            out = step[3]
            if type(out) is Slot:
                last.setdefault(out.index, number)  # made and never used: released at once
            elif out is not None:
                for slot in slots_in(out):
                    last.setdefault(slot, number)
        releases: list = [()] * len(recorded)
        for slot, number in last.items():
            releases[number] += (slot,)
        steps, constants = [], set()  # constants: slots made from constants alone (folded)
        for number, step in enumerate(recorded):
            if type(step) is Guard:
                steps.append(Guard(step.read, step.index, step.value, releases[number]))
                continue
            used, step = step[4], (step[0], step[1], step[2], step[3], releases[number])
            if foldable(step, used, constants):
                constants.add(step[3].index)
                step = Folded(step)
            steps.append(step)
        self.steps = tuple(steps)
        self.walked, self.code = 0, None  #: replays by the walk; the steps as one function (``replay_code``)
        recorder.steps = []  # the recorder lives on in its handles' tags (a folded one's too); its steps need not

    def replay(self, builder, args):
        """The recorded steps on ``args``' handles (``Miss`` where a guard reads another value, or the
        body read another launch's num_warps)."""
        if self.warps is not _ANY_WARPS and self.warps != launch_state.launch_warps:
            raise Miss()
        if self.code is not None:
            return self.code(builder, args)
        self._walk(builder, args)
        self.walked += 1
        if self.walked == _COMPILED_AFTER:
            self.code = replay_code.compiled(self, Miss)

    def may_hold(self, misses):
        """Whether this trace's guards can hold where others of its key missed (``misses``: each
        ``(position, value read)``): up to there it made the same steps, so its guard there must hold
        that value, and where the programs disagreed (``DIVERGED``) it must have no guard there (a
        range run in lockstep); one differing earlier misses earlier. Skipping costs a recording at most."""
        steps = self.steps
        for position, value in misses:
            step = steps[position] if position < len(steps) else None
            holds = type(step) is not Guard if value is DIVERGED else type(step) is Guard and step.value == value
            if not holds:
                return False
        return True

    def _walk(self, builder, args):
        import triton.language as tl

        values = [None] * self.size
        for name, slot in self.inputs:
            values[slot] = args[name].handle
        make_tensor = tl.core.tensor

        def resolve(item):
            kind = type(item)
            if kind is Slot:
                return values[item.index]
            if kind is TensorOf:
                return item.kind(values[item.index], item.type)
            if kind is SequenceOf:
                return item.kind(resolve(i) for i in item.items)
            if item is BUILDER:
                return builder
            return item

        def bind(template, result):
            kind = type(template)
            if kind is Slot:
                values[template.index] = result.handle if isinstance(result, make_tensor) else result
            elif kind is SequenceOf:
                for item, each in zip(template.items, result):
                    bind(item, each)

        for position, step in enumerate(self.steps):
            folded = None
            if type(step) is Folded:
                if step.value is not None:  # made by an earlier replay
                    values[step.index] = step.value
                    for slot in step.release:
                        values[slot] = None
                    continue
                folded, step = step, step.step  # made now, as any step, and kept
            if type(step) is Guard:
                found = replay_code.read_guard(step.read, values[step.index], Miss, position)
                if found != step.value:
                    raise Miss(position, found)
                for slot in step.release:
                    values[slot] = None
                continue
            function, arguments, keywords, out, release = step
            result = function(*[resolve(a) for a in arguments],
                              **{name: resolve(v) for name, v in keywords.items()})
            if out is not None:
                bind(out, result)
            if folded is not None:
                folded.value = values[folded.index]
            for slot in release:
                values[slot] = None


@functools.lru_cache(maxsize=None)
def tracing_builder_class(batched_class):
    """``batched_class`` (``program_axis.batched_builder_class``) recording each of its operations
    that the body calls while a ``Recorder`` runs."""
    from .batching_rules import operations

    recorded = {name: _recording_method(getattr(batched_class, name))
                for name in operations(batched_class) if not name.startswith("set_")}
    for name in recorded:
        OPERATION_NAMES.setdefault(getattr(batched_class, name), name)
    return type("TracingBuilder", (batched_class,), recorded)


def _call(function, args, kwargs, builder=None):
    """``function(*args, **kwargs)`` (with ``builder`` first for a builder method), recorded by the
    ``Recorder`` running, if any (``Recorder.call``)."""
    recorder = _RECORDING
    if recorder is None:
        return function(*args, **kwargs) if builder is None else function(builder, *args, **kwargs)
    return recorder.call(function, args, kwargs, builder)


def _recording_method(function):
    def operation(self, *args, **kwargs):
        return _call(function, args, kwargs, builder=self)

    operation.__name__ = getattr(function, "__name__", "operation")
    return operation


@functools.lru_cache(maxsize=None)
def recording_class(reduce_or_scan):
    """The reduce or scan class ``reduce_or_scan`` (kwshim's, with a program axis) recording each
    ``apply`` as a step on the instance (its axis and combine function)."""
    apply = reduce_or_scan.apply

    def recorded_apply(self, input):
        return _call(functools.partial(apply, self), (input,), {})

    namespace = {"apply": recorded_apply, "__module__": reduce_or_scan.__module__}
    return type(reduce_or_scan.__name__, (reduce_or_scan,), namespace)


def handle_truth_entry():
    """``(owner, name, value)``: ``bool()`` of a handle, which the interpreter's own Python may read
    outside any recorded step, ending the recording there (the trace could not know the value)."""
    handle_class = _interpreter().TensorHandle
    original = handle_class.__bool__

    def __bool__(self):
        recorder = _RECORDING
        if recorder is not None and not recorder.depth and recorder.broken is None:
            recorder.broken = "Python read a handle's truth outside a tensor's bool()"
        return original(self)

    return handle_class, "__bool__", __bool__


def recorded(function):
    """``function`` recorded as one step where the body calls it while a ``Recorder`` runs (for
    Python that computes a tensor from tensors outside the builder: ``program_range``'s loop index)."""

    @functools.wraps(function)
    def step(*args, **kwargs):
        return _call(function, args, kwargs)

    return step


def recording():
    """The ``Recorder`` of the batch now running its body, or None."""
    return _RECORDING


def start(recorder):
    """Make ``recorder`` the one the recorded operations and ``program_axis.on_read`` report to
    (``None``: none)."""
    global _RECORDING
    _RECORDING = recorder
    program_axis.on_read = None if recorder is None else recorder.read
