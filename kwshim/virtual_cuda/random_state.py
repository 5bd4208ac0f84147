"""CUDA's random state on the virtual device: a seed and an offset, 16 bytes, as on the H200.

A CUDA generator is Philox's: its state is ``[seed, offset]`` as two int64 (``get_state()``, 16
bytes, ``parity/cuda_state_h200.json``), ``manual_seed(s)`` makes it ``[s, 0]``, and each random
operation advances the offset by what its kernel draws (torch's ``calc_execution_policy``: 4 for
every fp32 operation of up to a million elements on an H200; ``randn(4)``, ``rand(1000)`` and
``dropout(4096)`` each advance it by 4 there). Libraries read and write that state themselves:
FlagGems' Philox helpers read ``default_generators[0].get_state()`` as those 16 bytes, advance the
offset and write it back. On a CPU the generator is mt19937 (5,056 bytes): "Invalid mt19937 state".

Here ``torch.cuda.default_generators[0]``, ``torch.Generator("cuda")``, ``torch.cuda.get_rng_state``
/ ``set_rng_state`` / ``manual_seed`` / ``seed`` / ``initial_seed`` hold and answer CUDA's state
(``CudaGenerator``: a CPU generator underneath, which torch's CPU kernels draw from). A random
operation on the device (a factory with ``device="cuda"``, or an operation on a device tensor that
draws: ``normal_``, ``uniform_``, ``bernoulli``, dropout, ``rand_like``, ...) draws from a CPU
generator seeded from the seed and offset, and advances the offset as CUDA's would: the same state
gives the same values, a state read and written back reproduces them, and the CPU's own random
stream is left as it was. The values are the CPU's, not Philox's.
"""

import weakref

import torch

__all__ = ["CudaGenerator", "install", "drawn", "is_random", "RANDOM_FACTORIES",
           "offset_increment"]

#: torch's seed for a CUDA generator nobody seeded (``default_rng_seed_val``)
DEFAULT_SEED = 67280421310721
#: The factories that draw, as the device's placement sees them (``torch.NAME``).
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
                              "poisson", "rand_like", "randn_like", "randint_like"})
#: Operations that draw without a ``generator`` argument in their schema.
_DRAWING = frozenset({"rand_like", "randn_like", "randint_like", "native_dropout"})
_MASK = (1 << 64) - 1


