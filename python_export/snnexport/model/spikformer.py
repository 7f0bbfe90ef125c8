"""Spikformer (a spiking vision transformer) as SpikingJelly's `model.spikformer` defines it:
the same classes, constructor arguments, defaults, submodule names (state_dict keys match)
and forward arithmetic, built from snnexport's modules."""
from torch import nn

from .. import functional, layer, neuron
from ..base import MultiStepModule
from ..layer.attention import SpikingSelfAttention

__all__ = ["Spikformer", "SpikformerBlock", "SpikformerConv2dBN", "SpikformerConv2dBNLIF",
           "SpikformerMLP", "SpikformerPatchStem", "spikformer_s", "spikformer_ti"]


def _lif(tau, detach_reset, backend):
    return neuron.LIFNode(tau=tau, detach_reset=detach_reset, step_mode="m", backend=backend)


class SpikformerConv2dBN(nn.Module):
    """Conv2d (no bias) + BatchNorm2d [+ MaxPool2d(3, 2, 1) when `pool`], applied per step."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, pool=False):
        super().__init__()
        ops = [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                         padding=padding, bias=False),
               nn.BatchNorm2d(out_channels)]
        if pool:
            ops.append(nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        self.block = layer.SeqToANNContainer(*ops)

    def forward(self, x_seq):
        return self.block(x_seq)


class SpikformerConv2dBNLIF(nn.Module, MultiStepModule):
    """SpikformerConv2dBN followed by a multi-step LIF neuron."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, pool=False,
                 backend="torch", tau=2.0, detach_reset=True):
        super().__init__()
        self.conv_bn = SpikformerConv2dBN(in_channels, out_channels, kernel_size, stride,
                                          padding, pool)
        self.neuron = _lif(tau, detach_reset, backend)

    def forward(self, x_seq):
        return self.neuron(self.conv_bn(x_seq))


