"""snnexport.train (the PyTorch reference trainer of docs/training.md) and snnexport.weights."""
import gzip
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

from snnexport import export_onnx, functional, layer, load_onnx_weights, models, neuron, \
    reference, surrogate
from snnexport import train as tr

PYTHONPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python_export")

# The table of docs/training.md ("Sample order"); the C++ trainer tests use the same values.
KNOWN_ORDERS = [
    ((0, 0, 10), [4, 2, 8, 1, 9, 3, 0, 6, 7, 5]),
    ((42, 3, 7), [2, 3, 4, 0, 6, 5, 1]),
    ((1, 0, 16), [11, 9, 13, 2, 12, 4, 1, 6, 10, 3, 14, 8, 5, 15, 0, 7]),
    ((2 ** 64 - 1, 5, 12), [10, 8, 5, 11, 7, 2, 6, 0, 9, 3, 1, 4]),
]


F32_EPS = float(np.finfo(np.float32).eps)


def float32_gamma(terms):
    """gamma(n) = n eps / (1 - n eps): a float32 sum of n terms in any order is within
    gamma(n) * sum|term| of the exact sum (test/unit/TestSupport.h)."""
    return terms * F32_EPS / (1 - terms * F32_EPS)


def splitmix64_numpy(state, count):
    """Independent implementation with numpy uint64 (wrapping) arithmetic."""
    out = []
    with np.errstate(over="ignore"):
        s = np.uint64(state)
        for _ in range(count):
            s = s + np.uint64(0x9E3779B97F4A7C15)
            z = s
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            out.append(int(z ^ (z >> np.uint64(31))))
    return out


class SampleOrderTest(unittest.TestCase):
    def test_known_values(self):
        for args, want in KNOWN_ORDERS:
            self.assertEqual(tr.splitmix64_order(*args), want, args)

    def test_generator_matches_published_sequence(self):
        r = tr.SplitMix64(0)
        self.assertEqual([r.next() for _ in range(3)],
                         [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F])

    def test_generator_matches_numpy_uint64(self):
        for seed in (0, 1, 7, 2 ** 63 + 5, 2 ** 64 - 1):
            for epoch in (0, 3):
                state = (seed * 0x9E3779B97F4A7C15 + epoch + 1) % 2 ** 64
                r = tr.SplitMix64(state)
                self.assertEqual([r.next() for _ in range(50)], splitmix64_numpy(state, 50))

    def test_permutation_and_seed_wraps(self):
        for s in (1, 2, 33, 1000):
            o = tr.splitmix64_order(3, 2, s)
            self.assertEqual(sorted(o), list(range(s)))
        self.assertEqual(tr.splitmix64_order(-1, 5, 12), tr.splitmix64_order(2 ** 64 - 1, 5, 12))
        self.assertNotEqual(tr.splitmix64_order(0, 0, 50), tr.splitmix64_order(0, 1, 50))
        self.assertNotEqual(tr.splitmix64_order(0, 0, 50), tr.splitmix64_order(1, 0, 50))
        self.assertEqual(tr.splitmix64_order(9, 9, 0), [])


def cfg(**kw):
    base = dict(batch_size=4, lr=0.1, steps=3)
    base.update(kw)
    if "epochs" in kw:
        base.pop("steps")
    return tr.TrainConfig(**base)


class ScheduleTest(unittest.TestCase):
    def test_closed_forms(self):
        c = cfg(schedule="constant", lr=0.3)
        self.assertEqual([tr.lr_at(c, s, 10) for s in range(3)], [0.3] * 3)
        c = cfg(schedule="step", lr=0.5, step_size=3, gamma=0.2)
        self.assertEqual([tr.lr_at(c, s, 10) for s in range(7)],
                         [0.5] * 3 + [0.5 * 0.2] * 3 + [0.5 * 0.2 ** 2])
        c = cfg(schedule="cosine", lr=0.1, eta_min=0.01)
        got = [tr.lr_at(c, s, 8) for s in range(9)]
        want = [0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * s / 8)) / 2 for s in range(9)]
        self.assertEqual(got, want)
        self.assertEqual(got[0], 0.1)
        self.assertAlmostEqual(got[4], 0.055, places=15)
        self.assertAlmostEqual(got[8], 0.01, places=15)

    def test_trainer_uses_the_schedule_with_run_total(self):
        data = _toy_data(24, static=True)
        for c, total in ((cfg(schedule="cosine", lr=0.2, steps=7, batch_size=4), 7),
                         (cfg(schedule="step", lr=0.2, step_size=2, gamma=0.5, epochs=2,
                              batch_size=5, steps=None), 8)):
            res = tr.train(_tiny_mlp(), data, _with_t(c))
            self.assertEqual(len(res.lrs), total)
            self.assertEqual(res.lrs, [tr.lr_at(c, s, total) for s in range(total)])


