//===- ProcessGroups.h - Rendezvous, process groups, device mesh -*- C++ -*-===//
//
// For the files that still include it: every piece of the process groups'
// interface, each in its own header. Include the one you use instead:
//
//   Backend.h  Backend, backendName, parseBackend, ncclAvailable
//   Group.h    Group
//   World.h    World (rendezvous, newGroup), InitOptions, checkWorldSize
//   Mesh.h     Mesh
//   Work.h     blockedSeconds
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H
#define SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H

#include "snn/Runtime/Distributed/Backend.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Distributed/World.h"
#include "snn/Runtime/Distributed/Work.h"

#endif // SNN_RUNTIME_DISTRIBUTED_PROCESSGROUPS_H
