"""snnexport.export_onnx: the ONNX profile of docs/onnx-profile.md, checked structurally and by
running the file with an independent interpreter (onnx_interp) at a different batch size."""
import os
import tempfile
import types
import unittest

import numpy as np
import onnx
import torch
from onnx import helper
from torch import nn

import onnx_interp
from snnexport import (described_neurons, encoding, export_onnx, functional, layer, models,
                       neuron, surrogate)
from snnexport.export.names import DOMAIN, NEURON_TYPES, OP_ATTRIBUTES
from snnexport.reference import calibrate

T = 4


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def float_param_names(model):
    return {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}


class ExportCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "model.onnx")

    def tearDown(self):
        self.tmp.cleanup()

    def export(self, model, x):
        proto = export_onnx(model, x, self.path)
        onnx.checker.check_model(onnx.load(self.path), full_check=True)
        return proto

    def check_runs_like_torch(self, model, x, proto):
        """The file (exported at N=x.shape[1]) run at a smaller N equals PyTorch eval."""
        x3 = x[:, :3].contiguous()
        model.eval()
        functional.reset_net(model)
        with torch.no_grad():
            want = model(x3).numpy()
        functional.reset_net(model)
        got = onnx_interp.run(proto, x3.numpy())
        self.assertEqual(got.shape, want.shape)
        self.assertTrue(0.0 < want.mean() < 1.0, "the case must have spiking activity")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)

    def assert_profile(self, proto, model, x):
        g = proto.graph
        self.assertEqual(proto.ir_version, 8)
        self.assertEqual({(o.domain, o.version) for o in proto.opset_import},
                         {("", 13), (DOMAIN, 1)})
        self.assertEqual([i.name for i in g.input], ["input"])
        self.assertEqual([o.name for o in g.output], ["output"])
        dims = g.input[0].type.tensor_type.shape.dim
        self.assertEqual(dims[0].dim_value, x.shape[0])
        self.assertEqual(dims[1].dim_param, "N")
        self.assertEqual([d.dim_value for d in dims[2:]], list(x.shape[2:]))
        inits = {i.name for i in g.initializer}
        weights = {n for n in inits if "/" not in n}
        self.assertEqual(weights, float_param_names(model))
        names = [n.name for n in g.node]
        self.assertEqual(len(names), len(set(names)))
        for n in g.node:
            if n.op_type == "Reshape":
                self.assertRegex(n.name, r"/(fold|unfold)$")
                shape = onnx.numpy_helper.to_array(
                    next(i for i in g.initializer if i.name == n.input[1]))
                if n.name.endswith("/fold"):
                    self.assertEqual(shape[0], -1)
                else:
                    self.assertEqual(list(shape[:2]), [x.shape[0], -1])
            if n.domain == DOMAIN:
                self.assertIn(n.op_type, NEURON_TYPES)
                self.assertLessEqual(set(attrs(n)), set(OP_ATTRIBUTES[n.op_type]))


