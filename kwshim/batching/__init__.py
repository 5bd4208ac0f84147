"""Running a launch's programs together: the ``grid`` setting (``sequential``, ``batched``, ``check``).

A batched launch runs many programs at once, a leading program axis on every block value, and
leaves every tensor bit for bit as Triton's loop over the grid does; where it cannot promise that,
it falls back to the loop before any write is visible. ``programs`` is the grid seam; a batch's
operations are ``program_axis``'s (with ``batching_rules``, ``reductions``, ``block_pointers``,
``rows``); its memory traffic waits in a ``store_log`` of ``records`` (``own_writes``, ``memory``);
a kernel's specialization (``specialization``) is traced once and replayed (``replay``,
``replay_code``, ``loop_replay``, ``steps``); ``program_range`` and ``program_groups`` split a
batch whose programs diverge; ``plain_launch`` binds plain arguments without the interpreter's copies.

It uses the seam (``kwshim.interpreter``) and the arithmetic (``kwshim.arithmetic``) below it.
Needs NumPy, imported only when a kernel is interpreted.
"""

__all__ = ["install"]


def install(patch) -> None:
    """The grid seam, through ``patch`` (the switch's): each interpreted launch's programs run as the
    ``grid`` setting in force says."""
    from . import programs

    programs.install(patch)
