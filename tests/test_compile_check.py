"""``compile="check"``: each interpreted kernel specialization also compiled by the installed Triton
for the H200 (``kwshim/compiler``). ``parity/compile_refusals_h200.json`` holds what the H200
raised and returned for the same launches (Triton 3.6.0)."""

import importlib
import json
import os
import warnings

import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim import compiler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(compiler.unavailable() is not None, reason=f"{compiler.unavailable()}")


def _h200():
    with open(os.path.join(ROOT, "parity", "compile_refusals_h200.json")) as handle:
        return json.load(handle)


def test_each_launch_is_refused_or_compiled_as_on_the_h200():
    from parity import compile_refusals

    h200 = _h200()
    with kwshim.activate(device="cuda", compile="check"):
        found = compile_refusals.results("cuda")
    assert found["max_shared_mem"] == h200["max_shared_mem"]
    for name, expected in h200["launches"].items():
        seen = found["launches"][name]
        if "raises" in expected and triton.__version__ != h200["triton"] and "ptxas" in seen.get("message", ""):
            # another release's ptxas refuses it first (3.2: "Register allocation failed"), as on its GPU
            assert expected["raises"] == "OutOfResources" and seen["raises"] in ("RuntimeError", "PTXASError"), name
        elif "raises" in expected:  # the H200's class, or a subclass of it
            assert set(expected["classes"]) <= set(seen.get("classes", ())), name
            if triton.__version__ == h200["triton"]:
                assert seen["message"] == expected["message"], name
        elif "picks" in expected and _ptxas_refuses_the_large_config():
            assert seen == {"raises": "RuntimeError"}, name  # its autotuner does not catch it, nor on its GPU
        elif "picks" in expected:
            assert seen == expected, name
        else:
            assert seen.get("runs") is True, name
            assert {"ttir", "ttgir", "llir", "ptx"} <= set(seen["asm"]) <= set(expected["asm"]), name
            if triton.__version__ == h200["triton"]:
                assert seen["shared"] == expected["shared"], name


def test_a_compilers_refusal_is_also_the_interpreters_error_for_suites_that_expect_either():
    from parity.compile_refusals import launches

    with kwshim.activate(device="cuda", compile="check"):
        with pytest.raises(importlib.import_module("triton.runtime.interpreter").InterpreterError) as refused:
            launches("cuda")["dot 8x8x8 fp16"]()
    assert isinstance(refused.value, triton.compiler.errors.CompilationError)
    assert type(refused.value.__cause__) is triton.compiler.errors.CompilationError  # the compiler's own, chained
    assert str(refused.value) == str(refused.value.__cause__)


def test_without_the_check_the_cpu_runs_what_the_h200_refuses():
    from parity import compile_refusals

    with kwshim.activate(device="cuda", compile="off"):
        launches = compile_refusals.launches("cuda")
        assert launches["dot loop 256x256x128 num_stages=4 num_warps=8"]() is None


def _tuned_pick(compile):
    from parity.compile_refusals import FITS, TOO_LARGE, _tuned

    with kwshim.activate(device="cuda", compile=compile, autotune="all"):
        tuned, k = _tuned(), 4 * FITS["BK"]
        a, b = torch.randn(256, k, device="cuda").half(), torch.randn(k, 256, device="cuda").half()
        tuned[(1,)](a, b, torch.empty(256, 256, device="cuda"), k)
        return tuned.best_config.kwargs["BM"], TOO_LARGE["BM"], FITS["BM"]


def _ptxas_refuses_the_large_config():
    """Whether this release's ptxas refuses the 256x256x128 Config before the launcher sees its shared
    memory (3.2: "Register allocation failed"): its GPU raises that RuntimeError, at compile time."""
    from parity.compile_refusals import launches

    with kwshim.activate(device="cuda", compile="check"):
        try:
            launches("cuda")["dot loop 256x256x128 num_stages=4 num_warps=8"]()
        except RuntimeError as error:
            return "ptxas" in str(error)
        except Exception:  # noqa: BLE001 - OutOfResources
            return False
    return False


def test_a_config_over_the_h200s_shared_memory_is_pruned_by_cpu_autotune():
    if _ptxas_refuses_the_large_config():
        pytest.skip("this release's ptxas refuses the large Config at compile time, which its autotuner does not prune")
    picked, too_large, fits = _tuned_pick("check")
    assert picked == fits
    picked, too_large, fits = _tuned_pick("off")  # the CPU alone would pick what the H200 cannot run
    assert picked == too_large


