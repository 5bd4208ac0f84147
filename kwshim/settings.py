"""The switch's choices, in one object validated once: the autotune policy, the tolerances that
``verify`` compares with, and the arithmetic interpreted kernels compute with (and, as they land,
the grid and device choices).

This module owns each setting's name, default, environment variable, validation and one-line
help. The doors (``activate``, ``kwshim run --NAME``, ``pytest --kwshim-NAME`` and the ini key
``kwshim_NAME``) translate only what their user named into a mapping; ``resolve`` completes it from
the enclosing activation, or else from the ``KWSHIM_NAME`` environment variables and the defaults,
when the switch starts (never at ``import kwshim``: a bad variable fails only where it is used).
The code that acts on a setting reads the ``Settings`` in force. A new autotune policy is a line in
``POLICIES`` and its own code.
"""

import dataclasses
import os
from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple

__all__ = ["Settings", "DEFAULT", "POLICIES", "NUMERICS", "GRIDS", "DEVICES", "COMPILES", "FIELDS", "Field", "resolve",
           "parse_text", "ACTIVATIONS", "in_force"]

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

#: Whether interpreted kernels are also compiled for the GPU the switch stands for, each with what it does.
COMPILES: Dict[str, str] = {
    "off": "the interpreter only: what the GPU's compiler would refuse runs",
    "check": "each kernel specialization also compiled by the installed Triton for the H200 (sm_90): what the "
             "compiler refuses raises its CompilationError, shared memory beyond the H200's raises OutOfResources "
             "at launch, and warmup() and a launch return the CompiledKernel (.asm: ttir, ttgir, llir, ptx)",
}


class Field(NamedTuple):
    """One setting as the doors present it: a bool is a ``--no-NAME`` flag where it defaults to
    True, anything else an option taking a value of the default's type (one of ``choices``)."""

    name: str
    default: Any
    help: str
    choices: Tuple[str, ...] = ()
    kind: Any = None  #: the type of a value where the default does not say it (None: per dtype)

    @property
    def is_switch(self) -> bool:
        """A bool: a flag that turns it off, taking no value."""
        return isinstance(self.default, bool)

    @property
    def value_type(self) -> Any:
        """What a door converts a given value with (None: a string, one of ``choices``)."""
        return None if self.choices or self.is_switch else self.kind or type(self.default)

    @property
    def variable(self) -> str:
        """The environment variable read for it when the switch starts: ``KWSHIM_NAME``."""
        return f"KWSHIM_{self.name.upper()}"

    def flag(self, prefix: str = "") -> str:
        """``--PREFIXNAME``, or ``--PREFIXno-NAME`` for a switch (``prefix``: ``"kwshim-"`` for pytest)."""
        return f"--{prefix}{'no-' if self.is_switch else ''}{self.name.replace('_', '-')}"


#: Every setting, in ``activate``'s order.
FIELDS = (
    Field("autotune", "all", "autotune policy for interpreted autotuners (default: all)", tuple(POLICIES)),
    Field("rtol", None, "verify: relative tolerance for floating-point tensors (default: per dtype, as "
          "torch.testing.assert_close picks it: 1.3e-06 fp32, 0.001 fp16, 0.016 bf16)", kind=float),
    Field("atol", None, "verify: absolute tolerance for floating-point tensors (default: per dtype, as "
          "torch.testing.assert_close picks it: 1e-05 fp32, fp16 and bf16)", kind=float),
    Field("equal_nan", True, "verify: NaN in the same place agrees; off: it counts as a difference"),
    Field("numerics", "gpu", "arithmetic of interpreted kernels: gpu (as an NVIDIA GPU computes) or ieee "
          "(exactly rounded, to tell a precision problem from a logic bug) (default: gpu)", tuple(NUMERICS)),
    Field("grid", "batched", "how interpreted launches run their programs: "
          "sequential (Triton's loop), batched (together, with the loop's bits) or check (both, compared) "
          "(default: batched)", tuple(GRIDS)),
    Field("device", "none", "a virtual device for suites that say cuda: none, or cuda (tensors on the CPU, "
          "torch.cuda answering as an H200) (default: none)", tuple(DEVICES)),
    Field("compile", "off", "whether interpreted kernels are also compiled for the H200 (sm_90): off, or check "
          "(refuse what its compiler and launcher refuse; warmup() returns the compiled kernel) (default: off)",
          tuple(COMPILES)),
    Field("empty_fill", "none", "under the virtual device, what torch.empty and its kin hand out: none (the "
          "allocator's bytes) or poison (NaN for floats, the largest value for integers, as torch's "
          "fill_uninitialized_memory) (default: none)", ("none", "poison")),
    Field("check_bounds", True, "check every load, store and atomic of an interpreted kernel against the memory "
          "its launch may touch (OutOfBoundsError); off: out-of-bounds addresses are read and written as the "
          "interpreter reads them"),
)
_DEFAULTS = {field.name: field.default for field in FIELDS}


