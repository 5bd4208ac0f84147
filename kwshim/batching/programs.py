"""How the interpreter runs a launch's programs: the ``grid`` setting (``settings.GRIDS``).

- ``"sequential"``: Triton's own loop, program 0, then 1, ... (nothing of kwshim's runs);
- ``"batched"``: the programs run together, in chunks, with a program axis on every value
  (``program_axis``); a chunk whose Python control flow differs between its programs runs as
  groups of programs that agree (``program_groups``), or as its runs of programs that agree
  (``Diverged``), one after another; a chunk that cannot give the loop's bits falls back to the
  loop, from the state before that chunk (whose writes were never made), and the kernel remembers
  why, so that its next launch goes straight to the loop;
- ``"check"``: both from the same state, compared bit for bit; ``GridDivergenceError`` names the
  kernel, the argument and the first differing element, and the loop's result is left in place (a
  launch of one program runs once, as the loop: a second run of a kernel that reads ``globaltimer``
  would differ from the first).

A launch of one program gains only what a trace saves: from its specialization's second launch on
it is recorded, then replayed (``replay.seen_before``); its first runs the loop.

The seam is the interpreter's grid: ``GridExecutor.__call__`` computes the grid from the converted
arguments after it has patched ``triton.language``, and then loops; kwshim hands it a grid callable
that runs the programs itself and returns an empty grid (2.2-3.9). A chunk is 64 programs, then
as many as keep the largest block within 2**22 elements (at most 4096).
"""

import functools
import inspect
import sys
import threading
from typing import Dict

import numpy as np

from ..arithmetic import dot_chains
from ..compat.interpreter import launched_function, module_wide_builder
from .. import launch_state
from ..errors import OutOfBoundsError
from ..interpreter import bounds, fixes, language_patch, refusals
from ..settings import in_force
from . import launch_counts, plain_launch, program_groups, replay
from .launch_counts import launch_record, merge_records  # noqa: F401  (the pytest door reads them here)

__all__ = ["install", "CHECK_MOST_BYTES", "fallback_reasons", "launch_record", "merge_records", "batching_works"]

_INTERPRETER = "triton.runtime.interpreter"
_FIRST_CHUNK = 64
#: ``grid="check"`` compares a launch whose tensors hold at most this many bytes: it copies them twice
#: (the state before, the loop's result), so its own memory stays under twice this beside them. A
#: larger launch runs the loop alone, counted (``launch_counts.too_large_to_check``) and summarized.
CHECK_MOST_BYTES = 2 ** 30
_CHUNK_ELEMENTS = 2 ** 22
_MOST_PROGRAMS = 4096

#: kernel function -> why its last batch fell back (the next launch runs the loop at once).
_FALLBACKS: Dict[object, str] = launch_counts.REASONS
_FALLBACK_LOCK = threading.Lock()
#: kernel functions whose programs read back their own writes: their batches write through (``own_writes``)
_WRITE_THROUGH: set = set()


def fallback_reasons() -> Dict[str, str]:
    """{kernel name: why it runs one program at a time} for the kernels that fell back."""
    with _FALLBACK_LOCK:
        return {getattr(fn, "__qualname__", repr(fn)): reason for fn, reason in _FALLBACKS.items()}


def forget(fn) -> None:
    """Forget that the kernel function ``fn`` fell back, or would not run as program groups: its next
    launch tries a batch again. ``fn`` as written: the grid runs the interpreter's rewrite of it on
    3.6+ (``compat.launched_function``, or kwshim's own while the switch is on), and kwshim remembers
    that one."""
    launched = (fn, launched_function(fn), fixes.rewritten(fn))  # Triton's rewrite, or kwshim's (switch on)
    with _FALLBACK_LOCK:
        for key in launched:
            _FALLBACKS.pop(key, None)
            _WRITE_THROUGH.discard(key)
            program_groups.forget(key)


def batching_works() -> bool:
    """Whether the installed interpreter has what a batch needs (a module-wide builder, 3.0 on)."""
    return module_wide_builder()


def install(patch) -> None:
    """The grid seam, through ``patch`` (the switch's), where batching works: each launch runs its
    programs as the ``grid`` setting in force says (``settings.in_force()``, read per launch, so a
    nested activation's grid needs no patch of its own)."""
    interpreter = sys.modules.get(_INTERPRETER)
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None or not batching_works():
        return
    patch.setattr(executor, "__call__", _grid_call(vars(executor)["__call__"]))
    native = getattr(interpreter, "_interpreter", None)
    if native is not None:  # every load, store and atomic checked against the launch's memory (``bounds``)
        for owner, name, value in bounds.native_entries(native):
            patch.setattr(owner, name, value)
    patch.setattr(executor, "__init__", plain_launch.remembering_init(vars(executor)["__init__"]))
    if callable(vars(interpreter).get("_patch_lang")):
        patch.setattr(interpreter, "_patch_lang", language_patch.deferring_patch_lang(vars(interpreter)["_patch_lang"]))
    patch.on_undo(replay.clear)


