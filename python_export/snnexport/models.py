"""Reference SNNs. Every model takes a multi-step input [T, N, ...]: each is built in
SpikingJelly's default single-step mode and switched to multi-step with
functional.set_step_mode, as SpikingJelly's own tutorials do."""
from torch import nn

from . import described_neurons, functional, layer, neuron, surrogate
from .model import spikformer as _spikformer


def spiking_mlp(in_features=784, hidden=128, classes=10, tau=2.0):
    """Flatten-Linear-LIF-Linear-LIF. No readout: returns output spikes [T, N, classes]
    (take `.mean(0)` yourself for the firing rate)."""
    net = nn.Sequential(
        layer.Flatten(),
        layer.Linear(in_features, hidden),
        neuron.LIFNode(tau=tau),
        layer.Linear(hidden, classes),
        neuron.LIFNode(tau=tau),
    )
    functional.set_step_mode(net, "m")
    return net


class DeepMLP(nn.Module):
    """`layers` Linear layers, each followed by a spiking neuron, then the firing rate:
    [T, N, in_features] -> [N, classes]. `neuron` is "lif", "if" or "plif" (ParametricLIF, a
    learnable 1/tau per layer), firing with `surrogate` (surrogate.from_spec: "erf",
    "s2nn:3,0.8"; None: the neuron's default). The stack tensor parallelism splits in Megatron
    pairs. The parallel spiking neurons (PARALLEL) mix over the time steps and GatedLIF has a
    conductance per step, so they need `steps`, the T of the input."""

    PARALLEL = ("psn", "masked_psn", "masked_psn_full", "sliding_psn")
    NEURONS = ("lif", "if", "plif", "simple_if", "simple_lif", "half_threshold_if", "qif",
               "eif", "izhikevich", "cubalif", "klif", "liaf", "ilif", "gated_lif") + PARALLEL

    def __init__(self, in_features=64, hidden=64, classes=8, layers=3, neuron_kind="lif",
                 surrogate_spec=None, steps=None):
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers={layers} must be >= 1")
        if neuron_kind not in self.NEURONS:
            raise ValueError(f"neuron {neuron_kind!r} is not one of {', '.join(self.NEURONS)}")
        if (neuron_kind in self.PARALLEL or neuron_kind == "gated_lif") and steps is None:
            raise ValueError(f"neuron {neuron_kind!r} needs steps (the input's T)")

        def sn(width):
            kw = {}
            if surrogate_spec is not None:
                kw["surrogate_function"] = surrogate.from_spec(surrogate_spec)
            if neuron_kind == "gated_lif":  # per channel: a [C] gate each, conduct [T, C]
                return described_neurons.GatedLIFNode(steps, inplane=width, **kw)
            if neuron_kind == "if":
                return neuron.IFNode(**{"surrogate_function": surrogate.ATan(), **kw})
            if neuron_kind == "plif":
                return neuron.ParametricLIFNode(init_tau=2.0, decay_input=False, **kw)
            if neuron_kind == "lif":
                return neuron.LIFNode(tau=2.0, **kw)
            if neuron_kind in self.PARALLEL:
                return _parallel_neuron(neuron_kind, steps, kw)
            return _described_neuron(neuron_kind, kw)

        widths = [in_features] + [hidden] * (layers - 1) + [classes]
        stack = []
        for i in range(layers):
            stack += [layer.Linear(widths[i], widths[i + 1]), sn(widths[i + 1])]
        self.stack = nn.Sequential(*stack)
        functional.set_step_mode(self, "m")

    def forward(self, x_seq):
        return self.stack(x_seq).mean(0)


def _described_neuron(kind, kw):
    """One of SpikingJelly's other neuron classes, at parameters that fire on deep_mlp."""
    d = described_neurons
    if kind == "simple_if":
        return d.SimpleIFNode(**kw)
    if kind == "simple_lif":
        return d.SimpleLIFNode(tau=2.0, decay_input=True, **kw)
    if kind == "half_threshold_if":
        return d.HalfThresholdIFNode(**kw)
    if kind == "qif":
        return d.QIFNode(tau=2.0, **kw)
    if kind == "eif":
        return d.EIFNode(tau=2.0, detach_reset=True, **kw)
    if kind == "izhikevich":
        return d.IzhikevichNode(tau=2.0, a=0.5, b=0.2, v_rest=-0.1, **kw)
    if kind == "cubalif":
        return d.CUBALIFNode(**kw)
    if kind == "klif":
        return d.KLIFNode(scale_reset=True, v_reset=None, **kw)
    if kind == "ilif":
        return d.ILIFNode(v_threshold=0.5, **kw)
    return d.LIAFNode(act=nn.ReLU(), threshold_related=True, v_threshold=0.8, **kw)


