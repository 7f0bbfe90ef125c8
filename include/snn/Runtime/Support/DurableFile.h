//===- DurableFile.h - Files that survive a crash ---------------*- C++ -*-===//
//
// Checkpoints must be either complete or absent after a crash or power loss:
// data is fsync'ed before the rename that publishes it, and the directory is
// fsync'ed after, so the rename itself is durable.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_DURABLEFILE_H
#define SNN_RUNTIME_SUPPORT_DURABLEFILE_H

#include <cstddef>
#include <functional>
#include <string>

namespace snn::runtime {

/// Creates or truncates `path`, writes `bytes` and fsyncs the file.
void writeFileSynced(const std::string &path, const std::string &bytes);

/// Takes a piece of a file's contents. A piece that cannot be written is
/// reported (Error naming the file) once the producer is done.
using ByteSink = std::function<void(const char *data, size_t size)>;
/// The same with contents that `produce` hands to the sink piece by piece,
/// each written as it comes (a checkpoint's tensors, without first copying
/// them into one buffer).
void writeFileSynced(const std::string &path,
                     const std::function<void(const ByteSink &)> &produce);

/// Writes `bytes` to a temporary sibling, fsyncs it and renames it over
/// `path`, then fsyncs the directory: readers see the old or the new
/// contents, never a mix.
void replaceFileDurably(const std::string &path, const std::string &bytes);

/// fsyncs a directory so that entries created or renamed in it persist.
void syncDirectory(const std::string &dir);

/// Reads a whole file; throws Error naming it if it cannot be read.
std::string readWholeFile(const std::string &path);

/// Throws Error("<path>: not a regular file") when `path` exists and is a
/// FIFO, a device, a socket or a directory: opening one for reading would
/// block or never end. Every file the runtime reads is checked first.
void requireRegularFile(const std::string &path);

/// `dir/name`, after checking that it resolves inside `dir`: an artifact or a
/// checkpoint is read only from its own directory, so a symbolic link (to a
/// file or a folder) that leads out of it is an Error, not followed.
std::string fileInside(const std::string &dir, const std::string &name);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_DURABLEFILE_H
