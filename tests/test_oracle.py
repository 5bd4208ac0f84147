"""A property-based oracle: random kernels and launches, interpreted under @kwsafe, against a
model of compiled Triton 3.x's binding (the rules of SPEC.md).

Each generated kernel stores every parameter it received. Profiles: the normal run draws
``KWSHIM_ORACLE_EXAMPLES`` examples (default 300); the full run sets it to 2000 or more.
"""

import os

import torch
import triton
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwshim import compat as _triton
from kwshim.launch import options as kwshim_options

from .kernels import autotune, store_all_kernel

EXAMPLES = int(os.environ.get("KWSHIM_ORACLE_EXAMPLES", "300"))
ORDINARY = ["a", "b", "x_val", "BLOCK"]
RESERVED = sorted(_triton.stripped_names() & {"num_warps", "num_stages", "num_ctas", "maxnreg",
                                              "enable_fp_fusion"}) + ["grid"]
#: What compiled run injects into every launch (name -> (value, a caller's keyword wins)).
INJECTED = _triton.injected_keywords()
#: Injected names a generated kernel can declare and store (debug: False; 3.0 injects None).
RESERVED += [name for name, (value, _) in INJECTED.items() if name == "debug" and isinstance(value, (bool, int))]
GRID = (1,)


class Mismatch(AssertionError):
    pass


@st.composite
def launches(draw):
    names = draw(st.lists(st.sampled_from(ORDINARY + RESERVED), min_size=1, max_size=5, unique=True))
    # debug receives a bool, which interpreters 3.6+ cannot store from a runtime scalar: constexpr
    constexpr = [True if name == "debug" else draw(st.booleans()) for name in names]
    first_default = draw(st.integers(min_value=0, max_value=len(names)))
    defaults = {name: 500 + i for i, name in enumerate(names) if i >= first_default}
    # Who supplies what: a positional prefix, then keywords, a Config, a heuristic.
    n_positional = draw(st.integers(min_value=0, max_value=len(names)))
    rest = names[n_positional:]
    keywords = {n: 200 + i for i, n in enumerate(rest) if n != "grid" and draw(st.booleans())}
    use_config = draw(st.booleans())
    config_kwargs = {n: 300 + i for i, n in enumerate(rest) if use_config and n in ORDINARY and n not in keywords
                     and draw(st.booleans())}
    config_fields = {"num_warps": draw(st.sampled_from([1, 2, 4, 8])),
                     "num_stages": draw(st.integers(min_value=1, max_value=5))}
    heuristic = draw(st.one_of(st.none(), st.sampled_from(names)))
    # Faults, as a user makes them.
    fault = draw(st.sampled_from([None, None, None, "duplicate", "unknown", "drop", "grid_keyword", "extra",
                                  "stream"]))
    positional = [100 + i for i in range(n_positional)]
    if fault == "duplicate" and n_positional:
        keywords[names[draw(st.integers(min_value=0, max_value=n_positional - 1))]] = 999
    elif fault == "unknown":
        keywords["bogus_kw"] = 1
    elif fault == "grid_keyword":
        keywords["grid"] = 7
    elif fault == "stream":
        keywords["stream"] = 0
    elif fault == "extra":
        positional.append(998)
    elif fault == "drop" and keywords:
        keywords.pop(sorted(keywords)[0])
    return dict(names=names, constexpr=constexpr, defaults=defaults, positional=positional, keywords=keywords,
                use_config=use_config, config_kwargs=config_kwargs, config_fields=config_fields,
                list_grid=draw(st.booleans()),
                heuristic=heuristic)


def config_launch_keywords(config):
    """What the installed Autotuner adds to a launch for ``config``: ``all_kwargs()`` from 3.0;
    2.x passes the Config's fields one by one, then its kwargs."""
    if hasattr(config, "all_kwargs"):
        return config.all_kwargs()
    fields = {name: getattr(config, name) for name in
              ("num_warps", "num_stages", "num_ctas", "enable_warp_specialization") if hasattr(config, name)}
    return {**fields, **config.kwargs}


def model(case, config):
    """What compiled Triton 3.x stores (a list), or the exception class it raises."""
    names, positional, kwargs = case["names"], list(case["positional"]), dict(case["keywords"])
    if "grid" in kwargs:  # kernel[grid](..., grid=...): the launch's own keyword, given twice
        return TypeError
    if case["heuristic"] is not None and case["heuristic"] != "grid":  # Heuristics.run: kwargs[name] = heuristic(...)
        kwargs[case["heuristic"]] = 400
    if config is not None:  # Autotuner.run: fn.run(*args, **kwargs, **config.all_kwargs())
        extra = config_launch_keywords(config)
        if set(extra) & set(kwargs):
            return TypeError
        kwargs.update(extra)
    for key, (value, caller_wins) in INJECTED.items():  # JITFunction.run: kwargs["debug"] = ...
        if not (caller_wins and key in kwargs):
            kwargs[key] = value
    bound = dict(zip(names, positional))
    for key, value in kwargs.items():
        if key in bound and key in names[: len(positional)]:
            return TypeError
    if len(positional) > len(names):
        return TypeError
    for key, value in kwargs.items():
        if key in names:
            bound[key] = value
    for name in names:
        if name not in bound:
            if name not in case["defaults"]:
                return TypeError
            bound[name] = case["defaults"][name]
    if "num_warps" in kwargs and kwargs["num_warps"] & (kwargs["num_warps"] - 1) and kwshim_options.backends():
        return AssertionError  # every backend: num_warps must be a power of 2 (2.2 has no backend options)
    if "stream" in kwargs:
        return AssertionError  # "stream option is deprecated; current stream will be used"
    options = _triton.launch_options()
    if any(key not in names and key not in options for key in kwargs):
        return KeyError
    if case["heuristic"] == "grid":  # Heuristics.run's kwargs hold the launch grid: replaced by 400,
        return TypeError  # which compiled Triton fails on after binding and checking the options
    return [bound[name] for name in names]


def launch(case, config):
    kernel = store_all_kernel(case["names"], case["constexpr"], case["defaults"])
    stack = kernel
    if config is not None:
        stack = autotune(configs=[config], key=[])(stack)
    if case["heuristic"] is not None:
        stack = triton.heuristics({case["heuristic"]: lambda args: 400})(stack)
    out = torch.zeros(len(case["names"]), dtype=torch.int32)
    stack[list(GRID) if case.get("list_grid") else GRID](out, *case["positional"], **case["keywords"])
    return out.tolist()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(launches())
def test_kwsafe_binds_like_compiled_triton(case):
    config = (triton.Config(case["config_kwargs"], **case["config_fields"]) if case["use_config"] else None)
    expected = model(case, config)
    try:
        got = launch(case, config)
    except Exception as exc:  # compare the class: ours subclasses compiled Triton's
        if isinstance(expected, list):
            raise Mismatch(f"{case}: expected {expected}, got {type(exc).__name__}: {exc}") from exc
        assert isinstance(exc, expected), f"{case}: expected {expected.__name__}, got {type(exc).__name__}: {exc}"
        return
    assert got == expected, f"{case}: stored {got}, expected {expected}"


def test_model_agrees_with_a_hand_computed_case():
    case = dict(names=["a", "num_warps"], constexpr=[True, True], defaults={}, positional=[100],
                keywords={}, use_config=True, config_kwargs={}, config_fields={"num_warps": 8, "num_stages": 1},
                heuristic=None)
    config = triton.Config({}, num_warps=8, num_stages=1)
    assert model(case, config) == [100, 8]
    assert launch(case, config) == [100, 8]
