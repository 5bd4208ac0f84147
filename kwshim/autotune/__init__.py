"""Autotuning on a CPU: the policies ``first``, ``all`` and ``verify`` (``settings.POLICIES``).

- ``patch``: ``AutotunerPatch``, what changes of Triton's ``Autotuner`` while the switch is on;
- ``rounds``: one tuning round, and the CPU's benchmarker;
- ``verify``: the two checks of ``verify``;
- ``snapshot``: tensor state, compared and written back.
"""

from .patch import AutotunerPatch

__all__ = ["AutotunerPatch"]
