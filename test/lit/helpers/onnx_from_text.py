"""Converts an ONNX textual model (onnx.parser syntax, '#' comments allowed) to a binary
.onnx file. Nodes without a name are named after their first output, so diagnostics that
name nodes are predictable in tests. Usage: onnx_from_text.py IN.onnxtxt OUT.onnx"""
import sys

import onnx
import onnx.parser


def main(argv):
    if len(argv) != 3:
        print("usage: onnx_from_text.py IN.onnxtxt OUT.onnx", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        model = onnx.parser.parse_model(f.read())
    for node in model.graph.node:
        if not node.name:
            node.name = node.output[0]
    onnx.save(model, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
