"""One launch's kernel specialization compiled for the GPU the switch stands for, by the installed
Triton's own ``JITFunction.run(warmup=True)``: it binds the launch's arguments, specializes them
(dtypes, divisibility by 16, constexprs, ``num_warps``/``num_stages``) and caches the result as
compiled Triton does, in memory per kernel and on disk in Triton's cache.

Under ``TRITON_INTERPRET=1`` every ``@triton.jit`` function is an ``InterpretedFunction``, the
compiler's code generator calls such a helper as plain Python, and ``triton.language``'s own jitted
functions (``tl.zeros``, ``tl.sum``) are helpers too. So while a specialization compiles, each
``InterpretedFunction`` the kernel can reach (its globals and closure, the modules they name,
``triton.language``'s modules and the tensor methods) is swapped for a ``JITFunction`` of the same
function; ``triton.language`` is as it was before the interpreter wrapped its builtins (a helper
the interpreter calls wraps them and never restores them); and ``triton.runtime.driver.active``
answers as the target GPU. All of it is put back after.
"""

import functools
import importlib.util
import inspect
import sys
import types
import weakref

from .. import compat
from ..interpreter import LAUNCH_LOCK
from ..virtual_cuda.triton_driver import driver_entries

__all__ = ["compiled_for_launch", "compiled_kernels", "unavailable", "remember_language", "language_lost",
           "SourceUnavailable"]

#: Modules whose attributes are never a kernel's helpers: scanning them would cost, and find none.
_NOT_HELPERS = ("torch", "numpy", "triton.runtime", "triton.compiler", "triton.backends", "triton._C")

#: Held while a specialization is looked up or compiled: the interpreter's launch lock, since a
#: compile sets ``triton.language`` as compiled Triton sees it, which an interpreted launch in
#: another thread must not see (nor this compile the interpreter's patches).
_LOCK = LAUNCH_LOCK
_COMPILING: list = []  # non-empty while a specialization may compile
_KEPT: dict = {}  # kernel name -> the CompiledKernels compiled in this process (kwshim run --asm)


class SourceUnavailable(Exception):
    """A kernel, or a helper it calls, whose source compiled Triton cannot read (a function made by
    ``exec``): the check skips it."""


class _NotCompiled(Exception):
    """A lookup found no compiled specialization: compile it with the helpers swapped in."""


def compiled_for_launch(fn, grid, args, kwargs, gpu, options=None):
    """The ``CompiledKernel`` compiled Triton makes for launching ``fn`` (a kernel's Python function)
    with ``args``/``kwargs`` on ``gpu`` (``virtual_cuda.model.GPU``); what the compiler refuses is
    raised as compiled Triton raises it (``CompilationError``). ``options``: what ``@triton.jit`` was
    given (``repr``, ``do_not_specialize``, ``noinline``, ...), which the interpreter keeps.

    A specialization compiled before is looked up with only the driver answering as ``gpu``;
    compiling one (and a kernel's first lookup, which hashes its helpers) swaps in the helpers and
    ``triton.language`` as compiled Triton sees them, and puts everything back after."""
    with _LOCK:
        jit, driver = _target_function(fn, options), _driver_scope(gpu)
        interpreted = compat.kernel_classes().interpreted or ()  # isinstance(value, ()): never
        values = list(args) + list(kwargs.values())
        # kwshim's replacements are plain functions: the map is made only where a launch passes one
        replaced = _replaced() if any(type(value) is types.FunctionType for value in values) else {}
        given = [value for value in values if isinstance(value, interpreted)]
        if given or any(id(value) in replaced for value in values):
            # a jitted function given as a constexpr argument: compiled Triton takes its JITFunction;
            # a function kwshim replaced (tl.extra.cuda.globaltimer): the original
            def compiled_sees(value):
                return _target_of(value) if isinstance(value, interpreted) else replaced.get(id(value), value)

            args = tuple(compiled_sees(value) for value in args)
            kwargs = {name: compiled_sees(value) for name, value in kwargs.items()}
        functions = [jit] + [_target_of(value) for value in given]
        if all(getattr(function, "looked_up", False) for function in functions):
            try:
                return driver.call(jit.warmup, *args, grid=grid, **kwargs)
            except _NotCompiled:
                pass
        from ..patching import Patch

        with Patch() as patch:
            _as_compiled_triton_sees_it(patch, [fn] + [value.fn for value in given])
            _COMPILING.append(True)
            try:
                kernel = driver.call(jit.warmup, *args, grid=grid, **kwargs)
            finally:
                _COMPILING.pop()
        for function in functions:
            function.looked_up = True
        _remember(kernel)
        return kernel


