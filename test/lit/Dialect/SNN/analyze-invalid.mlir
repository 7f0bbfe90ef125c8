// Analysis errors (docs/reference-api.md: an empty root, an unknown root), as diagnostics.
// RUN: split-file %s %t
// RUN: snn-opt %t/empty.mlir --snn-analyze="roots=fc,,sn summary=none" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/unknown.mlir --snn-analyze="roots=fc2 summary=none" -verify-diagnostics -o /dev/null
// A root is a whole path component: "f" does not cover "fc".
// RUN: snn-opt %t/prefix.mlir --snn-analyze="roots=f summary=none" -verify-diagnostics -o /dev/null

//--- empty.mlir
// expected-error@+1 {{empty root: a root names a module path such as 'conv_fc'}}
module {
  func.func @main(%x: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> {
    %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x4xf32>
    %0 = snn.linear %x, %w : (tensor<2x?x4xf32>, tensor<4x4xf32>) -> tensor<2x?x4xf32> loc("fc")
    return %0 : tensor<2x?x4xf32>
  }
}

//--- unknown.mlir
// expected-error@+1 {{unknown root 'fc2': no op's module path is 'fc2' or starts with 'fc2.'}}
module {
  func.func @main(%x: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> {
    %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x4xf32>
    %0 = snn.linear %x, %w : (tensor<2x?x4xf32>, tensor<4x4xf32>) -> tensor<2x?x4xf32> loc("fc")
    return %0 : tensor<2x?x4xf32>
  }
}

//--- prefix.mlir
// expected-error@+1 {{unknown root 'f'}}
module {
  func.func @main(%x: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> {
    %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x4xf32>
    %0 = snn.linear %x, %w : (tensor<2x?x4xf32>, tensor<4x4xf32>) -> tensor<2x?x4xf32> loc("fc")
    return %0 : tensor<2x?x4xf32>
  }
}
