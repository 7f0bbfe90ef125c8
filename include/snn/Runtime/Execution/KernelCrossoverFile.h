//===- KernelCrossoverFile.h - Kernel crossovers kept per machine -*- C++ -*-===//
//
// The density up to which an event-driven kernel beats the dense one is a
// property of the machine and the layer's shape, not of the run. Timing it in
// every process would let two runs of one command take different kernels for
// a layer near its crossover, and so differ in the last bits. The first
// process that meets a shape on a machine times it and writes the result to
// one file per user; every later process, and every rank of a job, reads it
// from there, so the choice is a function of the file and the input alone.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_KERNELCROSSOVERFILE_H
#define SNN_RUNTIME_EXECUTION_KERNELCROSSOVERFILE_H

#include <cstddef>
#include <functional>
#include <string>

namespace snn::runtime {

/// The environment variable naming the file, or `none`: each process times
/// its own shapes and keeps nothing.
inline constexpr const char *kKernelCrossoversEnv = "SPIKEMESH_KERNEL_CROSSOVERS";

/// One layer shape's timing (seconds, best of a few runs) and the density up
/// to which the event-driven kernel is the faster.
struct KernelCrossover {
  double denseSeconds = 0, fixedSeconds = 0, eventSeconds = 0;
  double density = 0;   ///< share of ones of the input the event kernel was timed on
  double threshold = 0; ///< crossoverDensity of the above
};

/// $SPIKEMESH_KERNEL_CROSSOVERS, else $XDG_CACHE_HOME/spikemesh/kernel-crossovers.json, else
/// $HOME/.cache/spikemesh/kernel-crossovers.json (beside the default device profile); empty
/// when it is `none` or neither variable is set.
std::string userKernelCrossoversPath();

/// This machine's name in the file: the CPU's model name and the widest
/// instruction set the event kernels use, whose crossovers differ.
std::string kernelMachineName();

/// What sharedCrossover found.
struct SharedCrossover {
  KernelCrossover crossover;
  bool fromFile = false; ///< read from the file rather than timed by this process
  std::string warning;   ///< why the file was not used or was rewritten; empty if it was
};

/// The crossover of layer shape `key` on this machine as the file at `path`
/// holds it; else `measure`'s, added to the file. Holds an exclusive lock
/// (`path`.lock) throughout, so that the processes of a machine time each
/// shape once, one at a time, and then agree. A file that does not parse is
/// replaced; one that cannot be locked or written leaves the measurement to
/// this process, with `warning` saying why. `measure` fills everything but
/// the threshold, which this computes.
SharedCrossover sharedCrossover(const std::string &path, const std::string &key,
                                const std::function<KernelCrossover()> &measure);

/// Drops this machine's crossovers from the file at `path` (under its lock), so
/// that later processes time them again: what `snn-run calibrate` does. Returns
/// how many layer shapes it dropped (0 when the file is missing or holds none);
/// throws Error when the file cannot be rewritten.
size_t forgetKernelCrossovers(const std::string &path);

/// The density up to which the event kernel is the faster, in [0, 1], when
/// its time is fixedSeconds + (eventSeconds - fixedSeconds) * d / density and
/// the dense kernel's is denseSeconds: 0 when even no spikes lose, 1 when the
/// event kernel wins at every density.
double crossoverDensity(double denseSeconds, double fixedSeconds, double eventSeconds,
                        double density);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_KERNELCROSSOVERFILE_H
