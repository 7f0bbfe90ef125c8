"""SpikingJelly's parallel spiking neurons (snnexport.psn: PSN, MaskedPSN, SlidingPSN): their
outputs and gradients against the formulas of docs/semantics.md written out here, their
initialisation, state_dict and step-mode rules, and the one `ParallelSpikingNeuron` node each
exports. The compiled runtime's equality with these classes is e2e.train.parallel_neurons."""
import math
import os
import tempfile
import unittest
from typing import Dict, Tuple

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch import nn

from snnexport import export_onnx, functional, layer, neuron, psn, surrogate
from snnexport.export.names import DOMAIN, PARALLEL_NEURON, SURROGATE_PARAMETERS, SURROGATES

T, N, C = 6, 3, 5
EPS = float(np.finfo(np.float32).eps)


def atan_slope(h: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    """ATan's dS/dH (SpikingJelly): (alpha / 2) / (1 + (pi / 2 * alpha * h)^2)."""
    return (alpha / 2) / (1 + (math.pi / 2 * alpha * h) ** 2)


def band(steps: int, k: int) -> torch.Tensor:
    """1 where 0 <= i - j < k: the k steps up to and including step i."""
    i = torch.arange(steps).view(-1, 1)
    j = torch.arange(steps).view(1, -1)
    return ((i - j >= 0) & (i - j < k)).double()


def masked_matrix(weight: torch.Tensor, k: int, lambda_: float) -> torch.Tensor:
    """MaskedPSN's W: weight times the k-step band, ramped from all ones by lambda below 1."""
    mask = band(weight.shape[0], k)
    if lambda_ >= 1.0:
        return weight * mask
    return weight * (lambda_ * mask + (1.0 - lambda_))


def sliding_matrix(weight: torch.Tensor, steps: int) -> torch.Tensor:
    """SlidingPSN's W: W[i][j] = weight[k - 1 - (i - j)] for 0 <= i - j < k, else 0."""
    k = weight.shape[0]
    rows = []
    for i in range(steps):
        rows.append(torch.stack([weight[k - 1 - (i - j)] if 0 <= i - j < k
                                 else weight.new_zeros(()) for j in range(steps)]))
    return torch.stack(rows)


def formula(matrix: torch.Tensor, bias: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """H[t] = sum over s of W[t, s] X[s] + B[t], in float64."""
    h = torch.einsum("ts,sm->tm", matrix.double(), x.double().reshape(x.shape[0], -1))
    return (h + bias.double()).reshape(x.shape)


def run(m: nn.Module, x: torch.Tensor, upstream: torch.Tensor):
    """m's spikes and H for x, and the gradients of sum(spikes * upstream) w.r.t. x, weight
    and bias."""
    x = x.clone().requires_grad_(True)
    m.h_log = []
    s = m(x)
    h = m.h_log[0]
    m.h_log = None
    (s * upstream).sum().backward()
    return s.detach(), h, x.grad, m.weight.grad, m.bias.grad


class ParallelNeuronMath(unittest.TestCase):
    """Outputs and gradients of each class against the formulas above: spikes equal where
    H is clear of 0, H and the gradients within float32 roundoff of sums over T steps."""

    def setUp(self) -> None:
        torch.manual_seed(3)
        self.x = torch.randn(T, N, C) * 1.5
        self.upstream = torch.randn(T, N, C)

    def check(self, m: nn.Module, matrix_of, bias_shape: Tuple[int, ...]) -> None:
        s, h, gx, gw, gb = run(m, self.x, self.upstream)
        weight = m.weight.detach().double().requires_grad_(True)
        bias = m.bias.detach().double().requires_grad_(True)
        x = self.x.double().requires_grad_(True)
        want_h = formula(matrix_of(weight), bias, x)
        # float32 sums of T products of values up to |w| |x|: T eps of their magnitude.
        bound = T * EPS * float(formula(matrix_of(weight).abs(), bias.abs(), x.abs()).max())
        self.assertLess(float((h.double() - want_h).abs().max()), bound)
        clear = want_h.detach().abs() > bound
        self.assertTrue(torch.equal(s[clear], (want_h.detach()[clear] >= 0).float()))
        self.assertGreater(float(s.mean()), 0.02)  # fires at all
        # Backward of the surrogate: dL/dH = upstream * ATan'(H), then through H's formula.
        (want_h * (self.upstream.double() * atan_slope(want_h.detach()))).sum().backward()
        for got, want in ((gx, x.grad), (gw, weight.grad), (gb, bias.grad)):
            scale = float(want.abs().max()) + 1e-12
            self.assertLess(float((got.double() - want).abs().max()) / scale, 1e-4)
        self.assertEqual(tuple(gb.shape), bias_shape)

    def test_psn(self) -> None:
        self.check(neuron.PSN(T), lambda w: w, (T, 1))

    def test_masked_psn_ramping_mask(self) -> None:
        m = neuron.MaskedPSN(k=2, T=T, lambda_init=0.3, step_mode="m")
        self.check(m, lambda w: masked_matrix(w, 2, 0.3), (T, 1))

    def test_masked_psn_whole_mask(self) -> None:
        m = neuron.MaskedPSN(k=3, T=T, step_mode="m")
        m.lambda_ = 1.0
        self.check(m, lambda w: masked_matrix(w, 3, 1.0), (T, 1))
        # Outside the band the weight has no effect, so no gradient.
        m.weight.grad = None
        run(m, self.x, self.upstream)
        self.assertEqual(float(m.weight.grad[band(T, 3) == 0].abs().max()), 0.0)

    def test_sliding_psn_k_below_t(self) -> None:
        m = neuron.SlidingPSN(k=3, step_mode="m")
        self.check(m, lambda w: sliding_matrix(w, T), ())

    def test_sliding_psn_k_equal_t(self) -> None:
        torch.manual_seed(1)
        m = neuron.SlidingPSN(k=T, exp_init=False, step_mode="m")
        self.check(m, lambda w: sliding_matrix(w, T), ())

    def test_sliding_conv_backend_sums_the_same(self) -> None:
        gemm = neuron.SlidingPSN(k=3, step_mode="m")
        conv = neuron.SlidingPSN(k=3, step_mode="m", backend="conv")
        _, h_gemm, *_ = run(gemm, self.x, self.upstream)
        _, h_conv, *_ = run(conv, self.x, self.upstream)
        self.assertLess(float((h_gemm - h_conv).abs().max()), 3 * EPS * float(h_gemm.abs().max()))


class ParallelNeuronClass(unittest.TestCase):
    """SpikingJelly's constructor defaults, initialisation and state rules."""

    def test_classes_are_under_neuron(self) -> None:
        for name in ("PSN", "MaskedPSN", "SlidingPSN"):
            self.assertIs(getattr(neuron, name), getattr(psn, name))
            self.assertIn(name, neuron.__all__)

    def test_initialisation_follows_spikingjelly(self) -> None:
        torch.manual_seed(7)
        m = neuron.PSN(4)
        torch.manual_seed(7)
        want = torch.zeros(4, 4)
        nn.init.kaiming_uniform_(want, a=math.sqrt(5))
        self.assertTrue(torch.equal(m.weight.detach(), want))
        self.assertTrue(torch.equal(m.bias.detach(), torch.full((4, 1), -1.0)))
        self.assertIsInstance(m.surrogate_function, surrogate.ATan)
        sliding = neuron.SlidingPSN(k=4)
        self.assertEqual(sliding.weight.tolist(), [0.125, 0.25, 0.5, 1.0])
        self.assertEqual(sliding.bias.shape, ())
        self.assertEqual(float(sliding.bias), -1.0)
        self.assertEqual(sliding.step_mode, "s")
        masked = neuron.MaskedPSN(k=2, T=4)
        self.assertEqual((masked.step_mode, float(masked.lambda_)), ("s", 0.0))
        self.assertTrue(torch.equal(masked.mask0, band(4, 2).float()))

    def test_masked_state_dict_and_lambda(self) -> None:
        m = neuron.MaskedPSN(k=2, T=4, step_mode="m")
        self.assertEqual(sorted(m.state_dict()), ["bias", "weight"])
        m.lambda_ = 0.75
        self.assertEqual(float(m.lambda_), 0.75)
        # A SpikingJelly state_dict also holds its buffers: accepted, its lambda taken.
        other = neuron.MaskedPSN(k=2, T=4, step_mode="m")
        state = dict(m.state_dict(), _lambda_=torch.tensor(0.25), mask0=m.mask0,
                     mask1=m.mask1)
        other.load_state_dict(state)
        self.assertEqual(float(other.lambda_), 0.25)
        self.assertTrue(torch.equal(other.weight, m.weight))

    def test_single_step_is_not_supported(self) -> None:
        x = torch.rand(4, 2, 3)
        for m in (neuron.MaskedPSN(k=2, T=4), neuron.SlidingPSN(k=2)):
            with self.assertRaisesRegex(NotImplementedError, "step_mode='m'"):
                m(x)
        with self.assertRaisesRegex(ValueError, "step_mode"):
            neuron.SlidingPSN(k=2, step_mode="x")

    def test_set_step_mode_and_reset_net(self) -> None:
        net = nn.Sequential(layer.Linear(3, 3), neuron.PSN(4), neuron.SlidingPSN(k=2),
                            neuron.MaskedPSN(k=2, T=4))
        functional.set_step_mode(net, "m")
        self.assertEqual((net[2].step_mode, net[3].step_mode), ("m", "m"))
        net(torch.rand(4, 2, 3))
        functional.reset_net(net)  # nothing to reset, and no error


def export(model: nn.Module, x: torch.Tensor) -> onnx.ModelProto:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        export_onnx(model, x, path)
        return onnx.load(path)


def parallel_nodes(proto: onnx.ModelProto):
    return [n for n in proto.graph.node if n.domain == DOMAIN and n.op_type == PARALLEL_NEURON]


def attrs(node: onnx.NodeProto) -> Dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def mlp(sn: nn.Module, features: int = 4) -> nn.Module:
    net = nn.Sequential(layer.Linear(features, features), sn)
    functional.set_step_mode(net, "m")
    return net


class ParallelNeuronExport(unittest.TestCase):
    def test_each_class_is_one_node(self) -> None:
        torch.manual_seed(0)
        cases = [(neuron.PSN(4), {"variant": b"psn"}, (4, 4), (4, 1)),
                 (neuron.MaskedPSN(k=3, T=4, lambda_init=0.5),
                  {"variant": b"masked", "k": 3, "lambda": 0.5}, (4, 4), (4, 1)),
                 (neuron.SlidingPSN(k=2), {"variant": b"sliding", "k": 2}, (2,), ())]
        for sn, want, weight_shape, bias_shape in cases:
            proto = export(mlp(sn), torch.rand(4, 2, 4))
            (node,) = parallel_nodes(proto)
            self.assertEqual(attrs(node), dict(want, surrogate=b"atan", alpha=2.0))
            self.assertEqual(list(node.input[1:]), ["1.weight", "1.bias"])
            inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
            self.assertEqual(inits["1.weight"].shape, weight_shape)
            self.assertEqual(inits["1.bias"].shape, bias_shape)
            np.testing.assert_array_equal(inits["1.weight"], sn.weight.detach().numpy())

    def test_every_surrogate(self) -> None:
        for cls, name in SURROGATES.items():
            params = SURROGATE_PARAMETERS[name]
            sg = getattr(surrogate, cls)()
            (node,) = parallel_nodes(export(mlp(neuron.PSN(4, surrogate_function=sg)),
                                            torch.rand(4, 2, 4)))
            a = attrs(node)
            self.assertEqual(a["surrogate"], name.encode())
            self.assertEqual(a["alpha"], float(np.float32(params[0][1])))
            self.assertEqual("beta" in a, len(params) > 1, name)

    def test_a_psn_called_twice_shares_its_parameters(self) -> None:
        sn = neuron.PSN(4)

        class Twice(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fc, self.sn = layer.Linear(4, 4, step_mode="m"), sn

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.sn(self.fc(self.sn(x)))

        nodes = parallel_nodes(export(Twice(), torch.rand(4, 2, 4)))
        self.assertEqual([list(n.input[1:]) for n in nodes], [["sn.weight", "sn.bias"]] * 2)

    def test_rejected(self) -> None:
        x = torch.rand(4, 2, 4)
        widened = neuron.SlidingPSN(k=2)
        widened.weight = nn.Parameter(torch.ones(3))  # runs (it reads the last 2), not k's
        cases = [(widened, r"SlidingPSN's weight must be \[2\] on 4 time steps, got \[3\]"),
                 (neuron.SlidingPSN(k=5), r"SlidingPSN's k must be an int in 1..T \(T=4\), got 5"),
                 (neuron.MaskedPSN(k=0, T=4), r"MaskedPSN's k must be an int in 1..T"),
                 (neuron.PSN(4, surrogate_function=surrogate.ATan(spiking=False)),
                  "unsupported surrogate function")]
        for sn, pattern in cases:
            with self.assertRaisesRegex(ValueError, pattern):
                export(mlp(sn), x)
        masked = neuron.MaskedPSN(k=2, T=4, step_mode="m")
        masked.lambda_ = float("nan")
        with self.assertRaisesRegex(ValueError, "lambda_ must be finite"):
            export(mlp(masked), x)

    def test_single_step_mode_exports_as_multi_step(self) -> None:
        # As every snnexport module: export runs a copy switched to step_mode='m'.
        masked = neuron.MaskedPSN(k=2, T=4, lambda_init=1.0)
        net = nn.Sequential(layer.Linear(4, 4), masked)
        (node,) = parallel_nodes(export(net, torch.rand(4, 2, 4)))
        self.assertEqual(attrs(node)["variant"], b"masked")
        self.assertEqual(masked.step_mode, "s")

if __name__ == "__main__":
    unittest.main()
