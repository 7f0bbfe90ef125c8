"""Spikformer in ONNX (docs/onnx-profile.md: Conv1d and BatchNorm1d over tokens, spiking
self-attention, means over per-step dims, tracing through shape checks): the reference
model's node sequence, the independent interpreter against PyTorch, firing rates, weights
back into PyTorch, and the refusals."""
import os
import unittest
import warnings

import numpy as np
import onnx
import torch
from onnx import helper
from torch import nn

import onnx_interp
import test_export
from snnexport import export_onnx, functional, layer, load_onnx_weights, models, neuron
from snnexport.export.names import DOMAIN, INPUT_REPEATED_OVER_TIME_KEY
from snnexport.layer.attention import SpikingSelfAttention
from snnexport.model import spikformer as sf
from snnexport.reference import calibrate, spikformer_bn_init

T, N, EMBED, HEADS = 4, 2, 64, 4
F32_EPS = float(np.finfo(np.float32).eps)


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _dim(d):
    if d.HasField("dim_param"):
        return d.dim_param
    return d.dim_value if d.HasField("dim_value") else None  # None: a folded T*N


def value_shapes(proto):
    return {v.name: [_dim(d) for d in v.type.tensor_type.shape.dim]
            for v in list(proto.graph.value_info) + list(proto.graph.output)}


def lif_rates(model, x):
    """Eval forward from a reset state; module path -> mean of its spikes."""
    rates, hooks = {}, []
    for path, m in model.named_modules():
        if isinstance(m, neuron.BaseNode):
            hooks.append(m.register_forward_hook(
                lambda mod, i, o, p=path: rates.__setitem__(p, float(o.mean()))))
    try:
        model.eval()
        functional.reset_net(model)
        with torch.no_grad():
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
        functional.reset_net(model)
    return out, rates


def reference_spikformer(seed=0):
    """The test size (2 blocks, 32x32, embed 64, 4 heads), its BatchNorm statistics measured
    on a direct-encoded batch and perturbed (reference.spikformer_bn_init) so every layer fires:
    at the default init the 0.02-std weights leave everything after the stem silent."""
    torch.manual_seed(seed)
    model = models.spikformer()
    images = torch.rand(N, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
    x = images.unsqueeze(0).repeat(T, 1, 1, 1, 1)
    calibrate(model, x, torch.Generator().manual_seed(seed), spikformer_bn_init)
    return model.eval(), x


class Exporting(test_export.ExportCase):
    """test_export's scratch file and checked export, plus the interpreter comparison."""

    def assert_runs_like_torch(self, model, x, proto, reduction=1):
        """Interpreter == PyTorch within float32 rounding of a `reduction`-term sum."""
        model.eval()
        functional.reset_net(model)
        with torch.no_grad():
            want = model(x).numpy()
        functional.reset_net(model)
        got = onnx_interp.run(proto, x.numpy())
        self.assertEqual(got.shape, want.shape)
        tol = 4 * reduction * F32_EPS
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max()))
        return got, want


