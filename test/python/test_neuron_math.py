"""Neuron and surrogate math of snnexport against the NumPy oracle (docs/semantics.md)."""
import itertools
import math
import unittest

import numpy as np
import torch

import snn_numpy
from snnexport import functional, neuron, surrogate

KINDS = ("IFNode", "LIFNode", "ParametricLIFNode")
SURROGATES = {"sigmoid": surrogate.Sigmoid, "atan": surrogate.ATan}


def make_node(kind, v_reset, detach_reset, decay_input, sg, tau=2.0, v_threshold=1.0):
    kw = dict(v_threshold=v_threshold, v_reset=v_reset, detach_reset=detach_reset,
              surrogate_function=sg, step_mode="m")
    if kind == "IFNode":
        return neuron.IFNode(**kw)
    if kind == "LIFNode":
        return neuron.LIFNode(tau=tau, decay_input=decay_input, **kw)
    return neuron.ParametricLIFNode(init_tau=tau, decay_input=decay_input, **kw)


def combos():
    for kind, v_reset, detach, decay in itertools.product(
            KINDS, (0.0, -0.2, None), (False, True), (True, False)):
        if kind == "IFNode" and not decay:
            continue  # decay_input does not apply
        yield kind, v_reset, detach, decay


class NeuronForwardTest(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(1)
        self.x = (torch.rand(8, 3, 50, generator=g) * 2.4 - 0.5).float()

    def test_forward_matches_numpy(self):
        for kind, v_reset, detach, decay in combos():
            for tau, thr in ((2.0, 1.0), (1.333, 0.7)):
                with self.subTest(kind=kind, v_reset=v_reset, detach=detach, decay=decay,
                                  tau=tau):
                    node = make_node(kind, v_reset, detach, decay, surrogate.Sigmoid(), tau,
                                     thr)
                    node.store_v_seq = True
                    s = node(self.x)
                    w = float(node.w) if kind == "ParametricLIFNode" else None
                    s_ref, _, v_ref = snn_numpy.forward(kind, self.x.numpy(), thr, v_reset,
                                                        tau, decay, w)
                    np.testing.assert_array_equal(s.detach().numpy(), s_ref)
                    np.testing.assert_allclose(node.v_seq.detach().numpy(), v_ref, rtol=0,
                                               atol=1e-6)
                    self.assertGreater(s_ref.mean(), 0.05)  # the inputs do make spikes
                    self.assertLess(s_ref.mean(), 0.95)

    def test_single_step_equals_multi_step(self):
        m = neuron.LIFNode(tau=1.5, v_reset=None, step_mode="m")
        ref = m(self.x)
        functional.reset_net(m)
        m.step_mode = "s"
        np.testing.assert_array_equal(torch.stack([m(x) for x in self.x]).numpy(), ref.numpy())

    def test_reset(self):
        for kind, v_reset in (("IFNode", 0.0), ("LIFNode", -0.2), ("ParametricLIFNode", None)):
            node = make_node(kind, v_reset, False, True, surrogate.ATan())
            node(self.x)
            self.assertIsInstance(node.v, torch.Tensor)
            functional.reset_net(torch.nn.Sequential(node))
            self.assertEqual(node.v, 0.0 if v_reset is None else v_reset)

    def test_plif_w_init(self):
        node = neuron.ParametricLIFNode(init_tau=3.0)
        self.assertAlmostEqual(float(node.w), -math.log(2.0), places=6)
        self.assertAlmostEqual(float(torch.sigmoid(node.w)), 1 / 3.0, places=6)
        self.assertEqual(node.w.dim(), 0)
        self.assertTrue(node.w.requires_grad)

    def test_tau_must_exceed_one(self):
        for bad in (1.0, 0.5, -2.0):
            with self.assertRaises(ValueError):
                neuron.LIFNode(tau=bad)
            with self.assertRaises(ValueError):
                neuron.ParametricLIFNode(init_tau=bad)

    def test_heaviside_at_zero(self):
        x = torch.tensor([-1e-7, 0.0, 1e-7], requires_grad=True)
        for sg in (surrogate.Sigmoid(), surrogate.ATan()):
            self.assertEqual(sg(x).tolist(), [0.0, 1.0, 1.0])


# Every surrogate class with parameters other than its defaults.
ALL_SURROGATES = {
    "sigmoid": (surrogate.Sigmoid, {"alpha": 3.0}),
    "atan": (surrogate.ATan, {"alpha": 1.5}),
    "piecewise_quadratic": (surrogate.PiecewiseQuadratic, {"alpha": 0.9}),
    "piecewise_exp": (surrogate.PiecewiseExp, {"alpha": 1.5}),
    "soft_sign": (surrogate.SoftSign, {"alpha": 1.5}),
    "super_spike": (surrogate.SuperSpike, {"alpha": 1.5}),
    "nonzero_sign_log_abs": (surrogate.NonzeroSignLogAbs, {"alpha": 1.5}),
    "erf": (surrogate.Erf, {"alpha": 1.5}),
    "piecewise_leaky_relu": (surrogate.PiecewiseLeakyReLU, {"w": 0.8, "c": 0.05}),
    "squarewave_fourier_series": (surrogate.SquarewaveFourierSeries, {"n": 3, "T_period": 7.0}),
    "s2nn": (surrogate.S2NN, {"alpha": 3.0, "beta": 0.8}),
    "q_pseudo_spike": (surrogate.QPseudoSpike, {"alpha": 2.5}),
    "leaky_k_relu": (surrogate.LeakyKReLU, {"leak": 0.1, "k": 0.9}),
    "fake_numerical_gradient": (surrogate.FakeNumericalGradient, {"alpha": 0.5}),
    "log_tailed_relu": (surrogate.LogTailedReLU, {"alpha": 0.1}),
    "rect": (surrogate.Rect, {"alpha": 0.8}),
}


class SurrogateTest(unittest.TestCase):
    def test_every_surrogate_against_numpy(self):
        """Heaviside forward and the NumPy oracle's dS/dx, with the class's defaults (the
        names table's) and with other parameters; x avoids 0 (FakeNumericalGradient's 1/x)."""
        from snnexport.export.names import SURROGATE_PARAMETERS, SURROGATES as NAMES
        x64 = np.linspace(-2.05, 2.05, 83)
        self.assertEqual(sorted(ALL_SURROGATES), sorted(NAMES.values()))
        for name, (cls, params) in ALL_SURROGATES.items():
            self.assertEqual(NAMES[cls.__name__], name)
            self.assertEqual(cls.name, name)
            defaults = dict(SURROGATE_PARAMETERS[name])
            for kwargs in ({}, params):
                with self.subTest(surrogate=name, params=kwargs):
                    sg = cls(**kwargs)
                    values = [kwargs.get(k, defaults[k]) for k in defaults]
                    self.assertEqual([getattr(sg, k) for k in defaults], values)
                    x = torch.tensor(x64, dtype=torch.float32, requires_grad=True)
                    s = sg(x)
                    self.assertEqual(s.tolist(), (x64 >= 0).astype(np.float32).tolist())
                    s.backward(torch.full_like(x, 2.0))
                    want = 2.0 * snn_numpy.SURROGATE_GRAD[name](x.detach().numpy(), *values)
                    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-6)

    def test_primitives_have_the_surrogate_as_derivative(self):
        """spiking=False runs the smooth primitive: its autograd derivative is the gradient
        (away from the kinks)."""
        x64 = np.linspace(-1.93, 1.93, 41)
        for name, (cls, params) in ALL_SURROGATES.items():
            if name in ("super_spike", "fake_numerical_gradient"):
                continue  # SpikingJelly defines no primitive for them
            with self.subTest(surrogate=name):
                sg = cls(spiking=False, **params)
                x = torch.tensor(x64, dtype=torch.float64, requires_grad=True)
                sg(x).sum().backward()
                values = list(params.values())
                want = snn_numpy.SURROGATE_GRAD[name](x64, *values)
                if name == "s2nn":  # its primitive's log(|x + 1| + 1e-5): 1e-5 off
                    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4)
                else:
                    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-9)

    def test_bad_parameters(self):
        with self.assertRaisesRegex(ValueError, "alpha must be > 1"):
            surrogate.QPseudoSpike(alpha=1.0)
        with self.assertRaisesRegex(ValueError, "w must be > 0"):
            surrogate.PiecewiseLeakyReLU(w=0.0)
        with self.assertRaisesRegex(ValueError, "n must be an int >= 1"):
            surrogate.SquarewaveFourierSeries(n=2.5)

    def test_bptt_with_every_surrogate(self):
        g = torch.Generator().manual_seed(3)
        x0 = (torch.rand(6, 40, generator=g) * 2.0 - 0.3)
        gs = torch.randn(6, 40, generator=g)
        for name, (cls, params) in ALL_SURROGATES.items():
            with self.subTest(surrogate=name):
                node = make_node("LIFNode", -0.2, False, True, cls(**params), tau=1.6)
                x = x0.clone().requires_grad_(True)
                (node(x) * gs).sum().backward()
                values = list(params.values())
                gx, _ = snn_numpy.backward(
                    "LIFNode", x0.numpy(), gs.numpy().astype(np.float64), 1.0, -0.2, 1.6,
                    True, None, name, values[0], False,
                    beta=values[1] if len(values) > 1 else None)
                np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-4, atol=1e-5)
                self.assertGreater(np.abs(gx).max(), 0.0)


