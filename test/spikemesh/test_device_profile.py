"""Plans calibrated by default: spikemesh.calibrate() writes this user's device profile (here
SPIKEMESH_DEVICE_PROFILE names a temporary file), and spikemesh.plan and snn-compile use it
when given no profile; without one, or with one of another machine, they plan with the default
constants and say so once (UncalibratedPlanWarning, snn-compile's warning line). Run with
PYTHONPATH=build/python.
"""
import json
import os
import subprocess
import tempfile
import unittest
import warnings

import spikemesh
from spikemesh import _spikemesh
from spikemesh.export import export_onnx
from common import check_firing, csnn_case

PROFILE_ENV = "SPIKEMESH_DEVICE_PROFILE"
BUILTIN = "the built-in profile's"


def plan_with_warnings(analysis):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = spikemesh.plan(analysis=analysis, objective="speed", topology={"dp": 2},
                              backend="gloo", batch_size=8)
    return plan, [str(w.message) for w in caught
                  if issubclass(w.category, spikemesh.UncalibratedPlanWarning)]


class UserProfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.TemporaryDirectory()
        cls.profile = os.path.join(cls.work.name, "cache", "device-profile.json")
        os.environ[PROFILE_ENV] = cls.profile
        model, x, stats = csnn_case()
        check_firing(stats)
        cls.analysis = spikemesh.analyze(model, example_input=x)
        cls.onnx = os.path.join(cls.work.name, "csnn.onnx")
        export_onnx(model, x, cls.onnx)
        cls.snn_compile = os.path.join(os.path.dirname(_spikemesh.snn_run_path), "snn-compile")

    @classmethod
    def tearDownClass(cls):
        os.environ[PROFILE_ENV] = "none"
        cls.work.cleanup()

    def compile_warnings(self):
        done = subprocess.run([self.snn_compile, self.onnx, "--topology", "dp=2",
                               "--batch-size", "8", "--explain"],
                              capture_output=True, text=True, check=True)
        return [line for line in done.stderr.splitlines() if "warning" in line], done.stdout

    def test_calibrated_by_default(self):
        self.assertEqual(spikemesh.user_device_profile_path(), self.profile)
        # None yet: one warning, and the plan's times are the built-in profile's.
        builtin, messages = plan_with_warnings(self.analysis)
        self.assertEqual(len(messages), 1, messages)
        self.assertIn(self.profile, messages[0])
        self.assertIn("snn-run calibrate", messages[0])
        self.assertIn("the built-in device profile", builtin.explanation)
        lines, explanation = self.compile_warnings()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(BUILTIN, lines[0])
        self.assertIn("the built-in device profile", explanation)

        # calibrate() writes this user's profile (creating its directory); plans then use it.
        self.assertEqual(spikemesh.calibrate(quick=True, ranks=[2], progress="none"),
                         self.profile)
        calibrated, messages = plan_with_warnings(self.analysis)
        self.assertEqual(messages, [])
        self.assertIn(f"device profile {self.profile}", calibrated.explanation)
        # The built-in profile measured a machine of this kind: the same order of magnitude
        # (the constants made this CSNN's step microseconds where it takes milliseconds).
        ratio = calibrated.prediction["step_seconds"] / builtin.prediction["step_seconds"]
        self.assertTrue(0.1 < ratio < 10, ratio)
        lines, explanation = self.compile_warnings()
        self.assertEqual(lines, [])
        self.assertIn(f"device profile {self.profile}", explanation)

        # A profile of another machine is not used, and the warning says what differs.
        with open(self.profile) as f:
            other = json.load(f)
        other["machine"]["cpu"] = "Another CPU"
        with open(self.profile, "w") as f:
            json.dump(other, f)
        _, messages = plan_with_warnings(self.analysis)
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("Another CPU", messages[0])
        lines, _ = self.compile_warnings()
        self.assertIn("Another CPU", lines[0])

        # Turned off: the constants, silently.
        os.environ[PROFILE_ENV] = "none"
        try:
            constants, messages = plan_with_warnings(self.analysis)
            self.assertEqual(messages, [])
            self.assertIn("default constants", constants.explanation)
            with self.assertRaisesRegex(ValueError, "none"):
                spikemesh.calibrate(quick=True)
        finally:
            os.environ[PROFILE_ENV] = self.profile

    def test_bad_arguments(self):
        with self.assertRaisesRegex(TypeError, "ranks"):
            spikemesh.calibrate(ranks="2")
        with self.assertRaisesRegex(ValueError, "threads"):
            spikemesh.calibrate(threads=0)
        with self.assertRaisesRegex(spikemesh.SpikeMeshError, "--ranks"):
            spikemesh.calibrate(out=os.path.join(self.work.name, "x.json"), ranks=[1],
                                progress="none")


if __name__ == "__main__":
    unittest.main()
