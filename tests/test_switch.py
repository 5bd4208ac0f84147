"""The switch (kwshim.activate): every interpreted kernel binds as under @kwsafe, decorated or
not; autotuners tune on the CPU under a policy; Triton is restored afterwards."""

import os
import subprocess
import sys
import threading

import pytest
import triton
import triton.language as tl

import kwshim
from kwshim import LaunchArgumentError
from kwshim.doors import switch
from kwshim.launch.kernel import launcher_via_paths

from .kernels import store_kernel

GRID = (1,)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


pytestmark = pytest.mark.usefixtures("no_switch_left_on")


def stored(out):
    return int(out[0])


@triton.jit
def bare_warps_stages(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr = 1):
    tl.store(out_ptr, num_warps * 10 + num_stages)


def test_an_undecorated_kernel_made_before_activation_binds_under_the_switch(out):
    with kwshim.activate():
        bare_warps_stages[GRID](out, num_warps=8, num_stages=3)
        assert stored(out) == 83
        bare_warps_stages.run(out, num_warps=4, grid=GRID, warmup=False)
        assert stored(out) == 41
        with pytest.raises(LaunchArgumentError, match=r"bare_warps_stages\(\) missing 1 required argument"):
            bare_warps_stages[GRID](out)


def test_a_kernel_made_while_active_binds_and_behaves_bare_after(out):
    handle = kwshim.activate()
    kernel = store_kernel(["num_warps"], "num_warps + 100", wrap=False)
    kernel[GRID](out, num_warps=4)
    assert stored(out) == 104
    handle.deactivate()
    out.zero_()
    try:
        kernel[GRID](out, num_warps=4)
    except TypeError:
        return  # 2.2-3.2 bare: the reserved keyword is dropped
    assert stored(out) == 104  # 3.3+ bare interpreters bind it themselves


def test_code_asks_kwshim_active_settings_whether_it_runs_under_kwshim_and_how():
    assert kwshim.active_settings() is None  # off: nothing in force
    with kwshim.activate(device="cuda", grid="check"):
        with kwshim.activate(autotune="first"):
            inner = kwshim.active_settings()
            assert isinstance(inner, kwshim.Settings)
            assert (inner.autotune, inner.device, inner.grid) == ("first", "cuda", "check")  # inherited
        assert kwshim.active_settings().autotune == "all"
    assert kwshim.active_settings() is None


def test_nesting_double_deactivation_and_the_policy_in_force():
    outer = kwshim.activate(autotune="first")
    inner = kwshim.activate(autotune="verify")
    assert switch.active_settings().autotune == "verify"
    inner.deactivate()
    inner.deactivate()  # a no-op
    assert switch.active_settings().autotune == "first" and switch.is_active()
    outer.deactivate()
    assert not switch.is_active()
    with kwshim.activate() as handle:
        assert handle.active
    assert not handle.active


def test_a_nested_activation_inherits_every_setting_it_does_not_name(monkeypatch):
    monkeypatch.setenv("KWSHIM_NUMERICS", "ieee")
    with kwshim.activate(grid="sequential", rtol=0.5, device="cuda"):
        assert switch.active_settings().numerics == "ieee"  # the outermost reads KWSHIM_NUMERICS
        monkeypatch.setenv("KWSHIM_NUMERICS", "not-read-again")
        with kwshim.activate(autotune="first"):  # not "cannot make it None": the device is inherited
            assert switch.active_settings() == kwshim.Settings("first", rtol=0.5, numerics="ieee",
                                                               grid="sequential", device="cuda")
        assert switch.active_settings().autotune == "all"


@pytest.mark.parametrize("bad, error, message", [
    ({"grid": ["batched"]}, TypeError, "kwshim: grid must be a string, not ['batched']"),
    ({"equal_nan": "false"}, TypeError, "kwshim: equal_nan must be True or False, not 'false'"),
    ({"device": ["cuda"]}, TypeError, "kwshim: device must be None or a string, not ['cuda']"),
    ({}, ValueError, "kwshim: KWSHIM_GRID='fast': unknown grid 'fast'; choose one of sequential, batched, check"),
])
def test_activate_refuses_a_bad_value_naming_kwshim_and_switches_nothing_on(monkeypatch, bad, error, message):
    monkeypatch.setenv("KWSHIM_GRID", "fast")
    with pytest.raises(error) as caught:
        kwshim.activate(**bad)
    assert str(caught.value) == message
    assert not switch.is_active()


