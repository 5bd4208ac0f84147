"""``verify``: every Config from one snapshot must leave what the first leaves, and the tuned launch
must leave what one clean launch of the chosen Config leaves.

Each Config runs twice at most: once from the snapshot, compared with the first Config before its
post-hook restores anything (``ConfigDivergenceError``), and once from where the Configs before it
left the tensors (the GPU's sequence: only that run is timed). The two are one run whenever those
states are the same, as for Config 0 and for kernels whose hooks put everything back. After either
error the tensors are back as they were before the launch.
"""

from typing import Optional

from .. import compat
from ..errors import AutotuneSideEffectError, ConfigDivergenceError
from .rounds import timed
from ..snapshot import State, describe, difference

__all__ = ["Verification", "capturing"]


class Verification:
    """What ``verify`` keeps for one tuning: the pre-launch snapshot, the first Config's results."""

    def __init__(self, autotuner, settings, tensors):
        self.autotuner, self.settings = autotuner, settings
        self.snapshot = State(tensors)
        self.reference = None  # (config, State of the first Config's results)
        self.config = None
        self.captured: Optional[State] = None
        self.capturing = False

    def capture(self):
        """Called by the post-hook wrapper, before the post-hook itself runs."""
        if self.capturing:
            self.captured = State(self.snapshot.tensors)
            self.capturing = False

    def run_config(self, kernel_call):
        """Run one Config as ``verify`` does on the CPU; returns its CPU time in ms (the GPU-order run)."""
        before = None if self.snapshot.is_current() else State(self.snapshot.tensors)
        elapsed = self._compared_run(kernel_call, before)
        if before is not None:  # the GPU's run, from where the Configs before left the tensors
            before.put()
            try:
                elapsed = timed(kernel_call)
            except BaseException:
                before.put()
                raise
        return elapsed

    def check_config(self, kernel_call):
        """Compiled mode: run the Config once from the snapshot, compare it, and put the tensors
        back where the Configs before it left them, for Triton's benchmarker to time it there."""
        before = State(self.snapshot.tensors)
        self._compared_run(kernel_call, before)
        before.put()

    def _compared_run(self, kernel_call, before):
        """Run the Config once from the snapshot and compare its results with the first Config's,
        taken before its post-hook restores anything. ``before``: the tensors as the Configs before
        left them (None where that is the snapshot), put back if the run fails. Returns ms."""
        if before is not None:
            self.snapshot.put()
        self.capturing, self.captured = True, None
        try:
            elapsed = timed(kernel_call)
            if self.captured is None:  # no post-hook was called (none in this release's kernel_call)
                self.capture()
            self.compare(self.config, self.captured)
        except (ConfigDivergenceError, AutotuneSideEffectError):
            raise
        except BaseException:  # a Config that fails leaves the tensors as the Configs before it did
            self.capturing = False
            (before or self.snapshot).put()
            raise
        return elapsed

    def compare(self, config, results):
        if self.reference is None:
            self.reference = (config, results)
            return
        first_config, first_results = self.reference
        for (name, _), want, got in zip(results.tensors, first_results.values, results.values):
            found = difference(want, got, self.settings)
            if found is not None:
                self.snapshot.put()
                raise ConfigDivergenceError(
                    f"{_kernel_name(self.autotuner)}: Config {config} and Config {first_config} leave argument "
                    f"'{name}' different: {describe(found, self.settings)}")

    def check_side_effects(self, relaunch):
        """Compare what the tuned launch left with one clean launch of the chosen Config
        (``relaunch``, called from the snapshot)."""
        tuned = State(self.snapshot.tensors)
        self.snapshot.put()
        relaunch()
        for (name, tensor), want, start in zip(tuned.tensors, tuned.values, self.snapshot.values):
            found = difference(tensor, want, self.settings)
            if found is not None:
                self.snapshot.put()
                raise AutotuneSideEffectError(
                    f"{_kernel_name(self.autotuner)}: autotuning changes what the first launch leaves in argument "
                    f"'{name}': after tuning it differs from one launch of the chosen Config "
                    f"{self.autotuner.best_config}: {describe(found)}. {_remedy(name, start)}")
        tuned.put()


def _remedy(name, start):
    parameter = name.split(".")[0].split("[")[0]
    if not bool((start == 0).all()):
        return (f"The tuning runs leave '{parameter}' changed: add restore_value=['{parameter}'] to "
                f"@triton.autotune so that each tuning run starts from the caller's values.")
    return (f"The tuning runs accumulate into '{parameter}', which started at zero: add "
            f"reset_to_zero=['{parameter}'] to @triton.autotune so that the launch starts from zero.")


def _kernel_name(autotuner):
    return compat.kernel_name(compat.innermost(autotuner))


def capturing(verification, post_hook):
    """The autotuner's post-hook, preceded by taking the Config's results (``verify``): a
    ``restore_value`` post-hook would otherwise put them back before they are compared."""

    def capturing_post_hook(*args, **kwargs):
        if kwargs.get("exception") is None:
            verification.capture()
        if post_hook is not None:
            return post_hook(*args, **kwargs)
        return None

    return capturing_post_hook
