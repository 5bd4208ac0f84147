"""The one-store kernel ``specializations.unavailable`` compiles to learn whether this Triton can
compile for the H200 here (a module of its own: the compiler reads a kernel's source from its file)."""

import triton.language as tl


def one_store(x_ptr):
    tl.store(x_ptr, 1.0)