def test_first_runs_the_first_config_the_h200_can_run():
    """``autotune="first"`` tunes nothing, but under the check a Config the GPU's benchmark would
    prune (shared memory beyond the H200's) is passed over for the next, as the GPU's autotuner
    passes over it; without the check the first Config runs, as before."""
    from parity.compile_refusals import FITS, TOO_LARGE, _tuned

    if _ptxas_refuses_the_large_config():
        pytest.skip("this release's ptxas refuses the large Config at compile time, which its autotuner does not prune")
    picked = {}
    for compile in ("check", "off"):
        with kwshim.activate(device="cuda", compile=compile, autotune="first"):
            tuned, k = _tuned(), 4 * FITS["BK"]
            a, b = torch.randn(256, k, device="cuda").half(), torch.randn(k, 256, device="cuda").half()
            tuned[(1,)](a, b, torch.empty(256, 256, device="cuda"), k)
            picked[compile] = tuned.best_config.kwargs["BM"]
    assert picked == {"check": FITS["BM"], "off": TOO_LARGE["BM"]}


def test_warmup_and_a_launch_return_the_compiled_kernel_with_its_ptx():
    from parity.compile_refusals import small_dot

    a, b = torch.randn(16, 16).half(), torch.randn(16, 16).half()
    with kwshim.activate(compile="check"):
        warm = small_dot.warmup(a, b, torch.empty(16, 16), M=16, N=16, K=16, grid=(1,))
        launched = small_dot[(1,)](a, b, c := torch.empty(16, 16), M=16, N=16, K=16)
    assert ".target sm_90" in warm.asm["ptx"]
    assert {"ttir", "ttgir", "llir", "ptx"} <= set(warm.asm)
    assert launched.name == "small_dot" and launched.asm["ptx"] == warm.asm["ptx"]
    torch.testing.assert_close(c, (a.float() @ b.float()), rtol=1e-2, atol=1e-2)  # the interpreter still ran it


