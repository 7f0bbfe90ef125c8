#!/usr/bin/env python3
"""snn-compile on deterministic mutants of exported reference models.

Every mutant of a valid model must either compile (exit 0, a complete artifact, no `error:`
line) or be refused cleanly: exit code 1 (never a signal, never an abort), one `error:` line
(a mutant with several independent problems may give one distinct line per problem, none
repeated) that names the culprit, and no artifact directory left behind. Each mutant carries
an expectation from the documented rules (docs/onnx-profile.md): "invalid" must fail, "valid"
must compile, "either" is held to the two invariants only (the result depends on shape
arithmetic the test does not redo).

Usage: onnx_mutants_test.py --snn-compile BUILD/bin/snn-compile --work-dir DIR
Exits 77 (ctest "skipped") without torch or onnx.
"""
import argparse
import concurrent.futures
import copy
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import time
from collections import Counter, defaultdict

try:
    import numpy as np
    import onnx
    from onnx import AttributeProto, helper, numpy_helper
    from snnexport.export.names import DOMAIN
    from snnexport.models import model_kwargs
    from snnexport.reference import make_case
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

# The reference models, small enough that one compile takes ~20 ms.
MODELS = {
    "csnn": dict(width=4),
    "vgg_dvs": dict(width=4, image=16, blocks=2),
    "sew_resnet": dict(width=4),
    "deep_mlp": dict(width=8, layers=3, neuron="plif"),
}
SEED = 16
TIMEOUT_S = 30


class Mutant:
    def __init__(self, name, cls, expect, model, culprits, max_errors=1):
        self.name, self.cls, self.expect, self.model = name, cls, expect, model
        self.culprits = set(culprits)  # names one of which the error must quote
        self.max_errors = max_errors


# --------------------------------------------------------------------------------------------
# The documented rules, as an oracle: True valid, False invalid, None depends on shapes.
# --------------------------------------------------------------------------------------------

def _finite(v):
    return math.isfinite(v)


FLOAT_RULES = {
    (DOMAIN, "v_threshold"): _finite,
    (DOMAIN, "v_reset"): _finite,
    (DOMAIN, "alpha"): lambda v: _finite(v) and v > 0,
    (DOMAIN, "tau"): lambda v: _finite(v) and v > 1,
    (DOMAIN, "init_tau"): lambda v: True,  # informational
    ("BatchNormalization", "epsilon"): lambda v: _finite(v) and v > 0,
    ("BatchNormalization", "momentum"): lambda v: 0 <= v <= 1,
    ("Gemm", "alpha"): lambda v: v == 1.0,
    ("Gemm", "beta"): lambda v: v == 1.0,
}
INT_RULES = {
    (DOMAIN, "detach_reset"): lambda v: v in (0, 1),
    (DOMAIN, "decay_input"): lambda v: v in (0, 1),
    ("Gemm", "transB"): lambda v: v == 1,
    ("Gemm", "transA"): lambda v: v == 0,
    ("Flatten", "axis"): lambda v: v == 1,
    ("ReduceMean", "keepdims"): lambda v: v == 0,
    ("Conv", "group"): lambda v: v == 1,  # every exported conv has group 1 and C_in > 1
    ("MaxPool", "ceil_mode"): lambda v: None if v in (0, 1) else False,
}


def rule_key(node, attr_name):
    return (DOMAIN if node.domain == DOMAIN else node.op_type, attr_name)


def ints_validity(node, name, values, original):
    if name == "axes" and node.op_type == "ReduceMean" and list(values) != list(original):
        # Axes >= 2 only are a mean over per-step dims, valid where they fit the rank; a 0 or
        # 1 among other axes (or a lone 1) never is.
        ok = values and all(v >= 2 for v in values) and list(values) == sorted(set(values))
        return None if ok else False
    if name == "axes" or name == "pads":  # the readout's axes [0]; one changed pad is asymmetric
        return list(values) == list(original)
    if name == "kernel_shape" and node.op_type == "Conv":  # must be the weight's
        return list(values) == list(original)
    if any(v < (1 if name in ("kernel_shape", "strides", "dilations") else 0) for v in values):
        return False
    return None if list(values) != list(original) else True