def _grid_call(original):
    def __call__(self, *args_dev, **kwargs):
        launch_counts.launched()
        if launch_state.graph_recorder is not None:  # a CUDA graph captures: its replay launches this again
            launch_state.graph_recorder(functools.partial(__call__, self), args_dev, kwargs)
        chained, dot_chains.launch_chained = dot_chains.launch_chained, dot_chains.chains_dots(self.fn)
        allocations = launch_state.allocations
        if in_force().check_bounds:
            launch_state.allocations = bounds.Allocations(self.fn, args_dev, kwargs)
        try:
            return _launch(self, *args_dev, **kwargs)
        finally:
            dot_chains.launch_chained = chained
            launch_state.allocations = allocations

    def _launch(self, *args_dev, **kwargs):
        mode = in_force().grid
        if mode == "sequential":
            return _refused_as_compiled(original, self, *args_dev, **kwargs)
        grid = self.grid
        self.grid = _Programs(self, grid, mode, args_dev, kwargs)
        language_patch.defer_language(self.fn)
        try:  # binding converts the arguments, which may raise: undone below, as on Triton's own path
            args = plain_launch.bound(self, args_dev, kwargs) if mode == "batched" else None
            if args is not None:
                return _refused_as_compiled(_plain_call, self, args)
            return _refused_as_compiled(original, self, *args_dev, **kwargs)
        finally:
            self.grid = grid
            language_patch.defer_language(None)

    return __call__


def _plain_call(executor, args):
    """What ``GridExecutor.__call__`` does with ``args`` bound (``plain_launch``), less the argument
    copies: the launch's (deferred) patch of ``triton.language``, the grid, undone at the end."""
    language = sys.modules[_INTERPRETER]._patch_lang(executor.fn)
    try:
        executor.grid(args)
    finally:
        getattr(language, "restore", _nothing)()


def _refused_as_compiled(call, *args, **kwargs):
    """``call(*args, **kwargs)``, what the front end refuses raised as compiled Triton raises it
    (``refusals``)."""
    try:
        return call(*args, **kwargs)
    except Exception as exc:
        out_of_bounds = _fallback_in(exc, OutOfBoundsError)
        if out_of_bounds is not None and out_of_bounds is not exc:  # kwshim's own, not the interpreter's wrapper
            raise out_of_bounds.with_traceback(None) from None
        refused = refusals.as_compiled(exc) if type(exc).__name__ == "InterpreterError" else None
        if refused is None:
            raise
        raise refused from exc


class _Programs:
    """The grid kwshim hands ``GridExecutor``: called with the converted arguments, it runs every
    program (batched, or checked) and returns an empty grid, so the interpreter's loop runs none."""

    def __init__(self, executor, grid, mode, args_dev, kwargs):
        self.executor, self.grid, self.mode = executor, grid, mode
        self.args_dev, self.kwargs = args_dev, kwargs

    def __call__(self, args):
        language = language_patch.deferred_language()
        make_language = _nothing if language is None else language.make
        if callable(self.grid) or self.mode == "check":
            make_language()  # a grid callable may compute with tensors; the check runs the loop
        grid = self.grid(args) if callable(self.grid) else self.grid
        grid = tuple(grid) + (1,) * (3 - len(grid))
        from ..errors import GridDivergenceError

        interpreter = sys.modules[_INTERPRETER]
        try:
            programs = grid[0] * grid[1] * grid[2]
            if self.mode == "check" and programs > 1:
                _checked(self.executor.fn, args, grid, self._tensors())
            elif self.mode == "check":  # one program runs once, as the loop
                make_language()
                _builder().set_grid_dim(*grid)
                _sequential(self.executor.fn, args, grid)
            else:
                _run(self.executor.fn, args, grid, make_language)
        except Exception as exc:  # wrapped as the interpreter's loop wraps what a program raises
            error = getattr(interpreter, "InterpreterError", None)
            if error is None or isinstance(exc, (error, GridDivergenceError)):
                raise
            raise error(repr(exc)) from exc
        return (0, 0, 0)

    def _tensors(self):
        """(name, tensor) for every tensor the launch reaches (``snapshot.reachable_tensors``)."""
        from ..snapshot import reachable_tensors

        return reachable_tensors(list(inspect.signature(self.executor.fn).parameters), self.args_dev, self.kwargs)


def _builder():
    return sys.modules[_INTERPRETER].interpreter_builder


