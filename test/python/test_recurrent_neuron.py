"""snnexport.recurrent.RecurrentNeuron: a described neuron fed back its output through a
Linear. Its steps against the feedback written out here (step t's input x[t] + W s[t-1] + b,
s[-1] = 0), its argument errors, and the one `RecurrentNeuron` node it exports (the cell's
description, the feedback's weight and bias). The compiled runtime's equality with it is
e2e.nir.python and python.spikemesh.torchrun.nir.*."""
import os
import tempfile
import unittest

import onnx
import torch
from onnx import numpy_helper

from snnexport import export_onnx, functional, layer, neuron
from snnexport.export.names import DOMAIN, RECURRENT_NEURON
from snnexport.nir import NirNeuron, neuron_parts
from snnexport.recurrent import RecurrentNeuron

T, N, F = 10, 4, 6
LIF = {"type": "LIF", "tau": 2e-3, "r": 1.5, "v_leak": 0.0, "v_threshold": 0.8,
       "v_reset": 0.0}


def cell():
    return NirNeuron("LIF", neuron_parts("LIF", LIF, 1e-3, "lif"))


class RecurrentNeuronTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.m = RecurrentNeuron(cell(), F)
        with torch.no_grad():
            self.m.recurrent.weight.normal_(0.0, 0.6)
            self.m.recurrent.bias.fill_(0.05)
        self.x = torch.randn(T, N, F)

    def test_steps_add_the_previous_steps_spikes(self):
        got = self.m(self.x)
        w, b = self.m.recurrent.weight, self.m.recurrent.bias
        v, s, want = torch.zeros(N, F), torch.zeros(N, F), []
        for t in range(T):
            h = v + (1.5 * (self.x[t] + torch.nn.functional.linear(s, w, b)) - (v - 0.0)) / 2.0
            s = (h - 0.8 >= 0).float()
            v = s * 0.0 + (1 - s) * h
            want.append(s)
        want = torch.stack(want)
        rate = want.mean().item()
        self.assertTrue(0.05 <= rate <= 0.5, rate)
        self.assertTrue(torch.equal(got, want))
        # Without the feedback the spikes differ: the test sees it.
        with torch.no_grad():
            self.m.recurrent.weight.zero_()
            self.m.recurrent.bias.zero_()
        self.assertFalse(torch.equal(self.m(self.x), want))

    def test_gradients_reach_the_feedback(self):
        self.m(self.x).sum().backward()
        self.assertGreater(self.m.recurrent.weight.grad.abs().max().item(), 0.0)
        self.assertGreater(self.m.recurrent.bias.grad.abs().max().item(), 0.0)

    def test_without_bias_the_bias_is_a_frozen_zero(self):
        m = RecurrentNeuron(cell(), F, bias=False)
        self.assertFalse(m.recurrent.bias.requires_grad)
        self.assertEqual(m.recurrent.bias.abs().max().item(), 0.0)

    def test_bad_arguments_raise(self):
        with self.assertRaisesRegex(TypeError, "cell must be a neuron described by its parts"):
            RecurrentNeuron(neuron.IFNode(), F)
        with self.assertRaisesRegex(ValueError, "features must be an int >= 1"):
            RecurrentNeuron(cell(), 0)
        with self.assertRaisesRegex(ValueError, r"expects \[T, N, 6\], got \[10, 4, 5\]"):
            self.m(torch.zeros(T, N, 5))

    def test_exports_one_recurrent_neuron_node(self):
        model = torch.nn.Sequential(layer.Linear(3, F), self.m)
        functional.set_step_mode(model, "m")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            export_onnx(model, torch.randn(T, N, 3), path)
            g = onnx.load(path).graph
        (node,) = [n for n in g.node if n.op_type == RECURRENT_NEURON]
        self.assertEqual(node.domain, DOMAIN)
        self.assertEqual(list(node.input)[1:], ["1.recurrent.weight", "1.recurrent.bias"])
        weights = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.assertTrue((weights["1.recurrent.weight"] ==
                         self.m.recurrent.weight.detach().numpy()).all())
        attrs = {a.name: a for a in node.attribute}
        self.assertEqual(attrs["fire"].s.decode(), "h - v_threshold")


if __name__ == "__main__":
    unittest.main()
