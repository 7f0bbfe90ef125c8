"""The reference's helper functions under spikemesh (one process): their rules and errors.
Run with PYTHONPATH=build/python."""
import os
import tempfile
import unittest

import torch
import torch.distributed as torch_dist

import spikemesh
from spikemesh.export import functional, models, neuron

from common import csnn_case


class PipelineHelpersTest(unittest.TestCase):
    def test_recommended_pipeline_microbatches(self):
        self.assertEqual(spikemesh.recommended_pipeline_microbatches(8, 8), 8)
        self.assertEqual(spikemesh.recommended_pipeline_microbatches(128, 2), 8)
        self.assertEqual(spikemesh.recommended_pipeline_microbatches(12, 4), 12)
        self.assertEqual(spikemesh.recommended_pipeline_microbatches(18, 4), 9)
        with self.assertRaisesRegex(ValueError, r"no microbatch count in \[8, 32\]"):
            spikemesh.recommended_pipeline_microbatches(37, 8)
        with self.assertRaisesRegex(ValueError, ">= num_stages"):
            spikemesh.recommended_pipeline_microbatches(2, 4)
        with self.assertRaisesRegex(ValueError, "positive integer"):
            spikemesh.recommended_pipeline_microbatches(8, 0)

    def test_recommend_pipeline_memopt_stages(self):
        self.assertEqual(spikemesh.recommend_pipeline_memopt_stages([1, 5, 3, 5]), (1, 3))
        self.assertEqual(spikemesh.recommend_pipeline_memopt_stages([4, 4, 4], 0.1), (0,))
        self.assertEqual(spikemesh.recommend_pipeline_memopt_stages([1, 2, 3], 1.0), (0, 1, 2))
        for bad in (0, 1.5, float("nan")):
            with self.assertRaisesRegex(ValueError, "ratio"):
                spikemesh.recommend_pipeline_memopt_stages([1, 2], bad)
        self.assertEqual(spikemesh.recommend_pipeline_memopt_stages(
            [2, 1], stage_budget_ratio=0.5), (0,))
        self.assertEqual(spikemesh.recommend_pipeline_memopt_stages([]), ())


class RecommenderTest(unittest.TestCase):
    def test_decision_table(self):
        rec = spikemesh.recommend_snn_distributed_strategy
        self.assertEqual(rec("csnn", 1, "speed", 32).mode, "none")
        self.assertEqual(rec("csnn", 1, "memory", 32).memopt_level, 1)
        speed = rec("csnn", 4, "speed", 32)
        self.assertEqual((speed.mode, speed.optimizer_sharding), ("dp", "zero"))
        self.assertEqual(rec("csnn", 4, "speed", 32, zero_redundancy_optimizer_available=False)
                         .optimizer_sharding, "none")
        memory = rec("csnn", 4, "memory", 32)
        self.assertEqual((memory.mode, memory.mesh_shape, memory.tp_mesh_dim),
                         ("fsdp2_tp", (2, 2), 1))
        self.assertEqual(rec("csnn", 3, "memory", 32).mode, "tp")
        self.assertEqual(rec("csnn", 3, "memory", 32, tensor_parallel_available=False).mode,
                         "fsdp2")
        cap = rec("csnn", 2, "capacity", 8)
        self.assertEqual((cap.mode, cap.pp_virtual_stages, cap.pp_schedule), ("pp", 2,
                                                                               "interleaved_1f1b"))
        self.assertEqual(rec("csnn", 4, "capacity", 6).pp_virtual_stages, 1)
        self.assertEqual(rec("csnn", 4, "capacity", 2).mode, "fsdp2_tp")   # as memory
        with self.assertRaisesRegex(ValueError, "prefer"):
            rec("csnn", 2, "fast", 8)