@dataclasses.dataclass(frozen=True, repr=False)
class Settings:
    """The choices of one activation of the switch: what ``kwshim.activate(...)``, ``kwshim run
    --NAME``, ``pytest --kwshim-NAME``, the ini key ``kwshim_NAME`` and ``KWSHIM_NAME`` set.
    Immutable; a value of the wrong type is a ``TypeError`` and a bad value a ``ValueError``, each
    naming kwshim. ``kwshim.active_settings()`` returns the one in force.

    Attributes:
        autotune: how autotuners tune on the CPU: ``"first"``, ``"all"`` (the default) or ``"verify"``.
        rtol: ``verify``'s relative tolerance for floating point; None (the default): the dtype's,
            as ``torch.testing.assert_close`` picks it.
        atol: ``verify``'s absolute tolerance, likewise.
        equal_nan: whether ``verify`` reads NaN in the same place as agreement (default True).
        numerics: ``"gpu"`` (as an NVIDIA GPU computes, the default) or ``"ieee"`` (each operation
            exactly rounded).
        grid: ``"sequential"``, ``"batched"`` (the default) or ``"check"``.
        device: None (the default) or ``"cuda"``, the virtual CUDA device.
        compile: ``"off"`` (the default) or ``"check"`` (each specialization also compiled for the H200).
        empty_fill: ``"none"`` (the default) or ``"poison"``: under the virtual device, ``torch.empty`` and
            its kin filled with NaN (floats) or the largest value (integers).
        check_bounds: whether each load, store and atomic of an interpreted kernel is checked against
            the memory its launch may touch (default True: ``OutOfBoundsError``).
    """

    autotune: str = _DEFAULTS["autotune"]
    rtol: Optional[float] = _DEFAULTS["rtol"]
    atol: Optional[float] = _DEFAULTS["atol"]
    equal_nan: bool = _DEFAULTS["equal_nan"]
    numerics: str = _DEFAULTS["numerics"]
    grid: str = _DEFAULTS["grid"]
    device: Optional[str] = None
    compile: str = _DEFAULTS["compile"]
    empty_fill: str = _DEFAULTS["empty_fill"]
    check_bounds: bool = _DEFAULTS["check_bounds"]

    def __post_init__(self):
        for name, wanted in (("autotune", str), ("numerics", str), ("grid", str), ("device", (str, type(None))),
                             ("equal_nan", bool), ("compile", str), ("empty_fill", str),
                             ("check_bounds", bool)):
            value = getattr(self, name)
            if not isinstance(value, wanted):
                what = {"device": "None or a string", "equal_nan": "True or False",
                        "check_bounds": "True or False"}.get(name, "a string")
                raise TypeError(f"kwshim: {name} must be {what}, not {value!r}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise TypeError(f"kwshim: {name} must be a number >= 0 (or None: per dtype), not {value!r}")
        if self.autotune not in POLICIES:
            raise ValueError(f"kwshim: unknown autotune policy {self.autotune!r}; choose one of {', '.join(POLICIES)}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is None:
                continue
            if not value >= 0:
                raise ValueError(f"kwshim: {name} must be a number >= 0, not {value!r}")
            object.__setattr__(self, name, float(value))
        if self.numerics not in NUMERICS:
            raise ValueError(f"kwshim: unknown numerics {self.numerics!r}; choose one of {', '.join(NUMERICS)}")
        if self.grid not in GRIDS:
            raise ValueError(f"kwshim: unknown grid {self.grid!r}; choose one of {', '.join(GRIDS)}")
        if self.empty_fill not in ("none", "poison"):
            raise ValueError(f"kwshim: unknown empty_fill {self.empty_fill!r}; choose one of none, poison")
        if self.compile not in COMPILES:
            raise ValueError(f"kwshim: unknown compile {self.compile!r}; choose one of {', '.join(COMPILES)}")
        if self.device == "none":
            object.__setattr__(self, "device", None)
        if self.device is not None and self.device not in DEVICES:
            raise ValueError(f"kwshim: unknown device {self.device!r}; choose one of {', '.join(DEVICES)} "
                             f"(or None, which is none)")

    def describe(self) -> str:
        """Every setting as ``name=value``, for a header or a log line."""
        values = ((field.name, getattr(self, field.name)) for field in FIELDS)
        return ", ".join(f"{name}={_described(name, value)}" for name, value in values)

    def __repr__(self):
        return (f"Settings({self.autotune!r}, rtol={self.rtol}, atol={self.atol}, equal_nan={self.equal_nan}, "
                f"numerics={self.numerics!r}, grid={self.grid!r}, device={self.device!r}, compile={self.compile!r}, "
                f"empty_fill={self.empty_fill!r}, check_bounds={self.check_bounds})")


DEFAULT = Settings()

#: The switch's activations in force, innermost last (``doors.switch.Handle``: each has its
#: ``settings``). The one place the settings in force are kept: the switch adds and removes its
#: handles here, and the code that acts on a setting reads ``in_force()``.
ACTIVATIONS: list = []


def in_force() -> Settings:
    """The innermost activation's settings, or the defaults where the switch is off."""
    activations = ACTIVATIONS
    return activations[-1].settings if activations else DEFAULT


def _described(name, value) -> str:
    if value is None:
        return "per-dtype" if name in ("rtol", "atol") else "none"
    return str(value)


#: The tolerances ``torch.testing.assert_close`` picks for a dtype (its ``_DTYPE_PRECISIONS``), by
#: dtype name: (rtol, atol). A dtype not listed (fp8, integers) compares exactly, as there.
DTYPE_TOLERANCES = {"float16": (0.001, 1e-05), "bfloat16": (0.016, 1e-05), "float32": (1.3e-06, 1e-05),
                    "float64": (1e-07, 1e-07), "complex32": (0.001, 1e-05), "complex64": (1.3e-06, 1e-05),
                    "complex128": (1e-07, 1e-07)}


def tolerances(settings: "Settings", dtype_name: str) -> Tuple[float, float]:
    """(rtol, atol) for comparing tensors of ``dtype_name`` (``"bfloat16"``) under ``settings``: each
    one given, else the dtype's as ``torch.testing.assert_close`` picks it."""
    rtol, atol = DTYPE_TOLERANCES.get(dtype_name, (0.0, 0.0))
    return (rtol if settings.rtol is None else settings.rtol, atol if settings.atol is None else settings.atol)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_text(field: Field, text: str) -> Any:
    """A setting written as text (an environment variable, an ini value) as ``Settings`` takes it;
    ``ValueError`` naming kwshim where the text is not of the setting's type."""
    text = text.strip()
    if field.is_switch:
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"kwshim: {field.name} must be one of {', '.join(_TRUE + _FALSE)}, not {text!r}")
    if field.value_type is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"kwshim: {field.name} must be a number >= 0, not {text!r}") from None
    return text


