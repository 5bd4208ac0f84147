"""What every door checks before it switches kwshim on: start-up problems that would otherwise make
a run fail, or store wrong values, without saying why. Each is one line for the door to show its
own way (``kwshim run``: stderr; ``pytest --kwshim``: a warning pytest shows, or a usage error)."""

import os
from typing import List, Optional

from .. import compat

__all__ = ["start_up_problems", "interpreter_store_problem"]


def start_up_problems() -> List[str]:
    """TRITON_INTERPRET spelled so that the installed Triton ignores it (``true`` up to 3.3): the
    door reads it as ``1``, as later releases do, before any kernel is made (a line says so); or the
    interpreter off where Triton finds no GPU driver ("0 active drivers" at the first launch).
    Raises ``TritonNotFoundError`` where no ``triton`` module is installed."""
    interpreted = compat.jit_makes_interpreted()
    hint = compat.ignored_interpret_hint(interpreted, compat.triton_version())
    if hint:
        spelled = os.environ["TRITON_INTERPRET"]
        os.environ["TRITON_INTERPRET"] = "1"
        if compat.jit_makes_interpreted():
            return [f"TRITON_INTERPRET={spelled} read as TRITON_INTERPRET=1 (Triton {compat.triton_version()} reads "
                    f"only 1)"]
        os.environ["TRITON_INTERPRET"] = spelled
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
    import numpy

    if int(numpy.__version__.split(".")[0]) < 2:  # only numpy 2 breaks stores: no launch at start-up otherwise
        return None  # (2.2's interpreter patches modules on a launch in ways other plugins trip over)
    triton = compat.import_triton()
    if not compat.jit_makes_interpreted():
        return None
    import torch

    globals()["tl"] = triton.language
    out = torch.zeros(1, dtype=torch.int32)
    triton.jit(_store_probe)[(1,)](out, 7)
    if int(out[0]) == 7:
        return None
    return (f"the Triton {triton.__version__} interpreter's tl.store writes nothing with numpy {numpy.__version__}: "
            f"every kernel would store wrong values; install 'numpy<2' (numpy 1.26 suits every Triton release)")