def _replaced():
    """{id(a replacement kwshim made while the switch is on): what compiled Triton sees instead}: the
    libdevice functions' CPU implementations, and ``tl.extra.cuda``'s special registers."""
    from ..arithmetic import libdevice, special_registers

    return {**libdevice.originals(), **special_registers.originals()}


def _target_of(interpreted):
    return _target_function(interpreted.fn, getattr(interpreted, "kwargs", None))


def _remember(kernel):
    """Keep ``kernel`` (the first time it is compiled here) under its name, for ``compiled_kernels``."""
    kept = _KEPT.setdefault(getattr(kernel, "name", "?"), [])
    if not any(kernel is seen for seen in kept):
        kept.append(kernel)


def compiled_kernels(name):
    """Every specialization of the kernel named ``name`` this process compiled, in order."""
    return list(_KEPT.get(name, ()))


@functools.lru_cache(maxsize=None)
def unavailable():
    """Why the installed Triton cannot compile for the H200 here (no NVIDIA backend, no ptxas, no
    ``warmup``), as one line; None where it can. Probed by compiling a one-store kernel once."""
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401 - 3.0 on: a compiler target
        from triton.runtime.jit import JITFunction
    except ImportError as error:
        return f"this Triton has no compiler target for a GPU from a CPU ({error})"
    if not hasattr(JITFunction, "warmup"):
        return "this Triton's JITFunction has no warmup()"
    from ..virtual_cuda.model import H200

    try:
        import torch

        from .probe_kernel import one_store

        compiled_for_launch(one_store, (1,), (torch.zeros(1),), {}, H200)
    except Exception as error:  # noqa: BLE001 - whatever stops it is the reason
        text = str(error).strip().splitlines()
        return f"this Triton could not compile a one-store kernel for sm_90: {type(error).__name__}: " \
               f"{text[-1] if text else ''}"[:300]
    return None


@functools.lru_cache(maxsize=None)
def _driver_scope(gpu):
    """The ``Scope`` in which Triton's driver answers as ``gpu`` (all a lookup needs)."""
    from ..patching import Scope

    return Scope(driver_entries(gpu), _LOCK)


def read_as_compiled(read, roots):
    """``read()`` while ``triton.language`` and the helpers of ``roots`` (functions) are as compiled
    Triton sees them: a ``JITFunction``'s ``cache_key`` walks its globals and refuses kwshim's
    CPU libdevice functions ("Unsupported function referenced")."""
    from ..patching import Patch

    with _LOCK, Patch() as patch:
        _as_compiled_triton_sees_it(patch, roots)
        return read()


def _as_compiled_triton_sees_it(patch, roots):
    """Through ``patch``: ``triton.language`` as it was before the interpreter patched it (a helper
    the interpreter calls patches it and never restores it), and the helpers of ``roots`` (the
    kernel's function, and those given to it as arguments) as ``JITFunction``s."""
    values, owners, _ = _pristine_language()
    for owner, name, value in values:
        if vars(owner).get(name, _ABSENT) is not value:
            patch.setattr(owner, name, value)
    for owner, names in owners:  # what the interpreter added (3.0: tensor.__bool__ reads a value's data)
        for name in [name for name in vars(owner) if name not in names and _from_interpreter(vars(owner)[name])]:
            patch.on_undo(functools.partial(setattr, owner, name, vars(owner)[name]))
            delattr(owner, name)
    for owner, name, value in _helper_swaps(roots):
        if isinstance(owner, types.CellType):  # a closure's cell has no __dict__ for Patch to read
            patch.on_undo(functools.partial(setattr, owner, name, owner.cell_contents))
            owner.cell_contents = value
        else:
            patch.set(owner, name, value)


@functools.lru_cache(maxsize=None)
def _target_class():
    from triton.runtime.jit import JITFunction

    class TargetFunction(JITFunction):
        """A ``JITFunction`` made under the interpreter, for compiling only: its ``compile`` refuses
        to run outside ``compiled_for_launch``'s full swap (``_NotCompiled``). ``looked_up``: its
        helpers are hashed (a ``JITFunction``'s hash is its cache key, which reads its helpers: so
        it goes into no set)."""

        looked_up = False

        @property
        def compile(self):
            return _compile

        @compile.setter
        def compile(self, value):
            pass

    TargetFunction.__module__ = __name__
    return TargetFunction


_TARGETS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Python function -> TargetFunction