def resolve(named: Mapping[str, Any], base: Optional[Settings] = None,
            environ: Optional[Mapping[str, str]] = None) -> Settings:
    """The settings of an activation: those ``named`` by its door over ``base`` (the enclosing
    activation's, which a nested one inherits), else over each ``KWSHIM_NAME`` variable set in
    ``environ`` (``os.environ``) for a setting not named, else the defaults. A bad variable is a
    ``ValueError`` naming it; a bad named value is ``Settings``'s own error."""
    names = {field.name for field in FIELDS}
    unknown = [name for name in named if name not in names]
    if unknown:
        raise TypeError(f"kwshim: unknown setting {unknown[0]!r}; the settings are {', '.join(names)}")
    dataclasses.replace(DEFAULT, **named)  # the values named are checked first: theirs is the error to see
    if base is None:
        values = {}
        environ = os.environ if environ is None else environ
        for field in FIELDS:
            text = environ.get(field.variable, "")
            if field.name in named or not text.strip():
                continue
            try:
                values[field.name] = parse_text(field, text)
                Settings(**{field.name: values[field.name]})
            except (TypeError, ValueError) as exc:
                reason = str(exc).replace("kwshim: ", "", 1)
                raise ValueError(f"kwshim: {field.variable}={text!r}: {reason}") from None
        base = Settings(**values)
    return dataclasses.replace(base, **named)