@triton.jit
def _doubled(x_ptr, y_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(y_ptr + offsets, tl.zeros((N,), tl.float32) + 2 * tl.load(x_ptr + offsets))


def test_a_second_launch_of_a_specialization_compiles_nothing(monkeypatch):
    compiled = []
    real = importlib.import_module("triton.compiler").compile
    monkeypatch.setattr(importlib.import_module("triton.compiler"), "compile",
                        lambda *args, **kwargs: compiled.append(1) or real(*args, **kwargs))
    x, y = torch.arange(8.0), torch.zeros(8)
    with kwshim.activate(compile="check"):
        first = _doubled[(1,)](x, y, N=8)
        second = _doubled[(1,)](x, y, N=8)
        assert len(compiled) == 1 and second is first
        _doubled[(1,)](torch.arange(16.0), torch.zeros(16), N=16)  # another specialization
        assert len(compiled) == 2
    assert y.tolist() == (2 * x).tolist()


def test_the_switch_going_off_leaves_triton_language_and_the_driver_as_before():
    driver_module = importlib.import_module("triton.runtime.driver")
    x, y = torch.arange(8.0), torch.zeros(8)
    _doubled[(1,)](x, y, N=8)  # bare: up to 3.5 the interpreter leaves the language patched after a launch
    before = (tl.zeros, tl.core.tensor.__getitem__, tl.arange, vars(driver_module.driver).copy())
    had_warmup = "warmup" in dir(type(_doubled))  # up to 3.5 the switch gives interpreted kernels one
    with kwshim.activate(compile="check"):
        _doubled[(1,)](x, y, N=8)
        assert (tl.zeros, tl.core.tensor.__getitem__, tl.arange) == before[:3]
    assert (tl.zeros, tl.core.tensor.__getitem__, tl.arange, vars(driver_module.driver)) == before
    assert ("warmup" in dir(type(_doubled))) is had_warmup


def test_where_this_triton_cannot_compile_for_the_h200_the_check_is_skipped_with_one_notice(monkeypatch):
    monkeypatch.setattr(compiler, "unavailable", lambda: "no ptxas here")
    monkeypatch.setattr(compiler, "_NOTICED", [])
    x, y = torch.arange(8.0), torch.zeros(8)
    with warnings.catch_warnings(record=True) as caught, kwshim.activate(compile="check"):
        warnings.simplefilter("always")
        assert _doubled[(1,)](x, y, N=8) is None
        _doubled[(1,)](x, y, N=8)
    notices = [str(w.message) for w in caught if "kwshim" in str(w.message)]
    assert notices == ["kwshim: compile='check' is skipped: no ptxas here"]
    assert y.tolist() == (2 * x).tolist()


def test_a_bad_compile_setting_is_one_line_naming_kwshim():
    with pytest.raises(ValueError, match=r"^kwshim: unknown compile 'ptx'; choose one of off, check$"):
        kwshim.activate(compile="ptx")


@triton.jit
def _twice(x):
    return 2 * x


@triton.jit
def _twice_plus_nothing(x_ptr, y_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(y_ptr + offsets, _twice(tl.load(x_ptr + offsets)) + tl.sum(tl.zeros((N,), tl.float32), axis=0))


def test_jitted_helpers_and_triton_languages_own_compile_as_jit_functions():
    x, y = torch.arange(8.0), torch.zeros(8)
    with kwshim.activate(compile="check"):
        compiled = _twice_plus_nothing[(1,)](x, y, N=8)
    assert compiled.name == "_twice_plus_nothing" and ".target sm_90" in compiled.asm["ptx"]
    assert y.tolist() == (2 * x).tolist()


def test_a_kernel_made_by_exec_runs_unchecked_after_one_notice(monkeypatch):
    monkeypatch.setattr(compiler, "_NOTICED", [])
    namespace: dict = {}
    exec("def made_by_exec(x_ptr):\n    tl.store(x_ptr, 3.0)\n", {"tl": tl}, namespace)
    interpreted = importlib.import_module("triton.runtime.interpreter").InterpretedFunction(namespace["made_by_exec"])
    x = torch.zeros(1)
    with warnings.catch_warnings(record=True) as caught, kwshim.activate(compile="check"):
        warnings.simplefilter("always")
        assert interpreted[(1,)](x) is None
    assert [str(w.message) for w in caught if "kwshim" in str(w.message)] == [
        "kwshim: compile='check' skips a kernel: made_by_exec: its source is in no file (made by exec?), and "
        "compiled Triton reads it from one"]
    assert x.tolist() == [3.0]


LIBDEVICE_KERNEL = """
import triton
import triton.language as tl
try:
    from triton.language.extra.libdevice import rsqrt
except ImportError:
    from triton.language.extra.cuda.libdevice import rsqrt


@triton.jit
def inverse_roots(x_ptr, y_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(y_ptr + offsets, rsqrt(tl.load(x_ptr + offsets)))
"""


def test_a_libdevice_function_bound_by_name_while_the_switch_is_on_compiles_as_libdevices(tmp_path, monkeypatch):
    (tmp_path / "bound_while_on.py").write_text(LIBDEVICE_KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    x, y = torch.tensor([4.0, 16.0, 0.25, 1.0]), torch.zeros(4)
    with kwshim.activate(compile="check"):
        module = importlib.import_module("bound_while_on")  # binds kwshim's CPU implementation of rsqrt
        compiled = module.inverse_roots[(1,)](x, y, N=4)
    assert "rsqrt" in compiled.asm["ptx"]
    assert y.tolist() == [0.5, 0.25, 2.0, 1.0]


@triton.jit
def _applied(x_ptr, y_ptr, FUNCTION: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(y_ptr + offsets, FUNCTION(tl.load(x_ptr + offsets)))


def test_a_jitted_function_given_as_a_constexpr_compiles_as_its_jit_function():
    x, y = torch.arange(8.0), torch.zeros(8)
    with kwshim.activate(compile="check"):
        try:
            compiled = _applied[(1,)](x, y, _twice, N=8)
        except TypeError as refused:  # 3.0's compiled Triton takes no function as a constexpr, on a GPU neither
            assert str(refused) == "Callable constexpr at index FUNCTION is not supported"
            return
        again = _applied[(1,)](x, y, FUNCTION=_twice, N=8)
    assert again is compiled and ".target sm_90" in compiled.asm["ptx"]
    assert y.tolist() == (2 * x).tolist()


CLOCK_KERNEL = """
import triton
import triton.language as tl
from triton.language.extra.cuda import globaltimer


@triton.jit
def clocked(out_ptr):
    start = globaltimer()
    tl.store(out_ptr, start)
    tl.store(out_ptr + 1, globaltimer())
"""


def test_a_special_register_bound_by_name_while_the_switch_is_on_compiles_as_tl_extra_cudas(tmp_path, monkeypatch):
    (tmp_path / "clock_bound_while_on.py").write_text(CLOCK_KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = torch.zeros(2, dtype=torch.int64)
    with kwshim.activate(compile="check"):
        module = importlib.import_module("clock_bound_while_on")  # binds kwshim's replacement of globaltimer
        compiled = module.clocked[(1,)](out)
    assert "%globaltimer" in compiled.asm["ptx"]
    assert 0 < out[0] <= out[1]


@triton.jit
def _clocked(out_ptr, CLOCK: tl.constexpr):
    start = CLOCK()
    tl.store(out_ptr, start)
    tl.store(out_ptr + 1, CLOCK())


def test_a_special_register_given_as_a_constexpr_compiles_as_tl_extra_cudas():
    """Read under the switch, ``tl.extra.cuda.globaltimer`` is kwshim's replacement (which answers
    in the interpreter); compiled Triton is given the original, whose inline assembly it emits."""
    out = torch.zeros(2, dtype=torch.int64)
    with kwshim.activate(compile="check"):
        clock = tl.extra.cuda.globaltimer
        try:
            compiled = _clocked[(1,)](out, clock)
        except TypeError as refused:  # 3.0's compiled Triton takes no function as a constexpr, on a GPU neither
            assert str(refused) == "Callable constexpr at index CLOCK is not supported"
            return
    assert "%globaltimer" in compiled.asm["ptx"]
    assert 0 < out[0] <= out[1]


BARE_FIRST = """
import warnings
import torch, triton, triton.language as tl
import kwshim


@triton.jit
def summed(x_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(x_ptr + offsets, tl.sum(tl.load(x_ptr + offsets), axis=0) + tl.zeros((N,), tl.float32))


x = torch.ones(4)
summed[(1,)](x, N=4)  # bare, before the switch: the interpreter patches triton.language, some of it for good
with warnings.catch_warnings(record=True) as caught, kwshim.activate(compile="check"):
    warnings.simplefilter("always")
    returned = summed[(1,)](x, N=4)
print(type(returned).__name__, x.tolist())
print([str(w.message) for w in caught if "kwshim" in str(w.message)])
"""


def test_a_bare_launch_before_the_switch_never_makes_the_check_refuse_what_the_gpu_compiles(tmp_path):
    import subprocess
    import sys

    from ._subprocess import environment

    (tmp_path / "bare_first.py").write_text(BARE_FIRST)
    done = subprocess.run([sys.executable, "bare_first.py"], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(TRITON_INTERPRET="1"), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    first, notices = done.stdout.splitlines()[-2:]
    returned, stored = first.split(" ", 1)
    assert stored == "[16.0, 16.0, 16.0, 16.0]"
    if returned == "CompiledKernel":  # what the interpreter replaced is found again (3.6 on)
        assert notices == "[]"
    else:  # lost for good (3.0's dtype.to_ir): the check steps aside, saying why
        assert returned == "NoneType" and "switch kwshim on before the first launch" in notices, notices


def test_a_refusal_s_traceback_goes_from_the_launch_to_the_gpu_s_message():
    """The compile check's own frames say nothing a user acts on: the traceback of a refusal is the
    caller's line, the launch (two frames of kwshim's, which pytest hides), then the GPU's message."""
    import traceback

    from parity.compile_refusals import launches

    with kwshim.activate(device="cuda", compile="check"):
        with pytest.raises(Exception) as refused:
            launches("cuda")["dot loop 256x256x128 num_stages=4 num_warps=8"]()
    frames = traceback.extract_tb(refused.value.__traceback__)
    ours = [frame for frame in frames if os.sep + "kwshim" + os.sep in frame.filename]
    assert len(ours) <= 2 and ours[-1] == frames[-1], [f"{f.filename}:{f.lineno}" for f in frames]
    assert refused.type.__name__ in ("OutOfResources", "RuntimeError", "PTXASError"), refused.type