# ------------------------------------------------------------------ optimizer vs spec formulas
def spec_steps(opt, p0, grads, lrs, momentum=0.0, wd=0.0):
    """docs/training.md formulas in float64 NumPy; returns the parameter after every step."""
    p, out = p0.astype(np.float64), []
    buf = m = v = None
    for t, (g, lr) in enumerate(zip(grads, lrs), start=1):
        g = g.astype(np.float64)
        if opt == "sgd":
            g = g + wd * p
            if momentum:
                buf = g if buf is None else momentum * buf + g
                g = buf
            p = p - lr * g
        else:
            b1, b2, eps = 0.9, 0.999, 1e-8
            if opt == "adamw":
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
            m = (1 - b1) * g if m is None else b1 * m + (1 - b1) * g
            v = (1 - b2) * g * g if v is None else b2 * v + (1 - b2) * g * g
            p = p - lr / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
        out.append(p.copy())
    return out


class OptimizerTest(unittest.TestCase):
    CASES = [
        ("sgd", {"momentum": 0.0}, 0.0),
        ("sgd", {"momentum": 0.9}, 0.0),
        ("sgd", {"momentum": 0.9, "weight_decay": 0.05}, 0.05),
        ("adam", {}, 0.0),
        ("adam", {"weight_decay": 0.1}, 0.1),
        ("adamw", {}, 0.01),                       # the default decoupled decay
        ("adamw", {"weight_decay": 0.2}, 0.2),
    ]

    def test_steps_match_spec(self):
        gen = np.random.default_rng(3)
        p0 = gen.normal(size=(5, 7)).astype(np.float32)
        grads = [gen.normal(size=p0.shape).astype(np.float32) for _ in range(4)]
        lrs = [0.1, 0.05, 0.02, 0.07]  # changed per step, as the schedules do
        for name, kw, wd in self.CASES:
            with self.subTest(optimizer=name, **kw):
                c = cfg(optimizer=name, lr=lrs[0], **kw)
                self.assertEqual(c.wd, wd)
                p = nn.Parameter(torch.from_numpy(p0.copy()))
                opt = tr.make_optimizer([p], c)
                want = spec_steps(name, p0, grads, lrs, kw.get("momentum", 0.0), wd)
                for g, lr, w in zip(grads, lrs, want):
                    for group in opt.param_groups:
                        group["lr"] = lr
                    p.grad = torch.from_numpy(g.copy())
                    opt.step()
                    np.testing.assert_allclose(p.detach().numpy(), w, rtol=2e-6, atol=2e-7)

    def test_hyperparameters(self):
        p = [nn.Parameter(torch.zeros(2))]
        adam = tr.make_optimizer(p, cfg(optimizer="adam"))
        g = adam.param_groups[0]
        self.assertEqual((g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]),
                         ((0.9, 0.999), 1e-8, 0.0, False))
        sgd = tr.make_optimizer(p, cfg(optimizer="sgd", momentum=0.9)).param_groups[0]
        self.assertEqual((sgd["momentum"], sgd["dampening"], sgd["nesterov"]), (0.9, 0.0, False))


# ------------------------------------------------------------------ ONNX weights
def _plif_model():
    m = nn.Sequential(layer.Flatten(), layer.Linear(12, 6),
                      neuron.ParametricLIFNode(init_tau=3.0), layer.Linear(6, 3),
                      neuron.IFNode(surrogate_function=surrogate.ATan()))
    functional.set_step_mode(m, "m")
    return m


