"""Published network architectures under SpikingJelly's `activation_based.model` names."""
from . import spikformer  # noqa: F401

__all__ = ["spikformer"]
