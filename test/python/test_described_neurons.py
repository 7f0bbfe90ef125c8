"""SpikingJelly's other neuron classes (snnexport.described_neurons): their constructor checks,
the `Neuron` node each exports (its parts, exactly), and the errors for what cannot be
described. The compiled runtime's equality with these classes is e2e.train.neurons."""
import os
import tempfile
import unittest

import onnx
import torch
from onnx import helper
from torch import nn

from snnexport import described_neurons as dn
from snnexport import export_onnx, functional, layer, neuron
from snnexport.export.names import DOMAIN, NEURON

T = 4


def neuron_node(model, x):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        export_onnx(model, x, path)
        proto = onnx.load(path)
    nodes = [n for n in proto.graph.node if n.domain == DOMAIN and n.op_type == NEURON]
    return nodes, proto


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def mlp(sn):
    net = nn.Sequential(layer.Linear(4, 4), sn)
    functional.set_step_mode(net, "m")
    return net


class DescribedNeuronTest(unittest.TestCase):
    def test_classes_are_under_neuron_as_in_spikingjelly(self):
        for name in ("QIFNode", "EIFNode", "IzhikevichNode", "CUBALIFNode", "KLIFNode",
                     "LIAFNode", "SimpleIFNode", "SimpleLIFNode", "HalfThresholdIFNode",
                     "NonSpikingIFNode", "NonSpikingLIFNode", "ILIFNode", "GatedLIFNode"):
            self.assertIs(getattr(neuron, name), getattr(dn, name))

    def test_constructor_checks_follow_spikingjelly(self):
        with self.assertRaisesRegex(ValueError, "a0 must be > 0"):
            dn.QIFNode(a0=0.0)
        with self.assertRaisesRegex(ValueError, "v_threshold > v_reset"):
            dn.EIFNode(v_threshold=-1.0)
        with self.assertRaisesRegex(ValueError, "tau must be > 1"):
            dn.KLIFNode(tau=1.0)
        with self.assertRaisesRegex(ValueError, "w_rest must be a float"):
            dn.IzhikevichNode(w_rest=0)
        with self.assertRaisesRegex(ValueError, "finite positive"):
            dn.HalfThresholdIFNode(v_threshold=0.0)
        with self.assertRaisesRegex(ValueError, "decode must be one of"):
            dn.NonSpikingLIFNode(decode="first")

    def test_qif_exports_its_parts_exactly(self):
        nodes, _ = neuron_node(mlp(dn.QIFNode(tau=3.0, v_c=0.7)), torch.rand(T, 2, 4))
        self.assertEqual(len(nodes), 1)
        a = attrs(nodes[0])
        self.assertEqual(a["states"], [b"v=-0.1"])
        self.assertIn(b"v_c=0.7", a["constants"])
        self.assertIn(b"tau=3.0", a["constants"])
        self.assertEqual(a["charge"], [b"h = v + (x + a0 * (v - v_rest) * (v - v_c)) / tau"])
        self.assertEqual(a["fire"], b"h - v_threshold")
        self.assertEqual(a["reset"], b"hard")
        self.assertEqual(a["surrogate"], b"sigmoid")
        self.assertNotIn("update", a)  # empty lists are left out

    def test_klif_k_is_an_operand_input(self):
        model = mlp(dn.KLIFNode())
        nodes, proto = neuron_node(model, torch.rand(T, 2, 4))
        a = attrs(nodes[0])
        self.assertEqual(a["operand_names"], [b"k"])
        self.assertEqual(len(nodes[0].input), 2)
        inits = {i.name for i in proto.graph.initializer}
        self.assertIn(nodes[0].input[1], inits)

    def test_izhikevich_keeps_the_spike_gradient_in_its_reset(self):
        nodes, _ = neuron_node(mlp(dn.IzhikevichNode(a=0.5, b=0.2, detach_reset=True)),
                               torch.rand(T, 2, 4))
        a = attrs(nodes[0])
        self.assertEqual(a["reset"], b"none")
        self.assertEqual(a["update"], [b"v = (1 - detach(s)) * h + s * v_reset",
                                       b"w = w + b * s"])
        self.assertEqual(a["states"], [b"v=0.0", b"w=0.0"])

    def test_what_cannot_be_described_is_refused(self):
        with self.assertRaisesRegex(ValueError, "needs a v_reset"):
            neuron_node(mlp(dn.SimpleLIFNode(2.0, True, v_reset=None)), torch.rand(T, 2, 4))
        with self.assertRaisesRegex(ValueError, "unsupported act"):
            neuron_node(mlp(dn.LIAFNode(act=nn.GELU(), threshold_related=True)),
                        torch.rand(T, 2, 4))

    def test_ilif_counts_spikes_and_soft_resets_by_the_count(self):
        # SpikingJelly's ilif_step: H = V - V / tau + X, C = round(clamp(H / Vth, 0, D)),
        # V = H - C Vth; the gradient passes where lo <= H / Vth <= hi.
        from snnexport.surrogate import MultiLevelSpikeCount
        node = dn.ILIFNode(tau=1.5, v_threshold=0.5,
                           surrogate_function=MultiLevelSpikeCount(3, grad_window=(0.0, 2.5)))
        node.step_mode = "m"
        torch.manual_seed(0)
        x = (torch.rand(T, 3, 5) * 3.0 - 1.2).requires_grad_(True)
        out = node(x)
        v, want, mask = torch.zeros(3, 5), [], []
        for t in range(T):
            h = v - v / 1.5 + x[t].detach()
            u = h / 0.5
            c = torch.round(torch.clamp(u, 0, 3))
            v = h - c * 0.5
            want.append(c)
            mask.append(((u >= 0) & (u <= 2.5)).float())
        self.assertTrue(torch.equal(out.detach(), torch.stack(want)))
        self.assertGreater(int((out > 1).sum()), 0)  # several levels, not only spikes
        self.assertTrue(0.05 <= float((out > 0).float().mean()) <= 0.5)
        out.backward(torch.ones_like(out))  # the window's straight-through gradient
        self.assertGreater(int((x.grad != 0).sum()), 0)
        with self.assertRaisesRegex(ValueError, "spiking MultiLevelSpikeCount"):
            dn.ILIFNode(surrogate_function=dn._surrogate.Sigmoid())
        a = attrs(neuron_node(mlp(dn.ILIFNode(detach_reset=True)), torch.rand(T, 2, 4))[0][0])
        self.assertNotIn("fire", a)
        self.assertEqual(a["update"], [b"c = spike_count(h / v_threshold, 4, 0.0, 4.0)",
                                       b"v = h - detach(c) * v_threshold"])
        self.assertEqual(a["output"], b"c")

    def test_gated_lif_follows_spikingjelly_step(self):
        # gated_lif_step with every gate through a sigmoid, channels at dim 1 of a step.
        torch.manual_seed(1)
        node = dn.GatedLIFNode(T, inplane=3)
        with torch.no_grad():
            for p in node.parameters():
                p.add_(torch.randn_like(p) * 0.5)
        x = torch.rand(T, 2, 3, 4, 4)
        out = node(x)
        g = {n: getattr(node, n).view(1, -1, 1, 1).sigmoid() for n in dn._GATED_OPERANDS[:-1]}
        v, s, want = torch.zeros(2, 3, 4, 4), torch.zeros(2, 3, 4, 4), []
        for t in range(T):
            cond = node.conduct[t].view(1, -1, 1, 1).sigmoid()
            i = x[t] * (1 - g["beta"] * (1 - cond))
            a = 1 - g["alpha"] * (1 - g["tau"])
            vn = (a * v - (1 - g["alpha"]) * g["linear_decay"]) + i
            v = vn - a * v * g["gamma"] * s - (1 - g["gamma"]) * g["v_subreset"] * s
            s = (v - g["v_threshold"] >= 0).float()
            want.append(s)
        self.assertTrue(torch.equal(out.detach(), torch.stack(want)))
        self.assertTrue(0.05 <= float(out.mean()) <= 0.5, float(out.mean()))
        with self.assertRaisesRegex(ValueError, "init_tau must be a float < 1"):
            dn.GatedLIFNode(T, init_tau=2.0)
        with self.assertRaisesRegex(ValueError, "got 3 steps"):
            node(torch.rand(3, 2, 3, 4, 4))

    def test_gated_lif_exports_per_step_conduct(self):
        for inplane, shape in ((None, [T]), (4, [T, 4])):
            nodes, proto = neuron_node(mlp(dn.GatedLIFNode(T, inplane=inplane)),
                                       torch.rand(T, 2, 4))
            a = attrs(nodes[0])
            self.assertEqual(a["operand_names"][-1], b"conduct[t]")
            self.assertEqual(len(nodes[0].input), 9)
            inits = {i.name: list(i.dims) for i in proto.graph.initializer}
            self.assertEqual(inits[nodes[0].input[8]], shape)

    def test_non_spiking_exports_its_mean_membrane(self):
        x = torch.rand(T, 2, 4)
        nodes, proto = neuron_node(mlp(dn.NonSpikingLIFNode(tau=2.0, decode="mean-mem")), x)
        a = attrs(nodes[0])
        self.assertEqual(a["output"], b"h")
        self.assertNotIn("fire", a)
        self.assertEqual(proto.graph.node[-1].op_type, "ReduceMean")
        with self.assertRaisesRegex(ValueError, "decode='max-mem' cannot be exported"):
            neuron_node(mlp(dn.NonSpikingIFNode(decode="max-mem")), x)

    def test_reference_steps_fire_as_their_descriptions_say(self):
        # HalfThresholdIF starts at v_threshold / 2: a constant input of 0.5 fires at once.
        sn = dn.HalfThresholdIFNode(step_mode="m")
        out = sn(torch.full((T, 1, 3), 0.5))
        self.assertEqual(out[:, 0, 0].tolist(), [1.0, 0.0, 1.0, 0.0])
        # NonSpikingLIF's mean-mem decode averages the membranes.
        v = dn.NonSpikingLIFNode(tau=2.0, decode="mean-mem")(torch.ones(2, 1, 1))
        self.assertAlmostEqual(float(v), (0.5 + 0.75) / 2)


if __name__ == "__main__":
    unittest.main()
