//===- DataParallelResizeTest.cpp - A dp axis fitted to the ranks at hand --===//
//
// resizeDataParallelAxis on the meshes an elastic job meets: a dp mesh shrunk
// and grown, dp x tp and dp x pp with their programs relisted by their place
// on the fixed axis, and the refusals naming the axis that cannot change.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/DataParallelResize.h"
#include "snn/Runtime/Support/Error.h"

#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::errorOf;

namespace {

/// A mesh of `axes`/`shape` whose program k runs on the ranks whose coordinate on axis
/// `programAxis` is k (-1: one program for all).
Manifest meshManifest(std::vector<std::string> axes, std::vector<int64_t> shape,
                      int programAxis) {
  Manifest m;
  m.mesh = {axes, shape};
  m.worldSize = 1;
  for (int64_t size : shape)
    m.worldSize *= int(size);
  int programs = programAxis < 0 ? 1 : int(shape[size_t(programAxis)]);
  for (int p = 0; p < programs; ++p)
    m.programs.push_back({"program_" + std::to_string(p) + ".onnx", {}});
  for (int rank = 0; rank < m.worldSize; ++rank) {
    int rest = rank, coordinate = 0;
    for (int axis = int(shape.size()) - 1; axis >= 0; --axis) {
      if (axis == programAxis)
        coordinate = rest % int(shape[size_t(axis)]);
      rest /= int(shape[size_t(axis)]);
    }
    m.programs[size_t(programAxis < 0 ? 0 : coordinate)].ranks.push_back(rank);
  }
  return m;
}

} // namespace

TEST(DataParallelResize, ADpMeshShrinksAndGrows) {
  Manifest m = meshManifest({"dp"}, {4}, -1);
  resizeDataParallelAxis(m, 2);
  EXPECT_EQ(m.worldSize, 2);
  EXPECT_EQ(m.mesh.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(m.programs[0].ranks, (std::vector<int>{0, 1}));
  resizeDataParallelAxis(m, 3);
  EXPECT_EQ(m.programs[0].ranks, (std::vector<int>{0, 1, 2}));
  resizeDataParallelAxis(m, 3); // as planned now: unchanged
  EXPECT_EQ(m.mesh.shape, (std::vector<int64_t>{3}));
}

TEST(DataParallelResize, ProgramsFollowTheirPlaceOnTheFixedAxis) {
  // dp=2 x tp=2: program_k on the ranks at tp=k (0, 2 and 1, 3); on 6 ranks, dp=3.
  Manifest m = meshManifest({"dp", "tp"}, {2, 2}, 1);
  ASSERT_EQ(m.programs[1].ranks, (std::vector<int>{1, 3}));
  resizeDataParallelAxis(m, 6);
  EXPECT_EQ(m.mesh.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(m.programs[0].ranks, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(m.programs[1].ranks, (std::vector<int>{1, 3, 5}));
  // dp=2 x pp=2 (stages on pp), down to one pipeline.
  Manifest pp = meshManifest({"dp", "pp"}, {2, 2}, 1);
  resizeDataParallelAxis(pp, 2);
  EXPECT_EQ(pp.programs[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(pp.programs[1].ranks, (std::vector<int>{1}));
}

TEST(DataParallelResize, TheOtherAxesCannotChange) {
  Manifest tp = meshManifest({"tp"}, {2}, 0);
  EXPECT_EQ(errorOf([&] { resizeDataParallelAxis(tp, 4); }),
            "the artifact is compiled for world_size 2 (tp=2) but this run has 4 ranks, and "
            "it has no 'dp' axis to resize (--nproc / WORLD_SIZE must be 2)");
  Manifest mixed = meshManifest({"dp", "tp", "pp"}, {2, 2, 2}, 1);
  EXPECT_EQ(errorOf([&] { resizeDataParallelAxis(mixed, 6); }),
            "the artifact is compiled for world_size 8 (dp=2, tp=2, pp=2) but this run has 6 "
            "ranks: only its 'dp' axis can change size, not tp=2 x pp=2, so the ranks must be "
            "a multiple of 4");
}

TEST(DataParallelResize, APipelineKeepsItsMicrobatches) {
  Manifest pp = meshManifest({"dp", "pp"}, {2, 2}, 1);
  pp.plan.ppMicrobatches = 2;
  resizeDataParallelAxis(pp, 2); // one replica: 4 microbatches, the same samples each
  EXPECT_EQ(pp.plan.ppMicrobatches, 4);
  resizeDataParallelAxis(pp, 8);
  EXPECT_EQ(pp.plan.ppMicrobatches, 1);
  EXPECT_EQ(errorOf([&] { resizeDataParallelAxis(pp, 6); }),
            "the pipeline's 1 microbatches (pp_microbatches) on 4 data-parallel replicas cannot "
            "be the same microbatches on 3 replicas: the replicas must divide 4");
}