class ReferenceModelsTest(ExportCase):
    def build(self, fn, shape, **kw):
        torch.manual_seed(0)
        model = fn(**kw)
        x = torch.rand(shape)
        calibrate(model, x, torch.Generator().manual_seed(0))  # non-trivial BN statistics
        return model, x

    def test_csnn(self):
        model, x = self.build(models.csnn, (T, 5, 1, 28, 28), channels=4)
        proto = self.export(model, x)
        self.assert_profile(proto, model, x)
        ops = [n.op_type for n in proto.graph.node]
        self.assertEqual([o for o in ops if o != "Reshape"],
                         ["Conv", "BatchNormalization", "IFNode", "MaxPool", "Conv",
                          "BatchNormalization", "IFNode", "MaxPool", "Flatten", "Gemm", "IFNode",
                          "Gemm", "IFNode", "ReduceMean"])
        self.assertEqual(ops.count("Reshape"), 2 * 9)
        by_name = {n.name: n for n in proto.graph.node}
        conv = attrs(by_name["conv_fc.0"])
        self.assertEqual(conv, {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1],
                                "dilations": [1, 1], "group": 1})
        self.assertEqual(list(by_name["conv_fc.0"].input), ["conv_fc.0/fold", "conv_fc.0.weight"])
        bn = attrs(by_name["conv_fc.1"])
        self.assertAlmostEqual(bn["epsilon"], 1e-5)
        self.assertAlmostEqual(bn["momentum"], 0.9, places=6)
        self.assertEqual(list(by_name["conv_fc.1"].input)[1:],
                         ["conv_fc.1.weight", "conv_fc.1.bias", "conv_fc.1.running_mean",
                          "conv_fc.1.running_var"])
        sn = by_name["conv_fc.2"]
        self.assertEqual(sn.domain, DOMAIN)
        self.assertEqual(attrs(sn), {"v_threshold": 1.0, "v_reset": 0.0, "detach_reset": 0,
                                     "surrogate": b"atan", "alpha": 2.0})
        self.assertEqual(attrs(by_name["conv_fc.3"])["kernel_shape"], [2, 2])
        self.assertEqual(attrs(by_name["conv_fc.9"]), {"transB": 1, "alpha": 1.0, "beta": 1.0})
        self.assertEqual(attrs(by_name["mean"]), {"axes": [0], "keepdims": 0})
        out = proto.graph.output[0].type.tensor_type.shape.dim
        self.assertEqual((out[0].dim_param, out[1].dim_value), ("N", 10))
        self.check_runs_like_torch(model, x, proto)

    def test_spiking_mlp(self):
        model, x = self.build(models.spiking_mlp, (T, 5, 20), in_features=20, hidden=16)
        proto = self.export(model, x)
        self.assert_profile(proto, model, x)
        lif = [n for n in proto.graph.node if n.op_type == "LIFNode"]
        self.assertEqual(len(lif), 2)
        self.assertEqual(attrs(lif[0]), {"v_threshold": 1.0, "v_reset": 0.0, "detach_reset": 0,
                                         "surrogate": b"sigmoid", "alpha": 4.0, "tau": 2.0,
                                         "decay_input": 1})
        out = proto.graph.output[0].type.tensor_type.shape.dim
        self.assertEqual((out[0].dim_value, out[1].dim_param, out[2].dim_value), (T, "N", 10))
        self.check_runs_like_torch(model, x, proto)

    def test_vgg_dvs(self):
        model, x = self.build(models.vgg_dvs, (T, 5, 2, 16, 16), channels=4, image=16, blocks=2)
        proto = self.export(model, x)
        self.assert_profile(proto, model, x)
        lif = [n for n in proto.graph.node if n.op_type == "LIFNode"]
        self.assertEqual(len(lif), 3)
        a = attrs(lif[0])
        self.assertAlmostEqual(a.pop("tau"), 1.333, places=6)
        self.assertEqual(a, {"v_threshold": 1.0, "v_reset": 0.0, "detach_reset": 1,
                             "surrogate": b"atan", "alpha": 2.0, "decay_input": 0})
        drop = next(n for n in proto.graph.node if n.op_type == "Dropout")
        ratio = next(i for i in proto.graph.initializer if i.name == drop.input[1])
        self.assertAlmostEqual(float(onnx.numpy_helper.to_array(ratio)), 0.5)
        self.check_runs_like_torch(model, x, proto)

    def test_sew_resnet(self):
        model, x = self.build(models.sew_resnet, (T, 5, 1, 12, 12), channels=4, blocks=2)
        proto = self.export(model, x)
        self.assert_profile(proto, model, x)
        names = [(n.op_type, n.name) for n in proto.graph.node]
        # SeqToANNContainer(conv, bn): one fold, two ops, one unfold.
        i = names.index(("Reshape", "layers.0.conv1/fold"))
        self.assertEqual(names[i:i + 4], [("Reshape", "layers.0.conv1/fold"),
                                          ("Conv", "layers.0.conv1.0"),
                                          ("BatchNormalization", "layers.0.conv1.1"),
                                          ("Reshape", "layers.0.conv1/unfold")])
        adds = [n for n in proto.graph.node if n.op_type == "Add"]
        self.assertEqual(len(adds), 2)
        self.assertEqual(adds[0].input[1], "stem.2")  # the block's identity input
        self.assertIn(("GlobalAveragePool", "head.0"), names)
        self.check_runs_like_torch(model, x, proto)

    def test_default_csnn_exports(self):
        model = models.csnn()
        proto = self.export(model, torch.rand(2, 1, 1, 28, 28))
        self.assertEqual(proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value, 2)
        self.assertEqual({i.name for i in proto.graph.initializer if "/" not in i.name},
                         float_param_names(model))