def offset_increment(numel, wide=False, sms=132, threads_per_sm=2048):
    """How far a CUDA random operation of ``numel`` elements advances the offset (torch's
    ``calc_execution_policy``: 256 threads a block, at most 1,056 blocks on 132 SMs, 4 values per
    ``curand4`` call, 2 for fp64, ``wide``), as measured on an H100 (``parity/random_offsets_h100.json``:
    4 up to 1,081,344 fp32 elements, 8 from one more, 60 at 16M; fp64 120 at 16M)."""
    if numel <= 0:
        return 0
    block = 256
    grid = min(-(-numel // block), sms * threads_per_sm // block)
    return ((numel - 1) // (block * grid * (2 if wide else 4)) + 1) * 4


def _mixed(seed, offset):
    """A 63-bit seed for the CPU generator from CUDA's seed and offset (splitmix64)."""
    z = (seed * 0x9E3779B97F4A7C15 + offset + 0x632BE59BD9B4E019) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return (z ^ (z >> 31)) >> 1


class CudaGenerator(torch.Generator):
    """A generator that answers as CUDA's: ``device`` is ``cuda:0``, its state is ``[seed, offset]``
    (16 bytes); a CPU generator underneath, seeded from them for each operation that draws."""

    def __new__(cls, device="cuda", seed=DEFAULT_SEED):
        return super().__new__(cls, "cpu")

    def __init__(self, device="cuda", seed=DEFAULT_SEED):
        self.kwshim_seed, self.kwshim_offset = seed & _MASK, 0
        # torch hands a device operation the generator as a new ``torch._C.Generator`` over the same
        # C++ object: the CPU generator underneath keeps a mark of its own as its seed between draws
        self.kwshim_mark = _MARKS.send(None)
        torch.Generator.manual_seed(self, self.kwshim_mark)
        _GENERATORS[self.kwshim_mark] = self

    @property
    def device(self):
        return torch.device("cuda", 0)

    def get_state(self):
        return torch.tensor([_signed(self.kwshim_seed), self.kwshim_offset], dtype=torch.int64).view(torch.uint8)

    def set_state(self, new_state):
        if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__} "
                            f"(kwshim: the virtual CUDA device's generator)")
        if new_state.numel() != 16:
            raise RuntimeError(f"RNG state is wrong size (kwshim: the virtual CUDA device's state is CUDA's, 16 bytes: "
                               f"seed and offset; this one has {new_state.numel()})")
        seed, offset = new_state.detach().cpu().contiguous().view(torch.int64).tolist()
        self.kwshim_seed, self.kwshim_offset = seed & _MASK, offset
        return self

    def manual_seed(self, seed):
        self.kwshim_seed, self.kwshim_offset = int(seed) & _MASK, 0
        return self

    def seed(self):
        seed = int(torch.empty((), dtype=torch.int64).random_().item()) & _MASK
        self.manual_seed(seed)
        return seed

    def initial_seed(self):  # the Python object's answer; torch's C++ reads the mark (``resolved``)
        return self.kwshim_seed

    def get_offset(self):
        return self.kwshim_offset

    def set_offset(self, offset):
        self.kwshim_offset = int(offset)
        return self

    def clone_state(self):
        return _rebuilt(self.kwshim_seed, self.kwshim_offset)

    def __reduce__(self):
        return _rebuilt, (self.kwshim_seed, self.kwshim_offset)


def _marks():
    """Seeds no one else picks, one per CUDA generator: the registry's keys."""
    import random

    rng = random.Random()
    while True:
        yield rng.getrandbits(62) | (1 << 62)


_MARKS = _marks()
_GENERATORS: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # mark -> CudaGenerator


def resolved(generator):
    """The ``CudaGenerator`` that ``generator`` is, or is a ``torch._C.Generator`` over; else None."""
    if generator is None or isinstance(generator, CudaGenerator):
        return generator
    if isinstance(generator, torch.Generator) and generator.device.type == "cpu":
        return _GENERATORS.get(torch.Generator.initial_seed(generator))
    return None


def _rebuilt(seed, offset):
    made = CudaGenerator(seed=seed)
    made.kwshim_offset = offset
    return made


def _signed(value):
    return value - (1 << 64) if value >= 1 << 63 else value


#: The device's default generator while it is on (``torch.cuda.default_generators[0]``).
DEFAULT = None


def drawn(generator, operation):
    """``operation()``, one random operation on the device, drawing from a CPU generator
    (``generator``, or the CPU's default, put back after) seeded from CUDA's seed and offset, which
    then advances as CUDA's would for the elements it made (its first result's; fp64: two a call)."""
    cuda = DEFAULT if generator is None else resolved(generator)
    if cuda is None:
        return operation()  # a CPU generator given by the caller: its own stream
    underneath = generator if generator is not None else torch.default_generator
    saved = None if generator is not None else torch.Generator.get_state(underneath)
    torch.Generator.manual_seed(underneath, _mixed(cuda.kwshim_seed, cuda.kwshim_offset))
    out = None
    try:
        out = operation()
    finally:
        if saved is not None:
            torch.Generator.set_state(underneath, saved)
        else:  # the mark back, for the next operation handed this generator
            torch.Generator.manual_seed(underneath, cuda.kwshim_mark)
        made = out[0] if isinstance(out, (tuple, list)) and out else out
        if isinstance(made, torch.Tensor):
            cuda.kwshim_offset += offset_increment(made.numel(), made.dtype == torch.float64)
    return out


_RANDOM: dict = {}


def is_random(func):
    """Whether the operation ``func`` (an ``OpOverload``) draws random numbers."""
    found = _RANDOM.get(func)
    if found is None:
        schema = getattr(func, "_schema", None)
        name = getattr(schema, "name", "").rsplit("::", 1)[-1]
        found = _RANDOM[func] = name in _DRAWING or \
            any(argument.name == "generator" for argument in getattr(schema, "arguments", ()))
    return found


def install(patch, torch_cuda_answers):
    """CUDA's generator as the device's default, and ``torch.cuda``'s seed and state functions
    (entries of ``torch_cuda_answers``, which ``torch_cuda`` sets), through ``patch``."""
    global DEFAULT
    generator = CudaGenerator(seed=torch.initial_seed())
    previous = DEFAULT
    DEFAULT = generator

    def restore():
        global DEFAULT
        DEFAULT = previous

    patch.on_undo(restore)

    def manual_seed(seed):
        generator.manual_seed(seed)

    def seed():
        generator.seed()

    def set_rng_state(new_state, device="cuda"):
        generator.set_state(new_state)

    def set_rng_state_all(new_states):
        for state in new_states:
            generator.set_state(state)

    torch_cuda_answers.update({
        "manual_seed": manual_seed, "manual_seed_all": manual_seed, "seed": seed, "seed_all": seed,
        "initial_seed": generator.initial_seed, "get_rng_state": lambda device="cuda": generator.get_state(),
        "set_rng_state": set_rng_state, "get_rng_state_all": lambda: [generator.get_state()],
        "set_rng_state_all": set_rng_state_all,
    })
    return generator
