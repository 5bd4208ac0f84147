"""``kwshim run [--autotune POLICY] SCRIPT|-m MODULE [ARGS...]``: run a program with the switch on.

Modelled on ``coverage run``: the target runs through ``runpy`` as ``__main__``, with its own
``sys.argv`` and ``sys.path[0]``, and its exit status is the process's. ``TRITON_INTERPRET=1`` is
set when unset, before anything imports Triton; a spelling the installed Triton ignores
(``TRITON_INTERPRET=true`` up to 3.3) is named on stderr at start-up.
"""

import os
import runpy
import sys
from typing import List, Optional

__all__ = ["run_target", "warn_start_up_problems", "start_up_problems", "interpreter_store_problem"]


def warn_start_up_problems() -> None:
    """One line on stderr for each start-up problem (``start_up_problems``)."""
    for line in start_up_problems():
        print(f"kwshim: {line}", file=sys.stderr, flush=True)


def start_up_problems() -> List[str]:
    """What would make a run under the switch fail without saying why, in one line each:
    TRITON_INTERPRET spelled so that the installed Triton ignores it (``true`` up to 3.3), or the
    interpreter off where Triton finds no GPU driver ("0 active drivers" at the first launch)."""
    from . import _triton

    interpreted = _triton.jit_makes_interpreted()
    hint = _triton.ignored_interpret_hint(interpreted, _triton.triton_version())
    if hint:
        return [hint]
    if not interpreted and not _gpu_driver():
        value = os.environ.get("TRITON_INTERPRET")
        return [f"the interpreter is off (TRITON_INTERPRET={value if value is not None else 'unset'}) and Triton "
                f"finds no GPU driver here: kernels will fail with '0 active drivers'; set TRITON_INTERPRET=1 to "
                f"run them on the CPU"]
    return []


def _gpu_driver() -> bool:
    try:
        from triton.runtime import driver

        driver.active.get_current_target()
    except Exception:
        return False
    return True


def _store_probe(out_ptr, value):
    tl.store(out_ptr, value)  # noqa: F821  (``tl`` is put into this module's globals by the probe)


def interpreter_store_problem() -> Optional[str]:
    """Whether the interpreter's ``tl.store`` writes nothing here (Triton <= 3.1 with numpy >= 2):
    probed with one launch; a sentence naming the cause, or None."""
    from . import _triton

    import numpy

    if int(numpy.__version__.split(".")[0]) < 2:  # only numpy 2 breaks stores: no launch at start-up otherwise
        return None  # (2.2's interpreter patches modules on a launch in ways other plugins trip over)
    triton = _triton.import_triton()
    if not _triton.jit_makes_interpreted():
        return None
    import torch

    globals()["tl"] = triton.language
    out = torch.zeros(1, dtype=torch.int32)
    triton.jit(_store_probe)[(1,)](out, 7)
    if int(out[0]) == 7:
        return None
    return (f"the Triton {triton.__version__} interpreter's tl.store writes nothing with numpy {numpy.__version__}: "
            f"every kernel would store wrong values; install 'numpy<2' (numpy 1.26 suits every Triton release)")


def run_target(target: str, args: List[str], module: bool = False, policy: str = "all",
               **tolerances) -> Optional[int]:
    """Run ``target`` (a script path, or a module name with ``module=True``) as ``__main__``
    with ``sys.argv`` = ``[target, *args]`` and the switch on under ``policy`` (``tolerances``:
    ``rtol``, ``atol``, ``equal_nan`` of ``kwshim.activate``)."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    warn_start_up_problems()
    problem = interpreter_store_problem()
    if problem:
        print(f"kwshim: {problem}", file=sys.stderr, flush=True)
    from .switch import activate

    handle = activate(autotune=policy, **tolerances)
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if module:
            sys.argv = [target, *args]  # runpy replaces argv[0] with the module's file
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            directory = os.path.dirname(os.path.abspath(target))
            if sys.path:
                sys.path[0] = directory
            else:
                sys.path.insert(0, directory)
            runpy.run_path(target, run_name="__main__")
    finally:
        handle.deactivate()
        sys.argv = saved_argv
        if module:
            if os.getcwd() in sys.path:
                sys.path.remove(os.getcwd())
        elif saved_path0 is not None:
            sys.path[0] = saved_path0
    return 0