def attr_validity(node, attr):
    value = helper.get_attribute_value(attr)
    key = rule_key(node, attr.name)
    if attr.type == AttributeProto.FLOAT and key in FLOAT_RULES:
        return FLOAT_RULES[key](value)
    if attr.type == AttributeProto.INT and key in INT_RULES:
        return INT_RULES[key](value)
    return None


# --------------------------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------------------------

def flip_float(value, bit):
    (raw,) = struct.unpack("<I", struct.pack("<f", value))
    return struct.unpack("<f", struct.pack("<I", raw ^ (1 << bit)))[0]


def flip_int(value, bit):
    raw = (value & (2**64 - 1)) ^ (1 << bit)
    return raw - 2**64 if raw >= 2**63 else raw


def neighbours(graph, node):
    """The node, its inputs' producers, its consumers, and its initializer inputs: the names
    an error caused by mutating `node` may legitimately quote."""
    names = {node.name} | set(node.input) | set(node.output)
    producers = {o: n for n in graph.node for o in n.output}
    for i in node.input:
        if i in producers:
            names.add(producers[i].name)
    for n in graph.node:
        if set(n.input) & set(node.output):
            names.add(n.name)
    return names


def consumers_of(graph, value):
    return {n.name for n in graph.node if value in n.input} | {value}


