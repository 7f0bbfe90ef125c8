"""Checks pipeline artifacts against docs/artifact-format.md, "Pipeline programs".

Usage: check_pipeline_artifact.py [--whole WHOLE] DIR...   (each DIR an artifact of plan mode pp)

For every program: its stage, its ranks (row-major pp coordinate = stage mod pp size), its
initializers (exactly the manifest's parameters of its stage), the graph input only on stage 0
and the graph output only on the last; every `recv` without inputs and with one output that
has value info, every `send` with one input and no output, peers adjacent and slots 0, 1, ...
in node order; the sends of stage k pair with the recvs of stage k + 1 slot by slot.

With --whole (an unsplit artifact of the same model): the stages, joined through their
send/recv pairs, compute the same dataflow graph as the whole program (every node with its op
type, name, attributes and inputs, traced back to the model input and the parameters), and
hold the same parameter values.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def ranks_of(mesh, stage):
    axes, shape = mesh["axes"], mesh["shape"]
    dim = axes.index("pp")
    stride = 1
    for size in shape[dim + 1:]:
        stride *= size
    world = 1
    for size in shape:
        world *= size
    return [r for r in range(world) if (r // stride) % shape[dim] == stage % shape[dim]]


def check_program(directory, manifest, program, count):
    stage = program["stage"]
    model = onnx.load(os.path.join(directory, program["file"]))
    graph = model.graph
    assert program["ranks"] == ranks_of(manifest["mesh"], stage), program
    held = sorted(p["name"] for p in manifest["parameters"] if p["stage"] == stage)
    assert sorted(t.name for t in graph.initializer) == held, (stage, held)
    assert [i.name for i in graph.input] == (["input"] if stage == 0 else []), stage
    assert [o.name for o in graph.output] == (["output"] if stage == count - 1 else []), stage
    infos = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
             for v in graph.value_info}
    recvs = [n for n in graph.node if n.op_type == "recv"]
    sends = [n for n in graph.node if n.op_type == "send"]
    for node in recvs:
        assert not node.input and len(node.output) == 1 and node.output[0] in infos, node
        assert attrs(node)["peer"] == stage - 1, node
    for node in sends:
        assert len(node.input) == 1 and not node.output, node
        assert attrs(node)["peer"] == stage + 1, node
    assert [attrs(n)["slot"] for n in recvs] == list(range(len(recvs))), stage
    assert [attrs(n)["slot"] for n in sends] == list(range(len(sends))), stage
    assert (stage == 0) == (not recvs) and (stage == count - 1) == (not sends), stage
    return len(sends), len(recvs), [infos[n.output[0]] for n in recvs]


class Dataflow:
    """Each value as a structural signature: what computes it, from what, recursively."""

    def __init__(self):
        self.producers = {}  # (program, value name) -> node
        self.aliases = {}  # (program, recv output) -> (program, send input)
        self.memo = {}

    def add(self, key, graph):
        for node in graph.node:
            for out in node.output:
                self.producers[(key, out)] = node

    def signature(self, key, name):
        if (key, name) in self.aliases:
            return self.signature(*self.aliases[(key, name)])
        if (key, name) not in self.memo:
            node = self.producers.get((key, name))
            if node is None:  # the model input or a parameter
                self.memo[(key, name)] = ("value", name)
            else:
                attributes = tuple(sorted((a.name, str(onnx.helper.get_attribute_value(a)))
                                          for a in node.attribute))
                inputs = tuple(self.signature(key, i) for i in node.input)
                self.memo[(key, name)] = (node.op_type, node.name, attributes, inputs)
        return self.memo[(key, name)]

    def nodes(self, key, graph):
        return sorted(repr(self.signature(key, n.output[0])) for n in graph.node
                      if n.op_type not in ("send", "recv"))


def compare_with_whole(directory, programs, whole):
    models = [onnx.load(os.path.join(directory, p["file"])) for p in programs]
    flow = Dataflow()
    for k, model in enumerate(models):
        flow.add(k, model.graph)
    for k, model in enumerate(models[1:], start=1):
        sends = [n for n in models[k - 1].graph.node if n.op_type == "send"]
        for node in (n for n in model.graph.node if n.op_type == "recv"):
            flow.aliases[(k, node.output[0])] = (k - 1, sends[attrs(node)["slot"]].input[0])
    split_nodes = sorted(sum((flow.nodes(k, m.graph) for k, m in enumerate(models)), []))
    whole_model = onnx.load(os.path.join(whole, "program_0.onnx"))
    flow.add("whole", whole_model.graph)
    assert split_nodes == flow.nodes("whole", whole_model.graph), "the stages compute another graph"
    last = len(models) - 1
    assert flow.signature(last, "output") == flow.signature("whole", "output"), "other output"
    split_params = {t.name: numpy_helper.to_array(t) for m in models for t in m.graph.initializer}
    whole_params = {t.name: numpy_helper.to_array(t) for t in whole_model.graph.initializer}
    assert split_params.keys() == whole_params.keys(), "other parameters"
    for name, value in whole_params.items():
        assert np.array_equal(split_params[name], value), name


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--whole", help="an unsplit artifact of the same model to compare with")
    parser.add_argument("directories", nargs="+")
    args = parser.parse_args(argv)
    for directory in args.directories:
        with open(os.path.join(directory, "manifest.json")) as f:
            manifest = json.load(f)
        programs = sorted(manifest["programs"], key=lambda p: p["stage"])
        assert [p["stage"] for p in programs] == list(range(len(programs))), programs
        assert len(programs) == len(manifest["plan"]["pp_layout"]), programs
        edges = [check_program(directory, manifest, p, len(programs)) for p in programs]
        for k in range(len(edges) - 1):
            assert edges[k][0] == edges[k + 1][1], f"{directory}: edge {k}: sends != recvs"
        for shapes in (e[2] for e in edges):
            assert all(s[1] == -1 for s in shapes), shapes  # the batch dimension is dynamic
        if args.whole:
            compare_with_whole(directory, programs, args.whole)
        print(f"{directory}: {len(programs)} stage programs ok" +
              (" (same graph as the whole program)" if args.whole else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
