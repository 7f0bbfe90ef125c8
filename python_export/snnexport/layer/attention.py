"""Spikformer's spiking self-attention, as SpikingJelly's `layer.attention.SpikingSelfAttention`:
the same constructor, submodule names (so state_dict keys match) and arithmetic."""
from torch import nn

from .. import neuron
from ..base import MultiStepModule
from . import SeqToANNContainer

__all__ = ["SpikingSelfAttention"]


def _lif(backend, v_threshold=1.0):
    return neuron.LIFNode(tau=2.0, v_threshold=v_threshold, detach_reset=True, step_mode="m",
                          backend=backend)


def _conv_bn(c_in, c_out):
    # A 1x1 Conv1d over the token axis: a per-token linear map of the channels.
    return SeqToANNContainer(nn.Conv1d(c_in, c_out, kernel_size=1, stride=1, bias=False),
                             nn.BatchNorm1d(c_out))


class SpikingSelfAttention(nn.Module, MultiStepModule):
    """Spiking self-attention over tokens: spikes [T, N, C, L] (L tokens, H*W for images) ->
    spikes [T, N, C, L]. q, k and v come from one Conv1d(1x1)+BN+LIF to 3*C channels and are
    split into `num_heads` heads of C / num_heads channels; each head computes
    ((v k^T) q) * scale (no softmax: the operands are non-negative spikes), an LIF with
    threshold 0.5 fires on it, and a Conv1d(1x1)+BN+LIF projects the result."""

    def __init__(self, dim, num_heads=8, backend="torch"):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"SpikingSelfAttention: dim {dim} is not divisible by "
                             f"num_heads {num_heads}")
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = 0.125
        self.qkv_conv_bn = _conv_bn(dim, 3 * dim)
        self.qkv_lif = _lif(backend)
        self.attn_lif = _lif(backend, v_threshold=0.5)
        self.proj_conv_bn = _conv_bn(dim, dim)
        self.proj_lif = _lif(backend)

    @property
    def backend(self):
        """The backend of the three neurons; assigning it sets all of them."""
        return self.qkv_lif.backend

    @backend.setter
    def backend(self, value):
        for sn in (self.qkv_lif, self.attn_lif, self.proj_lif):
            sn.backend = value

    @staticmethod
    def _attend(qkv, scale):
        """qkv [T, N, 3, H, D, L] -> ((v k^T) q) * scale [T, N, H, D, L]."""
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        return ((v @ k.transpose(-2, -1)) @ q) * scale

    def forward(self, x_seq):
        if x_seq.ndim != 4:
            # {x_seq.shape}, not list(...): while exporting, the shape is a traced value
            raise ValueError("SpikingSelfAttention expects input [T, N, C, L], got "
                             f"{x_seq.shape}")
        T, N, _, L = x_seq.shape
        qkv = self.qkv_lif(self.qkv_conv_bn(x_seq))  # [T, N, 3*C, L]
        c = qkv.shape[2] // 3
        if c % self.num_heads != 0:
            raise ValueError(f"SpikingSelfAttention: {c} qkv channels per part are not "
                             f"divisible by num_heads={self.num_heads}")
        heads = qkv.reshape(T, N, 3, self.num_heads, c // self.num_heads, L)
        x_seq = self.attn_lif(self._attend(heads, self.scale)).reshape(T, N, c, L)
        return self.proj_lif(self.proj_conv_bn(x_seq))

    def extra_repr(self):
        return f"dim={self.dim}, num_heads={self.num_heads}, backend={self.backend}"
