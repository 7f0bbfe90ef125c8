"""The ONNX profile, C++ side against Python side: the names the compiler reads
(include/snn/Schema/OnnxProfile.h, printed by snn-onnx-profile-dump) must be the names the
exporter writes (python_export/snnexport/export/names.py): the domain and its version, the
metadata keys (frozen parameters, an input the model repeats over T, an artifact program's mesh
coordinate), the neuron op types, every op type of the domain with its attributes, and the
surrogates (value, SpikingJelly class, parameter names and defaults). Prints one line per
difference and exits 1.

Standard library only: names.py is loaded from its file, without the snnexport package (and
so without torch)."""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NAMES = os.path.join(ROOT, "python_export", "snnexport", "export", "names.py")
HEADER = "include/snn/Schema/OnnxProfile.h"


def load_names():
    spec = importlib.util.spec_from_file_location("snnexport_names", NAMES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_profile(names):
    return {
        "domain": names.DOMAIN,
        "domain_version": names.DOMAIN_VERSION,
        "artifact_domain": names.DOMAIN,  # artifact programs share the domain
        "frozen_key": names.FROZEN_KEY,
        "input_repeated_over_time_key": names.INPUT_REPEATED_OVER_TIME_KEY,
        "mesh_coordinate_key": names.MESH_COORDINATE_KEY,
        "neuron_types": list(names.NEURON_TYPES),
        "op_attributes": {op: list(attrs) for op, attrs in names.OP_ATTRIBUTES.items()},
        "surrogates": {name: {"class": cls, "parameters": dict(names.SURROGATE_PARAMETERS[name])}
                       for cls, name in names.SURROGATES.items()},
    }


def surrogate_differences(cpp, py):
    """The surrogate tables: the same names, classes, parameter names and defaults (C++ holds
    them as float32)."""
    out = []
    for name in sorted(set(cpp) | set(py)):
        if name not in cpp or name not in py:
            out.append(f"surrogate {name!r}: in {'C++' if name in cpp else 'Python'} only")
            continue
        a, b = cpp[name], py[name]
        close = all(abs(a["parameters"][k] - v) <= 1e-6 * max(1.0, abs(v))
                    for k, v in b["parameters"].items())
        if a["class"] != b["class"] or list(a["parameters"]) != list(b["parameters"]) or \
                not close:
            out.append(f"surrogate {name!r}: C++ {a}, Python {b}")
    return out


def differences(cpp, py):
    out = []
    out += surrogate_differences(cpp.get("surrogates", {}), py["surrogates"])
    for key in ("domain", "domain_version", "artifact_domain", "frozen_key",
                "input_repeated_over_time_key", "mesh_coordinate_key", "neuron_types"):
        if cpp.get(key) != py[key]:
            out.append(f"{key}: C++ {cpp.get(key)!r}, Python {py[key]!r}")
    cpp_ops, py_ops = cpp.get("op_attributes", {}), py["op_attributes"]
    for op in sorted(set(cpp_ops) | set(py_ops)):
        if op not in py_ops:
            out.append(f"op type {op!r}: in C++ only")
        elif op not in cpp_ops:
            out.append(f"op type {op!r}: in Python only")
        elif sorted(cpp_ops[op]) != sorted(py_ops[op]):
            only_cpp = sorted(set(cpp_ops[op]) - set(py_ops[op]))
            only_py = sorted(set(py_ops[op]) - set(cpp_ops[op]))
            out.append(f"attributes of {op}: C++ only {only_cpp}, Python only {only_py}")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", required=True, help="the snn-onnx-profile-dump executable")
    args = parser.parse_args()
    cpp = json.loads(subprocess.run([args.dump], check=True, capture_output=True,
                                    text=True).stdout)
    diffs = differences(cpp, python_profile(load_names()))
    if diffs:
        print(f"ONNX profile: C++ ({HEADER}) and Python "
              f"({os.path.relpath(NAMES, ROOT)}) disagree:")
        for line in diffs:
            print("  " + line)
        return 1
    print(f"ONNX profile: C++ and Python agree (domain {cpp['domain']!r}, "
          f"{len(cpp['op_attributes'])} op types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
