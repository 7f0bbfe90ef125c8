"""snnexport.reference.make_case and its CLI."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx

import onnx_interp
from snnexport import reference

PYTHONPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python_export")

SMALL = {
    "spiking_mlp": {"in_features": 64, "hidden": 32},
    "deep_mlp": {"in_features": 16, "hidden": 8, "layers": 3, "neuron": "plif"},
    "csnn": {"channels": 4},
    "vgg_dvs": {"channels": 4, "image": 16, "blocks": 2},
    "sew_resnet": {"channels": 4, "blocks": 1},
    "spikformer": {"embed_dims": 32, "depths": 1},
}
OUTPUT = {"spiking_mlp": "spikes", "spikformer": "logits"}  # the others: "rate"


class MakeCaseTest(unittest.TestCase):
    def test_each_model(self):
        for name, kw in SMALL.items():
            with self.subTest(model=name), tempfile.TemporaryDirectory() as d:
                meta = reference.make_case(name, d, T=4, N=6, seed=1, attempts=2, **kw)
                bound = ["bound.npy"] if OUTPUT.get(name) == "logits" else []
                self.assertEqual(sorted(os.listdir(d)),
                                 bound + ["expected.npy", "input.npy", "meta.json",
                                          "model.onnx", "weights.npz"])
                with open(os.path.join(d, "meta.json")) as f:
                    self.assertEqual(json.load(f), json.loads(json.dumps(meta)))
                x = np.load(os.path.join(d, "input.npy"))
                y = np.load(os.path.join(d, "expected.npy"))
                self.assertEqual((x.dtype, y.dtype), (np.float32, np.float32))
                self.assertEqual(list(x.shape), meta["input_shape"])
                self.assertEqual(list(y.shape), meta["output_shape"])
                self.assertEqual(x.shape[:2], (4, 6))
                self.assertEqual(meta["output"], OUTPUT.get(name, "rate"))
                for path, s in meta["neurons"].items():
                    self.assertGreater(s["firing_rate"], 0.0, path)
                    self.assertLess(s["firing_rate"], 1.0, path)
                m = meta["threshold_margin"]
                self.assertEqual(m["near_count"],
                                 sum(s["near_count"] for s in meta["neurons"].values()))
                self.assertEqual(m["near_count"] == 0, m["min"] >= reference.MARGIN)
                got = onnx_interp.run(onnx.load(os.path.join(d, "model.onnx")), x)
                np.testing.assert_allclose(got, y, rtol=0, atol=1e-6)

    def test_model_options(self):
        from snnexport import models
        self.assertEqual(models.model_kwargs("deep_mlp", width=32, layers=4, neuron="if"),
                         {"hidden": 32, "layers": 4, "neuron": "if"})
        with self.assertRaisesRegex(ValueError, "--layers does not apply to csnn"):
            models.model_kwargs("csnn", layers=2)
        with self.assertRaisesRegex(ValueError, "--layers must be >= 1, got 0"):
            models.model_kwargs("deep_mlp", layers=0)
        with self.assertRaisesRegex(ValueError, "neuron 'alif' is not one of"):
            models.deep_mlp(neuron="alif")
        self.assertEqual(models.model_kwargs("spikformer", width=128, blocks=3, image=64,
                                             classes=100, preset="ti"),
                         {"embed_dims": 128, "depths": 3, "img_size": 64, "num_classes": 100,
                          "preset": "ti"})
        with self.assertRaisesRegex(ValueError, "--preset does not apply to csnn"):
            models.model_kwargs("csnn", preset="s")

    def test_deterministic(self):
        kw = SMALL["sew_resnet"]
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            reference.make_case("sew_resnet", a, T=2, N=3, seed=5, attempts=1, **kw)
            reference.make_case("sew_resnet", b, T=2, N=3, seed=5, attempts=1, **kw)
            for f in ("input.npy", "expected.npy", "model.onnx"):
                with open(os.path.join(a, f), "rb") as fa, open(os.path.join(b, f), "rb") as fb:
                    self.assertEqual(fa.read(), fb.read(), f)

    def test_unknown_model(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaisesRegex(ValueError, "unknown"):
            reference.make_case("resnet9000", d)


def cli(*args):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    return subprocess.run([sys.executable, "-m", "snnexport.make_case", *args], env=env,
                          capture_output=True, text=True, timeout=120)


class CliTest(unittest.TestCase):
    def test_spikformer_case(self):
        with tempfile.TemporaryDirectory() as d:
            r = cli("--model", "spikformer", "--out", d, "--N", "2", "--blocks", "1",
                    "--attempts", "1", "--quiet")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "meta.json")) as f:
                meta = json.load(f)
            self.assertEqual(meta["kwargs"], {"depths": 1})
            self.assertEqual(meta["input_shape"], [4, 2, 3, 32, 32])
            self.assertEqual(meta["output_shape"], [4, 2, 10])
            self.assertEqual(len(meta["neurons"]), 10)
            for path, s in meta["neurons"].items():
                self.assertGreater(s["firing_rate"], 0.01, path)

    def test_help(self):
        r = cli("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--model", r.stdout)

    def test_case_and_errors(self):
        with tempfile.TemporaryDirectory() as d:
            r = cli("--model", "spiking_mlp", "--out", d, "--T", "3", "--N", "2", "--width", "8",
                    "--quiet")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(np.load(os.path.join(d, "input.npy")).shape, (3, 2, 784))
            for bad in (["--model", "nope", "--out", d], ["--model", "csnn", "--out", d,
                                                          "--width", "0"],
                        ["--model", "csnn", "--out", d, "--image", "32"],
                        ["--model", "spikformer", "--out", d, "--preset", "xl"], []):
                r = cli(*bad)
                self.assertEqual(r.returncode, 1, bad)
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith("error: "), lines[0])


if __name__ == "__main__":
    unittest.main()
