"""``spikemesh.export``: the ``snnexport`` package under the spikemesh name.

SpikingJelly-compatible modules (``neuron``, ``layer``, ``surrogate``, ``functional``, ...),
``export_onnx`` and ``nir.load`` (a NIR file as such a module); ``import snnexport`` keeps working beside it.
"""
import snnexport as _snnexport
from snnexport import (base, encoding, export_onnx, functional, layer, load_onnx_weights,  # noqa: F401
                       models, neuron, nir, reference, surrogate)

__all__ = ["base", "encoding", "export_onnx", "functional", "layer", "load_onnx_weights",
           "models", "neuron", "nir", "reference", "surrogate"]
__version__ = getattr(_snnexport, "__version__", None)
