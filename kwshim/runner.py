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

__all__ = ["run_target", "warn_if_interpret_is_ignored"]


def warn_if_interpret_is_ignored() -> None:
    """One line on stderr when TRITON_INTERPRET asks for the interpreter in a spelling the installed
    Triton ignores (``true`` up to 3.3): the run would otherwise fail with '0 active drivers'."""
    from . import _triton

    if not _triton.interpreter_requested() or os.environ.get("TRITON_INTERPRET", "").strip() == "1":
        return
    hint = _triton.ignored_interpret_hint(_triton.jit_makes_interpreted(), _triton.triton_version())
    if hint:
        print(f"kwshim: {hint}", file=sys.stderr, flush=True)


def run_target(target: str, args: List[str], module: bool = False, policy: str = "all",
               **tolerances) -> Optional[int]:
    """Run ``target`` (a script path, or a module name with ``module=True``) as ``__main__``
    with ``sys.argv`` = ``[target, *args]`` and the switch on under ``policy`` (``tolerances``:
    ``rtol``, ``atol``, ``equal_nan`` of ``kwshim.activate``)."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    warn_if_interpret_is_ignored()
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
