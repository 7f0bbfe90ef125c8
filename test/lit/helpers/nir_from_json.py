"""Writes a NIR file (HDF5, the layout NIR's own writer uses) from a JSON description, so
lit tests can state small graphs in their text. Usage: nir_from_json.py IN.json OUT.nir

{"version": "0.2.0",
 "nodes": {"input": {"type": "Input", "shape": [4]},
           "fc": {"type": "Affine", "weight": {"seed": 1, "shape": [3, 4]}, "bias": [0, 0, 0]},
           "lif": {"type": "LIF", "tau": {"fill": 0.02, "shape": [3]}, ...},
           "output": {"type": "Output", "shape": [3]}},
 "edges": [["input", "fc"], ["fc", "lif"], ["lif", "output"]]}

A value is a string, a number or nested list (whole-number parameters such as shapes, strides
and groups are written as int64, every other as float32; "float64:" before a key's name
writes it as float64), {"fill": v, "shape": s} or {"seed": k, "shape": s} (normal values
from NumPy's generator seeded with k, times "scale", default 1)."""
import json
import sys

import h5py
import numpy as np

WHOLE = {"shape", "input_shape", "input_type", "stride", "padding", "dilation", "groups",
         "kernel_size", "start_dim", "end_dim"}


def array(key, value):
    if isinstance(value, dict) and "fill" in value:
        value = np.full(value["shape"], value["fill"])
    elif isinstance(value, dict) and "seed" in value:
        rng = np.random.default_rng(value["seed"])
        value = rng.standard_normal(value["shape"]) * value.get("scale", 1.0)
    dtype = np.int64 if key in WHOLE else np.float32
    return np.asarray(value, dtype=dtype)


def write(graph, path):
    """Writes `graph` (the JSON description above, as Python values) to the NIR file `path`."""
    with h5py.File(path, "w") as out:
        out.create_dataset("version", data=graph.get("version", "0.2.0"),
                           dtype=h5py.string_dtype())
        root = out.create_group("node")
        root.create_dataset("type", data="NIRGraph", dtype=h5py.string_dtype())
        nodes = root.create_group("nodes")
        for name, fields in graph["nodes"].items():
            group = nodes.create_group(name)
            for key, value in fields.items():
                if isinstance(value, str):
                    group.create_dataset(key, data=value, dtype=h5py.string_dtype())
                elif key.startswith("float64:"):
                    group.create_dataset(key[8:], data=array(key, value).astype(np.float64))
                else:
                    group.create_dataset(key, data=array(key, value))
        edges = np.asarray(graph["edges"], dtype=object).reshape(-1, 2)
        root.create_dataset("edges", data=edges.astype(h5py.string_dtype()),
                            dtype=h5py.string_dtype())


def main(argv):
    if len(argv) != 3:
        print("usage: nir_from_json.py IN.json OUT.nir", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        write(json.load(f), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