class MeshAndOptimizerTest(unittest.TestCase):
    def test_device_mesh(self):
        mesh = spikemesh.build_device_mesh("cpu")
        self.assertEqual((mesh.mesh_shape, mesh.get_coordinate(), mesh.size()), ((1,), (0,), 1))
        with self.assertRaisesRegex(ValueError, "uses 2 ranks, but world_size=1"):
            spikemesh.build_device_mesh("cpu", (2,))
        self.assertEqual(spikemesh.resolve_data_parallel_partition(mesh, None, True), (1, 0))
        self.assertEqual(spikemesh.resolve_data_parallel_partition(None, 0, True), (1, 0))
        self.assertEqual(spikemesh.resolve_tensor_parallel_group_size(mesh, 0, True), 1)
        with self.assertRaisesRegex(ValueError, "tp_mesh_dim=3"):
            spikemesh.resolve_tensor_parallel_group_size(mesh, 3, True)
        four = spikemesh.DeviceMesh("cpu", (2, 2), ("dp", "tp"), rank=3)
        self.assertEqual(four.get_coordinate(), (1, 1))
        self.assertEqual(spikemesh.resolve_data_parallel_partition(four, 0, True), (2, 1))
        with self.assertRaisesRegex(ValueError, "dp_mesh_dim must be given"):
            spikemesh.resolve_data_parallel_partition(four, None, True)

    def test_apply_takes_a_mesh_of_the_plans_size(self):
        model, x, _ = csnn_case()
        plan = spikemesh.plan(analysis=spikemesh.analyze(model, example_input=x),
                              objective="speed", topology={"dp": 1}, backend="gloo",
                              batch_size=8)
        runtime = spikemesh.apply(model=model, plan=plan,
                                  device_mesh=spikemesh.build_device_mesh("cpu"))
        self.assertIs(spikemesh.unwrap_parallel_module(runtime.model), runtime.model)
        opt = spikemesh.build_snn_optimizer(runtime.model, "none", lr=0.01,
                                            optimizer_cls=torch.optim.SGD, momentum=0.9)
        self.assertIsInstance(opt, torch.optim.SGD)
        with self.assertRaisesRegex(ValueError, "needs mode 'dp'"):
            spikemesh.build_snn_optimizer(runtime.model, "tp", lr=0.01, optimizer_sharding="zero")
        with self.assertRaisesRegex(ValueError, "optimizer_sharding"):
            spikemesh.build_snn_optimizer(runtime.model, "dp", lr=0.01, optimizer_sharding="z2")
        with self.assertRaisesRegex(TypeError, "build_device_mesh"):
            spikemesh.apply(model=model, plan=plan, device_mesh=(1,))

    def test_ensure_distributed_initialized(self):
        with tempfile.TemporaryDirectory() as d:
            init = f"file://{os.path.join(d, 'store')}"
            self.assertTrue(spikemesh.ensure_distributed_initialized(
                "gloo", init_method=init, rank=0, world_size=1))
            self.assertFalse(spikemesh.ensure_distributed_initialized())
            torch_dist.destroy_process_group()
        net = torch.nn.Linear(2, 2)
        self.assertIs(spikemesh.unwrap_parallel_module(net), net)


class TensorShardNeuronTest(unittest.TestCase):
    """A neuron fed a tensor-parallel shard checks its size; otherwise it is the neuron."""

    def setUp(self):
        self.lif = neuron.LIFNode(tau=2.0, step_mode="m")
        self.x = torch.rand(4, 3, 8, generator=torch.Generator().manual_seed(0)) * 2.5

    def reference(self, x):
        functional.reset_net(self.lif)
        with torch.no_grad():
            return self.lif(x)

    def test_make_tensor_shard_memory_module(self):
        sharded = spikemesh.make_tensor_shard_memory_module(self.lif, shard_dim=2,
                                                            logical_dim_size=8)
        self.assertIsInstance(sharded, neuron.LIFNode)
        self.assertIsNot(sharded, self.lif)
        self.assertEqual(sorted(sharded.state_dict()), sorted(self.lif.state_dict()))
        want = self.reference(self.x)
        rate = float(want.mean())
        self.assertTrue(0.05 <= rate <= 0.5, f"fires {rate:.3f}")
        with torch.no_grad():
            self.assertTrue(torch.equal(sharded(self.x), want))
        with self.assertRaisesRegex(ValueError, "local shard size 8 on dim 2.*\\(4, 3, 4\\)"):
            sharded(self.x[..., :4])
        self.assertIs(spikemesh.make_tensor_shard_memory_module(sharded, 2, 8), sharded)
        # A single-step neuron has no T: the reference's dim 2 is its dim 1.
        single = spikemesh.make_tensor_shard_memory_module(neuron.LIFNode(tau=2.0), 2, 8)
        single(self.x[0])
        with self.assertRaisesRegex(ValueError, "dim 1"):
            single(self.x[0, :, :4])
        with self.assertRaisesRegex(TypeError, "stateful"):
            spikemesh.make_tensor_shard_memory_module(torch.nn.ReLU(), 2, 8)
        with self.assertRaisesRegex(ValueError, "logical_dim_size"):
            spikemesh.make_tensor_shard_memory_module(self.lif, 2, 0)

    def test_tensor_shard_memory_module(self):
        wrapped = spikemesh.TensorShardMemoryModule(self.lif, shard_dim=2, logical_dim_size=8)
        self.assertEqual((wrapped.rank, wrapped.world_size, wrapped.expected_local_dim_size),
                         (0, 1, 8))
        self.assertEqual(sorted(wrapped.state_dict()),
                         sorted("inner." + k for k in self.lif.state_dict()))
        with torch.no_grad():
            self.assertTrue(torch.equal(wrapped(self.x), self.reference(self.x)))
            wrapped.reset()
            self.assertTrue(torch.equal(wrapped(self.x), self.reference(self.x)))
        with self.assertRaisesRegex(ValueError, "local shard size"):
            wrapped(self.x[..., :2])


if __name__ == "__main__":
    unittest.main()
