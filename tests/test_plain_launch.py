"""A batched launch of plain arguments (``interpreter/plain_launch``): bound as the interpreter's
``GridExecutor`` binds them, without its copies to the host and back; anything else takes the
interpreter's own path."""

import inspect

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kwshim
from kwshim.batching import plain_launch

from .test_programs import batching


@triton.jit
def scaled_copy(x_ptr, out_ptr, n, scale=2.0, flag: tl.constexpr = 0, BLOCK: tl.constexpr = 16):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if flag:
        x = x + 1
    tl.store(out_ptr + offsets, x * scale, mask=mask)


def _interpreter():
    import triton.runtime.interpreter as interpreter

    return interpreter


def _executor(kernel):
    return _interpreter().GridExecutor(kernel.fn, kernel.arg_names, (1,))


def _described(args):
    """What a kernel body can see of each converted argument: its name, in order, and its value (a
    handle's NumPy type and data, and its Triton type)."""
    described = []
    for name, value in args.items():
        if isinstance(value, tl.core.tensor):
            data = value.handle.data
            described.append((name, str(value.type), data.dtype.str, data.tolist()))
        else:
            described.append((name, type(value).__name__, repr(value)))
    return described


def _interpreters_binding(executor, args_dev, kwargs):
    """The arguments as ``GridExecutor.__call__`` binds and converts them (its own steps)."""
    interpreter = _interpreter()
    names = inspect.getfullargspec(executor.fn).args
    dropped = getattr(interpreter, "RESERVED_KWS", None)
    kwargs = {k: v for k, v in kwargs.items() if (k not in dropped if dropped is not None else k in names)}
    args = inspect.getcallargs(executor.fn, *args_dev, **kwargs)
    return {name: value if name in executor.constexprs else interpreter._implicit_cvt(value)
            for name, value in args.items()}


@batching
@pytest.mark.parametrize("args, kwargs", [
    ((3, 1.5), {}),
    ((3,), {"BLOCK": 32, "flag": 1}),
    ((), {"n": 2 ** 33, "scale": 0.5, "num_warps": 4}),
    ((-7, 1.0, tl.constexpr(1)), {"num_stages": 2}),
    ((5,), {"scale": None}),
], ids=["positional", "keywords-and-defaults", "int64-and-a-launch-keyword", "constexpr", "none"])
def test_a_plain_launch_is_bound_in_the_interpreter_s_order_and_types(args, kwargs):
    x, out = torch.arange(8.0), torch.zeros(8)
    executor = _executor(scaled_copy)
    bound = plain_launch.bound(executor, (x, out) + args, kwargs)
    assert bound is not None
    assert _described(bound) == _described(_interpreters_binding(executor, (x, out) + args, kwargs))
    assert bound["x_ptr"].handle.data.tolist() == [x.data_ptr()]
    again = plain_launch.bound(executor, (x, out) + args, kwargs)  # made from the types read the first time
    assert _described(again) == _described(bound)
    handles = [(value.handle, again[name].handle) for name, value in bound.items() if isinstance(value, tl.core.tensor)]
    assert handles and all(first is not second for first, second in handles)  # a trace tags each: never shared
    fresh = _interpreters_binding(executor, (x, out) + args, kwargs)
    for name, value in again.items():  # a tensor given the first one's fields: what the constructor makes
        if isinstance(value, tl.core.tensor):
            assert _fields(value) == _fields(fresh[name])
            assert value.handle.attr == {} and type(value.handle) is type(fresh[name].handle)


def _fields(tensor):
    def value(field):
        return getattr(field, "value", field)  # a constexpr's (tl.tuple has no repr of its values on 3.3)

    return (type(tensor), str(tensor.type), str(tensor.dtype), [value(size) for size in tensor.shape],
            type(tensor.shape), value(tensor.numel), sorted(vars(tensor)))


class _Wrapper:
    """Not a plain argument: something with a ``data_ptr`` that is not a ``torch.Tensor``."""

    def __init__(self, tensor):
        self.tensor, self.dtype = tensor, tensor.dtype

    def data_ptr(self):
        return self.tensor.data_ptr()


@batching
@pytest.mark.parametrize("args, kwargs", [
    ((3,), {"warmup": True}),  # a warm-up, which runs nothing on the releases that pop it
    ((3,), {"n": 4}),  # given twice
    ((3, 1.0, 0, 16, 99), {}),  # one argument too many
    ((), {}),  # n missing
    ((3, (1.0, 2.0)), {}),  # a tuple
    ((np.int32(3),), {}),  # a NumPy scalar
], ids=["warmup", "twice", "too-many", "missing", "tuple", "numpy-scalar"])
def test_a_launch_that_is_not_plain_is_left_to_the_interpreter(args, kwargs):
    x, out = torch.arange(8.0), torch.zeros(8)
    assert plain_launch.bound(_executor(scaled_copy), (x, out) + args, kwargs) is None


@batching
def test_an_unknown_keyword_is_dropped_where_the_release_drops_it():
    x, out = torch.arange(8.0), torch.zeros(8)
    executor = _executor(scaled_copy)
    bound = plain_launch.bound(executor, (x, out, 3), {"unknown": 1})
    if hasattr(_interpreter(), "RESERVED_KWS"):  # up to 3.2: getcallargs refuses it, so the interpreter raises
        assert bound is None
        with pytest.raises(TypeError, match="unknown"):
            inspect.getcallargs(executor.fn, x, out, 3, unknown=1)
    else:
        assert "unknown" not in bound
        assert _described(bound) == _described(_interpreters_binding(executor, (x, out, 3), {"unknown": 1}))