class BackwardTest(unittest.TestCase):
    def test_surrogate_gradients(self):
        x64 = np.linspace(-2, 2, 81)
        for name, cls in SURROGATES.items():
            for alpha in (None, 0.5, 3.0):
                with self.subTest(surrogate=name, alpha=alpha):
                    sg = cls() if alpha is None else cls(alpha=alpha)
                    a = sg.alpha if alpha is None else alpha
                    if alpha is None:
                        self.assertEqual(a, 4.0 if name == "sigmoid" else 2.0)
                    x = torch.tensor(x64, dtype=torch.float32, requires_grad=True)
                    sg(x).backward(torch.full_like(x, 2.0))
                    want = 2.0 * snn_numpy.SURROGATE_GRAD[name](x.detach().numpy(), a)
                    # float32 1 - sg(ax) loses digits when sg -> 1, hence atol.
                    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-6)

    def test_bptt_matches_numpy(self):
        g = torch.Generator().manual_seed(2)
        x0 = (torch.rand(6, 40, generator=g) * 2.0 - 0.3)
        gs = torch.randn(6, 40, generator=g)
        for kind, v_reset, detach, decay in combos():
            for name, cls in SURROGATES.items():
                with self.subTest(kind=kind, v_reset=v_reset, detach=detach, decay=decay,
                                  surrogate=name):
                    node = make_node(kind, v_reset, detach, decay, cls(), tau=1.6)
                    x = x0.clone().requires_grad_(True)
                    (node(x) * gs).sum().backward()
                    w = float(node.w) if kind == "ParametricLIFNode" else None
                    gx, gw = snn_numpy.backward(
                        kind, x0.numpy(), gs.numpy().astype(np.float64), 1.0, v_reset, 1.6,
                        decay, w, name, node.surrogate_function.alpha, detach)
                    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-4, atol=1e-5)
                    if gw is not None:
                        self.assertAlmostEqual(float(node.w.grad), gw,
                                               delta=1e-4 * max(1.0, abs(gw)))

    def test_detach_reset_changes_gradient(self):
        x0 = torch.linspace(0.2, 1.8, 30).repeat(5, 1)
        grads = []
        for detach in (False, True):
            x = x0.clone().requires_grad_(True)
            neuron.IFNode(detach_reset=detach, step_mode="m")(x).sum().backward()
            grads.append(x.grad)
        self.assertFalse(torch.allclose(grads[0], grads[1]))


if __name__ == "__main__":
    unittest.main()
