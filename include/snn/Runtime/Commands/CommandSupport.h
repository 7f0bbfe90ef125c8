//===- CommandSupport.h - Shared steps of snn-run commands ------*- C++ -*-===//
#ifndef SNN_RUNTIME_COMMANDS_COMMANDSUPPORT_H
#define SNN_RUNTIME_COMMANDS_COMMANDSUPPORT_H

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"

#include <string>
#include <vector>

namespace snn::runtime {

/// Makes glibc reuse freed activation buffers instead of unmapping them (call once, early).
void keepLargeAllocationsOnTheHeap();

/// Ends the process with `code` once the C and C++ streams are flushed, without running the
/// static destructors: LibTorch's deregister every operator, 0.08-0.26 s at each exit of
/// snn-run (the launcher waits for every rank's). Everything a command writes is closed
/// before it returns. A sanitized build exits normally (its leak check runs at exit).
[[noreturn]] void exitFlushed(int code);

/// Ends the worker threads OpenBLAS starts when it loads (it starts them again when a GEMM
/// needs them), as its own handler does at every fork: the launcher forks its ranks only while
/// it has one thread (dist::LaunchOptions::rankMain). A no-op under another BLAS.
void stopBlasThreads();

/// at::set_num_threads; 0 means the machine's hardware concurrency.
void setIntraOpThreads(int threads);

/// Fails before any work if `path`'s directory does not exist, so a long run
/// is not wasted on a typo. Does nothing for an empty path.
void checkParentDirectory(const std::string &path, const std::string &flag);

/// Checks of one flag's value, which snn-run's command line runs as it reads
/// the flag; each throws Error with one line naming `flag`:
/// "FLAG must be a finite number >= 0, got X".
void requireFiniteNonNegative(double value, const std::string &flag);
/// "FLAG must be at least 1" for a count below 1. `zeroMeansUnset`: 0 is the
/// flag's "not given" and passes.
void requireCount(int64_t value, const std::string &flag, bool zeroMeansUnset);

/// Replaces the store's values by trained weights: a --save-params
/// directory, or the latest checkpoint (whole or sharded) of a --checkpoint
/// directory; neither given: nothing changes. Returns where the weights came
/// from ("" for none). Throws Error for both, an empty checkpoint directory,
/// or weights of another model. With `partition` (a partitioned artifact's
/// rank) the weights are the whole model's and each split entry takes this
/// rank's part.
/// With `pipeline` (a pipeline rank's manifest) a checkpoint is the whole
/// model's and the store takes its stages' entries.
std::string loadTrainedWeights(const std::string &paramsDir,
                               const std::string &checkpointDir,
                               ParameterStore &store,
                               const ParameterPartition *partition = nullptr,
                               const Manifest *pipeline = nullptr);

/// A pipeline artifact's rank (plan mode pp): the layout loadRunArtifact read, its pp
/// coordinate and group, and its dp replica, from the run's `mesh` (which must outlive the
/// result).
PipelinePlace pipelinePlaceOf(const Artifact &artifact, const MeshContext &mesh);

/// The program files of a pipeline artifact's stages, in stage order.
std::vector<std::string> stageProgramPaths(const std::string &dir,
                                           const Manifest &manifest);

/// The process's peak resident memory so far (getrusage), in bytes.
int64_t peakResidentBytes();

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_COMMANDSUPPORT_H