def test_out_of_order_deactivation_keeps_the_switch_until_the_last_handle():
    first, second = kwshim.activate(autotune="first"), kwshim.activate(autotune="all")
    first.deactivate()
    assert switch.active_settings().autotune == "all"
    second.deactivate()
    assert not switch.is_active()


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="unknown autotune policy 'fastest'"):
        kwshim.activate(autotune="fastest")
    assert not switch.is_active()


def test_activation_from_threads_is_serialized_and_balanced(out):
    handles = []

    def worker():
        for _ in range(20):
            handle = kwshim.activate()
            handles.append(handle)
            handle.deactivate()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(handles) == 80 and not switch.is_active()


def test_compiled_kernels_are_left_to_triton(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    compiled = triton.jit(bare_warps_stages.fn)
    with kwshim.activate():
        assert type(compiled).__getitem__ is not launcher_via_paths


SNAPSHOT = """
import os; os.environ["TRITON_INTERPRET"] = "1"
import importlib, torch, triton, triton.language as tl
MODULES = ("triton.runtime.interpreter", "triton.runtime.autotuner", "triton.runtime.jit")
def snapshot():
    snap = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in list(vars(module).items()):
            snap[(name, attr)] = value
            if isinstance(value, type):
                for member, inner in list(vars(value).items()):
                    snap[(name, attr, member)] = inner
    return snap
before = snapshot()
import kwshim
handle = kwshim.activate(autotune="all", grid="check")  # before decorating: 3.2-3.3 need it for @triton.autotune
@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (1, 2)], key=[])
@triton.jit
def k(out_ptr, num_warps: tl.constexpr):
    tl.store(out_ptr, num_warps)
out = torch.zeros(1, dtype=torch.int32)
k[(1,)](out)
assert int(out[0]) == 1, int(out[0])
during = snapshot()
handle.deactivate()
after = snapshot()
patched = sorted(str(key) for key in before if during.get(key) is not before[key])
changed = [key for key in set(before) | set(after) if after.get(key) is not before.get(key)]
print(len(before), "patched:", len(patched), "changed:", changed)
"""


def test_triton_is_exactly_as_before_activation_after_deactivation():
    result = subprocess.run([sys.executable, "-c", SNAPSHOT], capture_output=True, text=True, cwd=ROOT,
                            env=dict(os.environ, TRITON_INTERPRET="1"))
    if result.returncode != 0 and "active drivers" in result.stderr and "autotune" in result.stderr:
        pytest.fail(result.stderr[-2000:])
    assert result.returncode == 0, result.stderr[-2000:]
    count, rest = result.stdout.strip().split(" patched: ")
    patched, changed = rest.split(" changed: ")
    assert int(count) > 50 and int(patched) >= 3  # the switch did patch while on
    assert changed == "[]"


COMPILED_RUN = """
from triton.runtime.autotuner import Autotuner
import kwshim
original = Autotuner.run
with kwshim.activate(autotune="all"):
    print("all", Autotuner.run is original)
    with kwshim.activate(autotune="verify"):
        print("verify", Autotuner.run is original)
    print("after verify", Autotuner.run is original)
print("off", Autotuner.run is original)
"""


def test_compiled_only_processes_keep_tritons_autotuner_run_until_verify_needs_it():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_INTERPRET"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", COMPILED_RUN], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["all", "True", "verify", "False", "after", "verify", "False", "off", "True"]


def test_entering_a_deactivated_handle_again_is_refused():
    handle = kwshim.activate()
    with handle:
        assert switch.is_active()
    assert not switch.is_active()
    with pytest.raises(RuntimeError, match="handle was deactivated; call kwshim.activate"):
        with handle:
            pass
    assert not switch.is_active()
