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
                     "NonSpikingIFNode", "NonSpikingLIFNode"):
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