def _sequential(fn, args, grid, first=0):
    """Triton's loop, from the program numbered ``first`` (x outermost, z innermost)."""
    builder = _builder()
    total = grid[0] * grid[1] * grid[2]
    for number in range(first, total):
        x, rest = divmod(number, grid[1] * grid[2])
        y, z = divmod(rest, grid[2])
        builder.set_grid_idx(x, y, z)
        fn(**args)


def _nothing():
    pass


def _run(fn, args, grid, make_language=_nothing):
    """The programs of a launch, batched where the kernel has not fallen back before. A batch whose
    Python control flow differs between its programs runs again as the leading run of programs that
    agree (``Diverged``); the rest follow, as the next chunks."""
    from . import own_writes
    from .program_axis import Diverged, Fallback
    from .records import READ_AFTER_WRITE

    builder = _builder()
    builder.set_grid_dim(*grid)
    total = grid[0] * grid[1] * grid[2]
    count_launch = launch_counts.count if total > 1 else launch_counts.not_counted
    with _FALLBACK_LOCK:
        known, write_through = fn in _FALLBACKS, fn in _WRITE_THROUGH
    launch_key = replay.key(fn, builder, args) if total > 0 and not known else None
    kept = replay.traces(launch_key) if launch_key is not None else ()
    if total < 1 or known or total == 1 and not kept and not replay.seen_before(launch_key):
        make_language()  # one program: the loop, until its specialization's second launch records it
        if known:
            count_launch(fn, batched=False)
        return _sequential(fn, args, grid)
    first, chunk, splits, replays = 0, _FIRST_CHUNK if not kept else _chunk_for(kept[0].per_program), 0, 0
    runs_after = []  # the runs of programs that agree after a split's leading run: the next batches
    while first < total:
        count = min(chunk, total - first)
        try:
            log, replayed = _batch(fn, args, grid, first, count, launch_key, make_language, write_through=write_through)
            replays += replayed
            reason = own_writes.conflict(log)
            if reason == READ_AFTER_WRITE and not write_through and own_writes.programs_apart(log):
                with _FALLBACK_LOCK:  # programs reading back their own writes: the chunk again, writing through
                    _WRITE_THROUGH.add(fn)
                write_through = True
                continue
        except Exception as exc:  # anything a batch cannot do, the loop does (or raises as Triton raises)
            if _fallback_in(exc, OutOfBoundsError) is not None:  # the loop stops at the program and line
                make_language()
                return _sequential(fn, args, grid, first)
            cause = _fallback_in(exc, Fallback)
            if isinstance(cause, Diverged) and count > 1:
                grouped = program_groups.run(fn, cause.values, first, count, functools.partial(
                    _batch, fn, args, grid, launch_key=launch_key, make_language=make_language), _native_store)
                if grouped is not None:
                    replays += grouped[0]
                    first += count
                    chunk = _chunk_for(max(1, grouped[1] // count))
                    continue
                if not program_groups.too_split(splits + 1, first):
                    splits += 1
                    chunk = cause.leading_run()
                    runs_after = cause.runs()[1:] if cause.values.size == count else []
                    continue
            reason = cause.reason if cause is not None else f"{type(exc).__name__} in a batch: {exc}"
        if reason is not None:
            with _FALLBACK_LOCK:
                _FALLBACKS[fn] = reason
            count_launch(fn, batched=False)
            make_language()
            return _sequential(fn, args, grid, first)
        log.commit(_native_store)
        first += count
        if runs_after and not program_groups.too_split(splits + 1, first):  # a split's next run: nothing to diverge
            splits += 1
            chunk = runs_after.pop(0)
        else:
            runs_after, chunk = [], _chunk_for(max(1, log.largest() // count))
    count_launch(fn, batched=True, replayed=replays > 0)
    return None


def _chunk_for(per_program):
    """Programs in a chunk whose largest block loaded or stored is ``per_program`` elements each."""
    return max(1, min(_MOST_PROGRAMS, _CHUNK_ELEMENTS // per_program))


def _fallback_in(exc, kind):
    """The ``kind`` exception that ``exc`` is or wraps (a jitted function the kernel calls wraps what it
    raises in ``InterpreterError``), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _batch(fn, args, grid, first, count, launch_key=None, make_language=_nothing, numbers=None, write_through=False,
           hint=None):
    """Run the programs ``first .. first + count - 1`` (or those ``numbers`` names, rising) together:
    a trace of the launch's specialization replayed where one is kept and its guards hold, else the
    kernel's body (recorded where the launch has a ``launch_key``; ``make_language`` first). Returns
    their deferred stores (a ``StoreLog``; with ``write_through``, an ``own_writes.WriteThroughLog``
    whose stores are written, and undone where the run raises) and whether a trace was replayed.
    ``hint``: the value of a group of programs (``program_groups``), whose traces are tried first."""
    from ..patching import Patch
    from . import own_writes, program_axis, program_range, reductions
    from .store_log import StoreLog

    builder = _builder()
    numbers = np.arange(first, first + count) if numbers is None else numbers
    count = numbers.size
    x, rest = np.divmod(numbers, grid[1] * grid[2])
    y, z = np.divmod(rest, grid[2])
    program_ids = tuple(axis.astype(np.int32) for axis in (x, y, z))
    batched_class = program_axis.batched_builder_class(type(builder))
    new_log = functools.partial(own_writes.WriteThroughLog, count, _native_store) if write_through else \
        functools.partial(StoreLog, count)
    misses: list = []  # (guard, value read) where a trace missed: a trace that can hold agrees with each
    for trace in replay.traces(launch_key, hint) if launch_key is not None else ():
        if not trace.may_hold(misses):
            continue
        log = new_log()
        with Patch() as patch:
            patch.setattr(builder, "__class__", batched_class)
            patch.setattr(launch_state, "batch", _Batch(program_ids, log))
            try:
                trace.replay(builder, args)
            except replay.Miss as miss:
                log.undo()
                misses += [] if miss.position is None else [(miss.position, miss.value)]
                continue
            except BaseException:
                log.undo()
                raise
        return log, True
    make_language()  # the body runs: the interpreter's patch of triton.language
    log = new_log()
    recorder = replay.Recorder(args) if launch_key is not None else None
    with Patch() as patch:
        patch.setattr(builder, "__class__", batched_class if recorder is None else
                      replay.tracing_builder_class(batched_class))
        patch.setattr(launch_state, "batch", _Batch(program_ids, log))
        for owner, name, value in reductions.reduce_scan_entries():
            patch.set(owner, name, value if recorder is None else replay.recording_class(value))
        for owner, name, value in program_axis.tensor_entries() + program_range.range_entries(fn):
            patch.set(owner, name, value)
        patch.on_undo(language_patch.undo_helpers)  # made under the entries above: undone before them
        if recorder is not None:
            patch.set(*replay.handle_truth_entry())
            replay.start(recorder)
            patch.on_undo(lambda: replay.start(None))
        try:
            fn(**args)
        except BaseException:
            log.undo()
            raise
    if recorder is not None:
        trace = recorder.trace(max(1, log.largest() // count))
        if trace is not None:
            trace.hint = hint
            replay.keep(launch_key, trace)
    return log, False


def _native_store(addresses, values):
    """The interpreter's own store loop, element by element in array order (the last write wins)."""
    sys.modules[_INTERPRETER]._interpreter.store(addresses, values, np.ones(addresses.shape, dtype=bool))


class _Batch:
    __slots__ = ("program_ids", "log")

    def __init__(self, program_ids, log):
        self.program_ids, self.log = program_ids, log


def _checked(fn, args, grid, tensors):
    """The loop and the batch from one state, compared bit for bit; the loop's result stays. Only
    the tensors whose bits differ are written back (``snapshot.State``)."""
    from ..errors import GridDivergenceError
    from ..snapshot import State, storage_bytes

    builder = _builder()
    builder.set_grid_dim(*grid)
    if storage_bytes(tensors) > CHECK_MOST_BYTES:  # its copies would double a launch this large: the loop alone
        launch_counts.too_large_to_check(fn)
        return _sequential(fn, args, grid)
    before = State(tensors)
    _sequential(fn, args, grid)
    looped = State(tensors)
    before.put(_same_bits)
    batched_before = launch_counts.batched_launches(fn)
    _run(fn, args, grid)
    compared = launch_counts.batched_launches(fn) > batched_before  # a batch that fell back compared the loop alone
    for (name, tensor), reference in zip(tensors, looped.values):
        index = _first_difference(reference, tensor)
        if index is not None:
            batched = _item(tensor, index)  # read before the loop's result is put back
            looped.put(_same_bits)
            raise GridDivergenceError(
                f"kwshim: kernel {getattr(fn, '__qualname__', fn)}: the batched grid left argument {name!r} "
                f"different from Triton's loop at index {index} ({batched} where the loop "
                f"stored {_item(reference, index)}): run it with grid='sequential' and report this")
    if compared:
        launch_counts.checked(fn)


def _same_bits(reference, tensor):
    return _first_difference(reference, tensor) is None


def _first_difference(reference, tensor):
    """The first index (a tuple) where the two tensors' bits differ, or None."""
    import torch

    if reference.shape != tensor.shape:
        return ()
    if reference.is_complex():
        reference, tensor = torch.view_as_real(reference), torch.view_as_real(tensor)
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(reference.element_size())
    if width is None or reference.dtype == torch.bool:
        differs = reference != tensor
    else:
        differs = reference.contiguous().view(width) != tensor.contiguous().view(width)
    if not bool(differs.any()):
        return None
    return tuple(int(i) for i in differs.nonzero()[0])


def _item(tensor, index):
    return tensor[index].item() if index else tensor