def _target_function(fn, options=None):
    found = _TARGETS.get(fn)
    if found is None:
        accepted = inspect.signature(_target_class().__init__).parameters
        options = {name: value for name, value in (options or {}).items() if name in accepted}
        try:
            found = _TARGETS[fn] = _target_class()(fn, **options)
        except (OSError, TypeError, ValueError) as error:  # "@jit functions should be defined in a Python file"
            raise SourceUnavailable(f"{getattr(fn, '__qualname__', fn)}: its source is in no file (made by exec?), "
                                    f"and compiled Triton reads it from one") from error
    return found


def _helper_swaps(roots):
    """``(owner, name, TargetFunction)`` for each ``InterpretedFunction`` the compiler can reach from
    ``roots`` (functions): in the globals and closure of each, and of each helper found
    (transitively), the modules those globals name (``op.exp``: one level, not the modules those import),
    ``triton.language``'s modules, and the tensor methods that call one; and, in the same
    namespaces, the original for each of kwshim's replacements of a libdevice or ``tl.extra.cuda``
    function (``_replaced``)."""
    interpreted = compat.kernel_classes().interpreted
    if interpreted is None:
        return []
    replaced = _replaced()  # a replacement bound by name while the switch was on: the original
    swaps, seen_namespaces, seen_functions = [], set(), set()
    pending = list(roots) + _language_modules()

    def target(value):
        pending.append(value.fn)
        return _target_function(value.fn, getattr(value, "kwargs", None))

    def scan(owner, names, named_modules=None):
        if id(owner) in seen_namespaces:
            return
        seen_namespaces.add(id(owner))
        for name, value in list(names.items()):
            if isinstance(value, interpreted):
                swaps.append((owner, name, target(value)))
            elif id(value) in replaced:
                swaps.append((owner, name, replaced[id(value)]))
            elif named_modules is not None and inspect.ismodule(value) and \
                    not str(vars(value).get("__name__", "")).startswith(_NOT_HELPERS):
                named_modules.append(value)

    while pending:
        item = pending.pop()
        if inspect.ismodule(item):
            scan(item, vars(item))
        elif inspect.isfunction(item) and id(item) not in seen_functions:
            seen_functions.add(id(item))
            module = sys.modules.get(item.__module__)
            owner = module if module is not None and vars(module) is item.__globals__ else item.__globals__
            scan(owner, item.__globals__, pending)
            for cell in item.__closure__ or ():
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if isinstance(value, interpreted):
                    swaps.append((cell, "cell_contents", target(value)))
    language = sys.modules.get("triton.language.core")
    tensor = getattr(language, "tensor", None)
    for name, method in list(vars(tensor).items()) if tensor is not None else ():
        helper = _closure_value(method, "fn")
        if isinstance(helper, interpreted):  # _tensor_member_fn's wrapper around a jitted function
            swaps.append((tensor, name, _target_function(helper.fn, getattr(helper, "kwargs", None))))
    return swaps


def _closure_value(function, name):
    code = getattr(function, "__code__", None)
    if code is None or name not in code.co_freevars or not function.__closure__:
        return None
    try:
        return function.__closure__[code.co_freevars.index(name)].cell_contents
    except ValueError:
        return None


def _compile(*args, **kwargs):
    if not _COMPILING:
        raise _NotCompiled()
    from triton.compiler import compile

    return compile(*args, **kwargs)


_ABSENT = object()
_PRISTINE: list = []


def remember_language() -> None:
    """Note ``triton.language`` as compiled Triton sees it (called when the switch goes on, before
    its launches; a builtin the interpreter has already wrapped is unwrapped). Only where this
    Triton has a compiler for GPUs (``triton.backends``, 3.0 on); what the interpreter replaced is
    looked for at the first compile, not here."""
    if not _PRISTINE and importlib.util.find_spec("triton.backends") is not None:
        _PRISTINE.append(_language_values())


def _pristine_language():
    """``(values, names, lost)``: ``triton.language`` as compiled Triton sees it (``_language_values``),
    with the originals of what the interpreter replaced found once, at the first call."""
    if not _PRISTINE:
        _PRISTINE.append(_language_values())
    if len(_PRISTINE[0]) == 3:  # (values, names, replaced): not looked for yet
        _PRISTINE[0] = _with_originals(*_PRISTINE[0])
    return _PRISTINE[0][:3]


def _language_modules():
    """Every module of ``triton.language``: those in ``sys.modules`` and those reached as attributes
    (3.2 on, ``tl.extra.cuda`` is a second module object beside ``sys.modules``' own)."""
    found, pending = {}, [module for name, module in list(sys.modules.items())
                          if name.startswith("triton.language") and module is not None]
    while pending:
        module = pending.pop()
        if id(module) in found:
            continue
        found[id(module)] = module
        pending += [value for value in vars(module).values()
                    if inspect.ismodule(value) and str(vars(value).get("__name__", "")).startswith("triton.language")]
    return list(found.values())


