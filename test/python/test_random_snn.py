"""bench/random_snn.py: the random architectures every held-out check draws from."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx

import onnx_interp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import random_snn  # noqa: E402

# The first seed of each family in 0..: conv, mlp, resnet, attention.
ONE_OF_EACH = (1, 5, 7, 9)


class RandomSNNTest(unittest.TestCase):
    def test_specs(self):
        specs = [random_snn.draw(s) for s in range(60)]
        self.assertEqual(specs, [random_snn.draw(s) for s in range(60)])  # seeded
        self.assertEqual({s["family"] for s in specs}, {"conv", "resnet", "attention", "mlp"})
        self.assertEqual({s["neuron"]["kind"] for s in specs}, {"if", "lif", "plif"})
        self.assertGreater(len({json.dumps(s, sort_keys=True) for s in specs}), 55)
        for s in specs:
            for b in s.get("blocks", []):
                if "out" in b:  # every width splits over 2 and 4 tensor-parallel ranks
                    self.assertEqual(b["out"] % 8, 0, s)
                if b["type"] == "attention":
                    width = next(c["out"] for c in s["blocks"] if c["type"] == "conv")
                    self.assertEqual(width % b["heads"], 0, s)
            self.assertGreaterEqual(s.get("side", 1), 1, s)
        self.assertEqual([random_snn.draw(s)["family"] for s in ONE_OF_EACH],
                         ["conv", "mlp", "resnet", "attention"])

    def test_cases_fire_and_export(self):
        """One model of each family: its neuron layers fire at 2-60 %, and the exported ONNX,
        run by an independent interpreter, gives the PyTorch output."""
        for seed in ONE_OF_EACH:
            spec = random_snn.draw(seed)
            with self.subTest(seed=seed, family=spec["family"]), \
                    tempfile.TemporaryDirectory() as d:
                meta = random_snn.write(spec, d, N=4, attempts=1)
                self.assertEqual(meta["spec"], spec)
                for path, s in meta["neurons"].items():
                    self.assertGreater(s["firing_rate"], 0.02, path)
                    self.assertLess(s["firing_rate"], 0.6, path)
                x = np.load(os.path.join(d, "input.npy"))
                y = np.load(os.path.join(d, "expected.npy"))
                self.assertEqual(list(y.shape), [4, spec["classes"]])
                self.assertEqual(x.shape[:2], (spec["T"], 4))
                got = onnx_interp.run(onnx.load(os.path.join(d, "model.onnx")), x)
                np.testing.assert_allclose(got, y, rtol=0, atol=1e-6)

    def test_cli(self):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "random_snn.py"),
                              "--seed", "3", "--describe"], capture_output=True, text=True,
                             check=True).stdout
        self.assertEqual(json.loads(out), random_snn.draw(3))


if __name__ == "__main__":
    unittest.main()
