"""Mutations of a compiled artifact directory, as JSON recipes: drawn from a seeded random
generator against a real artifact, saved, and applied again to a fresh copy of the same
artifact (test/fuzz/partitioned_artifacts.py). A recipe names its change explicitly (the JSON
path and value, the node and attribute), so a saved one replays without the generator.

  manifest_set     {"path": [...], "value": v}     a field's value: out of range, wrong type
  manifest_delete  {"path": [...]}                 a key or array entry removed
  manifest_add     {"path": [...], "key": k, "value": v}   an extra key in an object
  remove_node      {"file": f, "node": i}          one node of one rank's program removed
  set_attribute    {"file": f, "node": i, "attribute": a, "value": v}
  reshape_initializer {"file": f, "initializer": n, "dims": [...]}
"""
import json
import math
import os

import onnx
from onnx import helper

INTS = [-1, 0, 1, 2, 3, 7, -5, 2 ** 31, 2 ** 62, -(2 ** 63), 2 ** 63 - 1]
WRONG_TYPES = ["x", None, [], {}, 1.5, True]
STRINGS = ["", "tp", "dp", "pp", "xx", "../x", "program_0.onnx", "program_1.onnx"]
# What the runtime never acts on: mutating it says nothing about the runtime's checks.
IGNORED = {"explanation", "rationale", "decided_by", "producer", "source", "prediction",
           "tensor_parallel_pairs"}


def _leaves(node, path=()):
    """Every (path, value) under `node`, objects and arrays included, except IGNORED keys."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in IGNORED:
                yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, path + (index,))


def _value_for(rng, old):
    """A replacement for `old`: out of range for its type, or of another type."""
    if rng.random() < 0.25:
        return rng.choice(WRONG_TYPES)
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice(INTS + [old + 1, old - 1, old * 2])
    if isinstance(old, str):
        return rng.choice(STRINGS)
    if isinstance(old, list):
        return rng.choice([[], old[:-1], old + old[-1:]]) if old else [rng.choice(INTS)]
    return rng.choice(INTS)


def draw_manifest_mutation(rng, manifest):
    leaves = [(list(p), v) for p, v in _leaves(manifest) if p]
    path, old = rng.choice(leaves)
    roll = rng.random()
    if roll < 0.6:
        return {"kind": "manifest_set", "path": path, "value": _value_for(rng, old)}
    if roll < 0.85:
        return {"kind": "manifest_delete", "path": path}
    objects = [list(p) for p, v in _leaves(manifest) if isinstance(v, dict)]
    return {"kind": "manifest_add", "path": rng.choice(objects),
            "key": rng.choice(["stage", "split_groups", "extra", "mesh_axis", "sharding"]),
            "value": rng.choice(INTS + STRINGS)}


def _attribute_value(rng, attribute):
    value = helper.get_attribute_value(attribute)
    if attribute.type == onnx.AttributeProto.INT:
        return rng.choice([0, -1, 1, 2, value + 1, value * 2, 2 ** 40, -(2 ** 40)])
    if attribute.type == onnx.AttributeProto.FLOAT:
        return rng.choice([0.0, -1.0, math.nan, math.inf, value * 2, 1e30])
    if attribute.type == onnx.AttributeProto.STRING:
        return rng.choice(["", "bogus", "tp", "dp", "pp", "sigmoid", "atan"])
    if attribute.type == onnx.AttributeProto.INTS and value:
        changed = list(value)
        changed[rng.randrange(len(changed))] = rng.choice([0, -1, 2 ** 40, changed[0] + 1])
        return rng.choice([changed, changed[:-1], changed + [1]])
    return rng.choice(INTS)


def _new_dims(rng, dims):
    dims = list(dims)
    if not dims:
        return [1]
    roll = rng.random()
    if roll < 0.4 and len(dims) > 1:
        return dims[::-1]  # the same element count, another layout
    if roll < 0.7:
        i = rng.randrange(len(dims))
        dims[i] = max(dims[i] + rng.choice([-1, 1]), 0)
        return dims
    return dims + [1] if roll < 0.85 else dims[:-1]


def draw_program_mutation(rng, artifact_dir, programs):
    file = rng.choice(programs)
    model = onnx.load(os.path.join(artifact_dir, file))
    nodes = list(model.graph.node)
    with_attributes = [i for i, n in enumerate(nodes) if n.attribute]
    roll = rng.random()
    if roll < 0.45 and with_attributes:
        i = rng.choice(with_attributes)
        attribute = rng.choice(list(nodes[i].attribute))
        return {"kind": "set_attribute", "file": file, "node": i, "attribute": attribute.name,
                "value": _attribute_value(rng, attribute)}
    if roll < 0.75 and model.graph.initializer:
        tensor = rng.choice(list(model.graph.initializer))
        return {"kind": "reshape_initializer", "file": file, "initializer": tensor.name,
                "dims": _new_dims(rng, tensor.dims)}
    return {"kind": "remove_node", "file": file, "node": rng.randrange(len(nodes))}


def _walk_to(document, path):
    for key in path[:-1]:
        document = document[key]
    return document


def _apply_to_manifest(manifest, mutation):
    kind, path = mutation["kind"], mutation["path"]
    if kind == "manifest_add":
        _walk_to(manifest, path + ["_"])[mutation["key"]] = mutation["value"]
        return
    parent = _walk_to(manifest, path)
    if kind == "manifest_set":
        parent[path[-1]] = mutation["value"]
    else:
        del parent[path[-1]]


def _set_attribute(node, name, value):
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.append(helper.make_attribute(name, value))


def _apply_to_program(model, mutation):
    graph = model.graph
    if mutation["kind"] == "remove_node":
        del graph.node[mutation["node"]]
    elif mutation["kind"] == "set_attribute":
        _set_attribute(graph.node[mutation["node"]], mutation["attribute"], mutation["value"])
    else:
        tensor = next(t for t in graph.initializer if t.name == mutation["initializer"])
        del tensor.dims[:]
        tensor.dims.extend(mutation["dims"])


def apply_mutation(artifact_dir, mutation):
    """Applies one recipe to the artifact directory in place."""
    if mutation["kind"].startswith("manifest_"):
        path = os.path.join(artifact_dir, "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        _apply_to_manifest(manifest, mutation)
        with open(path, "w") as f:
            json.dump(manifest, f, indent=2)
        return
    path = os.path.join(artifact_dir, mutation["file"])
    model = onnx.load(path)
    _apply_to_program(model, mutation)
    onnx.save(model, path)