class SpikformerPatchStem(nn.Module, MultiStepModule):
    """Four Conv3x3+BN+MaxPool+LIF stages (channels embed/8, /4, /2, embed; each halves H and
    W, 16x in all), then a Conv3x3+BN+LIF positional encoding added to its own input.
    [T, N, in_channels, H, W] -> [T, N, embed_dims, H/16, W/16]."""

    def __init__(self, img_size_h=224, img_size_w=224, patch_size=16, in_channels=3,
                 embed_dims=256, backend="torch", tau=2.0, detach_reset=True):
        super().__init__()
        if patch_size != 16:
            raise ValueError("SpikformerPatchStem downsamples by a fixed 16 (four stride-2 "
                             f"stages); patch_size must be 16, got {patch_size}")
        self.image_size = (img_size_h, img_size_w)
        self.patch_size = patch_size
        self.embed_dims = embed_dims
        dims = [embed_dims // 8, embed_dims // 4, embed_dims // 2, embed_dims]
        stages, c_in = [], in_channels
        for c_out in dims:
            stages.append(SpikformerConv2dBNLIF(c_in, c_out, 3, 1, 1, True, backend, tau,
                                                detach_reset))
            c_in = c_out
        self.stages = nn.Sequential(*stages)
        self.positional_encoding = SpikformerConv2dBNLIF(embed_dims, embed_dims, 3, 1, 1, False,
                                                         backend, tau, detach_reset)
        self.grid_size = (img_size_h // patch_size, img_size_w // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]

    def forward(self, x_seq):
        x_seq = self.stages(x_seq)
        return self.positional_encoding(x_seq) + x_seq


class SpikformerMLP(nn.Module, MultiStepModule):
    """Token MLP: Conv1d(1x1)+BN+LIF to `hidden_features`, Conv1d(1x1)+BN+LIF back to
    `out_features`, on [T, N, C, L]."""

    def __init__(self, in_features, hidden_features, out_features, backend="torch", tau=2.0,
                 detach_reset=True):
        super().__init__()
        self.fc1 = layer.SeqToANNContainer(
            nn.Conv1d(in_features, hidden_features, kernel_size=1, bias=False),
            nn.BatchNorm1d(hidden_features))
        self.neuron1 = _lif(tau, detach_reset, backend)
        self.fc2 = layer.SeqToANNContainer(
            nn.Conv1d(hidden_features, out_features, kernel_size=1, bias=False),
            nn.BatchNorm1d(out_features))
        self.neuron2 = _lif(tau, detach_reset, backend)

    def forward(self, x_seq):
        return self.neuron2(self.fc2(self.neuron1(self.fc1(x_seq))))


class SpikformerBlock(nn.Module, MultiStepModule):
    """Residual self-attention then residual MLP over the H*W tokens of [T, N, C, H, W]."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, backend="torch", tau=2.0,
                 detach_reset=True):
        super().__init__()
        self.attn = SpikingSelfAttention(dim=dim, num_heads=num_heads, backend=backend)
        self.mlp = SpikformerMLP(dim, int(dim * mlp_ratio), dim, backend, tau, detach_reset)

    def forward(self, x_seq):
        if x_seq.ndim != 5:
            raise ValueError(f"SpikformerBlock expects input [T, N, C, H, W], got {x_seq.shape}")
        T, N, C, H, W = x_seq.shape
        tokens = x_seq.flatten(3)  # [T, N, C, H*W]
        tokens = tokens + self.attn(tokens)
        tokens = tokens + self.mlp(tokens)
        return tokens.reshape(T, N, C, H, W).contiguous()


class Spikformer(nn.Module, MultiStepModule):
    """Patch stem, `depths` SpikformerBlocks, the mean over tokens and a multi-step Linear
    head: images [N, C, H, W] (repeated over T) or sequences [T, N, C, H, W] ->
    [T, N, num_classes] (average over T yourself for the prediction)."""

    def __init__(self, T=4, in_channels=3, img_size_h=224, img_size_w=224, patch_size=16,
                 num_classes=1000, embed_dims=256, num_heads=8, mlp_ratio=4.0, depths=4,
                 backend="torch", tau=2.0, detach_reset=True):
        super().__init__()
        self.T = T
        self.num_classes = num_classes
        self.embed_dims = embed_dims
        self.num_heads = num_heads
        self.depths = depths
        self.patch_embed = SpikformerPatchStem(img_size_h, img_size_w, patch_size, in_channels,
                                               embed_dims, backend, tau, detach_reset)
        self.blocks = nn.ModuleList([
            SpikformerBlock(embed_dims, num_heads, mlp_ratio, backend, tau, detach_reset)
            for _ in range(depths)])
        self.head = layer.Linear(embed_dims, num_classes, step_mode="m")
        self._init_weights()
        functional.set_step_mode(self, "m")

    def _init_weights(self):
        # Transformer-style init: truncated normal (std 0.02) weights, zero biases, unit BN.
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0.0)
            elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                nn.init.constant_(m.weight, 1.0)
                nn.init.constant_(m.bias, 0.0)

    def _to_sequence(self, x):
        if x.ndim == 4:  # direct encoding: the same image at every step
            return x.unsqueeze(0).repeat(self.T, 1, 1, 1, 1)
        if x.ndim == 5:
            return x
        raise ValueError("Spikformer expects images [N, C, H, W] or sequences "
                         f"[T, N, C, H, W], got {x.shape}")

    def forward_features(self, x_seq):
        x_seq = self.patch_embed(x_seq)
        for block in self.blocks:
            x_seq = block(x_seq)
        return x_seq.flatten(3).mean(dim=-1)  # [T, N, C]: the mean over tokens

    def forward(self, x):
        return self.head(self.forward_features(self._to_sequence(x)))


def spikformer_ti(T=4, in_channels=3, img_size_h=224, img_size_w=224, num_classes=1000,
                  backend="torch"):
    """Spikformer-Ti: embed_dims 256, 8 heads, 4 blocks."""
    return Spikformer(T=T, in_channels=in_channels, img_size_h=img_size_h,
                      img_size_w=img_size_w, num_classes=num_classes, embed_dims=256,
                      num_heads=8, mlp_ratio=4.0, depths=4, backend=backend)


def spikformer_s(T=4, in_channels=3, img_size_h=224, img_size_w=224, num_classes=1000,
                 backend="torch"):
    """Spikformer-S: embed_dims 384, 12 heads, 6 blocks."""
    return Spikformer(T=T, in_channels=in_channels, img_size_h=img_size_h,
                      img_size_w=img_size_w, num_classes=num_classes, embed_dims=384,
                      num_heads=12, mlp_ratio=4.0, depths=6, backend=backend)
