"""spikemesh's kernel choice: the event-driven Linear and conv2d kernels on spike inputs.

The CSNN applied in one process, in eval: under the default ``"auto"`` every Linear and conv2d
shape fed spikes has a crossover, timed by the first process into a fresh crossover file and
read back by a second process, which takes the same kernels and gives the same output bit for
bit; the output equals eager PyTorch's spikes either way; with the limits at 0 no shape is
timed or counted; at 0 and at 1 the output equals eager PyTorch's too; bad limits raise.
Run with PYTHONPATH=build/python.
"""
import os
import subprocess
import sys
import tempfile
import unittest

import torch

import spikemesh
from common import check_firing, csnn_case


def run_eval():
    """The CSNN's compiled program in eval on its case input, and eager PyTorch's output."""
    model, x, stats = csnn_case()
    check_firing(stats)
    with torch.no_grad():
        expected = model(x)
    analysis = spikemesh.analyze(model, example_input=x)
    plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": 1},
                          backend="gloo", batch_size=x.shape[1])
    runtime = spikemesh.apply(model=model, plan=plan)
    runtime.model.eval()
    with torch.no_grad():
        out = runtime.model(x)
    return runtime, x, out, expected


def choices_by_kind(choices):
    return {kind: [c for c in choices if c["layer"].startswith(kind)]
            for kind in ("linear", "conv2d")}


class EventKernelsTest(unittest.TestCase):
    def test_defaults_and_errors(self):
        self.assertEqual(spikemesh.event_kernels(), {"linear": "auto", "conv": "auto"})
        with self.assertRaisesRegex(TypeError, "linear: expected 'auto' or a density"):
            spikemesh.set_event_kernels(linear=[0.1])
        with self.assertRaisesRegex(TypeError, "conv: expected"):
            spikemesh.set_event_kernels(conv=True)
        with self.assertRaisesRegex(ValueError, "conv: expected 'auto' or a density in \\[0, 1\\], "
                                                "got 'fast'"):
            spikemesh.set_event_kernels(conv="fast")
        with self.assertRaisesRegex(ValueError,
                                    "linear: expected a density in \\[0, 1\\], got 1.5"):
            spikemesh.set_event_kernels(linear=1.5)
        self.assertEqual(spikemesh.event_kernels(), {"linear": "auto", "conv": "auto"})

    def test_auto_is_timed_once_and_kept(self):
        with tempfile.TemporaryDirectory() as work:
            env = dict(os.environ, SPIKEMESH_KERNEL_CROSSOVERS=os.path.join(work, "c.json"))
            runs = []
            for attempt in range(2):
                out = os.path.join(work, f"out{attempt}.pt")
                subprocess.run([sys.executable, __file__, "--child", out], env=env, check=True,
                               timeout=300)
                runs.append(torch.load(out))
            first, second = runs
            for kind, shapes in choices_by_kind(first["choices"]).items():
                self.assertTrue(shapes, f"no {kind} shape under the automatic choice")
            for a, b in zip(first["choices"], second["choices"]):
                self.assertFalse(a["from_file"])
                self.assertTrue(b["from_file"])
                self.assertTrue(0.0 <= a["threshold"] <= 1.0)
                self.assertGreater(a["event_calls"] + a["dense_calls"], 0)
                for key in ("layer", "threshold", "event_calls", "dense_calls", "mean_density"):
                    self.assertEqual(a[key], b[key])
            self.assertEqual(len(first["choices"]), len(second["choices"]))
            self.assertTrue(torch.equal(first["out"], second["out"]))
            self.assertTrue(torch.equal(first["out"], first["expected"]))

    def test_fixed_limits(self):
        try:
            spikemesh.set_event_kernels(linear=0, conv=0)
            self.assertEqual(spikemesh.event_kernels(), {"linear": 0.0, "conv": 0.0})
            before = spikemesh.event_kernel_choices()
            _, _, out, expected = run_eval()
            self.assertEqual(spikemesh.event_kernel_choices(), before)
            self.assertTrue(torch.equal(out, expected))
            spikemesh.set_event_kernels(linear=1.0, conv=1.0)
            _, _, out, expected = run_eval()
            self.assertTrue(torch.equal(out, expected))
        finally:
            spikemesh.set_event_kernels()


def child(path):
    runtime, _, out, expected = run_eval()
    torch.save({"out": out, "expected": expected,
                "choices": spikemesh.event_kernel_choices()}, path)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        unittest.main()