BLOCK_0 = [  # (op, name, output shape) of SpikformerBlock blocks.0, in order
    ("Reshape", "flatten/fold", [None, EMBED, 4]),
    ("Reshape", "flatten/unfold", [T, "N", EMBED, 4]),
    ("Reshape", "blocks.0.attn.qkv_conv_bn/fold", [None, EMBED, 1, 4]),
    ("Conv", "blocks.0.attn.qkv_conv_bn.0", [None, 3 * EMBED, 1, 4]),
    ("BatchNormalization", "blocks.0.attn.qkv_conv_bn.1", [None, 3 * EMBED, 1, 4]),
    ("Reshape", "blocks.0.attn.qkv_conv_bn/unfold", [T, "N", 3 * EMBED, 1, 4]),
    ("Reshape", "blocks.0.attn.qkv_conv_bn/fold#1", [None, 3 * EMBED, 4]),
    ("Reshape", "blocks.0.attn.qkv_conv_bn/unfold#1", [T, "N", 3 * EMBED, 4]),
    ("LIFNode", "blocks.0.attn.qkv_lif", [T, "N", 3 * EMBED, 4]),
    ("SpikingAttention", "blocks.0.attn/attention", [T, "N", EMBED, 4]),
    ("LIFNode", "blocks.0.attn.attn_lif", [T, "N", EMBED, 4]),
    ("Reshape", "blocks.0.attn.proj_conv_bn/fold", [None, EMBED, 1, 4]),
    ("Conv", "blocks.0.attn.proj_conv_bn.0", [None, EMBED, 1, 4]),
    ("BatchNormalization", "blocks.0.attn.proj_conv_bn.1", [None, EMBED, 1, 4]),
    ("Reshape", "blocks.0.attn.proj_conv_bn/unfold", [T, "N", EMBED, 1, 4]),
    ("Reshape", "blocks.0.attn.proj_conv_bn/fold#1", [None, EMBED, 4]),
    ("Reshape", "blocks.0.attn.proj_conv_bn/unfold#1", [T, "N", EMBED, 4]),
    ("LIFNode", "blocks.0.attn.proj_lif", [T, "N", EMBED, 4]),
    ("Add", "add_1", [T, "N", EMBED, 4]),
    ("Reshape", "blocks.0.mlp.fc1/fold", [None, EMBED, 1, 4]),
    ("Conv", "blocks.0.mlp.fc1.0", [None, 4 * EMBED, 1, 4]),
    ("BatchNormalization", "blocks.0.mlp.fc1.1", [None, 4 * EMBED, 1, 4]),
    ("Reshape", "blocks.0.mlp.fc1/unfold", [T, "N", 4 * EMBED, 1, 4]),
    ("Reshape", "blocks.0.mlp.fc1/fold#1", [None, 4 * EMBED, 4]),
    ("Reshape", "blocks.0.mlp.fc1/unfold#1", [T, "N", 4 * EMBED, 4]),
    ("LIFNode", "blocks.0.mlp.neuron1", [T, "N", 4 * EMBED, 4]),
    ("Reshape", "blocks.0.mlp.fc2/fold", [None, 4 * EMBED, 1, 4]),
    ("Conv", "blocks.0.mlp.fc2.0", [None, EMBED, 1, 4]),
    ("BatchNormalization", "blocks.0.mlp.fc2.1", [None, EMBED, 1, 4]),
    ("Reshape", "blocks.0.mlp.fc2/unfold", [T, "N", EMBED, 1, 4]),
    ("Reshape", "blocks.0.mlp.fc2/fold#1", [None, EMBED, 4]),
    ("Reshape", "blocks.0.mlp.fc2/unfold#1", [T, "N", EMBED, 4]),
    ("LIFNode", "blocks.0.mlp.neuron2", [T, "N", EMBED, 4]),
    ("Add", "add_2", [T, "N", EMBED, 4]),
    ("Reshape", "reshape/fold", [None, EMBED, 2, 2]),
    ("Reshape", "reshape/unfold", [T, "N", EMBED, 2, 2]),
]


class SpikformerExportTest(Exporting):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.x = reference_spikformer()

    def setUp(self):
        super().setUp()
        self.proto = self.export(self.model, self.x)

    def test_block_node_sequence(self):
        shapes = value_shapes(self.proto)
        nodes = list(self.proto.graph.node)
        start = [n.name for n in nodes].index("flatten/fold")
        got = [(n.op_type, n.name, shapes[n.output[0]]) for n in nodes[start:start + 36]]
        self.assertEqual(got, BLOCK_0)
        by_name = {n.name: n for n in nodes}
        self.assertEqual(list(by_name["add_1"].input), ["flatten/unfold", "blocks.0.attn.proj_lif"])
        self.assertEqual(list(by_name["add_2"].input), ["add_1", "blocks.0.mlp.neuron2"])

    def test_spiking_attention_nodes(self):
        attn = [n for n in self.proto.graph.node if n.op_type == "SpikingAttention"]
        self.assertEqual([n.name for n in attn], ["blocks.0.attn/attention",
                                                  "blocks.1.attn/attention"])
        for i, n in enumerate(attn):
            self.assertEqual(n.domain, DOMAIN)
            self.assertEqual(list(n.input), [f"blocks.{i}.attn.qkv_lif"])
            self.assertEqual(attrs(n), {"num_heads": HEADS, "scale": 0.125})
            self.assertEqual(helper.get_attribute_value(n.attribute[0]), HEADS)
        kinds = {a.name: a.type for a in attn[0].attribute}
        self.assertEqual(kinds, {"num_heads": onnx.AttributeProto.INT,
                                 "scale": onnx.AttributeProto.FLOAT})

    def test_token_conv_and_neurons(self):
        by_name = {n.name: n for n in self.proto.graph.node}
        self.assertEqual(attrs(by_name["blocks.0.attn.qkv_conv_bn.0"]), {
            "kernel_shape": [1, 1], "strides": [1, 1], "pads": [0, 0, 0, 0],
            "dilations": [1, 1], "group": 1})
        inits = {i.name: i for i in self.proto.graph.initializer}
        self.assertEqual(list(inits["blocks.0.attn.qkv_conv_bn.0.weight"].dims),
                         [3 * EMBED, EMBED, 1, 1])
        self.assertEqual(list(inits["blocks.1.mlp.fc1.0.weight"].dims), [4 * EMBED, EMBED, 1, 1])
        weights = {k for k in inits if "/" not in k}
        self.assertEqual(weights, {k for k in self.model.state_dict()
                                   if not k.endswith("num_batches_tracked")})
        lif = attrs(by_name["blocks.0.attn.attn_lif"])
        self.assertEqual(lif, {"v_threshold": 0.5, "v_reset": 0.0, "detach_reset": 1,
                               "surrogate": b"sigmoid", "alpha": 4.0, "tau": 2.0,
                               "decay_input": 1})
        self.assertEqual(attrs(by_name["blocks.0.attn.qkv_lif"])["v_threshold"], 1.0)

    def test_readout_and_head(self):
        by_name = {n.name: n for n in self.proto.graph.node}
        self.assertEqual(attrs(by_name["mean"]), {"axes": [3], "keepdims": 0})
        self.assertEqual(list(by_name["mean"].input), ["flatten_2/unfold"])
        self.assertEqual(value_shapes(self.proto)["mean"], [T, "N", EMBED])
        self.assertEqual(self.proto.graph.node[-1].name, "head/unfold")
        self.assertEqual(value_shapes(self.proto)["output"], [T, "N", 10])
        dims = self.proto.graph.input[0].type.tensor_type.shape.dim
        self.assertEqual([d.dim_value or d.dim_param for d in dims], [T, "N", 3, 32, 32])

    def test_interpreter_equals_pytorch(self):
        # The head sums 64 features; everything before it is spikes, exact in both.
        got, want = self.assert_runs_like_torch(self.model, self.x, self.proto, reduction=EMBED)
        self.assertGreater(float(np.abs(want).max()), 0.0)
        got1 = onnx_interp.run(self.proto, self.x[:, :1].numpy())  # N is dynamic
        np.testing.assert_allclose(got1, got[:, :1], rtol=0, atol=1e-6)

    def test_every_neuron_layer_fires(self):
        _, rates = lif_rates(self.model, self.x)
        self.assertEqual(len(rates), 5 + 5 * 2)  # the stem's 5, then 5 per block
        for path, rate in rates.items():
            with self.subTest(path):
                self.assertGreaterEqual(rate, 0.01)
                self.assertLessEqual(rate, 0.60)

    def test_neuron_spikes_equal_pytorch(self):
        """Every neuron node's spikes in the interpreter are PyTorch's, bit for bit."""
        spikes = {}
        hooks = [m.register_forward_hook(lambda mod, i, o, p=p: spikes.__setitem__(p, o))
                 for p, m in self.model.named_modules() if isinstance(m, neuron.BaseNode)]
        try:
            functional.reset_net(self.model)
            with torch.no_grad():
                self.model(self.x)
        finally:
            for h in hooks:
                h.remove()
            functional.reset_net(self.model)
        values = {}
        onnx_interp.run(self.proto, self.x.numpy(), values)
        for path, s in spikes.items():
            want = s.numpy().reshape(values[path].shape)  # attn_lif runs on [T, N, H, D, L]
            np.testing.assert_array_equal(values[path], want, path)

    def test_image_input_exports_the_repeated_sequence(self):
        proto = export_onnx(self.model, self.x[0].contiguous(), self.path)
        self.assertEqual(proto.graph.SerializeToString(), self.proto.graph.SerializeToString())
        # The image export says the model repeats its input over T; the sequence's does not.
        self.assertEqual({p.key: p.value for p in proto.metadata_props},
                         {INPUT_REPEATED_OVER_TIME_KEY: "true"})
        self.assertEqual(list(self.proto.metadata_props), [])

    def test_weights_load_back(self):
        fresh = models.spikformer()
        load_onnx_weights(fresh, self.path)
        for k, v in self.model.state_dict().items():
            if not k.endswith("num_batches_tracked"):
                self.assertTrue(torch.equal(fresh.state_dict()[k], v), k)


class PresetTest(unittest.TestCase):
    def test_presets(self):
        for preset, (embed, heads, depths) in (("ti", (256, 8, 4)), ("s", (384, 12, 6))):
            m = models.spikformer(preset=preset)
            self.assertEqual((m.embed_dims, m.num_heads, m.depths, len(m.blocks)),
                             (embed, heads, depths, depths))
            self.assertEqual(m.blocks[0].attn.num_heads, heads)
            ref = (sf.spikformer_ti if preset == "ti" else sf.spikformer_s)(
                img_size_h=32, img_size_w=32, num_classes=10)
            self.assertEqual({k: v.shape for k, v in m.state_dict().items()},
                             {k: v.shape for k, v in ref.state_dict().items()})
        with self.assertRaisesRegex(ValueError, "preset 'xl'"):
            models.spikformer(preset="xl")

    def test_default_init(self):
        torch.manual_seed(0)
        m = models.spikformer()
        w = m.blocks[0].attn.qkv_conv_bn[0].weight
        self.assertAlmostEqual(float(w.std()), 0.02, delta=0.003)
        self.assertTrue(torch.equal(m.head.bias, torch.zeros(10)))
        bn = m.patch_embed.stages[0].conv_bn.block[1]
        self.assertTrue(torch.equal(bn.weight, torch.ones(8)))


class TokenNet(nn.Module):
    """User code in SpikingJelly's style: shape checks in forward, a Conv1d with kernel 3 and
    padding, a BatchNorm1d on its own, attention, per-step means."""

    def __init__(self):
        super().__init__()
        self.conv = layer.SeqToANNContainer(nn.Conv1d(6, 8, 3, padding=1, bias=True),
                                            nn.BatchNorm1d(8))
        self.sn = neuron.LIFNode(step_mode="m")
        self.attn = SpikingSelfAttention(8, num_heads=2)
        self.bn = layer.BatchNorm1d(8, step_mode="m")
        self.down = layer.Conv1d(8, 4, 2, stride=2, dilation=1, step_mode="m")

    def forward(self, x):
        if x.ndim != 4:
            raise ValueError(f"expected [T, N, C, L], got {x.shape}")
        T, N, C, L = x.shape
        if len(x.shape) != 4 or C != 6:
            raise ValueError("six channels")
        y = self.attn(self.sn(self.conv(x)))
        for _ in range(int(x.shape[0]) - T):  # never runs: integer use of a proxy
            y = y + y
        z = self.down(self.bn(y))            # [T, N, 4, L/2]
        return torch.mean(z, -1, True) + z.mean(dim=(3,), keepdim=True)


class UserCodeTest(Exporting):
    def test_shape_checks_in_forward(self):
        torch.manual_seed(1)
        net = TokenNet()
        x = (torch.rand(T, 3, 6, 10) < 0.6).float()
        calibrate(net, x, torch.Generator().manual_seed(1), spikformer_bn_init)
        proto = self.export(net, x)
        ops = [n.op_type for n in proto.graph.node]
        self.assertNotIn("Equal", ops)
        self.assertEqual(ops.count("SpikingAttention"), 1)
        by_name = {n.name: n for n in proto.graph.node}
        self.assertEqual(attrs(by_name["conv.0"]), {"kernel_shape": [1, 3], "strides": [1, 1],
                                                    "pads": [0, 1, 0, 1], "dilations": [1, 1],
                                                    "group": 1})
        self.assertEqual(list(by_name["conv.0"].input)[1:], ["conv.0.weight", "conv.0.bias"])
        self.assertEqual(attrs(by_name["down"])["strides"], [1, 2])
        self.assertEqual(by_name["bn"].op_type, "BatchNormalization")
        self.assertEqual(value_shapes(proto)["bn"], [None, 8, 1, 10])  # the [C, 1, L] view
        self.assertEqual(attrs(by_name["mean"]), {"axes": [3], "keepdims": 1})
        self.assertEqual(attrs(by_name["mean_1"]), {"axes": [3], "keepdims": 1})
        _, rates = lif_rates(net, x)
        self.assertTrue(all(r > 0 for r in rates.values()), rates)
        self.assert_runs_like_torch(net, x, proto, reduction=8 * 3)

    def test_spatial_mean(self):
        class Pool(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = layer.Conv2d(2, 3, 1, step_mode="m")
                self.sn = neuron.IFNode(step_mode="m")

            def forward(self, x):
                return self.sn(self.conv(x)).mean((4, -2))
        torch.manual_seed(3)
        net, x = Pool(), torch.rand(T, 2, 2, 3, 5) * 4
        proto = self.export(net, x)
        mean = proto.graph.node[-1]
        self.assertEqual((mean.op_type, attrs(mean)), ("ReduceMean", {"axes": [3, 4],
                                                                      "keepdims": 0}))
        self.assertEqual(value_shapes(proto)["output"], [T, "N", 3])
        self.assert_runs_like_torch(net, x, proto, reduction=15)

    def test_block_alone_and_flatten_back(self):
        torch.manual_seed(2)
        block = sf.SpikformerBlock(16, 2)
        x = (torch.rand(T, 2, 16, 2, 3) < 0.5).float()
        proto = self.export(block, x)
        self.assertEqual(proto.graph.node[-1].name, "reshape/unfold")
        self.assert_runs_like_torch(block, x, proto, reduction=16 * 4)


class RefusalTest(Exporting):
    def assert_refused(self, model, x, *patterns):
        with self.assertRaises(ValueError) as cm:
            export_onnx(model, x, self.path)
        for p in patterns:
            self.assertRegex(str(cm.exception), p)
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_heads_must_divide(self):
        with self.assertRaisesRegex(ValueError, "not divisible by num_heads 5"):
            SpikingSelfAttention(64, num_heads=5)
        with self.assertRaisesRegex(ValueError, "not divisible by num_heads 3"):
            sf.SpikformerBlock(64, 3)
        model = models.spikformer(embed_dims=32, num_heads=4, depths=1)
        model.blocks[0].attn.num_heads = 3  # after construction: only the export sees it
        self.assert_refused(model, torch.rand(T, 1, 3, 32, 32), r"'blocks\.0\.attn'",
                            r"96 qkv channels are not divisible by 3 \* num_heads = 9")

    def test_bad_ndim(self):
        model = models.spikformer(embed_dims=32, depths=1)
        with self.assertRaisesRegex(ValueError, r"images \[N, C, H, W\] or sequences"):
            model(torch.rand(3, 32, 32))
        self.assert_refused(model, torch.rand(2, 1, 1, 3, 32, 32), "Spikformer expects")
        block = sf.SpikformerBlock(16, 2)
        self.assert_refused(block, torch.rand(T, 2, 16, 4), r"\[T, N, C, H, W\]",
                            r"\[4, 2, 16, 4\]")
        self.assert_refused(SpikingSelfAttention(16, 2), torch.rand(T, 2, 16, 2, 2),
                            r"'model'", r"\[T, N, C, L\], got \[4, 2, 16, 2, 2\]")
        with self.assertRaisesRegex(ValueError, "patch_size must be 16"):
            sf.SpikformerPatchStem(patch_size=8)

    def test_unsupported_qkv_neuron(self):
        model = models.spikformer(embed_dims=32, depths=1)
        model.blocks[0].attn.qkv_lif = nn.ReLU()
        self.assert_refused(model, torch.rand(T, 1, 3, 32, 32), r"'blocks\.0\.attn'",
                            "'qkv_lif' is torch.nn.modules.activation.ReLU, not a supported "
                            "neuron")

    def test_conv1d_options(self):
        for conv, says in ((nn.Conv1d(4, 4, 2, padding="same"), "Conv1d padding='same' with "
                            "asymmetric pads"),
                           (nn.Conv1d(4, 4, 3, padding=1, padding_mode="circular"),
                            "Conv1d padding_mode='circular'")):
            with self.subTest(says), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's note on an even kernel with 'same'
                self.assert_refused(layer.SeqToANNContainer(conv), torch.rand(T, 2, 4, 6), says)
        proto = export_onnx(layer.SeqToANNContainer(nn.Conv1d(4, 4, 3, padding="same")),
                            torch.rand(T, 2, 4, 6), self.path)
        self.assertEqual(attrs(proto.graph.node[1])["pads"], [0, 1, 0, 1])

    def test_means_mixing_time_and_steps(self):
        class Mean(nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fc, self.fn = layer.Linear(4, 4, step_mode="m"), fn

            def forward(self, x):
                return self.fn(self.fc(x))
        for fn in (lambda x: x.mean((1, 2)), lambda x: x.mean((0, -1)),
                   lambda x: x.mean(0, keepdim=True), lambda x: x.mean(),
                   lambda x: x.mean(-1, dtype=torch.float32)):
            self.assert_refused(Mean(fn), torch.rand(T, 2, 4), r"mean\(0\)")


class LoadShapesTest(unittest.TestCase):
    def test_unit_dims_only(self):
        from snnexport.weights import load_state_arrays
        conv = nn.Conv1d(3, 2, 2)
        w = np.arange(12, dtype=np.float32).reshape(2, 3, 1, 2)
        load_state_arrays(conv, {"weight": w, "bias": np.ones((2, 1), np.float32)}, "f")
        np.testing.assert_array_equal(conv.weight.detach().numpy(), w.reshape(2, 3, 2))
        with self.assertRaisesRegex(ValueError, r"shape mismatch weight \(file \[2, 2, 3\]"):
            load_state_arrays(conv, {"weight": w.reshape(2, 2, 3), "bias": np.ones(2)}, "f")
        with self.assertRaisesRegex(ValueError, r"shape mismatch weight"):
            load_state_arrays(conv, {"weight": np.ones((2, 3, 2, 2)), "bias": np.ones(2)}, "f")


if __name__ == "__main__":
    unittest.main()
