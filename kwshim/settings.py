"""The switch's choices, in one object validated once: the autotune policy, the tolerances that
``verify`` compares with, and the arithmetic interpreted kernels compute with (and, as they land,
the grid and device choices).

This module owns each setting's name, default, validation and one-line help. The doors
(``activate``, ``kwshim run --NAME``, ``pytest --kwshim-NAME`` and the ini key ``kwshim_NAME``)
translate their spelling into a ``Settings`` and read nothing else; the autotuner reads the
``Settings`` in force. A new autotune policy is a line in ``POLICIES`` and its own code.
"""

import dataclasses
import os
from typing import Any, Dict, NamedTuple, Optional, Tuple

__all__ = ["Settings", "DEFAULT", "POLICIES", "NUMERICS", "GRIDS", "DEVICES", "FIELDS", "Field"]

#: The autotune policies, in the order the help lists them, each with what it does.
POLICIES: Dict[str, str] = {
    "first": "no tuning: the first Config that survives pruning runs",
    "all": "each Config runs once with the autotuner's own hooks, nothing restored (as on a GPU)",
    "verify": "all, plus: every Config from one snapshot must agree (ConfigDivergenceError), and the tuned "
              "launch must leave what one clean launch leaves (AutotuneSideEffectError)",
}

#: The arithmetic of interpreted kernels, each with what it does.
NUMERICS: Dict[str, str] = {
    "gpu": "as an NVIDIA GPU computes: TF32 and tensor-core dots, fused multiply-adds, "
           "the approximate transcendentals",
    "ieee": "each operation rounded exactly, as NumPy computes (bf16 and fp8 stored and converted as on a GPU)",
}

#: How the interpreter runs a launch's programs, each with what it does.
GRIDS: Dict[str, str] = {
    "sequential": "Triton's own loop, one program after another",
    "batched": "the programs together, a program axis on every value, with the loop's bits; what cannot be "
               "batched falls back to the loop",
    "check": "both from one state, compared bit for bit (GridDivergenceError)",
}

#: The devices the switch can make on a CPU ("none": the machine's own), each with what it does.
DEVICES: Dict[str, str] = {
    "none": "no virtual device: torch and Triton see the machine as it is",
    "cuda": "a virtual CUDA GPU (an H200): tensors asked for on cuda are CPU tensors, torch.cuda and Triton's "
            "driver answer as the GPU, kernels run in the interpreter",
}


class Field(NamedTuple):
    """One setting as the doors present it: a bool is a ``--no-NAME`` flag where it defaults to
    True, anything else an option taking a value of the default's type (one of ``choices``)."""

    name: str
    default: Any
    help: str
    choices: Tuple[str, ...] = ()

    @property
    def is_switch(self) -> bool:
        """A bool: a flag that turns it off, taking no value."""
        return isinstance(self.default, bool)

    @property
    def value_type(self) -> Any:
        """What a door converts a given value with (None: a string, one of ``choices``)."""
        return None if self.choices or self.is_switch else type(self.default)

    def flag(self, prefix: str = "") -> str:
        """``--PREFIXNAME``, or ``--PREFIXno-NAME`` for a switch (``prefix``: ``"kwshim-"`` for pytest)."""
        return f"--{prefix}{'no-' if self.is_switch else ''}{self.name.replace('_', '-')}"


#: Every setting, in ``activate``'s order.
FIELDS = (
    Field("autotune", "all", "autotune policy for interpreted autotuners (default: all)", tuple(POLICIES)),
    Field("rtol", 1e-05, "verify: relative tolerance for floating-point tensors (default 1e-05)"),
    Field("atol", 1e-08, "verify: absolute tolerance for floating-point tensors (default 1e-08)"),
    Field("equal_nan", True, "verify: NaN in the same place agrees; off: it counts as a difference"),
    Field("numerics", "gpu", "arithmetic of interpreted kernels: gpu (as an NVIDIA GPU computes) or ieee "
          "(exactly rounded, to tell a precision problem from a logic bug) (default: gpu)", tuple(NUMERICS)),
    Field("grid", os.environ.get("KWSHIM_GRID") or "batched", "how interpreted launches run their programs: "
          "sequential (Triton's loop), batched (together, with the loop's bits) or check (both, compared) "
          "(default: KWSHIM_GRID, else batched)", tuple(GRIDS)),
    Field("device", "none", "a virtual device for suites that say cuda: none, or cuda (tensors on the CPU, "
          "torch.cuda answering as an H200) (default: none)", tuple(DEVICES)),
)
_DEFAULTS = {field.name: field.default for field in FIELDS}


@dataclasses.dataclass(frozen=True, repr=False)
class Settings:
    """The choices of one activation of the switch. Immutable; ``ValueError`` naming kwshim for a
    bad value."""

    autotune: str = _DEFAULTS["autotune"]
    rtol: float = _DEFAULTS["rtol"]
    atol: float = _DEFAULTS["atol"]
    equal_nan: bool = _DEFAULTS["equal_nan"]
    numerics: str = _DEFAULTS["numerics"]
    grid: str = _DEFAULTS["grid"]
    device: Optional[str] = None

    def __post_init__(self):
        if self.autotune not in POLICIES:
            raise ValueError(f"kwshim: unknown autotune policy {self.autotune!r}; choose one of {', '.join(POLICIES)}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"kwshim: {name} must be a number >= 0, not {value!r}")
            object.__setattr__(self, name, float(value))
        object.__setattr__(self, "equal_nan", bool(self.equal_nan))
        if self.numerics not in NUMERICS:
            raise ValueError(f"kwshim: unknown numerics {self.numerics!r}; choose one of {', '.join(NUMERICS)}")
        if self.grid not in GRIDS:
            raise ValueError(f"kwshim: unknown grid {self.grid!r}; choose one of {', '.join(GRIDS)}")
        if self.device == "none":
            object.__setattr__(self, "device", None)
        if self.device is not None and self.device not in DEVICES:
            raise ValueError(f"kwshim: unknown device {self.device!r}; choose None or one of "
                             f"{', '.join(d for d in DEVICES if d != 'none')}")

    def __repr__(self):
        return (f"Settings({self.autotune!r}, rtol={self.rtol}, atol={self.atol}, equal_nan={self.equal_nan}, "
                f"numerics={self.numerics!r}, grid={self.grid!r}, device={self.device!r})")


DEFAULT = Settings()
