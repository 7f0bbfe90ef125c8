// --snn-analyze on each reference model (fixtures in Inputs/, made by snnexport.make_case),
// with roots, experimental conv TP, the JSON file and the module attribute.

// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-analyze=summary=- -o /dev/null | FileCheck %s --check-prefix=MLP
// MLP:      Analysis (roots: whole model; experimental conv TP: off)
// MLP-NEXT:   stateful neurons (2): 2, 4
// MLP-NEXT:   tensor-parallel candidates (2): 1, 3
// MLP-NEXT:   cannot be split (0): -
// MLP-NEXT:   note: no roots: tensor-parallel candidates are searched in the whole model
// MLP-NEXT:   note: 2 stateful neurons (lif_node x2) carry membrane state across the time steps

// RUN: snn-opt %S/Inputs/csnn.mlir --snn-analyze=summary=- -o /dev/null | FileCheck %s --check-prefix=CSNN
// CSNN:      stateful neurons (4): conv_fc.2, conv_fc.6, conv_fc.10, conv_fc.12
// CSNN-NEXT: tensor-parallel candidates (2): conv_fc.9, conv_fc.11
// CSNN-NEXT: cannot be split (2): conv_fc.0, conv_fc.4
// CSNN:      note: 4 stateful neurons (if_node x4)
// CSNN:      note: 2 conv2d layers cannot be split without experimental-conv-tp

// RUN: snn-opt %S/Inputs/vgg_dvs.mlir --snn-analyze=summary=- -o /dev/null | FileCheck %s --check-prefix=VGG
// VGG:      stateful neurons (3): features.2, features.6, classifier.3
// VGG-NEXT: tensor-parallel candidates (1): classifier.2
// VGG-NEXT: cannot be split (2): features.0, features.4

// RUN: snn-opt %S/Inputs/sew_resnet.mlir --snn-analyze=summary=- -o /dev/null | FileCheck %s --check-prefix=SEW
// SEW:      stateful neurons (6): stem.2, layers.0.sn1, layers.0.sn2, layers.1.sn1, layers.1.sn2, head.3
// SEW-NEXT: tensor-parallel candidates (1): head.2
// SEW-NEXT: cannot be split (5): stem.0, layers.0.conv1.0, layers.0.conv2.0, layers.1.conv1.0, layers.1.conv2.0

// Roots select candidates (a root covers itself and "root.*", not "layers.0x"); neurons are
// always searched in the whole model. Conv TP turns ungrouped convs into candidates.
// RUN: snn-opt %S/Inputs/sew_resnet.mlir --snn-analyze="summary=- roots=layers.0,head" -o /dev/null | FileCheck %s --check-prefix=ROOTS
// ROOTS:      Analysis (roots: layers.0, head; experimental conv TP: off)
// ROOTS-NEXT:   stateful neurons (6):
// ROOTS-NEXT:   tensor-parallel candidates (1): head.2
// ROOTS-NEXT:   cannot be split (2): layers.0.conv1.0, layers.0.conv2.0
// ROOTS-NEXT:   note: roots: layers.0, head

// RUN: snn-opt %S/Inputs/sew_resnet.mlir --snn-analyze="summary=- roots=layers.0 experimental-conv-tp" -o /dev/null | FileCheck %s --check-prefix=CONVTP
// CONVTP:      experimental conv TP: on
// CONVTP:      tensor-parallel candidates (2): layers.0.conv1.0, layers.0.conv2.0
// CONVTP-NEXT: cannot be split (0): -
// CONVTP:      note: experimental conv TP: a conv2d splits its output channels, with the batch_norm after it

// JSON with the reference's field names, and the attribute later passes read. The summary
// goes to stderr by default and can be silenced.
// RUN: rm -rf %t && mkdir -p %t
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-analyze="analysis-json=%t/a.json summary=none roots=conv_fc.9" 2>%t/stderr | FileCheck %s --check-prefix=ATTR
// RUN: FileCheck %s --check-prefix=JSON --input-file=%t/a.json
// RUN: count 0 < %t/stderr
// ATTR: module attributes {snn.analysis = #snn.analysis<roots = ["conv_fc.9"], experimental_conv_tp = false, memory_module_names = ["conv_fc.2", "conv_fc.6", "conv_fc.10", "conv_fc.12"], tensor_parallel_candidate_names = ["conv_fc.9"], unsupported_tensor_parallel_names = [], notes = [{{.*}}]>}
// JSON:      "experimental_conv_tp": false,
// JSON-NEXT: "memory_module_names": [
// JSON-NEXT:   "conv_fc.2",
// JSON:      "roots": [
// JSON-NEXT:   "conv_fc.9"
// JSON:      "tensor_parallel_candidate_names": [
// JSON-NEXT:   "conv_fc.9"
// JSON-NEXT: ],
// JSON-NEXT: "unsupported_tensor_parallel_names": []

// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-analyze 2>&1 >/dev/null | FileCheck %s --check-prefix=STDERR
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-analyze=summary=%t/summary.txt -o /dev/null
// RUN: FileCheck %s --check-prefix=STDERR --input-file=%t/summary.txt
// STDERR: Analysis (roots: whole model; experimental conv TP: off)

// A Spikformer attention block: the attention's heads, and whether tp can split
// them (its projections are 1x1 convs: candidates with experimental conv TP only).
// RUN: snn-opt %S/Inputs/attention_block.mlir --snn-analyze=summary=- -o /dev/null | FileCheck %s --check-prefix=ATTN
// ATTN:      cannot be split (2): attn.qkv_conv_bn.0, attn.proj_conv_bn.0
// ATTN:      note: spiking attention 'attn/attention': 2 heads of 4 channels over 4 tokens; its 1x1 conv projections split by heads only with experimental-conv-tp
// RUN: snn-opt %S/Inputs/attention_block.mlir --snn-analyze="summary=- experimental-conv-tp" -o /dev/null | FileCheck %s --check-prefix=ATTNTP
// ATTNTP:    tensor-parallel candidates (2): attn.qkv_conv_bn.0, attn.proj_conv_bn.0
// ATTNTP:    note: spiking attention 'attn/attention': 2 heads of 4 channels over 4 tokens; tp splits whole heads between its qkv and output projections (a tp size must divide 2)
