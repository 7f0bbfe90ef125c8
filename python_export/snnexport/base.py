"""SpikingJelly's module bases: `StepModule` (the `step_mode` switch), `MultiStepModule` (a
module that only runs multi-step) and `MemoryModule` (state that `functional.reset_net`
clears)."""
from torch import nn

STEP_MODES = ("s", "m")


def check_step_mode(step_mode):
    if step_mode not in STEP_MODES:
        raise ValueError(f"step_mode must be 's' or 'm', got {step_mode!r}")
    return step_mode


class StepModule:
    """Mixin of every module with a `step_mode`: 's' (single step, input [N, ...], the
    default as in SpikingJelly) or 'm' (multi-step, input [T, N, ...]). Assigning any other
    value raises, so a typo never silently selects a mode."""

    def supported_step_mode(self):
        return STEP_MODES

    @property
    def step_mode(self):
        return self._step_mode

    @step_mode.setter
    def step_mode(self, value):
        if value not in self.supported_step_mode():
            raise ValueError(f"{type(self).__name__}: step_mode must be one of "
                             f"{self.supported_step_mode()}, got {value!r}")
        self._step_mode = value


class MultiStepModule(StepModule):
    """Marker mixin of a module whose forward always takes time-major [T, N, ...] input
    (SpikingJelly's Spikformer blocks, SpikingSelfAttention). It keeps no `step_mode` of its
    own, so `functional.set_step_mode` passes it by; only 'm' may be assigned."""

    def supported_step_mode(self):
        return ("m",)


class MemoryModule(nn.Module, StepModule):
    """A module with state that `functional.reset_net` clears."""

    def reset(self):
        raise NotImplementedError