def _randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for v in model.state_dict().values():
            if v.dtype.is_floating_point:
                v.copy_(torch.rand(v.shape, generator=g) + 0.5)
    return model


class OnnxWeightsTest(unittest.TestCase):
    MODELS = [
        ("csnn", lambda: models.csnn(channels=4), [4, 2, 1, 28, 28]),
        ("vgg_dvs", lambda: models.vgg_dvs(channels=4, image=16, blocks=2), [4, 2, 2, 16, 16]),
        ("sew_resnet", lambda: models.sew_resnet(channels=4, blocks=1), [4, 2, 1, 28, 28]),
        ("plif", _plif_model, [4, 2, 3, 4]),
        # Conv1d weights are written [O, C, 1, k] and load back as [O, C, k].
        ("spikformer", lambda: models.spikformer(embed_dims=32, depths=1), [4, 2, 3, 32, 32]),
    ]

    def test_round_trip(self):
        for name, make, shape in self.MODELS:
            with self.subTest(model=name), tempfile.TemporaryDirectory() as d:
                src = _randomize(make(), 1)
                path = os.path.join(d, "m.onnx")
                export_onnx(src, torch.rand(shape), path)
                dst = _randomize(make(), 2)
                self.assertIs(load_onnx_weights(dst, path), dst)
                a, b = src.state_dict(), dst.state_dict()
                self.assertEqual(a.keys(), b.keys())
                for k in a:
                    if not k.endswith("num_batches_tracked"):
                        self.assertTrue(torch.equal(a[k], b[k]), k)
                if name == "plif":
                    self.assertEqual(b["2.w"].dim(), 0)

    def test_program_style_file(self):
        """A file shaped like `snn-run train --export-onnx` output: only named initializers."""
        src = _randomize(_plif_model(), 4)
        inits = [numpy_helper.from_array(v.numpy(), k) for k, v in src.state_dict().items()]
        graph = onnx.helper.make_graph([], "g", [], [], initializer=inits)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.onnx")
            onnx.save(onnx.helper.make_model(graph), path)
            dst = load_onnx_weights(_randomize(_plif_model(), 5), path)
        for k, v in src.state_dict().items():
            self.assertTrue(torch.equal(v, dst.state_dict()[k]), k)

    def test_errors_name_the_keys(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            export_onnx(models.csnn(channels=4), torch.rand(2, 1, 1, 28, 28), path)
            with self.assertRaisesRegex(ValueError, r"shape mismatch conv_fc\.0\.weight"):
                load_onnx_weights(models.csnn(channels=8), path)
            with self.assertRaisesRegex(ValueError, r"conv_fc\.9\.weight.*not in"):
                load_onnx_weights(models.vgg_dvs(channels=4, image=16, blocks=2), path)
            bigger = nn.Sequential()
            bigger.add_module("conv_fc", models.csnn(channels=4).conv_fc)
            bigger.add_module("extra", nn.Linear(2, 2))
            with self.assertRaisesRegex(ValueError, r"missing extra\.weight, extra\.bias"):
                load_onnx_weights(bigger, path)
            with open(os.path.join(d, "bad.onnx"), "wb") as f:
                f.write(b"\x01garbage")
            with self.assertRaisesRegex(ValueError, "bad.onnx"):
                load_onnx_weights(models.csnn(channels=4), os.path.join(d, "bad.onnx"))

    def test_make_case_weights_equal_exported(self):
        with tempfile.TemporaryDirectory() as d:
            reference.make_case("vgg_dvs", d, T=2, N=3, seed=2, attempts=1, channels=4,
                                image=16, blocks=2)
            model, meta = tr.model_from_case(d)
            via_onnx = load_onnx_weights(models.vgg_dvs(**meta["kwargs"]),
                                         os.path.join(d, "model.onnx"))
            with np.load(os.path.join(d, "weights.npz")) as z:
                self.assertEqual(set(z.files), {k for k in model.state_dict()
                                                if not k.endswith("num_batches_tracked")})
            for k, v in model.state_dict().items():
                self.assertTrue(torch.equal(v, via_onnx.state_dict()[k]), k)
            # and the case's expected output is what that model computes
            x = torch.from_numpy(np.load(os.path.join(d, "input.npy")))
            model.eval()
            functional.reset_net(model)
            with torch.no_grad():
                np.testing.assert_array_equal(model(x).numpy(),
                                              np.load(os.path.join(d, "expected.npy")))


# ------------------------------------------------------------------ the training loop
def _tiny_mlp(classes=3):
    """Flatten-Linear-LIF-Linear-IF with weights scaled so that both layers spike."""
    torch.manual_seed(0)
    m = nn.Sequential(layer.Flatten(), layer.Linear(6, 16), neuron.LIFNode(tau=2.0),
                      layer.Linear(16, classes), neuron.IFNode())
    functional.set_step_mode(m, "m")
    with torch.no_grad():
        m[1].weight.mul_(3.0)
        m[3].weight.mul_(3.0)
    return m


def _toy_data(S, static=True, T=3, classes=3, seed=0):
    g = np.random.default_rng(seed)
    shape = (S, 6) if static else (S, T, 6)
    return tr.Dataset(g.random(shape, dtype=np.float32) * 3,
                      g.integers(0, classes, S).astype(np.int64), static=static)


def _with_t(c, T=3):
    c.repeat_time = T
    return c


class RecordingDataset(tr.Dataset):
    def batch(self, indices, T=None):
        self.seen.append(list(indices))
        return super().batch(indices, T)


class TrainLoopTest(unittest.TestCase):
    def test_batches_follow_the_spec_order(self):
        base = _toy_data(10)
        for drop_last, shuffle, steps, want_per_epoch in ((True, True, 7, 3),
                                                          (False, True, 9, 4),
                                                          (True, False, 4, 3)):
            data = RecordingDataset(base.x, base.y, static=True)
            data.seen = []
            c = _with_t(cfg(batch_size=3, steps=steps, seed=11, drop_last=drop_last,
                            shuffle=shuffle))
            res = tr.train(_tiny_mlp(), data, c)
            want = []
            epoch = 0
            while len(want) < steps:
                o = tr.splitmix64_order(11, epoch, 10) if shuffle else list(range(10))
                want += [o[b * 3:(b + 1) * 3] for b in range(want_per_epoch)]
                epoch += 1
            self.assertEqual(data.seen, want[:steps])
            self.assertEqual(len(res.losses), steps)
            self.assertEqual(len(res.epochs), -(-steps // want_per_epoch))

    def test_direct_encoding_and_sequences(self):
        d = _toy_data(5, static=True)
        x, y = d.batch([3, 1], T=4)
        self.assertEqual(tuple(x.shape), (4, 2, 6))
        for t in range(4):
            np.testing.assert_array_equal(x[t].numpy(), d.x[[3, 1]])
        np.testing.assert_array_equal(y.numpy(), d.y[[3, 1]])
        s = _toy_data(5, static=False, T=4)
        x, _ = s.batch([4, 0])
        self.assertEqual(tuple(x.shape), (4, 2, 6))
        np.testing.assert_array_equal(x[:, 0].numpy(), s.x[4])
        self.assertTrue(x.is_contiguous())
        with self.assertRaisesRegex(tr.TrainingError, "repeat-time"):
            d.batch([0])

    def test_matches_a_hand_written_loop(self):
        """3 SGD-momentum steps, MSE and CE: the trainer equals plain autograd + spec update."""
        data = _toy_data(12, static=False, T=3)
        for loss in ("mse", "ce"):
            with self.subTest(loss=loss):
                c = cfg(batch_size=4, lr=0.5, steps=3, optimizer="sgd", momentum=0.9,
                        weight_decay=0.01, loss=loss, seed=5)
                model = _tiny_mlp()
                ref = _tiny_mlp()
                res = tr.train(model, data, c)
                params = list(ref.parameters())
                bufs = [None] * len(params)
                losses = []
                for s in range(3):
                    idx = tr.splitmix64_order(5, 0, 12)[s * 4:(s + 1) * 4]
                    x = torch.from_numpy(data.x[idx]).transpose(0, 1)
                    y = torch.from_numpy(data.y[idx])
                    functional.reset_net(ref)
                    rate = ref(x).mean(0)
                    if loss == "mse":
                        l_ = ((rate - nn.functional.one_hot(y, 3).float()) ** 2).mean()
                    else:
                        l_ = -torch.log_softmax(rate, 1)[torch.arange(4), y].mean()
                    grads = torch.autograd.grad(l_, params)
                    losses.append(float(l_))
                    with torch.no_grad():
                        for i, (p, g) in enumerate(zip(params, grads)):
                            g = g + 0.01 * p
                            bufs[i] = g.clone() if bufs[i] is None else 0.9 * bufs[i] + g
                            p -= 0.5 * bufs[i]
                np.testing.assert_allclose(res.losses, losses, rtol=1e-5)
                self.assertGreater(max(res.losses) - min(res.losses), 1e-4,
                                   "the case must actually learn something")
                for (k, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
                    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6,
                                               err_msg=k)

    def test_microbatches_accumulate_the_mean_gradient(self):
        """M chunks with neurons reset per chunk: the gradient is the mean of the chunks',
        which for a model without BatchNorm is the full batch's (per-sample losses); the
        reported loss is the mean of the chunks' losses."""
        data = _toy_data(16, static=False, T=3)
        for M in (2, 4):
            with self.subTest(M=M):
                c = cfg(batch_size=8, lr=0.5, steps=3, seed=2, microbatches=M)
                whole = cfg(batch_size=8, lr=0.5, steps=3, seed=2)
                model, ref = _tiny_mlp(), _tiny_mlp()
                res, ref_res = tr.train(model, data, c), tr.train(ref, data, whole)
                np.testing.assert_allclose(res.losses, ref_res.losses, rtol=1e-5)
                self.assertGreater(max(res.losses) - min(res.losses), 1e-4)
                for (k, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
                    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6,
                                               err_msg=k)
        # By hand for M = 2: two chunks, each loss halved, gradients summed.
        model, ref = _tiny_mlp(), _tiny_mlp()
        tr.train(model, data, cfg(batch_size=8, lr=0.5, steps=1, seed=2, microbatches=2))
        idx = tr.splitmix64_order(2, 0, 16)[:8]
        x = torch.from_numpy(data.x[idx]).transpose(0, 1)
        y = torch.from_numpy(data.y[idx])
        params = list(ref.parameters())
        grads = [torch.zeros_like(p) for p in params]
        for xm, ym in ((x[:, :4], y[:4]), (x[:, 4:], y[4:])):
            functional.reset_net(ref)
            rate = ref(xm).mean(0)
            spikes = rate.detach()
            self.assertTrue(0.05 < float(spikes.mean()) < 0.95, "the output layer must fire")
            l_ = ((rate - nn.functional.one_hot(ym, 3).float()) ** 2).mean() / 2
            for g, d in zip(grads, torch.autograd.grad(l_, params)):
                g += d
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 0.5 * g
        for (k, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)

    def test_microbatches_must_divide_the_batch(self):
        with self.assertRaisesRegex(tr.TrainingError, "does not divide into 3 microbatches"):
            tr.train(_tiny_mlp(), _toy_data(8), _with_t(cfg(batch_size=4, microbatches=3)))
        with self.assertRaisesRegex(tr.TrainingError, "microbatches must be >= 1"):
            tr.train(_tiny_mlp(), _toy_data(8), _with_t(cfg(batch_size=4, microbatches=0)))

    def test_batchnorm_running_stats_and_train_mode(self):
        torch.manual_seed(0)
        model = models.csnn(channels=4)
        before = model.conv_fc[1].running_mean.clone()
        data = tr.Dataset(np.random.default_rng(0).random((8, 1, 28, 28), dtype=np.float32),
                          np.arange(8) % 10, static=True)
        tr.train(model, data, cfg(batch_size=4, steps=1, lr=0.0, repeat_time=2))
        x, _ = data.batch(tr.splitmix64_order(0, 0, 8)[:4], 2)
        conv_out = model.conv_fc[0](x).detach()
        batch_mean = conv_out.mean((0, 1, 3, 4))
        want = 0.9 * before + 0.1 * batch_mean
        # BatchNorm's batch mean and Tensor.mean sum the same n values per channel in other
        # orders: each within gamma(n) * mean|x| of the exact mean (float32_gamma); then the
        # float32 update 0.9 * r + 0.1 * m rounds a few times.
        n = conv_out.numel() // conv_out.shape[2]
        bound = (0.1 * 2 * float32_gamma(n) * conv_out.abs().mean((0, 1, 3, 4))
                 + 4 * F32_EPS * (0.9 * before.abs() + 0.1 * batch_mean.abs()))
        diff = (model.conv_fc[1].running_mean - want).abs()
        self.assertTrue(bool((diff <= bound).all()), f"{diff} exceeds {bound}")
        self.assertTrue(model.training)

    def test_dropout_seeded(self):
        data = tr.Dataset(np.random.default_rng(1).random((16, 2, 8, 8), dtype=np.float32),
                          np.arange(16) % 10, static=True)

        def run(seed):
            torch.manual_seed(123)
            m = models.vgg_dvs(channels=4, image=8, blocks=1)
            r = tr.train(m, data, cfg(batch_size=4, steps=4, lr=0.05, optimizer="adam",
                                      seed=seed, shuffle=False, repeat_time=3))
            return r.losses, m.classifier[2].weight.detach().clone()

        (l1, w1), (l2, w2), (_, w3) = run(4), run(4), run(5)
        self.assertEqual(l1, l2)
        self.assertTrue(torch.equal(w1, w2))
        self.assertFalse(torch.equal(w1, w3), "the seed must drive the Dropout masks")

    def test_nan_loss_names_the_step(self):
        class Readout(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = layer.Linear(6, 3, step_mode="m")

            def forward(self, x):
                return self.fc(x).mean(0)

        data = _toy_data(12)
        data.x[9, 2] = np.nan  # batch 2 of the unshuffled order
        with self.assertRaisesRegex(tr.TrainingError, r"loss is nan at step 2 \(epoch 0"):
            tr.train(Readout(), data, _with_t(cfg(batch_size=4, steps=3, shuffle=False)))

    def test_log_and_eval(self):
        data, ev = _toy_data(10), _toy_data(7, seed=1)
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log.jsonl")
            c = _with_t(cfg(batch_size=4, epochs=2, steps=None))
            model = _tiny_mlp()
            res = tr.train(model, data, c, eval_data=ev, log_path=log)
            with open(log) as f:
                events = [json.loads(line) for line in f]
        steps = [e for e in events if e["event"] == "step"]
        epochs = [e for e in events if e["event"] == "epoch"]
        self.assertEqual([e["event"] for e in events], ["step"] * 2 + ["epoch"] + ["step"] * 2
                         + ["epoch"])
        self.assertEqual(set(steps[0]), {"event", "epoch", "step", "loss", "accuracy", "lr",
                                         "samples_per_s"})
        self.assertEqual(set(epochs[0]), {"event", "epoch", "steps", "loss", "accuracy",
                                          "eval_loss", "eval_accuracy", "seconds"})
        self.assertEqual([e["steps"] for e in epochs], [2, 2])
        self.assertEqual([e["step"] for e in steps], [0, 1, 2, 3])
        self.assertEqual([e["epoch"] for e in steps], [0, 0, 1, 1])
        self.assertEqual([e["loss"] for e in steps], res.losses)
        self.assertAlmostEqual(epochs[1]["loss"], (res.losses[2] + res.losses[3]) / 2)
        loss, acc = tr.evaluate(model, ev, c)
        self.assertEqual((epochs[1]["eval_loss"], epochs[1]["eval_accuracy"]), (loss, acc))
        self.assertTrue(model.training)
        # evaluate == a manual eval-mode pass over the 7 samples
        model.eval()
        functional.reset_net(model)
        with torch.no_grad():
            rate = model(torch.from_numpy(ev.x).unsqueeze(0).repeat(3, 1, 1)).mean(0)
        y = torch.from_numpy(ev.y)
        self.assertAlmostEqual(acc, float((rate.argmax(1) == y).float().mean()))
        self.assertAlmostEqual(loss, float(nn.functional.mse_loss(
            rate, nn.functional.one_hot(y, 3).float())), places=6)

    def test_config_errors(self):
        data = _toy_data(3)
        with self.assertRaisesRegex(tr.TrainingError, "no batch of 4"):
            tr.train(_tiny_mlp(), data, _with_t(cfg(batch_size=4)))
        with self.assertRaisesRegex(tr.TrainingError, "exactly one of epochs and steps"):
            tr.train(_tiny_mlp(), data, tr.TrainConfig(batch_size=1, lr=0.1))
        bad = _toy_data(8, classes=5)
        with self.assertRaisesRegex(tr.TrainingError, r"labels must lie in \[0, 3\)"):
            tr.train(_tiny_mlp(), bad, _with_t(cfg(batch_size=4, seed=3)))


# ------------------------------------------------------------------ data files
def _write_idx(path, magic, arr):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic) + struct.pack(f">{arr.ndim}I", *arr.shape))
        f.write(arr.astype(np.uint8).tobytes())


class DataTest(unittest.TestCase):
    def test_idx_files(self):
        g = np.random.default_rng(0)
        img = g.integers(0, 256, (5, 28, 28)).astype(np.uint8)
        lab = np.array([3, 1, 4, 1, 5], np.uint8)
        with tempfile.TemporaryDirectory() as d:
            for split in ("train", "t10k"):
                _write_idx(os.path.join(d, f"{split}-images-idx3-ubyte.gz"), 0x803, img)
                _write_idx(os.path.join(d, f"{split}-labels-idx1-ubyte.gz"), 0x801, lab)
            ds = tr.load_fashion_mnist(d, "t10k")
            self.assertEqual(ds.x.shape, (5, 1, 28, 28))
            self.assertEqual(ds.x.dtype, np.float32)
            np.testing.assert_array_equal(ds.x[:, 0], img.astype(np.float32) / np.float32(255))
            self.assertEqual(ds.y.tolist(), [3, 1, 4, 1, 5])
            self.assertTrue(ds.static)
            _write_idx(os.path.join(d, "train-labels-idx1-ubyte.gz"), 0x803, lab)
            with self.assertRaisesRegex(tr.TrainingError, "magic"):
                tr.load_fashion_mnist(d, "train")
            with self.assertRaisesRegex(tr.TrainingError, "no such file"):
                tr.load_fashion_mnist(os.path.join(d, "nope"), "train")

    @unittest.skipUnless(os.path.isdir(tr.FASHION_MNIST_DIR), "dataset-fashion-mnist missing")
    def test_real_fashion_mnist(self):
        ds = tr.load_fashion_mnist(split="t10k")
        self.assertEqual((ds.x.shape, ds.y.shape), ((10000, 1, 28, 28), (10000,)))
        self.assertEqual((float(ds.x.min()), float(ds.x.max())), (0.0, 1.0))
        self.assertEqual(sorted(set(ds.y.tolist())), list(range(10)))

    def test_npy(self):
        with tempfile.TemporaryDirectory() as d:
            p = lambda n: os.path.join(d, n)  # noqa: E731
            np.save(p("x.npy"), np.zeros((4, 2, 3), np.float32))
            np.save(p("y.npy"), np.array([0, 1, 2, 1], np.int32))
            ds = tr.load_npy(p("x.npy"), p("y.npy"), static=False)
            self.assertEqual(ds.y.dtype, np.int64)
            np.save(p("x64.npy"), np.zeros((4, 2, 3)))
            with self.assertRaisesRegex(tr.TrainingError, "float64"):
                tr.load_npy(p("x64.npy"), p("y.npy"), static=True)
            np.save(p("y3.npy"), np.zeros(3, np.int64))
            with self.assertRaisesRegex(tr.TrainingError, "same number of samples"):
                tr.load_npy(p("x.npy"), p("y3.npy"), static=True)


# ------------------------------------------------------------------ CLI
def cli(*args):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    return subprocess.run([sys.executable, "-m", "snnexport.train", *args], env=env,
                          capture_output=True, text=True, timeout=300)


class CliTest(unittest.TestCase):
    def test_help(self):
        r = cli("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--data-npy", "--init-from-case", "--onnx-weights", "--save-params",
                     "--export-onnx", "--keep-last", "--eta-min"):
            self.assertIn(flag, r.stdout)

    def test_train_from_case(self):
        with tempfile.TemporaryDirectory() as d:
            p = lambda *n: os.path.join(d, *n)  # noqa: E731
            reference.make_case("csnn", p("case"), T=2, N=2, seed=0, attempts=1, channels=4)
            g = np.random.default_rng(0)
            np.save(p("x.npy"), g.random((12, 1, 28, 28), dtype=np.float32))
            np.save(p("y.npy"), g.integers(0, 10, 12))
            common = ["--data-npy", f"{p('x.npy')},{p('y.npy')}", "--repeat-time", "2",
                      "--steps", "3", "--batch-size", "4", "--lr", "0.05", "--optimizer",
                      "adam", "--seed", "3", "--quiet"]
            r = cli("--init-from-case", p("case"), *common, "--log", p("log.jsonl"),
                    "--save-params", p("params"), "--export-onnx", p("out.onnx"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")
            with open(p("log.jsonl")) as f:
                cli_losses = [json.loads(l)["loss"] for l in f if '"step"' in l]
            # the same run through the API gives the same numbers
            model, _ = tr.model_from_case(p("case"))
            res = tr.train(model, tr.load_npy(p("x.npy"), p("y.npy"), static=True),
                           tr.TrainConfig(batch_size=4, lr=0.05, steps=3, optimizer="adam",
                                          seed=3, repeat_time=2))
            self.assertEqual(cli_losses, res.losses)
            saved = tr.load_params(p("params"))
            want = tr.state_arrays(model)
            self.assertEqual(saved.keys(), want.keys())
            for k in want:
                np.testing.assert_array_equal(saved[k], want[k], err_msg=k)
            exported = load_onnx_weights(models.csnn(channels=4), p("out.onnx"))
            for k, v in exported.state_dict().items():
                if k in want:
                    np.testing.assert_array_equal(v.numpy(), want[k], err_msg=k)
            # --model + --onnx-weights starts from the same weights
            r2 = cli("--model", "csnn", "--width", "4", "--onnx-weights",
                     p("case", "model.onnx"), *common, "--log", p("log2.jsonl"))
            self.assertEqual(r2.returncode, 0, r2.stderr)
            with open(p("log2.jsonl")) as f:
                self.assertEqual([json.loads(l)["loss"] for l in f if '"step"' in l],
                                 cli_losses)

    def test_errors(self):
        with tempfile.TemporaryDirectory() as d:
            for bad, needle in (
                    (["--model", "csnn", "--batch-size", "4", "--lr", "0.1", "--steps", "1"],
                     "--data"),
                    (["--model", "csnn", "--data-npy", "a.npy", "--batch-size", "4", "--lr",
                      "0.1", "--steps", "1"], "X.npy,Y.npy"),
                    (["--model", "csnn", "--data-npy", f"{d}/a.npy,{d}/b.npy",
                      "--repeat-time", "2", "--batch-size", "4", "--lr", "0.1", "--steps",
                      "1"], "a.npy"),
                    (["--model", "csnn", "--data", "mnist", "--batch-size", "4", "--lr", "0.1",
                      "--steps", "1"], "mnist"),
                    (["--model", "csnn", "--onnx-weights", f"{d}/none.onnx", "--batch-size",
                      "4", "--lr", "0.1", "--steps", "1"], "none.onnx")):
                r = cli(*bad)
                self.assertEqual(r.returncode, 1, bad)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("error: "), lines[0])
                self.assertIn(needle, lines[0])


if __name__ == "__main__":
    unittest.main()
