//===- DataParallelResize.h - A dp axis fitted to the ranks at hand -*- C++ -*-===//
//
// An elastic job (torchrun --nnodes MIN:MAX, or a restart on fewer ranks)
// runs an artifact on another number of ranks than it was planned for. What
// a data-parallel axis decides is only how the global batch is split and
// over how many ranks parameters, gradients and optimizer state are reduced
// or sharded, all of which the runtime derives from the mesh at load time;
// so an artifact with a `dp` axis runs on any number of ranks that is a
// multiple of its other axes, its dp axis resized. A tp or pp axis is baked
// into the programs (split shapes, stage boundaries) and cannot change.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_DATAPARALLELRESIZE_H
#define SNN_RUNTIME_EXECUTION_DATAPARALLELRESIZE_H

#include "snn/Runtime/Execution/Manifest.h"

namespace snn::runtime {

/// Fits `manifest` to `worldSize` ranks: nothing when it was planned for
/// them; else its `dp` axis becomes worldSize / (the other axes' product),
/// `world_size` becomes worldSize, and every program is listed for the ranks
/// at its coordinates on the other axes; a pipeline's pp_microbatches
/// scales so that dp x microbatches, and so every microbatch, stays the same
/// (refused when it cannot). Throws Error naming the axis when
/// the artifact has no dp axis or its other axes do not divide worldSize.
/// The batch must still divide over the new dp size (the caller's check).
void resizeDataParallelAxis(Manifest &manifest, int worldSize);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_DATAPARALLELRESIZE_H
