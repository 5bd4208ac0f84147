"""``kwshim run [--NAME VALUE ...] SCRIPT|DIRECTORY|-m MODULE [ARGS...]``: run a program with the switch on.

Modelled on ``coverage run``: the target runs through ``runpy`` as ``__main__``, with its own
``sys.argv`` and ``sys.path[0]``, and its exit status is the process's. ``TRITON_INTERPRET=1`` is
set when unset, before anything imports Triton; start-up problems (``preflight``) are named on
stderr, one line each, and a missing ``triton`` module is one line and exit status 2.
"""

import os
import runpy
import sys
from typing import Any, List, Mapping, Optional, Tuple, Union

from ..errors import TritonNotFoundError
from ..settings import Settings
from . import preflight

__all__ = ["run_target"]


def run_target(target: str, args: List[str], module: bool = False,
               settings: Union[Mapping[str, Any], Settings, None] = None,
               asm: Optional[Tuple[str, str]] = None) -> Optional[int]:
    """Run ``target`` (a script path, a directory with ``__main__.py``, or a module name with
    ``module=True``) as ``__main__`` with ``sys.argv`` = ``[target, *args]`` and the switch on with
    ``settings`` (the settings named, completed by the switch, or a whole ``Settings``). ``asm``:
    ``(kernel name, form)``, printed after the target for every specialization compiled (under
    ``compile="check"``); exit status 1 where none was."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        problems = preflight.start_up_problems()
        store = preflight.interpreter_store_problem()
    except TritonNotFoundError as exc:
        print(f"kwshim run: {exc}", file=sys.stderr, flush=True)
        return 2
    from .switch import activate_with

    try:
        handle = activate_with({} if settings is None else settings)
    except (TypeError, ValueError, RuntimeError) as exc:  # one line: the start-up problems would repeat it
        if not str(exc).startswith("kwshim:"):
            raise
        print(f"kwshim run: {str(exc).replace('kwshim: ', '', 1)}", file=sys.stderr, flush=True)
        return 2
    for line in problems + ([store] if store else []):
        print(f"kwshim: {line}", file=sys.stderr, flush=True)
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if module:
            sys.argv = [target, *args]  # runpy replaces argv[0] with the module's file
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            directory = os.path.abspath(target) if os.path.isdir(target) else os.path.dirname(os.path.abspath(target))
            if sys.path:
                sys.path[0] = directory
            else:
                sys.path.insert(0, directory)
            runpy.run_path(target, run_name="__main__")
        if asm is not None:
            return _print_asm(*asm)
    finally:
        handle.deactivate()
        sys.argv = saved_argv
        if module:
            if os.getcwd() in sys.path:
                sys.path.remove(os.getcwd())
        elif saved_path0 is not None:
            sys.path[0] = saved_path0
    return 0


def _print_asm(name: str, form: str) -> int:
    from .. import compiler

    listing = compiler.listing(name, form)
    if listing is None:
        print(f"kwshim run: --asm: the target launched no kernel named {name!r}",
              file=sys.stderr, flush=True)
        return 1
    print(listing, end="", flush=True)
    return 0