def _from_interpreter(value):
    code = getattr(value, "__code__", None)
    interpreter = sys.modules.get("triton.runtime.interpreter")
    return code is not None and interpreter is not None and code.co_filename == interpreter.__file__


def _language_values():
    """``(owner, name, value)`` of every module of ``triton.language`` and every class its ``core``
    defines, where the value is not the interpreter's (a builtin it wrapped: the builtin); and
    ``(owner, names)``: the names each owner had then."""
    owners = _language_modules()
    core = sys.modules.get("triton.language.core")
    owners += [value for value in vars(core).values()
               if inspect.isclass(value) and value.__module__ == core.__name__] if core is not None else []
    values, names, replaced = [], [], []
    for owner in owners:
        for name, value in list(vars(owner).items()):
            if _from_interpreter(value):
                value = (getattr(value, "__kwdefaults__", None) or {}).get("member", _ABSENT)
                if value is _ABSENT:  # one of the interpreter's own replacements: its original, later
                    replaced.append((owner, name))
                    continue
            values.append((owner, name, value))
        names.append((owner, frozenset(vars(owner))))
    return values, names, replaced


def _with_originals(values, names, lost):
    """``_language_values`` completed: the originals found of what the interpreter replaced
    (``lost``), class attributes it only added removed from ``names``, and the public names whose
    original is gone as ``lost`` (each as ``owner.name``); a fourth element marks it as done."""
    found = _originals_of(lost) if lost else {}
    values += [(owner, name, found[owner, name]) for owner, name in lost if (owner, name) in found]
    missing = [(owner, name) for owner, name in lost if (owner, name) not in found]
    added = {(id(owner), name) for owner, name in missing if _added_by_interpreter(owner, name)}
    names = [(owner, present - {name for name in present if (id(owner), name) in added}) for owner, present in names]
    lost = [f"{getattr(owner, '__name__', owner)}.{name}" for owner, name in missing
            if (id(owner), name) not in added and _public(owner, name)]
    return values, names, lost, "looked for"


#: What the interpreter adds to ``tl.tensor`` (it has none of them compiled): removed while compiling.
_TENSOR_ADDITIONS = frozenset({"__bool__", "__index__", "__repr__", "__str__"})


def _added_by_interpreter(owner, name):
    return inspect.isclass(owner) and owner.__name__ == "tensor" and name in _TENSOR_ADDITIONS


def _public(owner, name):
    """Whether compiled Triton reads ``owner.name``: a name of ``triton.language``'s ``__all__``, or
    a class's (the interpreter also leaves helpers of its own in module namespaces, which nothing reads)."""
    if inspect.isclass(owner):
        return True
    return name in getattr(sys.modules.get("triton.language"), "__all__", ())


def _originals_of(lost):
    """{(owner, name): the object the interpreter replaced}, for those still alive elsewhere: the same
    name where another ``triton.language`` module still holds it, else found among the garbage
    collector's objects by where it was defined (``triton.language.core.range``, ``dtype.to_ir``)."""
    import gc

    found, wanted = {}, {}
    for owner, name in lost:
        qualname = name if inspect.ismodule(owner) else f"{owner.__qualname__}.{name}"
        wanted.setdefault(qualname, []).append((owner, name))
    for candidate in gc.get_objects():
        kind = type(candidate)  # not isinstance: a dead weak proxy raises ReferenceError for that
        if not (kind is types.FunctionType or issubclass(kind, type)):
            continue
        owners = wanted.get(getattr(candidate, "__qualname__", None))
        module = getattr(candidate, "__module__", None)
        if owners and isinstance(module, str) and module.startswith("triton.language") and \
                not _from_interpreter(candidate):
            for key in owners:
                found.setdefault(key, candidate)
    return found


def language_lost():
    """Why ``triton.language`` cannot be put back as compiled Triton sees it (an interpreted launch
    before the switch went on replaced a name of it for good: Triton up to 3.5 patches it at every
    launch and helper call, and keeps no original), as one line; None where it can."""
    lost = _pristine_language()[2]
    if not lost:
        return None
    return (f"an interpreted launch before the switch went on replaced {', '.join(sorted(set(lost))[:3])} of "
            f"triton.language for good; switch kwshim on before the first launch (pytest --kwshim and kwshim run do)")
