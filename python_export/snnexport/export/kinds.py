"""What each module is to the exporter: a neuron, a SeqToANNContainer, a multi-step stateless
layer, Spikformer's attention, an encoder, or none of these (traced through); and the per-step
modules a container runs. snnexport's classes and SpikingJelly's are recognised alike."""
from __future__ import annotations

from typing import List, Optional, Tuple

from torch import nn

from .. import encoding as _encoding
from .. import layer as _layer
from .. import described_neurons as _described
from .. import neuron as _neuron
from .. import psn as _psn
from .. import recurrent as _recurrent

# The package this exporter belongs to ("snnexport"): its classes count like SpikingJelly's.
_PACKAGE = __name__.rsplit(".", 2)[0]


def sj_module(m: object, part: str) -> bool:
    """True when `m` comes from SpikingJelly's `part` (neuron / layer / encoding) module or
    package: `spikingjelly.activation_based.layer` and its submodules (`...layer.misc`)."""
    mod = type(m).__module__
    return mod.startswith("spikingjelly.") and f".{part}." in mod + "."


def named(m: object, *names: str) -> bool:
    """snnexport's or SpikingJelly's class of one of these names."""
    mod = type(m).__module__
    return type(m).__name__ in names and (mod.startswith("spikingjelly") or
                                          mod.startswith(_PACKAGE))


def module_kind(m: object) -> Optional[str]:
    """'neuron', 'container', 'layer' (multi-step stateless), 'attention' (Spikformer's
    SpikingSelfAttention), 'encoder' or None (trace through / torch)."""
    if named(m, "SpikingSelfAttention"):
        return "attention"
    if (isinstance(m, (_neuron.BaseNode, _described._NonSpikingNode, _described.GatedLIFNode,
                       _psn.PSN, _psn.MaskedPSN, _psn.SlidingPSN, _recurrent.RecurrentNeuron))
            or sj_module(m, "neuron")):
        return "neuron"
    if named(m, "SeqToANNContainer"):
        return "container"
    if named(m, "MultiStepContainer"):
        return None  # replaced by a Sequential before tracing (tracer.prepare)
    if isinstance(m, _encoding.PoissonEncoder) or sj_module(m, "encoding"):
        return "encoder"
    if isinstance(m, _layer._StepLayer) or named(m, "VotingLayer") or sj_module(m, "layer"):
        return "layer"
    return None


def describe(m: object) -> str:
    """The qualified class name of `m`, for error messages."""
    return f"{type(m).__module__}.{type(m).__name__}"


def container_children(path: str, m: nn.Module) -> List[Tuple[str, nn.Module]]:
    """(path, module) of the per-step modules inside a container, nested Sequentials expanded."""
    out = []
    for name, child in m.named_children():
        cpath = f"{path}.{name}" if path else name
        if isinstance(child, nn.Sequential) and module_kind(child) is None:
            out += container_children(cpath, child)
        elif module_kind(child) in ("neuron", "container"):
            raise ValueError(f"{describe(child)} at '{cpath}' cannot run inside "
                             "SeqToANNContainer (per-step stateless modules only)")
        elif getattr(child, "step_mode", "s") != "s":
            raise ValueError(f"'{cpath}' inside SeqToANNContainer must have step_mode='s'")
        else:
            out.append((cpath, child))
    return out
