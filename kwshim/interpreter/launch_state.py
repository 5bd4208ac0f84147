"""What one interpreted launch carries that the operations read, held here, not on Triton's objects.

A batched launch (``batching.programs``) gives the interpreter's one builder object the batched
class for its length; the batch itself (program ids, count, the ``StoreLog``) is ``batch``, set
through the launch's ``Patch`` and undone with it. Launches are serialized on ``LAUNCH_LOCK``, so one
module attribute is the launch's own. ``Fallback`` is how anything a launch runs, the seam's fixes
included, tells the batch that only the sequential loop gives the loop's bits.
"""

__all__ = ["batch", "Fallback"]

#: The batch of the launch in progress (``batching.programs._Batch``), or None outside a batched launch.
batch = None


class Fallback(Exception):
    """The batch cannot give the sequential loop's bits; ``reason`` says why, for the kernel to remember."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason
