"""The SpikingJelly surface its model zoo and tutorials use, under the same names, defaults
and behaviour, and its export; plus the real `spikingjelly` package when it is importable."""
import contextlib
import importlib.util
import inspect
import io
import os
import sys
import tempfile
import types
import unittest

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper
from torch import nn

from snnexport import backend, base, encoding, export_onnx, functional, layer, neuron, surrogate
from snnexport.export.names import DOMAIN, FROZEN_KEY, INPUT_REPEATED_OVER_TIME_KEY
from snnexport.model import spikformer

T = 4
E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e")


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def ops(proto):
    return [n.op_type for n in proto.graph.node]


class Exporting(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "m.onnx")

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, model, x):
        return export_onnx(model, x, self.path)


class MissingNamesTest(unittest.TestCase):
    """VotingLayer / GroupNorm / set_step_mode / set_backend / encoding used to be missing."""

    def test_voting_layer_averages_groups(self):
        x = torch.rand(5, 30)
        np.testing.assert_array_equal(layer.VotingLayer(10)(x).numpy(),
                                      F.avg_pool1d(x.unsqueeze(1), 10, 10).squeeze(1).numpy())
        self.assertEqual(layer.VotingLayer().voting_size, 10)
        xs = torch.rand(T, 5, 30)
        ms = layer.VotingLayer(3, step_mode="m")(xs)
        self.assertEqual(list(ms.shape), [T, 5, 10])
        np.testing.assert_array_equal(ms[2].numpy(), layer.VotingLayer(3)(xs[2]).numpy())

    def test_group_norm_per_step(self):
        gn = layer.GroupNorm(2, 6)
        xs = torch.randn(T, 3, 6, 4, 4)
        gn.step_mode = "m"
        y = gn(xs)
        gn.step_mode = "s"
        np.testing.assert_allclose(y[1].detach().numpy(), gn(xs[1]).detach().numpy(), atol=1e-6)

    def test_functional_names(self):
        for name in ("set_step_mode", "set_backend", "multi_step_forward", "seq_to_ann_forward",
                     "reset_net"):
            self.assertTrue(callable(getattr(functional, name)), name)
        for name in ("Linear", "Conv1d", "Conv2d", "BatchNorm1d", "BatchNorm2d", "GroupNorm",
                     "Dropout", "Dropout2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
                     "Flatten", "VotingLayer", "SeqToANNContainer", "MultiStepContainer"):
            self.assertTrue(hasattr(layer, name), name)

    def test_poisson_encoder_is_seeded_and_fires_at_x(self):
        x = torch.full((20000,), 0.3)
        a = encoding.PoissonEncoder(generator=torch.Generator().manual_seed(4))(x)
        b = encoding.PoissonEncoder(generator=torch.Generator().manual_seed(4))(x)
        self.assertTrue(torch.equal(a, b))
        self.assertEqual(set(a.unique().tolist()), {0.0, 1.0})
        # Binomial(20000, 0.3): the standard deviation of the rate is 0.0032.
        self.assertLess(abs(float(a.mean()) - 0.3), 5 * 0.0033)


class StepModeTest(unittest.TestCase):
    """SpikingJelly's default step_mode is 's' (the lif_fc port returned [N, 1, 10])."""

    def test_default_is_single_step(self):
        net = nn.Sequential(layer.Flatten(), layer.Linear(784, 10, bias=False),
                            neuron.LIFNode(tau=2.0, surrogate_function=surrogate.ATan()))
        self.assertEqual(list(net(torch.rand(8, 1, 28, 28)).shape), [8, 10])
        for m in net:
            self.assertEqual(m.step_mode, "s")

    def test_set_step_mode_and_multi_step_forward_agree(self):
        torch.manual_seed(0)
        net = nn.Sequential(layer.Linear(6, 5), neuron.IFNode())
        x = torch.rand(T, 3, 6) * 3
        looped = functional.multi_step_forward(x, net)
        functional.reset_net(net)
        functional.set_step_mode(net, "m")
        self.assertTrue(torch.equal(net(x), looped))

    def test_bad_step_mode(self):
        with self.assertRaisesRegex(ValueError, "step_mode"):
            neuron.IFNode(step_mode="x")
        with self.assertRaisesRegex(ValueError, "step_mode"):
            layer.Linear(2, 2).step_mode = "multi"


class BackendAndSurrogateTest(unittest.TestCase):
    def test_backend_accepted_with_one_note(self):
        backend._noted = False
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            a = neuron.LIFNode(backend="cupy")
            net = nn.Sequential(neuron.IFNode(), neuron.ParametricLIFNode())
            functional.set_backend(net, "cupy")
        self.assertEqual(a.backend, "cupy")
        self.assertEqual({m.backend for m in net}, {"cupy"})
        self.assertEqual(err.getvalue().count("note:"), 1, err.getvalue())
        with self.assertRaisesRegex(ValueError, "backend"):
            neuron.IFNode(backend="opencl")

    def test_surrogate_options(self):
        x = torch.linspace(-1, 1, 9)
        self.assertTrue(torch.equal(surrogate.Sigmoid(alpha=4.0, spiking=True)(x),
                                    (x >= 0).float()))
        np.testing.assert_allclose(surrogate.Sigmoid(alpha=4.0, spiking=False)(x).numpy(),
                                   torch.sigmoid(4.0 * x).numpy(), atol=1e-7)
        np.testing.assert_allclose(surrogate.ATan(alpha=2.0, spiking=False)(x).numpy(),
                                   (torch.atan(np.pi / 2 * 2.0 * x) / np.pi + 0.5).numpy(),
                                   atol=1e-7)