@batching
def test_a_parameter_is_plain_and_a_tensor_subclass_is_not():
    x, out = torch.nn.Parameter(torch.arange(8.0)), torch.zeros(8)
    executor = _executor(scaled_copy)
    bound = plain_launch.bound(executor, (x, out, 3), {})
    assert _described(bound) == _described(_interpreters_binding(executor, (x, out, 3), {}))

    class Subclass(torch.Tensor):
        pass

    assert plain_launch.bound(executor, (torch.arange(8.0).as_subclass(Subclass), out, 3), {}) is None


@batching
def test_a_wrapped_tensor_a_hooked_launch_and_a_star_args_kernel_are_left_to_the_interpreter():
    x, out = torch.arange(8.0), torch.zeros(8)
    executor = _executor(scaled_copy)
    assert plain_launch.bound(executor, (_Wrapper(x), out, 3), {}) is None
    executor.pre_run_hooks = [lambda *args, **kwargs: None]
    assert plain_launch.bound(executor, (x, out, 3), {}) is None

    def star(x_ptr, *rest):
        pass

    executor = _executor(scaled_copy)
    executor.fn = star
    assert plain_launch.bound(executor, (x, out), {}) is None


@batching
def test_a_batched_plain_launch_makes_no_host_copies_and_keeps_the_loop_s_bits(monkeypatch):
    def copied(*args, **kwargs):
        raise AssertionError("the interpreter's host copy ran")

    x = torch.randn(100)
    looped = torch.zeros(100)
    with kwshim.activate(grid="sequential"):
        scaled_copy[(7,)](x, looped, 100, 0.25, flag=1)
    monkeypatch.setattr(_interpreter().GridExecutor, "_init_args_hst", copied)
    with kwshim.activate(grid="batched"):
        for _ in range(3):  # traced, then replayed
            out = torch.zeros(100)
            scaled_copy[(7,)](x, out, 100, 0.25, flag=1)
            assert torch.equal(out.view(torch.int32), looped.view(torch.int32))
        with pytest.raises(Exception, match="host copy ran"):  # a tuple argument: the interpreter's path
            scaled_copy[(7,)](x, out, 100, (0.25,))


@batching
def test_a_changed_default_is_read_again():
    def defaults(x_ptr, n=1):
        pass

    executor = _executor(scaled_copy)
    executor.fn = defaults
    x = torch.zeros(1)
    assert plain_launch.bound(executor, (x,), {})["n"].handle.data.tolist() == [1]
    defaults.__defaults__ = (5,)
    assert plain_launch.bound(executor, (x,), {})["n"].handle.data.tolist() == [5]


@batching
def test_an_argument_the_interpreter_cannot_convert_raises_as_on_its_own_path_and_leaves_nothing_pending():
    from kwshim.interpreter import language_patch

    raised = []
    for mode in ("sequential", "batched"):
        with kwshim.activate(grid=mode):
            with pytest.raises(Exception) as caught:
                scaled_copy[(2,)](torch.zeros(8), torch.zeros(8), 2 ** 64)
        raised.append((type(caught.value), str(caught.value)))
        assert getattr(language_patch._PENDING, "fn", None) is None  # the launch's deferred patch undone
    assert raised[0] == raised[1]


@triton.jit
def shifted_copy(x_ptr, out_ptr, SHIFT: tl.constexpr, n, BLOCK: tl.constexpr = 8):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + SHIFT + n)


@batching
def test_an_executor_reads_each_kernel_s_constexprs_once_and_the_switch_puts_its_init_back():
    executor_class = _interpreter().GridExecutor
    original = executor_class.__init__
    launches = [(scaled_copy, (1,)), (shifted_copy, (2,)), (scaled_copy, (3,)), (shifted_copy, (4, 1))]
    with kwshim.activate():
        assert executor_class.__init__ is not original
        made = [executor_class(kernel.fn, kernel.arg_names, grid) for kernel, grid in launches]
        x, out = torch.arange(8.0), torch.zeros(8)
        for shift in (1, 2):  # each kernel's constexprs, launch after launch: a runtime SHIFT would not run
            shifted_copy[(1,)](x, out, shift, 10)
            assert out.tolist() == (x + shift + 10).tolist()
    assert executor_class.__init__ is original
    for executor, (kernel, grid) in zip(made, launches):
        reference = object.__new__(executor_class)
        original(reference, kernel.fn, kernel.arg_names, grid)
        assert vars(executor) == vars(reference)
        assert executor.grid is grid and executor.constexprs is not reference.constexprs  # its own list


def test_a_load_s_operands_broadcast_as_numpy_broadcasts_them():
    from kwshim.batching import memory

    shapes = [(), (1,), (2,), (0,), (1, 0), (2, 1), (1, 3), (2, 3), (0, 3), (3,), (2, 1, 1), (1, 2, 3)]
    rng = np.random.default_rng(0)
    for first in shapes:
        for second in shapes:
            for third in shapes:
                try:
                    expected = np.broadcast_shapes(first, second, third)
                except ValueError:
                    with pytest.raises(ValueError, match="cannot be broadcast"):
                        memory.broadcast_shape([first, second, third])
                    continue
                assert memory.broadcast_shape([first, second, third]) == expected
                arrays = [np.asarray(rng.random(first)), np.asarray(rng.random(second) > 0.5),
                          np.asarray(rng.integers(0, 9, third))]
                for made, numpy_made in zip(memory.operands(*arrays), np.broadcast_arrays(*arrays)):
                    numpy_made = np.ascontiguousarray(numpy_made)
                    assert made.flags.c_contiguous and made.dtype == numpy_made.dtype
                    assert made.shape == numpy_made.shape and np.array_equal(made, numpy_made)