class Mutator:
    def __init__(self, model_name, model, rng):
        self.model_name, self.base, self.rng = model_name, model, rng
        self.out = []

    def emit(self, cls, expect, model, culprits, max_errors=1):
        name = f"{self.model_name}.{cls}.{len(self.out):03d}"
        expect = {True: "valid", False: "invalid", None: "either"}[expect]
        self.out.append(Mutant(name, cls, expect, model, culprits, max_errors))

    def copy(self):
        return copy.deepcopy(self.base)

    def pick_attr(self, model, types):
        choices = [(n, a) for n in model.graph.node for a in n.attribute if a.type in types]
        return self.rng.choice(choices)

    def attr_bitflip(self, count):
        for _ in range(count):
            m = self.copy()
            node, attr = self.pick_attr(m, (AttributeProto.INT, AttributeProto.FLOAT,
                                             AttributeProto.INTS))
            if attr.type == AttributeProto.FLOAT:
                attr.f = flip_float(attr.f, self.rng.randrange(32))
                expect = attr_validity(node, attr)
            elif attr.type == AttributeProto.INT:
                attr.i = flip_int(attr.i, self.rng.randrange(64))
                expect = attr_validity(node, attr)
            else:
                original = list(attr.ints)
                k = self.rng.randrange(len(attr.ints))
                attr.ints[k] = flip_int(attr.ints[k], self.rng.choice([0, 1, 2, 3, 63, 40]))
                expect = ints_validity(node, attr.name, attr.ints, original)
            self.emit("attr_bitflip", expect, m, neighbours(m.graph, node))

    def attr_type(self, count):
        """An attribute of another kind than the op's schema: an error, never a default."""
        for _ in range(count):
            m = self.copy()
            node, attr = self.pick_attr(m, (AttributeProto.INT, AttributeProto.FLOAT,
                                             AttributeProto.INTS, AttributeProto.STRING))
            value = helper.get_attribute_value(attr)
            if attr.type == AttributeProto.FLOAT:
                new = self.rng.choice([int(value) if _finite(value) else 0, [value], str(value)])
            elif attr.type == AttributeProto.INT:
                new = self.rng.choice([float(value), [value], str(value)])
            elif attr.type == AttributeProto.INTS:
                new = self.rng.choice([",".join(map(str, value)), value[0],
                                       [float(v) for v in value]])
            else:
                new = self.rng.choice([1, 1.0, [1]])
            idx = list(node.attribute).index(attr)
            node.attribute[idx].CopyFrom(helper.make_attribute(attr.name, new))
            self.emit("attr_type", False, m, {node.name})

    def attr_rename(self, count):
        """A flipped bit in an attribute's name: an unknown attribute, not a silent default."""
        for _ in range(count):
            m = self.copy()
            node, attr = self.pick_attr(m, (AttributeProto.INT, AttributeProto.FLOAT,
                                             AttributeProto.INTS, AttributeProto.STRING))
            k = self.rng.randrange(len(attr.name))
            ch = chr(ord(attr.name[k]) ^ (1 << self.rng.randrange(5)))
            if not ch.isprintable() or ch in "'\\":
                ch = "Q"
            new_name = attr.name[:k] + ch + attr.name[k + 1:]
            if any(a.name == new_name for a in node.attribute):
                continue
            attr.name = new_name
            self.emit("attr_rename", False, m, {node.name})

    def input_drop(self, count):
        optional = {("Gemm", 2), ("Conv", 2), ("Dropout", 1)}
        for _ in range(count):
            m = self.copy()
            node = self.rng.choice(list(m.graph.node))
            k = self.rng.randrange(len(node.input))
            expect = None if (node.op_type, k) in optional and k == len(node.input) - 1 else False
            del node.input[k]
            # Dropping a data input also leaves its producer's result unused: a fold Reshape
            # then opens a region that is never closed, a second, independent problem.
            self.emit("input_drop", expect, m, neighbours(m.graph, node), max_errors=2)

    def input_extra(self, count):
        for _ in range(count):
            m = self.copy()
            node = self.rng.choice(list(m.graph.node))
            node.input.append(node.input[0])
            self.emit("input_extra", False, m, neighbours(m.graph, node))

    def output_count(self, count):
        """A second output (ONNX's optional mask or indices), or none at all."""
        for i in range(count):
            m = self.copy()
            node = self.rng.choice(list(m.graph.node))
            culprits = neighbours(m.graph, node)
            if i % 2 == 0:
                node.output.append(node.output[0] + "/extra")
            else:
                del node.output[:]
            self.emit("output_count", False, m, culprits)

    # (from, to): whether the swapped node is still valid. IF -> LIF keeps IF's attributes
    # (a subset of LIF's); LIF -> IF leaves tau and decay_input unknown; the others change
    # the input count or leave attributes the new kind does not take.
    SWAPS = {("IFNode", "LIFNode"): True, ("LIFNode", "IFNode"): False,
             ("IFNode", "ParametricLIFNode"): False, ("ParametricLIFNode", "LIFNode"): False,
             ("Add", "Mul"): True, ("MaxPool", "AveragePool"): True, ("Gemm", "Conv"): False,
             ("Conv", "Gemm"): False, ("BatchNormalization", "Identity"): False,
             ("Flatten", "Identity"): False, ("Dropout", "Identity"): False,
             ("Reshape", "Identity"): False, ("ReduceMean", "Softmax"): False}

    def op_swap(self, count):
        for _ in range(count):
            m = self.copy()
            present = {n.op_type for n in m.graph.node}
            (source, to), valid = self.rng.choice(
                sorted((k, v) for k, v in self.SWAPS.items() if k[0] in present))
            node = self.rng.choice([n for n in m.graph.node if n.op_type == source])
            node.op_type = to
            self.emit("op_swap", valid, m, neighbours(m.graph, node))

    def pick_init(self, m, rank_min=0):
        return self.rng.choice([t for t in m.graph.initializer if len(t.dims) >= rank_min])

    def init_dims(self, count):
        kinds = ["neg2", "neg1", "add1", "reshape", "zero"]
        for i in range(count):
            kind = kinds[i % len(kinds)]
            m = self.copy()
            t = self.pick_init(m, rank_min=2 if kind == "neg2" else 1)
            dims = list(t.dims)
            expect = False
            if kind == "neg2":
                a, b = self.rng.sample(range(len(dims)), 2)
                dims[a], dims[b] = -dims[a], -dims[b]
            elif kind == "neg1":
                a = self.rng.randrange(len(dims))
                dims[a] = -dims[a]
            elif kind == "add1":
                dims[self.rng.randrange(len(dims))] += 1
            elif kind == "zero":
                dims[self.rng.randrange(len(dims))] = 0
                t.ClearField("raw_data")
                t.ClearField("float_data")
                t.ClearField("int64_data")
            else:  # same element count, another shape: [C] -> [C, 1], [A, B, ...] -> [A*B*...]
                dims = dims + [1] if len(dims) == 1 else [int(np.prod(dims))]
            del t.dims[:]
            t.dims.extend(dims)
            self.emit("init_dims", expect, m, consumers_of(m.graph, t.name))

    def init_drop(self, count):
        for _ in range(count):
            m = self.copy()
            t = self.pick_init(m)
            m.graph.initializer.remove(t)
            self.emit("init_drop", False, m, consumers_of(m.graph, t.name))

    def init_bitflip(self, count):
        for _ in range(count):
            m = self.copy()
            t = self.pick_init(m)
            array = numpy_helper.to_array(t).copy()
            if array.size == 0:
                continue
            flat = array.reshape(-1).view(np.uint32 if array.dtype == np.float32 else np.uint64)
            k = self.rng.randrange(flat.size)
            flat[k] ^= flat.dtype.type(1) << flat.dtype.type(
                self.rng.randrange(8 * flat.dtype.itemsize))
            t.CopyFrom(numpy_helper.from_array(array, t.name))
            if t.name.endswith("/ratio"):
                expect = bool(0 <= float(array) < 1)
            elif t.name.endswith((".weight", ".bias")) and array.dtype == np.float32:
                expect = True  # weight values are data, not structure
            else:
                expect = None  # reshape shapes, BN statistics, PLIF w
            self.emit("init_bitflip", expect, m, consumers_of(m.graph, t.name))

    def bad_values(self):
        """The values the rules name: epsilon 0, negative windows, bad neuron parameters."""
        cases = [("BatchNormalization", "epsilon", v) for v in (0.0, -1e-5, math.nan, math.inf)]
        cases += [("BatchNormalization", "momentum", v) for v in (-0.5, 1.5, math.nan)]
        for name in ("dilations", "strides", "kernel_shape"):
            cases += [(op, name, v) for op in ("Conv", "MaxPool") for v in ([-1, -1], [0, 1])]
        cases += [(op, "pads", [-1, -1, -1, -1]) for op in ("Conv", "MaxPool")]
        cases += [(DOMAIN, "tau", v) for v in (1.0, 0.5, -1.0, math.nan, math.inf)]
        cases += [(DOMAIN, "v_threshold", v) for v in (math.nan, -math.inf)]
        cases += [(DOMAIN, "alpha", v) for v in (0.0, -2.0)]
        cases += [(DOMAIN, "surrogate", "relu"), (DOMAIN, "detach_reset", 2)]
        for op, name, value in cases:
            m = self.copy()
            nodes = [n for n in m.graph.node if rule_key(n, name)[0] == op and
                     any(a.name == name for a in n.attribute)]
            if not nodes:
                continue
            node = self.rng.choice(nodes)
            idx = [a.name for a in node.attribute].index(name)
            node.attribute[idx].CopyFrom(helper.make_attribute(name, value))
            self.emit("bad_value", False, m, {node.name})

    def double(self, count):
        """Two bad nodes: one distinct error line for each, none repeated."""
        for _ in range(count):
            m = self.copy()
            nodes = [n for n in m.graph.node if n.domain == DOMAIN or
                     n.op_type in ("BatchNormalization", "Conv", "MaxPool")]
            if len(nodes) < 2:
                continue
            picked = self.rng.sample(nodes, 2)
            for node in picked:
                node.attribute.append(helper.make_attribute("not_an_attribute", 1))
            self.emit("double", False, m, {n.name for n in picked}, max_errors=2)

    def file_bitflip(self, count):
        """A flipped bit anywhere in the file: the protobuf may not parse, or parse as
        another model; either way no crash."""
        data = self.base.SerializeToString()
        for _ in range(count):
            raw = bytearray(data)
            k = self.rng.randrange(len(raw) * 8)
            raw[k // 8] ^= 1 << (k % 8)
            self.emit("file_bitflip", None, bytes(raw), set())


def make_mutants(model_name, model):
    mut = Mutator(model_name, model, random.Random(f"{SEED}-{model_name}"))
    mut.attr_bitflip(40)
    mut.attr_type(16)
    mut.attr_rename(8)
    mut.input_drop(12)
    mut.input_extra(6)
    mut.output_count(6)
    mut.op_swap(8)
    mut.init_dims(15)
    mut.init_drop(5)
    mut.init_bitflip(15)
    mut.bad_values()
    mut.double(3)
    mut.file_bitflip(30)
    return mut.out


# --------------------------------------------------------------------------------------------
# Running and judging
# --------------------------------------------------------------------------------------------

def judge(mutant, proc, out_dir):
    """Problems with one run; empty when it behaved."""
    problems = []
    if proc is None:
        return [f"timed out after {TIMEOUT_S} s"]
    rc, stderr = proc.returncode, proc.stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if rc < 0:
        problems.append(f"killed by signal {-rc}")
    elif rc not in (0, 1):
        problems.append(f"exit code {rc}")
    if any(s in stderr for s in ("LLVM ERROR", "Stack dump", "PLEASE submit", "Assertion")):
        problems.append("abort or stack trace")
    if rc == 0:
        if mutant.expect == "invalid":
            problems.append("an invalid model compiled")
        if not os.path.isfile(os.path.join(out_dir, "manifest.json")):
            problems.append("exit 0 without an artifact")
        if errors:
            problems.append("exit 0 with an error line")
        return problems
    if mutant.expect == "valid":
        problems.append("a valid model was refused")
    if not errors:
        problems.append("no 'error:' line")
    if len(set(errors)) != len(errors):
        problems.append(f"{len(errors) - len(set(errors))} repeated error line(s)")
    if len(set(errors)) > mutant.max_errors:
        problems.append(f"{len(set(errors))} error lines, at most {mutant.max_errors} expected")
    if len(errors) != len(lines):
        problems.append("stderr has lines other than 'error:' lines")
    if errors and mutant.culprits and not any(f"'{c}'" in e for e in errors
                                              for c in mutant.culprits):
        problems.append(f"the error names none of {sorted(mutant.culprits)[:6]}")
    if os.path.exists(out_dir):
        problems.append("left an artifact directory behind")
    return problems


def run_one(compiler, work, mutant):
    path = os.path.join(work, mutant.name + ".onnx")
    out_dir = os.path.join(work, mutant.name + ".artifact")
    data = mutant.model if isinstance(mutant.model, bytes) else mutant.model.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    try:
        proc = subprocess.run([compiler, path, "-o", out_dir], capture_output=True, text=True,
                              errors="replace", timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc = None
    problems = judge(mutant, proc, out_dir)
    outcome = "timeout" if proc is None else ("compiled" if proc.returncode == 0 else "refused")
    first_error = next((l for l in (proc.stderr if proc else "").splitlines()
                        if l.startswith("error:")), "")
    if not problems:  # keep the failures' files for inspection only
        os.remove(path)
        shutil.rmtree(out_dir, ignore_errors=True)
    return mutant, outcome, problems, first_error


def export_models(work):
    models = {}
    for name, kwargs in MODELS.items():
        case = os.path.join(work, "case." + name)
        make_case(name, case, T=2, N=1, seed=0, attempts=1, **model_kwargs(name, **kwargs))
        models[name] = onnx.load(os.path.join(case, "model.onnx"))
    return models


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--snn-compile", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="print every mutant's line")
    args = parser.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    start = time.monotonic()

    mutants = []
    for name, model in export_models(args.work_dir).items():
        baseline = Mutant(f"{name}.original", "original", "valid", model, set())
        mutants += [baseline] + make_mutants(name, model)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda m: run_one(args.snn_compile, args.work_dir, m), mutants))

    stats = defaultdict(Counter)
    failures = []
    for mutant, outcome, problems, first_error in results:
        stats[mutant.cls][outcome] += 1
        stats[mutant.cls]["expect_" + mutant.expect] += 1
        if problems:
            failures.append(mutant.name)
            print(f"FAIL {mutant.name} ({mutant.expect}, {outcome}): {'; '.join(problems)}"
                  f"\n     {first_error}")
        elif args.verbose:
            print(f"ok   {mutant.name} ({mutant.expect}, {outcome}): {first_error}")
    print(f"{len(mutants)} mutants in {time.monotonic() - start:.1f} s")
    for cls, c in sorted(stats.items()):
        print(f"  {cls:13s} compiled {c['compiled']:3d}  refused {c['refused']:3d}  "
              f"(expected: invalid {c['expect_invalid']}, valid {c['expect_valid']}, "
              f"either {c['expect_either']})")
    if failures:
        print(f"{len(failures)} mutant(s) misbehaved; their files are in {args.work_dir}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