class SpikingJellyExportTest(Exporting):
    def test_torch_flatten_from_dim_2(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = layer.AdaptiveAvgPool2d((1, 1), step_mode="m")
                self.fc = layer.Linear(3, 2, step_mode="m")

            def forward(self, x):
                return self.fc(torch.flatten(self.pool(x), 2))
        proto = self.export(M(), torch.rand(T, 2, 3, 4, 4))
        self.assertIn("Flatten", ops(proto))

    def test_view_keeping_t_and_n(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = layer.Linear(12, 2, step_mode="m")

            def forward(self, x):
                return self.fc(x.view(x.shape[0], x.shape[1], -1))
        self.assertIn("Flatten", ops(self.export(M(), torch.rand(T, 2, 3, 2, 2))))

    def test_direct_encoding_in_forward(self):
        for repeat in (lambda x: x.unsqueeze(0).repeat(T, 1, 1, 1, 1),
                       lambda x: x.unsqueeze(0).expand(T, -1, -1, -1, -1)):
            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = layer.Conv2d(1, 2, 3, step_mode="m")
                    self.sn = neuron.IFNode(step_mode="m")

                def forward(self, x):
                    return self.sn(self.conv(repeat(x))).mean(0)
            proto = self.export(M(), torch.rand(3, 1, 6, 6))
            dims = [d.dim_value or d.dim_param for d in
                    proto.graph.input[0].type.tensor_type.shape.dim]
            self.assertEqual(dims, [T, "N", 1, 6, 6])
            # Recorded once, for the compiler's manifest and snn-run infer's [N, ...] input.
            props = {p.key: p.value for p in proto.metadata_props}
            self.assertEqual(props, {INPUT_REPEATED_OVER_TIME_KEY: "true"})

    def test_sum_readout(self):
        net = nn.Sequential(layer.Linear(4, 3, step_mode="m"), neuron.IFNode(step_mode="m"))

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x).sum(0)
        proto = self.export(M(), torch.rand(T, 2, 4))
        node = next(n for n in proto.graph.node if n.op_type == "ReduceSum")
        self.assertEqual(attrs(node), {"keepdims": 0})
        axes = next(i for i in proto.graph.initializer if i.name == node.input[1])
        self.assertEqual(list(onnx.numpy_helper.to_array(axes)), [0])

    def test_cat_on_channels(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = layer.Conv2d(2, 3, 1, step_mode="m")
                self.b = layer.Conv2d(2, 4, 1, step_mode="m")

            def forward(self, x):
                return torch.cat([self.a(x), self.b(x)], dim=-3)
        proto = self.export(M(), torch.rand(T, 2, 2, 3, 3))
        cat = next(n for n in proto.graph.node if n.op_type == "Concat")
        self.assertEqual(attrs(cat)["axis"], 2)

    def test_adaptive_pool_of_any_size(self):
        m = layer.AdaptiveAvgPool2d((7, 7), step_mode="m")
        proto = self.export(m, torch.rand(T, 2, 3, 1, 1))
        pool = [n for n in proto.graph.node if n.op_type == "AdaptiveAvgPool2d"]
        self.assertEqual(len(pool), 1)
        self.assertEqual((pool[0].domain, attrs(pool[0])["output_size"]), (DOMAIN, [7, 7]))

    def test_voting_and_group_norm_nodes(self):
        net = nn.Sequential(layer.Conv2d(2, 4, 1), layer.GroupNorm(2, 4), layer.Flatten(),
                            neuron.IFNode(), layer.VotingLayer(4))
        proto = self.export(net, torch.rand(T, 2, 2, 2, 2))
        self.assertIn("GroupNorm", ops(proto))
        vote = next(n for n in proto.graph.node if n.op_type == "AveragePool")
        self.assertEqual(attrs(vote)["kernel_shape"], [1, 4])

    def test_single_step_model_exports_as_its_multi_step_program(self):
        torch.manual_seed(0)
        net = nn.Sequential(layer.Flatten(), layer.Linear(12, 4), neuron.LIFNode())
        x = torch.rand(T, 2, 3, 4)
        single = self.export(net, x).SerializeToString()
        functional.set_step_mode(net, "m")
        self.assertEqual(self.export(net, x).SerializeToString(), single)

    def test_frozen_parameter_in_metadata(self):
        net = nn.Sequential(layer.Linear(4, 3), neuron.IFNode(), layer.Linear(3, 2))
        net[0].weight.requires_grad_(False)
        net[2].bias.requires_grad_(False)
        proto = self.export(net, torch.rand(T, 2, 4))
        props = {p.key: p.value for p in proto.metadata_props}
        self.assertEqual(props, {FROZEN_KEY: "0.weight,2.bias"})
        net[0].weight.requires_grad_(True)
        net[2].bias.requires_grad_(True)
        self.assertEqual(list(self.export(net, torch.rand(T, 2, 4)).metadata_props), [])

    def test_reference_trainer_honours_requires_grad(self):
        from snnexport import train as tr
        torch.manual_seed(0)
        net = nn.Sequential(layer.Linear(6, 8), neuron.IFNode(), layer.Linear(8, 3),
                            neuron.IFNode())
        functional.set_step_mode(net, "m")
        net[0].weight.requires_grad_(False)
        before = net[0].weight.detach().clone()
        g = np.random.default_rng(0)
        x, y = g.random((8, T, 6), dtype=np.float32) * 2, g.integers(0, 3, 8)
        with tempfile.TemporaryDirectory() as d:
            np.save(os.path.join(d, "x.npy"), x)
            np.save(os.path.join(d, "y.npy"), y)
            data = tr.load_npy(os.path.join(d, "x.npy"), os.path.join(d, "y.npy"), static=False)
        tr.train(net, data, tr.TrainConfig(batch_size=4, lr=0.5, steps=2, optimizer="sgd",
                                           momentum=0.9, weight_decay=0.1))
        self.assertTrue(torch.equal(net[0].weight, before))

    def test_reference_cli_freeze(self):
        from snnexport import models
        from snnexport import train as tr
        g = np.random.default_rng(1)
        with tempfile.TemporaryDirectory() as d:
            x, y = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
            np.save(x, (g.random((8, T, 64)) < 0.4).astype(np.float32))
            np.save(y, g.integers(0, 8, 8))
            flags = ["--model", "deep_mlp", "--data-npy", f"{x},{y}", "--steps", "2",
                     "--batch-size", "4", "--lr", "0.5", "--quiet", "--no-eval"]
            out = os.path.join(d, "params")
            self.assertEqual(tr.main(flags + ["--freeze", "stack.0.weight", "--save-params",
                                              out]), 0)
            torch.manual_seed(0)
            initial = models.deep_mlp().state_dict()
            got = np.load(os.path.join(out, "stack.0.weight.npy"))
            np.testing.assert_array_equal(got, initial["stack.0.weight"].numpy())
            self.assertFalse(np.array_equal(np.load(os.path.join(out, "stack.4.bias.npy")),
                                            initial["stack.4.bias"].numpy()))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(tr.main(flags + ["--freeze", "stack.9.weight"]), 1)
            self.assertIn("error: --freeze: the model has no parameter 'stack.9.weight'",
                          err.getvalue())

    def test_unsupported_tensor_functions_name_themselves(self):
        class M(nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fc, self.fn = layer.Linear(4, 4, step_mode="m"), fn

            def forward(self, x):
                return self.fn(self.fc(x))
        for fn, says in ((lambda x: x.flatten(0, 1), "flatten"), (lambda x: x.sum(1), "sum"),
                         (lambda x: x.unsqueeze(2), "unsqueeze"),
                         (lambda x: torch.cat([x, x], 1), "torch.cat")):
            with self.assertRaisesRegex(ValueError, says):
                self.export(M(fn), torch.rand(T, 2, 4))


def _sj_module(name, **classes):
    """Classes placed in a SpikingJelly package submodule (layer.misc, neuron.lif, ...)."""
    for cls in classes.values():
        cls.__module__ = f"spikingjelly.activation_based.{name}"
    return types.SimpleNamespace(**classes)


class SpikingJellyPackageLayoutTest(Exporting):
    """SpikingJelly's current source is a package (layer/misc.py, neuron/lif.py): its classes
    used to go unrecognised because only `...layer` / `...neuron` modules were matched."""

    def test_submodule_classes_by_name(self):
        class VotingLayer(nn.Module):
            def __init__(self, voting_size=10):
                super().__init__()
                self.voting_size, self.step_mode = voting_size, "s"

            def forward(self, x):
                return layer.VotingLayer(self.voting_size, step_mode=self.step_mode)(x)

        class IFNode(neuron.IFNode):
            pass
        misc = _sj_module("layer.misc", VotingLayer=VotingLayer)
        lif = _sj_module("neuron.integrate_and_fire", IFNode=IFNode)
        net = nn.Sequential(layer.Linear(6, 8), lif.IFNode(), misc.VotingLayer(4))
        proto = self.export(net, torch.rand(T, 2, 6))
        self.assertEqual([o for o in ops(proto) if o != "Reshape"],
                         ["Gemm", "IFNode", "AveragePool", "Flatten"])

    def test_attention_class_by_name(self):
        class SpikingSelfAttention(layer.attention.SpikingSelfAttention):
            pass
        sj = _sj_module("layer.attention", SpikingSelfAttention=SpikingSelfAttention)
        torch.manual_seed(0)
        ours = layer.attention.SpikingSelfAttention(8, 2)
        theirs = sj.SpikingSelfAttention(8, 2)
        theirs.load_state_dict(ours.state_dict())
        x = (torch.rand(T, 2, 8, 3) < 0.5).float()
        want = self.export(ours, x).SerializeToString()
        self.assertIn("SpikingAttention", ops(self.export(ours, x)))
        self.assertEqual(self.export(theirs, x).SerializeToString(), want)


# SpikingJelly's signatures (name -> (parameter, default) in order; inspect.Parameter.empty:
# required) of the Spikformer surface.
_EMPTY = inspect.Parameter.empty
_BACKEND = [("backend", "torch"), ("tau", 2.0), ("detach_reset", True)]
SPIKFORMER_SIGNATURES = {
    "SpikformerConv2dBN": [("in_channels", _EMPTY), ("out_channels", _EMPTY),
                           ("kernel_size", _EMPTY), ("stride", 1), ("padding", 0),
                           ("pool", False)],
    "SpikformerConv2dBNLIF": [("in_channels", _EMPTY), ("out_channels", _EMPTY),
                              ("kernel_size", _EMPTY), ("stride", 1), ("padding", 0),
                              ("pool", False)] + _BACKEND,
    "SpikformerPatchStem": [("img_size_h", 224), ("img_size_w", 224), ("patch_size", 16),
                            ("in_channels", 3), ("embed_dims", 256)] + _BACKEND,
    "SpikformerMLP": [("in_features", _EMPTY), ("hidden_features", _EMPTY),
                      ("out_features", _EMPTY)] + _BACKEND,
    "SpikformerBlock": [("dim", _EMPTY), ("num_heads", _EMPTY), ("mlp_ratio", 4.0)] + _BACKEND,
    "Spikformer": [("T", 4), ("in_channels", 3), ("img_size_h", 224), ("img_size_w", 224),
                   ("patch_size", 16), ("num_classes", 1000), ("embed_dims", 256),
                   ("num_heads", 8), ("mlp_ratio", 4.0), ("depths", 4)] + _BACKEND,
    "spikformer_ti": [("T", 4), ("in_channels", 3), ("img_size_h", 224), ("img_size_w", 224),
                      ("num_classes", 1000), ("backend", "torch")],
}
SPIKFORMER_SIGNATURES["spikformer_s"] = SPIKFORMER_SIGNATURES["spikformer_ti"]


def _signature(obj):
    return [(p.name, p.default) for p in inspect.signature(obj).parameters.values()]


class SpikformerSurfaceTest(unittest.TestCase):
    """base.MultiStepModule, layer.attention.SpikingSelfAttention and model.spikformer under
    SpikingJelly's names, signatures, submodule names and behaviour."""

    def test_names(self):
        from snnexport.layer.attention import SpikingSelfAttention
        self.assertIs(layer.attention.SpikingSelfAttention, SpikingSelfAttention)
        self.assertIs(layer.SpikingSelfAttention, SpikingSelfAttention)
        self.assertEqual(sorted(spikformer.__all__), sorted(SPIKFORMER_SIGNATURES))
        self.assertEqual(base.MultiStepModule().supported_step_mode(), ("m",))
        for name in ("Linear", "Conv1d", "SeqToANNContainer", "VotingLayer"):
            self.assertTrue(hasattr(layer, name), name)  # the package keeps the module's names

    def test_signatures(self):
        self.assertEqual(_signature(layer.attention.SpikingSelfAttention),
                         [("dim", _EMPTY), ("num_heads", 8), ("backend", "torch")])
        for name, want in SPIKFORMER_SIGNATURES.items():
            self.assertEqual(_signature(getattr(spikformer, name)), want, name)

    def test_attention_parts(self):
        a = layer.attention.SpikingSelfAttention(16, num_heads=2)
        self.assertEqual((a.dim, a.num_heads, a.head_dim, a.scale), (16, 2, 8, 0.125))
        self.assertEqual(list(a.state_dict()), [
            f"{c}.{k}" for c in ("qkv_conv_bn", "proj_conv_bn")
            for k in ("0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                      "1.num_batches_tracked")])
        self.assertEqual(tuple(a.qkv_conv_bn[0].weight.shape), (48, 16, 1))
        self.assertIsNone(a.qkv_conv_bn[0].bias)
        for name, thr in (("qkv_lif", 1.0), ("attn_lif", 0.5), ("proj_lif", 1.0)):
            sn = getattr(a, name)
            self.assertEqual((type(sn).__name__, sn.tau, sn.v_threshold, sn.detach_reset,
                              sn.step_mode), ("LIFNode", 2.0, thr, True, "m"), name)
        with self.assertRaisesRegex(ValueError, "step_mode"):
            a.step_mode = "s"  # a MultiStepModule
        with self.assertRaisesRegex(ValueError, r"\[T, N, C, L\]"):
            a(torch.rand(T, 2, 16))
        self.assertEqual(list(a(torch.rand(T, 2, 16, 5)).shape), [T, 2, 16, 5])

    def test_backend_reaches_every_neuron(self):
        backend._noted = True  # the one-time note is tested above
        model = spikformer.Spikformer(img_size_h=32, img_size_w=32, embed_dims=16, num_heads=2,
                                      depths=1, backend="cupy")
        attn = model.blocks[0].attn
        self.assertEqual(attn.backend, "cupy")
        attn.backend = "torch"
        self.assertEqual({attn.qkv_lif.backend, attn.attn_lif.backend, attn.proj_lif.backend},
                         {"torch"})
        functional.set_backend(model, "triton")
        self.assertEqual({m.backend for m in model.modules() if isinstance(m, neuron.BaseNode)},
                         {"triton"})

    def test_spikformer_structure(self):
        model = spikformer.Spikformer(img_size_h=32, img_size_w=32, num_classes=10,
                                      embed_dims=16, num_heads=2, depths=2)
        keys = list(model.state_dict())
        for k in ("patch_embed.stages.0.conv_bn.block.0.weight",
                  "patch_embed.stages.3.conv_bn.block.1.running_var",
                  "patch_embed.positional_encoding.conv_bn.block.1.bias",
                  "blocks.1.attn.qkv_conv_bn.0.weight", "blocks.0.mlp.fc2.1.weight",
                  "head.weight", "head.bias"):
            self.assertIn(k, keys)
        stem = model.patch_embed
        self.assertEqual([s.conv_bn.block[0].out_channels for s in stem.stages], [2, 4, 8, 16])
        self.assertEqual((stem.grid_size, stem.num_patches), ((2, 2), 4))
        self.assertIsInstance(stem.stages[0].conv_bn.block[2], nn.MaxPool2d)
        self.assertEqual(len(stem.positional_encoding.conv_bn.block), 2)  # no pool
        self.assertEqual(model.head.step_mode, "m")
        self.assertEqual(model.blocks[0].mlp.fc1[0].out_channels, 64)  # mlp_ratio 4
        images = torch.rand(2, 3, 32, 32)
        functional.reset_net(model)
        a = model(images)
        functional.reset_net(model)
        b = model(images.unsqueeze(0).repeat(4, 1, 1, 1, 1))
        self.assertEqual(list(a.shape), [4, 2, 10])
        self.assertTrue(torch.equal(a, b))  # direct encoding over T=4


def _has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package is missing
        return False


def _load_zoo(import_line):
    """test/e2e/sj_zoo.py with its one snnexport import replaced by `import_line`."""
    path = os.path.join(E2E, "sj_zoo.py")
    with open(path) as f:
        source = f.read()
    ours = "from snnexport import functional, layer, neuron, surrogate"
    assert source.count(ours) == 1, "sj_zoo.py must hold the port's import exactly once"
    module = types.ModuleType("sj_zoo_spikingjelly")
    exec(compile(source.replace(ours, import_line), path, "exec"), module.__dict__)
    return module


@unittest.skipUnless(importlib.util.find_spec("spikingjelly"),
                     "spikingjelly is not installed: its own modules cannot be exported here "
                     "(the test runs wherever `import spikingjelly` works)")
class RealSpikingJellyTest(Exporting):
    """The zoo networks built from SpikingJelly's modules export to the same program as the
    same networks built from snnexport's, weights and all."""

    def test_zoo_networks_export_alike(self):
        sj = _load_zoo("from spikingjelly.activation_based import functional, layer, neuron, "
                       "surrogate")
        sys.path.insert(0, E2E)
        try:
            import sj_zoo as ours
        finally:
            sys.path.pop(0)
        from spikingjelly.activation_based import neuron as sj_neuron
        from spikingjelly.activation_based import surrogate as sj_surrogate
        cases = [("SNN", dict(tau=2.0), torch.rand(T, 2, 1, 28, 28), False),
                 ("CSNN", dict(T=T, channels=4), torch.rand(2, 1, 28, 28), False),
                 ("MNISTNet", dict(channels=4), torch.rand(T, 2, 1, 28, 28), True)]
        for name, kw, x, takes_neuron in cases:
            with self.subTest(name):
                extra_ours = dict(spiking_neuron=neuron.IFNode,
                                  surrogate_function=surrogate.ATan()) if takes_neuron else {}
                extra_sj = dict(spiking_neuron=sj_neuron.IFNode,
                                surrogate_function=sj_surrogate.ATan()) if takes_neuron else {}
                a = getattr(ours, name)(**kw, **extra_ours)
                b = getattr(sj, name)(**kw, **extra_sj)
                b.load_state_dict(a.state_dict())
                want = export_onnx(a, x, self.path).SerializeToString()
                got = export_onnx(b, x, self.path).SerializeToString()
                self.assertEqual(got, want)

    @unittest.skipUnless(_has_module("spikingjelly.activation_based.model.spikformer"),
                         "this spikingjelly has no model.spikformer")
    def test_spikformer_exports_alike(self):
        from spikingjelly.activation_based.model import spikformer as sj_spikformer
        kw = dict(img_size_h=32, img_size_w=32, num_classes=10, embed_dims=32, num_heads=4,
                  depths=1)
        a, b = spikformer.Spikformer(**kw), sj_spikformer.Spikformer(**kw)
        self.assertEqual(list(a.state_dict()), list(b.state_dict()))
        b.load_state_dict(a.state_dict())
        x = torch.rand(2, 3, 32, 32)
        want = export_onnx(a, x, self.path).SerializeToString()
        self.assertEqual(export_onnx(b, x, self.path).SerializeToString(), want)


if __name__ == "__main__":
    unittest.main()
