// The module attribute snn.input_repeated_over_time (set by the importer for a model that
// repeats its static [N, ...] input over T) becomes the manifest input's repeated_over_time;
// a pipeline's manifest takes it from the first stage's input too.
// RUN: rm -rf %t && split-file %s %t
// RUN: snn-translate --export-artifact %t/whole.mlir -o %t/whole
// RUN: FileCheck %s --check-prefix=WHOLE --input-file=%t/whole/manifest.json
// WHOLE: "input": {
// WHOLE-NEXT: "name": "input",
// WHOLE-NEXT: "repeated_over_time": true,
// WHOLE: "time_major": true
// WHOLE: "output": {
// WHOLE-NOT: "repeated_over_time"
// RUN: snn-opt %t/whole.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-layout=1|1 pp-schedule=1f1b" --snn-split-pipeline-stages -o %t/pp.mlir
// RUN: snn-translate --export-artifact %t/pp.mlir -o %t/pp
// RUN: FileCheck %s --check-prefix=WHOLE --input-file=%t/pp/manifest.json

//--- whole.mlir
module attributes {snn.input_repeated_over_time} {
  func.func @main(%x: tensor<4x?x6xf32>) -> tensor<?x3xf32> {
    %w = snn.parameter "fc.weight" = dense<0.5> : tensor<3x6xf32>
    %0 = snn.linear %x, %w : (tensor<4x?x6xf32>, tensor<3x6xf32>) -> tensor<4x?x3xf32> loc("fc")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x3xf32> loc("sn")
    %2 = snn.mean_time %1 : (tensor<4x?x3xf32>) -> tensor<?x3xf32> loc("readout")
    return %2 : tensor<?x3xf32>
  }
}
