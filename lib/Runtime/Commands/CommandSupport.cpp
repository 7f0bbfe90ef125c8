//===- CommandSupport.cpp - Shared steps of snn-run commands --------------===//

#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Checkpoint/ParamsIO.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/NumberFormat.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Schema/MeshAxes.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdio>
#include <dlfcn.h>
#include <iostream>
#include <malloc.h>
#include <sys/resource.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {
/// OpenBLAS (Debian's pthread build) keeps its own worker threads, which busy-wait between
/// GEMMs and fight ATen's OpenMP team for the cores: CSNN training at 2 threads on 2 cores ran
/// at 0.4x the 1-thread speed. GEMM calls here are small per step, so OpenMP parallelism
/// across the ops serves better; measured in docs/benchmarks.md. Looked up at run time because
/// the BLAS behind LibTorch is a Debian alternative that may not be OpenBLAS.
void limitBlasThreads() {
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(1);
}
} // namespace

void exitFlushed(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
  std::exit(code);
#else
  std::_Exit(code);
#endif
}

void stopBlasThreads() {
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_")))
    shutdown();
}

void keepLargeAllocationsOnTheHeap() {
  // Activations are tens of MB and glibc serves such blocks with mmap, returning them to the
  // kernel on free: every training step then page-faults its whole working set again (35% of
  // a CSNN step was kernel page-fault time). Served from the heap, freed blocks are reused.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  // Never give the heap's top back: when the step's peak exceeds any trim threshold (VGG at
  // T=8 holds 1.5 GB), glibc would shrink the heap after every step and the next one would
  // fault it in again (4.2 M page faults in 20 steps, a third of the time in the kernel).
  mallopt(M_TRIM_THRESHOLD, -1);
}

void setIntraOpThreads(int threads) {
  if (threads <= 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  limitBlasThreads();
  at::set_num_threads(threads);
}

void requireFiniteNonNegative(double value, const std::string &flag) {
  if (!std::isfinite(value) || value < 0)
    throw Error(flag + " must be a finite number >= 0, got " +
                formatDouble(value));
}

void requireCount(int64_t value, const std::string &flag,
                  bool zeroMeansUnset) {
  if (value < 1 && !(zeroMeansUnset && value == 0))
    throw Error(flag + " must be at least 1");
}

void checkParentDirectory(const std::string &path, const std::string &flag) {
  if (path.empty())
    return;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw Error(flag + " " + path + ": directory '" + parent.string() +
                "' does not exist");
}

std::string loadTrainedWeights(const std::string &paramsDir,
                               const std::string &checkpointDir,
                               ParameterStore &store,
                               const ParameterPartition *partition,
                               const Manifest *pipeline) {
  if (!paramsDir.empty() && !checkpointDir.empty())
    throw Error("--params and --checkpoint exclude each other");
  if (!paramsDir.empty()) {
    loadParamsNpy(paramsDir, store, partition);
    return paramsDir;
  }
  if (checkpointDir.empty())
    return "";
  std::string where = CheckpointDirectory(checkpointDir, 1).latest();
  if (where.empty())
    throw Error("--checkpoint: '" + checkpointDir + "' holds no checkpoint");
  CheckpointState state = readAnyCheckpoint(where);
  // A pipeline's stages first (checked against the whole model), then their tp parts.
  if (pipeline)
    state = pipelineLocalCheckpoint(state, store, *pipeline, where);
  if (partition)
    state = localCheckpoint(state, *partition, where);
  restoreModel(state, store, where);
  return where;
}

PipelinePlace pipelinePlaceOf(const Artifact &artifact, const MeshContext &mesh) {
  if (!artifact.run.pipeline)
    throw Error(artifact.dir + ": not a pipeline artifact loaded for a run (plan mode '" +
                schema::nameOf(artifact.manifest.plan.mode) + "')");
  PipelinePlace place;
  place.layout = *artifact.run.pipeline;
  place.coordinate = mesh.coordinate(meshaxis::kPipeline);
  if (mesh.axisSize(meshaxis::kPipeline) > 1)
    place.group = &mesh.group(meshaxis::kPipeline);
  if (mesh.hasAxis(meshaxis::kDataParallel)) {
    place.replica = mesh.coordinate(meshaxis::kDataParallel);
    place.replicas = mesh.axisSize(meshaxis::kDataParallel);
  }
  return place;
}

std::vector<std::string> stageProgramPaths(const std::string &dir,
                                           const Manifest &manifest) {
  // A stage split over tp lists one program per tp coordinate, the first at coordinate 0.
  std::vector<std::string> paths(size_t(manifest.stageCount()));
  for (const ProgramSpec &program : manifest.programs)
    if (paths[size_t(program.stage)].empty())
      paths[size_t(program.stage)] = fileInside(dir, program.file);
  return paths;
}

int64_t peakResidentBytes() {
  // VmHWM: the peak of this program's own address space. getrusage's maxrss also keeps the
  // peak of the one replaced at exec, which for a process started by vfork (as Python's
  // subprocess starts it) is the parent's: a large Python parent would be counted as ours.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024; // "VmHWM:   123456 kB"
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024; // Linux reports KiB
}

} // namespace snn::runtime
