"""Prints an ONNX model as stable text for FileCheck: opsets, metadata, inputs, outputs, value
infos, initializers and one line per node. Usage: dump_onnx.py MODEL.onnx"""
import sys

import onnx
from onnx import helper, numpy_helper


def shape(value_info):
    dims = value_info.type.tensor_type.shape.dim
    return "[" + ",".join(d.dim_param or str(d.dim_value) for d in dims) + "]"


def main(argv):
    model = onnx.load(argv[1])
    for opset in model.opset_import:
        print(f"opset {opset.domain or 'ai.onnx'} {opset.version}")
    for entry in model.metadata_props:
        print(f"metadata {entry.key}={entry.value}")
    for value in model.graph.input:
        print(f"input {value.name} {shape(value)}")
    for value in model.graph.output:
        print(f"output {value.name} {shape(value)}")
    for value in model.graph.value_info:
        print(f"value_info {value.name} {shape(value)}")
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor).flatten()[:4].tolist()
        print(f"initializer {tensor.name} {list(tensor.dims)} {values}")
    for node in model.graph.node:
        attrs = ", ".join(f"{a.name}={helper.get_attribute_value(a)}" for a in node.attribute)
        print(f"node '{node.name}' {node.domain}.{node.op_type}({', '.join(node.input)}) -> "
              f"{', '.join(node.output)} {{{attrs}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