class SoftPlif(nn.Module):
    """Covers what the reference models do not: PLIF, soft reset, AvgPool, AdaptiveAvgPool
    (h, w), BatchNorm1d, a plain top-level nn.Linear, conv options, Mul, nested containers."""

    def __init__(self):
        super().__init__()
        self.conv = layer.SeqToANNContainer(
            nn.Conv2d(2, 6, 3, stride=2, padding=2, dilation=2, groups=2),
            nn.Sequential(nn.BatchNorm2d(6), nn.AvgPool2d(2, 1, padding=1)))
        self.sn1 = neuron.ParametricLIFNode(init_tau=3.0, v_reset=None, decay_input=False,
                                            surrogate_function=surrogate.ATan(alpha=3.0))
        self.pool = layer.AdaptiveAvgPool2d((2, 2))
        self.flat = layer.Flatten()
        self.fc = nn.Linear(24, 8)
        self.bn = layer.BatchNorm1d(8, affine=False)
        self.sn2 = neuron.LIFNode(tau=1.5, v_reset=None, v_threshold=0.5)
        self.sn3 = neuron.IFNode(v_reset=-0.1, detach_reset=True)
        functional.set_step_mode(self, "m")

    def forward(self, x):
        y = self.fc(self.flat(self.pool(self.sn1(self.conv(x)))))
        a = self.sn2(self.bn(y))
        return (a * self.sn3(y)).mean(0)


class FeatureModelTest(ExportCase):
    def test_soft_reset_plif_and_more(self):
        torch.manual_seed(3)
        model, x = SoftPlif(), torch.rand(T, 6, 2, 9, 9) * 3
        calibrate(model, x, torch.Generator().manual_seed(3))
        proto = self.export(model, x)
        self.assert_profile(proto, model, x)
        by_name = {n.name: n for n in proto.graph.node}
        plif = by_name["sn1"]
        self.assertEqual(list(plif.input), ["conv/unfold", "sn1.w"])
        a = attrs(plif)
        self.assertNotIn("v_reset", a)
        self.assertAlmostEqual(a.pop("init_tau"), 3.0, places=6)
        self.assertEqual(a, {"v_threshold": 1.0, "detach_reset": 0, "surrogate": b"atan",
                             "alpha": 3.0, "decay_input": 0})
        self.assertEqual(attrs(by_name["sn2"])["v_threshold"], 0.5)
        self.assertNotIn("v_reset", attrs(by_name["sn2"]))
        self.assertAlmostEqual(attrs(by_name["sn3"])["v_reset"], -0.1, places=6)
        self.assertEqual(attrs(by_name["conv.0"]), {
            "kernel_shape": [3, 3], "strides": [2, 2], "pads": [2, 2, 2, 2],
            "dilations": [2, 2], "group": 2})
        self.assertEqual(by_name["conv.1.1"].op_type, "AveragePool")
        self.assertEqual(attrs(by_name["pool"])["kernel_shape"], [3, 3])  # 6x6 -> 2x2
        self.assertEqual(by_name["bn"].input[1], "bn/scale")  # affine=False: constant scale
        self.assertIn("Mul", [n.op_type for n in proto.graph.node])
        self.check_runs_like_torch(model, x, proto)

    def test_bare_neuron(self):
        proto = self.export(neuron.ParametricLIFNode(), torch.rand(T, 2, 3))
        self.assertEqual([(n.op_type, list(n.input)) for n in proto.graph.node],
                         [("ParametricLIFNode", ["input", "w"])])
        self.assertEqual(proto.graph.node[0].output[0], "output")

    def test_state_untouched(self):
        model = models.csnn(channels=4)
        x = torch.rand(T, 2, 1, 28, 28)
        model.train()
        model(x).sum().backward()  # neurons now hold non-leaf v tensors
        v_before = model.conv_fc[2].v.clone()
        sd_before = {k: v.clone() for k, v in model.state_dict().items()}
        export_onnx(model, x, self.path)
        self.assertTrue(model.training)
        self.assertTrue(torch.equal(model.conv_fc[2].v, v_before))
        for k, v in model.state_dict().items():
            self.assertTrue(torch.equal(v, sd_before[k]), k)

    def test_thread_count_does_not_matter(self):
        torch.manual_seed(0)
        model, x = models.sew_resnet(channels=8), torch.rand(T, 4, 1, 16, 16)
        calibrate(model, x, torch.Generator().manual_seed(0))
        model.eval()
        threads, outs = torch.get_num_threads(), []
        try:
            for n in (1, 2):
                torch.set_num_threads(n)
                functional.reset_net(model)
                with torch.no_grad():
                    outs.append(model(x))
        finally:
            torch.set_num_threads(threads)
        self.assertTrue(torch.equal(outs[0], outs[1]))