def _parallel_neuron(kind, steps, kw):
    """A parallel spiking neuron for `steps` time steps: PSN, MaskedPSN of k = 2 ramping in its
    mask (lambda 0.5) or with the mask whole (lambda 1), SlidingPSN of k = 2. A MaskedPSN sums
    over 2 steps only, so its bias starts at -0.5 (not -1) for deep_mlp to fire 5-50 %."""
    if kind == "psn":
        return neuron.PSN(T=steps, **kw)
    if kind == "sliding_psn":
        return neuron.SlidingPSN(k=min(2, steps), **kw)
    sn = neuron.MaskedPSN(k=min(2, steps), T=steps,
                          lambda_init=1.0 if kind == "masked_psn_full" else 0.5, **kw)
    nn.init.constant_(sn.bias, -0.5)
    return sn


def deep_mlp(in_features=64, hidden=64, classes=8, layers=3, neuron="lif", surrogate=None,
             steps=None):
    return DeepMLP(in_features, hidden, classes, layers, neuron, surrogate, steps)


class CSNN(nn.Module):
    """SpikingJelly's Fashion-MNIST tutorial CSNN; input [T, N, 1, 28, 28] -> rate [N, classes]."""

    def __init__(self, channels=128, classes=10):
        super().__init__()
        c = channels

        def sn():
            return neuron.IFNode(surrogate_function=surrogate.ATan())

        self.conv_fc = nn.Sequential(
            layer.Conv2d(1, c, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(c),
            sn(),
            layer.MaxPool2d(2, 2),  # 14 x 14
            layer.Conv2d(c, c, kernel_size=3, padding=1, bias=False),
            layer.BatchNorm2d(c),
            sn(),
            layer.MaxPool2d(2, 2),  # 7 x 7
            layer.Flatten(),
            layer.Linear(c * 7 * 7, c * 4 * 4, bias=False),
            sn(),
            layer.Linear(c * 4 * 4, classes, bias=False),
            sn(),
        )
        functional.set_step_mode(self, "m")

    def forward(self, x_seq):
        return self.conv_fc(x_seq).mean(0)


def csnn(channels=128, classes=10):
    return CSNN(channels, classes)


class VGGDVS(nn.Module):
    """CIFAR10-DVS-style VGG: [Conv3x3-BN-LIF-MaxPool2] x blocks, Flatten-Dropout-Linear-LIF.
    Input [T, N, in_channels, image, image] -> rate [N, classes]."""

    def __init__(self, channels=64, classes=10, in_channels=2, image=48, blocks=3, dropout=0.5):
        super().__init__()
        if image % (2 ** blocks):
            raise ValueError(f"image={image} must be divisible by 2**blocks={2 ** blocks}")

        def sn():
            return neuron.LIFNode(tau=1.333, decay_input=False, detach_reset=True,
                                  surrogate_function=surrogate.ATan())

        feats, cin = [], in_channels
        for _ in range(blocks):
            feats += [layer.Conv2d(cin, channels, 3, padding=1, bias=False),
                      layer.BatchNorm2d(channels), sn(), layer.MaxPool2d(2, 2)]
            cin = channels
        side = image // 2 ** blocks
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(layer.Flatten(), layer.Dropout(dropout),
                                        layer.Linear(channels * side * side, classes), sn())
        functional.set_step_mode(self, "m")

    def forward(self, x_seq):
        return self.classifier(self.features(x_seq)).mean(0)


def vgg_dvs(channels=64, classes=10, in_channels=2, image=48, blocks=3, dropout=0.5):
    return VGGDVS(channels, classes, in_channels, image, blocks, dropout)


class BasicBlock(nn.Module):
    """SEW block with ADD connect: out = sn2(bn2(conv2(sn1(bn1(conv1(x)))))) + x."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = layer.SeqToANNContainer(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels))
        self.sn1 = neuron.IFNode(surrogate_function=surrogate.ATan())
        self.conv2 = layer.SeqToANNContainer(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels))
        self.sn2 = neuron.IFNode(surrogate_function=surrogate.ATan())

    def forward(self, x):
        out = self.sn2(self.conv2(self.sn1(self.conv1(x))))
        return out + x


class SEWResNet(nn.Module):
    """Stem Conv-BN-IF, `blocks` SEW basic blocks, AdaptiveAvgPool(1)-Flatten-Linear-IF.
    Input [T, N, in_channels, H, W] -> rate [N, classes]."""

    def __init__(self, channels=32, classes=10, blocks=2, in_channels=1):
        super().__init__()
        self.stem = nn.Sequential(
            layer.Conv2d(in_channels, channels, 3, padding=1, bias=False),
            layer.BatchNorm2d(channels),
            neuron.IFNode(surrogate_function=surrogate.ATan()))
        self.layers = nn.Sequential(*[BasicBlock(channels) for _ in range(blocks)])
        self.head = nn.Sequential(
            layer.AdaptiveAvgPool2d((1, 1)), layer.Flatten(), layer.Linear(channels, classes),
            neuron.IFNode(surrogate_function=surrogate.ATan()))
        functional.set_step_mode(self, "m")

    def forward(self, x_seq):
        return self.head(self.layers(self.stem(x_seq))).mean(0)


def sew_resnet(channels=32, classes=10, blocks=2, in_channels=1):
    return SEWResNet(channels, classes, blocks, in_channels)


# Published Spikformer sizes: (embed_dims, num_heads, depths).
SPIKFORMER_PRESETS = {"ti": (256, 8, 4), "s": (384, 12, 6)}


def spikformer(img_size=32, in_channels=3, num_classes=10, embed_dims=64, num_heads=4, depths=2,
               mlp_ratio=4.0, T=4, preset=None):
    """SpikingJelly's Spikformer on img_size x img_size images (the stem halves the size four
    times, so 32 gives 2x2 = 4 tokens): [T, N, C, H, W] (or [N, C, H, W], repeated over T) ->
    [T, N, classes], the head's outputs at every step (no readout). The defaults are a small
    test size; `preset` "ti" or "s" replaces embed_dims, num_heads and depths with the
    published ones."""
    if preset is not None:
        if preset not in SPIKFORMER_PRESETS:
            raise ValueError(f"spikformer preset {preset!r} is not one of "
                             f"{', '.join(SPIKFORMER_PRESETS)}")
        embed_dims, num_heads, depths = SPIKFORMER_PRESETS[preset]
    return _spikformer.Spikformer(T=T, in_channels=in_channels, img_size_h=img_size,
                                  img_size_w=img_size, patch_size=16, num_classes=num_classes,
                                  embed_dims=embed_dims, num_heads=num_heads,
                                  mlp_ratio=mlp_ratio, depths=depths)


MODELS = {
    "spiking_mlp": spiking_mlp,
    "deep_mlp": deep_mlp,
    "csnn": csnn,
    "vgg_dvs": vgg_dvs,
    "sew_resnet": sew_resnet,
    "spikformer": spikformer,
}


# --width sets the model's main width argument.
WIDTH_ARG = {"spiking_mlp": "hidden", "deep_mlp": "hidden", "csnn": "channels",
             "vgg_dvs": "channels", "sew_resnet": "channels", "spikformer": "embed_dims"}
# Options that only some models take.
_ONLY_FOR = {"blocks": ("vgg_dvs", "sew_resnet", "spikformer"),
             "image": ("vgg_dvs", "spikformer"), "layers": ("deep_mlp",),
             "neuron": ("deep_mlp",), "surrogate": ("deep_mlp",), "preset": ("spikformer",)}
# Options whose keyword argument has another name in some model.
_ARG_NAME = {("spikformer", "blocks"): "depths", ("spikformer", "image"): "img_size",
             ("spikformer", "classes"): "num_classes"}
# What a model with a time-major [T, N, classes] output returns (make_case's meta "output").
TIME_MAJOR_OUTPUT = {"spiking_mlp": "spikes", "spikformer": "logits"}


def model_kwargs(name, width=None, classes=None, blocks=None, image=None, layers=None,
                 neuron=None, preset=None, surrogate=None):
    """Keyword arguments of MODELS[name] from the command-line options (None: the default).
    Raises ValueError for a size below 1 or an option the model does not take."""
    given = {"width": width, "classes": classes, "blocks": blocks, "image": image,
             "layers": layers}
    for flag, v in given.items():
        if v is not None and v < 1:
            raise ValueError(f"--{flag} must be >= 1, got {v}")
    given["neuron"], given["preset"], given["surrogate"] = neuron, preset, surrogate
    kw = {}
    for flag, v in given.items():
        if v is None:
            continue
        if flag in _ONLY_FOR and name not in _ONLY_FOR[flag]:
            raise ValueError(f"--{flag} does not apply to {name}")
        key = WIDTH_ARG[name] if flag == "width" else _ARG_NAME.get((name, flag), flag)
        kw[key] = v
    return kw