class Unsupported(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.fc = layer.Linear(4, 4)
        self.inner = inner

    def forward(self, x):
        return self.inner(self.fc(x))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.sn = neuron.IFNode()

    def forward(self, x):
        return self.sn(self.sn(x))


class Func(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fc = layer.Linear(4, 4)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.fc(x))


class ProfileNamesTest(ExportCase):
    """Every node of the domain that the exporter writes has an op type of
    names.OP_ATTRIBUTES and only the attributes listed there: the table that the
    schema.onnx_profile test compares with the compiler's (include/snn/Schema/OnnxProfile.h)
    is the one the emitters write."""

    def test_every_op_type_writes_only_its_listed_attributes(self):
        from snnexport.layer.attention import SpikingSelfAttention
        from snnexport.recurrent import RecurrentNeuron
        torch.manual_seed(0)
        convs = nn.Sequential(layer.Conv2d(2, 4, 1), layer.GroupNorm(2, 4),
                              neuron.IFNode(v_reset=None), layer.AdaptiveAvgPool2d((3, 3)),
                              neuron.LIFNode(tau=3.0), layer.Flatten(), layer.Linear(36, 8),
                              neuron.ParametricLIFNode(init_tau=2.0))
        functional.set_step_mode(convs, "m")
        described = nn.Sequential(layer.Linear(4, 4), described_neurons.IzhikevichNode(
            a=0.5, b=0.2), layer.Linear(4, 4), described_neurons.KLIFNode())
        functional.set_step_mode(described, "m")
        parallel = nn.Sequential(layer.Linear(4, 4), neuron.PSN(T), layer.Linear(4, 4),
                                 neuron.MaskedPSN(k=2, T=T), layer.Linear(4, 4),
                                 neuron.SlidingPSN(k=2))
        functional.set_step_mode(parallel, "m")
        recurrent = nn.Sequential(layer.Linear(4, 4), RecurrentNeuron(
            described_neurons.QIFNode(), 4))
        functional.set_step_mode(recurrent, "m")
        cases = [(convs, torch.rand(T, 2, 2, 2, 2)),
                 (SpikingSelfAttention(8, num_heads=2), torch.rand(T, 2, 8, 4)),
                 (described, torch.rand(T, 2, 4)), (parallel, torch.rand(T, 2, 4)),
                 (recurrent, torch.rand(T, 2, 4))]
        written = {}
        for model, x in cases:
            for n in self.export(model, x).graph.node:
                if n.domain == DOMAIN:
                    written.setdefault(n.op_type, set()).update(attrs(n))
        self.assertEqual(set(written), set(OP_ATTRIBUTES))
        for op_type, names in written.items():
            self.assertLessEqual(names, set(OP_ATTRIBUTES[op_type]), op_type)


class RejectTest(ExportCase):
    def assert_rejected(self, model, pattern, x=None):
        x = torch.rand(T, 2, 4) if x is None else x
        with self.assertRaisesRegex(ValueError, pattern):
            export_onnx(model, x, self.path)
        self.assertEqual(os.listdir(self.tmp.name), [])  # no partial file

    def test_unsupported_module(self):
        self.assert_rejected(Unsupported(nn.ReLU()), r"torch\.nn\.modules\.activation\.ReLU.*inner")
        self.assert_rejected(Unsupported(layer.SeqToANNContainer(nn.Tanh())), r"Tanh.*inner\.0")

    def test_unsupported_function(self):
        self.assert_rejected(Func(torch.sigmoid), "sigmoid")
        self.assert_rejected(Func(lambda x: x.mean(1)), r"mean\(0\)")
        self.assert_rejected(Func(lambda x: x * 2.0), "scalars")
        self.assert_rejected(Func(lambda x: (x, x)), "one tensor")

    def test_tau_le_one(self):
        with self.assertRaises(ValueError):
            neuron.LIFNode(tau=1.0)
        sn = neuron.LIFNode()
        sn.tau = 0.9  # bypasses the constructor check; export still refuses
        self.assert_rejected(Unsupported(sn), r"tau must be > 1")

    def test_encoder_inside_the_model(self):
        self.assert_rejected(Unsupported(encoding.PoissonEncoder()), r"PoissonEncoder.*random")

    def test_neuron_called_twice(self):
        self.assert_rejected(Twice(), "called twice")

    def test_module_after_readout(self):
        class AfterMean(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = layer.Linear(4, 4)

            def forward(self, x):
                return self.fc(x.mean(0).unsqueeze(0))
        self.assert_rejected(AfterMean(), "unsqueeze")

    def test_bad_example_input(self):
        with self.assertRaisesRegex(ValueError, "float32"):
            export_onnx(models.spiking_mlp(4, 4, 2), torch.rand(T, 2, 4).double(), self.path)


def _fake_spikingjelly():
    """Classes that look like spikingjelly.activation_based ones (only names and attributes)."""
    sg_mod = types.SimpleNamespace()

    class ATan(nn.Module):
        def __init__(self, alpha=2.0, spiking=True):
            super().__init__()
            self.alpha, self.spiking = alpha, spiking

    class LIFNode(nn.Module):
        def __init__(self, tau=2.0):
            super().__init__()
            self.impl = neuron.LIFNode(tau=tau, step_mode="m")
            self.tau, self.decay_input, self.v_threshold, self.v_reset = tau, True, 1.0, 0.0
            self.detach_reset, self.step_mode = False, "m"
            self.surrogate_function = ATan()

        def forward(self, x):
            return self.impl(x)

        def reset(self):
            self.impl.reset()

    class Linear(nn.Linear):
        def __init__(self, *a, step_mode="s", **k):
            super().__init__(*a, **k)
            self.step_mode = step_mode

        def forward(self, x):
            return functional.seq_to_ann_forward(x, super().forward) if self.step_mode == "m" \
                else super().forward(x)

    class SeqToANNContainer(nn.Sequential):
        def forward(self, x):
            return functional.seq_to_ann_forward(x, super().forward)

    for cls, mod in ((ATan, "surrogate"), (LIFNode, "neuron"), (Linear, "layer"),
                     (SeqToANNContainer, "layer")):
        cls.__module__ = f"spikingjelly.activation_based.{mod}"
    sg_mod.ATan, sg_mod.LIFNode, sg_mod.Linear, sg_mod.SeqToANNContainer = \
        ATan, LIFNode, Linear, SeqToANNContainer
    return sg_mod


class SpikingJellyDetectionTest(ExportCase):
    def test_spikingjelly_classes_by_name(self):
        sj = _fake_spikingjelly()
        model = nn.Sequential(sj.Linear(4, 5, step_mode="m"), sj.LIFNode(tau=3.0),
                              sj.SeqToANNContainer(sj.Linear(5, 3)), sj.LIFNode())
        x = torch.rand(T, 5, 4)
        calibrate(model, x, torch.Generator().manual_seed(0))
        proto = self.export(model, x)
        self.assertEqual([n.op_type for n in proto.graph.node if n.op_type != "Reshape"],
                         ["Gemm", "LIFNode", "Gemm", "LIFNode"])
        self.assertEqual(attrs(proto.graph.node[3])["tau"], 3.0)
        self.check_runs_like_torch(model, x, proto)
        # Single-step modules export as the same multi-step program.
        model[0].step_mode = "s"
        again = export_onnx(model, x, self.path)
        self.assertEqual(again.SerializeToString(), proto.SerializeToString())


if __name__ == "__main__":
    unittest.main()
