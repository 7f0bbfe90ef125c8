//===- DistributedUnitTest.cpp - Single-process tests of SNNDistributed ---===//
//
// Everything that needs no second rank: the torchrun variables, the
// launcher's flags and its supervision (with /bin/sh as the rank program),
// ports, the mesh layout, messages, and the size-1 fast paths. The
// multi-process behaviour is in dist_test.py.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/AutogradCollectives.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Distributed/Backend.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Distributed/World.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <map>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace snn::dist;

namespace {

EnvironmentLookup fakeEnvironment(std::map<std::string, std::string> values) {
  return [values](const std::string &name) -> std::optional<std::string> {
    auto found = values.find(name);
    if (found == values.end())
      return std::nullopt;
    return found->second;
  };
}

std::map<std::string, std::string> validVariables() {
  return {{"RANK", "3"},
          {"WORLD_SIZE", "4"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"}};
}

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const DistributedError &e) {
    return e.what();
  }
  return "<no error>";
}

std::string envError(std::map<std::string, std::string> values) {
  return errorOf([&] { readTorchrunEnvironment(fakeEnvironment(values)); });
}

} // namespace

TEST(Environment, ReadsTheTorchrunVariables) {
  DistEnvironment env = readTorchrunEnvironment(fakeEnvironment(validVariables()));
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.worldSize, 4);
  EXPECT_EQ(env.localRank, 3); // no LOCAL_RANK: one host assumed
  EXPECT_EQ(env.localWorldSize, 4);
  EXPECT_EQ(env.masterAddr, "127.0.0.1");
  EXPECT_EQ(env.masterPort, 29500);
  EXPECT_FALSE(env.externalStore);
  EXPECT_EQ(env.storePrefix, "");
  EXPECT_TRUE(env.singleHost());

  auto vars = validVariables();
  vars["LOCAL_RANK"] = "1";
  vars["LOCAL_WORLD_SIZE"] = "2";
  vars["MASTER_ADDR"] = "node0";
  env = readTorchrunEnvironment(fakeEnvironment(vars));
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localWorldSize, 2);
  EXPECT_FALSE(env.singleHost());

  // torchrun's agent store: every rank a client, keys under the attempt.
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  vars["TORCHELASTIC_RESTART_COUNT"] = "2";
  env = readTorchrunEnvironment(fakeEnvironment(vars));
  EXPECT_TRUE(env.externalStore);
  EXPECT_EQ(env.storePrefix, "/worker/attempt_2");
  vars.erase("TORCHELASTIC_RESTART_COUNT");
  EXPECT_EQ(envError(vars), "TORCHELASTIC_USE_AGENT_STORE=True needs "
                            "TORCHELASTIC_RESTART_COUNT (the attempt number)");
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_FALSE(readTorchrunEnvironment(fakeEnvironment(vars)).externalStore);
}

TEST(Environment, NamesWhatIsMissing) {
  EXPECT_EQ(envError({}),
            "distributed launch: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT are "
            "not set: start the ranks with `snn-run --nproc N ...` or with "
            "torchrun, which set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
            "MASTER_PORT");
  auto vars = validVariables();
  vars.erase("MASTER_PORT");
  EXPECT_EQ(envError(vars).rfind("distributed launch: MASTER_PORT is not set: ", 0), 0u)
      << envError(vars);
  EXPECT_FALSE(torchrunEnvironmentPresent(fakeEnvironment({})));
  EXPECT_TRUE(torchrunEnvironmentPresent(fakeEnvironment({{"WORLD_SIZE", "2"}})));
}

TEST(Environment, RejectsInvalidValues) {
  auto with = [](const std::string &name, const std::string &value) {
    auto vars = validVariables();
    vars[name] = value;
    return envError(vars);
  };
  EXPECT_EQ(with("RANK", "x"), "RANK='x' is not an integer (0 to 3 for WORLD_SIZE=4)");
  EXPECT_EQ(with("RANK", "4"), "RANK=4 is out of range (0 to 3 for WORLD_SIZE=4)");
  EXPECT_EQ(with("RANK", "-1"), "RANK=-1 is out of range (0 to 3 for WORLD_SIZE=4)");
  EXPECT_EQ(with("RANK", "1.5"), "RANK='1.5' is not an integer (0 to 3 for WORLD_SIZE=4)");
  EXPECT_EQ(with("WORLD_SIZE", "0"), "WORLD_SIZE=0 is out of range (at least 1)");
  EXPECT_EQ(with("WORLD_SIZE", ""), "WORLD_SIZE is empty (expected an integer; at least 1)");
  EXPECT_EQ(with("MASTER_PORT", "0"), "MASTER_PORT=0 is out of range (a TCP port, 1 to 65535)");
  EXPECT_EQ(with("MASTER_PORT", "70000"),
            "MASTER_PORT=70000 is out of range (a TCP port, 1 to 65535)");
  EXPECT_EQ(with("MASTER_PORT", "http"),
            "MASTER_PORT='http' is not an integer (a TCP port, 1 to 65535)");
  EXPECT_EQ(with("MASTER_ADDR", ""),
            "MASTER_ADDR is empty (expected the host name or address of the "
            "rendezvous store)");
  EXPECT_EQ(with("LOCAL_RANK", "4"),
            "LOCAL_RANK=4 is out of range (0 to 3 for LOCAL_WORLD_SIZE=4)");
  EXPECT_EQ(with("LOCAL_WORLD_SIZE", "5"),
            "LOCAL_WORLD_SIZE=5 is out of range (1 to WORLD_SIZE=4)");
}

TEST(LauncherArguments, ExtractsTheLauncherFlags) {
  LauncherArguments a = extractLauncherArguments(
      {"snn-run", "--nproc", "4", "train", "DIR", "--master-port=2950", "--lr", "0.1"});
  EXPECT_EQ(a.nproc, 4);
  EXPECT_EQ(a.masterPort, 2950);
  EXPECT_EQ(a.argv, (std::vector<std::string>{"snn-run", "train", "DIR", "--lr", "0.1"}));

  a = extractLauncherArguments({"snn-run", "train", "--nproc=2", "--", "--nproc", "9"});
  EXPECT_EQ(a.nproc, 2);
  EXPECT_EQ(a.argv, (std::vector<std::string>{"snn-run", "train", "--", "--nproc", "9"}));

  a = extractLauncherArguments({"snn-run", "infer", "DIR"});
  EXPECT_EQ(a.nproc, 0);
  EXPECT_EQ(a.masterPort, 0);
  EXPECT_EQ(a.argv.size(), 3u);
}

TEST(LauncherArguments, RejectsBadFlags) {
  auto error = [](std::vector<std::string> argv) {
    return errorOf([&] { extractLauncherArguments(argv); });
  };
  EXPECT_EQ(error({"x", "--nproc"}), "--nproc: expected a value (the number of ranks)");
  EXPECT_EQ(error({"x", "--nproc", "--lr"}),
            "--nproc: expected a value (the number of ranks)");
  EXPECT_EQ(error({"x", "--nproc", "0"}),
            "--nproc 0: expected a number of ranks, 1 to 4096");
  EXPECT_EQ(error({"x", "--nproc=two"}),
            "--nproc 'two': expected a number of ranks, 1 to 4096");
  EXPECT_EQ(error({"x", "--nproc", "5000"}),
            "--nproc 5000: expected a number of ranks, 1 to 4096");
  EXPECT_EQ(error({"x", "--nproc", "2", "--nproc", "3"}), "--nproc given twice");
  EXPECT_EQ(error({"x", "--nproc", "2", "--master-port", "70000"}),
            "--master-port 70000: expected a TCP port, 1 to 65535");
  EXPECT_EQ(error({"x", "--master-port", "2950"}),
            "--master-port needs --nproc (under torchrun, MASTER_PORT sets the port)");
}

TEST(LauncherArguments, MaxRestarts) {
  LauncherArguments a =
      extractLauncherArguments({"snn-run", "--nproc", "4", "--max-restarts", "3", "train"});
  EXPECT_EQ(a.maxRestarts, 3);
  EXPECT_EQ(a.argv, (std::vector<std::string>{"snn-run", "train"}));
  EXPECT_EQ(extractLauncherArguments({"snn-run", "--nproc=2", "train"}).maxRestarts, 0);
  EXPECT_EQ(extractLauncherArguments({"snn-run", "--nproc=2", "--max-restarts=0", "t"})
                .maxRestarts,
            0);
  auto error = [](std::vector<std::string> argv) {
    return errorOf([&] { extractLauncherArguments(argv); });
  };
  EXPECT_EQ(error({"x", "--nproc", "2", "--max-restarts", "-1"}),
            "--max-restarts '-1': expected a number of restarts, 0 to 1000");
  EXPECT_EQ(error({"x", "--nproc", "2", "--max-restarts"}),
            "--max-restarts: expected a value (how many times to restart the ranks after a "
            "failure)");
  EXPECT_EQ(error({"x", "--nproc", "2", "--max-restarts=many"}),
            "--max-restarts 'many': expected a number of restarts, 0 to 1000");
  EXPECT_EQ(error({"x", "--nproc", "2", "--max-restarts", "1001"}),
            "--max-restarts 1001: expected a number of restarts, 0 to 1000");
  EXPECT_EQ(error({"x", "--max-restarts", "2", "train"}),
            "--max-restarts needs --nproc (under torchrun, torchrun's own --max_restarts "
            "restarts the ranks)");
}

TEST(LauncherArguments, MasterAddress) {
  LauncherArguments a = extractLauncherArguments(
      {"snn-run", "--nproc", "2", "--master-addr", "10.0.0.5", "train"});
  EXPECT_EQ(a.masterAddr, "10.0.0.5");
  EXPECT_EQ(a.argv, (std::vector<std::string>{"snn-run", "train"}));
  a = extractLauncherArguments({"snn-run", "--nproc=2", "train"});
  EXPECT_EQ(a.masterAddr, "127.0.0.1"); // loopback unless asked
  auto error = [](std::vector<std::string> argv) {
    return errorOf([&] { extractLauncherArguments(argv); });
  };
  EXPECT_EQ(error({"x", "--nproc", "2", "--master-addr"}),
            "--master-addr: expected a value (an address of this host)");
  EXPECT_EQ(error({"x", "--nproc", "2", "--master-addr="}),
            "--master-addr '': expected a host name or IP address of this host");
  EXPECT_EQ(error({"x", "--master-addr", "0.0.0.0"}),
            "--master-addr needs --nproc (under torchrun, MASTER_ADDR sets the "
            "address)");
  EXPECT_EQ(error({"x", "--nproc", "2", "--master-addr", "a", "--master-addr=b"}),
            "--master-addr given twice");
}

TEST(Launcher, AnAddressThatIsNotThisHostsFailsBeforeAnyRank) {
  LaunchOptions options;
  options.masterAddr = "192.0.2.1"; // TEST-NET-1: never an address of ours
  options.executable = "/bin/false";
  std::string message =
      errorOf([&] { launchLocalRanks(2, {"false"}, options); });
  EXPECT_EQ(message.rfind("--master-addr 192.0.2.1: cannot start the "
                          "rendezvous store: cannot listen on 192.0.2.1:0: ",
                          0),
            0u)
      << message;
}

TEST(Environment, JobSecretOfTheLauncher) {
  auto vars = validVariables();
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  vars["TORCHELASTIC_RESTART_COUNT"] = "0";
  vars["SNN_JOB_SECRET"] = std::string(64, 'a');
  vars["SNN_LAUNCHER_PID"] = "4242";
  DistEnvironment env = readTorchrunEnvironment(fakeEnvironment(vars));
  EXPECT_EQ(env.jobSecret, std::string(64, 'a'));
  EXPECT_EQ(env.launcherPid, 4242);
  vars["SNN_JOB_SECRET"] = "abc";
  EXPECT_EQ(envError(vars), "SNN_JOB_SECRET is not 64 hexadecimal digits (it is "
                            "set by snn-run --nproc for its ranks; unset it "
                            "otherwise)");
  vars["SNN_JOB_SECRET"] = std::string(63, 'a') + "g";
  EXPECT_EQ(envError(vars).rfind("SNN_JOB_SECRET is not 64", 0), 0u);
  auto plain = validVariables();
  plain["SNN_JOB_SECRET"] = std::string(64, 'a');
  EXPECT_EQ(envError(plain),
            "SNN_JOB_SECRET is set but TORCHELASTIC_USE_AGENT_STORE is not True "
            "(both are set by snn-run --nproc for its ranks; unset "
            "SNN_JOB_SECRET otherwise)");
  EXPECT_TRUE(readTorchrunEnvironment(fakeEnvironment(validVariables()))
                  .jobSecret.empty()); // torchrun: c10d's TCPStore
}

TEST(Launcher, PortsInUseAreRefused) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  const int port = ntohs(address.sin_port);
  const std::string p = std::to_string(port);
  EXPECT_TRUE(portInUse(port));
  EXPECT_EQ(errorOf([&] { checkPortAvailable(port); }),
            "--master-port " + p + ": port " + p +
                " is already in use on this host (another job?); choose another "
                "port, or leave --master-port out to use a free one");
  LaunchOptions options;
  options.masterPort = port;
  EXPECT_EQ(errorOf([&] { launchLocalRanks(2, {"true"}, options); }),
            "--master-port " + p + ": port " + p +
                " is already in use on this host (another job?); choose another "
                "port, or leave --master-port out to use a free one");
  ::close(fd);

  int free = pickFreePort();
  EXPECT_GT(free, 0);
  EXPECT_LT(free, 65536);
  EXPECT_NO_THROW(checkPortAvailable(free));
}

// The launcher with /bin/sh as the rank program: environment, exit codes,
// signals, and the grace period, without loading a rank's LibTorch.
TEST(Launcher, SetsTheRankEnvironment) {
  LaunchOptions options;
  options.executable = "/bin/sh";
  options.environment = {{"SNN_TEST_EXTRA", "yes"}};
  const std::string script =
      "test \"$WORLD_SIZE\" = 3 && test \"$LOCAL_WORLD_SIZE\" = 3 && "
      "test \"$RANK\" = \"$LOCAL_RANK\" && test \"$RANK\" -ge 0 && "
      "test \"$RANK\" -lt 3 && test \"$MASTER_ADDR\" = 127.0.0.1 && "
      "test \"$MASTER_PORT\" -gt 0 && "
      "test \"$TORCHELASTIC_USE_AGENT_STORE\" = True && "
      "test \"$SNN_TEST_EXTRA\" = yes && test \"$1\" = arg1";
  EXPECT_EQ(launchLocalRanks(3, {"sh", "-c", script, "sh", "arg1"}, options), 0);
}

TEST(Launcher, ReportsTheFailedRankAndStopsTheOthers) {
  LaunchOptions options;
  options.executable = "/bin/sh";
  options.gracePeriod = std::chrono::milliseconds(300);
  options.terminateTimeout = std::chrono::milliseconds(300);
  options.reportFailures = false;
  auto start = std::chrono::steady_clock::now();
  // Rank 1 exits 5 at once; the others would sleep 30 s.
  int code = launchLocalRanks(
      3, {"sh", "-c", "if [ \"$RANK\" = 1 ]; then exit 5; fi; sleep 30"}, options);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(code, 5);
  EXPECT_LT(took, std::chrono::seconds(5));

  // A rank that ignores SIGTERM is SIGKILLed after terminateTimeout.
  start = std::chrono::steady_clock::now();
  code = launchLocalRanks(
      2,
      {"sh", "-c",
       "if [ \"$RANK\" = 0 ]; then kill -9 $$; fi; trap '' TERM; "
       "while :; do sleep 0.05; done"},
      options);
  took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(code, 128 + SIGKILL);
  EXPECT_LT(took, std::chrono::seconds(5));

  EXPECT_EQ(launchLocalRanks(2, {"sh", "-c", "exit 0"}, options), 0);
  options.executable = "/nonexistent/program";
  EXPECT_EQ(launchLocalRanks(1, {"program"}, options), 127);
  EXPECT_EQ(errorOf([&] { launchLocalRanks(0, {"x"}, options); }),
            "--nproc 0: expected a number of ranks, 1 to 4096");
}

TEST(Launcher, SignalNames) {
  EXPECT_EQ(signalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(signalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signalName(SIGINT), "SIGINT");
  EXPECT_EQ(signalName(64), "signal 64");
}

TEST(Mesh, RowMajorLayout) {
  std::vector<int64_t> shape{2, 3, 2};
  for (int rank = 0; rank < 12; ++rank)
    EXPECT_EQ(Mesh::rankOf(shape, Mesh::coordinatesOf(shape, rank)), rank);
  EXPECT_EQ(Mesh::coordinatesOf(shape, 7), (std::vector<int>{1, 0, 1}));
  using Slices = std::vector<std::vector<int>>;
  EXPECT_EQ(Mesh::slices({2, 2}, 0), (Slices{{0, 2}, {1, 3}}));
  EXPECT_EQ(Mesh::slices({2, 2}, 1), (Slices{{0, 1}, {2, 3}}));
  EXPECT_EQ(Mesh::slices({2, 1, 2}, 1), (Slices{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(Mesh::slices({4}, 0), (Slices{{0, 1, 2, 3}}));
  EXPECT_EQ(Mesh::slices({2, 3}, 1), (Slices{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(Mesh::slices({2, 3}, 0), (Slices{{0, 3}, {1, 4}, {2, 5}}));
  // Every rank is in exactly one slice of every axis.
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    std::vector<int> seen(12, 0);
    for (const auto &slice : Mesh::slices(shape, axis))
      for (int rank : slice)
        ++seen[rank];
    EXPECT_EQ(seen, std::vector<int>(12, 1));
  }
}

TEST(Mesh, ValidationMessages) {
  auto error = [](std::vector<std::string> axes, std::vector<int64_t> shape, int world) {
    return errorOf([&] { Mesh::validate(axes, shape, world); });
  };
  EXPECT_EQ(error({"dp", "tp"}, {2, 2}, 2),
            "the artifact's mesh [2, 2] (axes dp, tp) has 4 ranks but this run has 2 "
            "(--nproc / WORLD_SIZE must be 4)");
  EXPECT_EQ(error({"dp"}, {2, 2}, 4), "mesh: 1 axis names for 2 dimensions");
  EXPECT_EQ(error({"dp", "dp"}, {2, 2}, 4), "mesh: axis name 'dp' appears twice");
  EXPECT_EQ(error({"dp", ""}, {2, 2}, 4), "mesh: axis 1 has an empty name");
  EXPECT_EQ(error({"dp"}, {0}, 4), "mesh: axis dp has size 0 (expected at least 1)");
  EXPECT_EQ(error({}, {}, 2), "the artifact's mesh [] (axes ) has 1 rank but this run "
                              "has 2 (--nproc / WORLD_SIZE must be 1)");
  EXPECT_NO_THROW(Mesh::validate({"dp", "pp", "tp"}, {2, 1, 2}, 4));
  EXPECT_EQ(errorOf([] { checkWorldSize(4, 2); }),
            "the artifact is compiled for world_size 4 but this run has 2 ranks "
            "(--nproc / WORLD_SIZE must be 4)");
  EXPECT_NO_THROW(checkWorldSize(2, 2));
}

TEST(Errors, OneLineWithoutSourceLocations) {
  EXPECT_EQ(describeException(std::runtime_error(
                "[./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                "[127.0.0.1]:6856")),
            "Connection closed by peer [127.0.0.1]:6856");
  EXPECT_EQ(describeException(std::runtime_error("[rank 1] keeps brackets")),
            "[rank 1] keeps brackets");
  EXPECT_EQ(describeException(std::runtime_error("first\nsecond")), "first");
  try {
    TORCH_CHECK(false, "c10 failure");
  } catch (const c10::Error &e) {
    EXPECT_EQ(describeException(e), "c10 failure");
  }
}

TEST(Backend, Names) {
  EXPECT_EQ(parseBackend("gloo"), Backend::Gloo);
  EXPECT_STREQ(backendName(Backend::Nccl), "nccl");
  EXPECT_EQ(errorOf([] { parseBackend("mpi"); }),
            "unknown backend 'mpi' (expected gloo or nccl)");
  if (!ncclAvailable())
    EXPECT_EQ(errorOf([] { parseBackend("nccl"); }),
              "backend nccl: this build has no NCCL path (configure with "
              "-DSNN_ENABLE_CUDA=ON against a CUDA LibTorch)");
}

// One process: no store, no process group; every collective is immediate.
TEST(SingleProcess, CollectivesAreIdentities) {
  auto world = World::initialize(singleProcessEnvironment());
  const Group &g = world->group();
  EXPECT_EQ(g.size(), 1);
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.name(), "world");
  at::Tensor t = at::arange(6, at::kFloat);
  allReduce(g, t, ReduceOp::Avg);
  EXPECT_TRUE(t.equal(at::arange(6, at::kFloat)));
  EXPECT_TRUE(allGather(g, t).equal(t));
  EXPECT_EQ(allGather(g, t.sum()).sizes(), at::IntArrayRef({1}));
  at::Tensor scattered = reduceScatter(g, t);
  EXPECT_TRUE(scattered.equal(t));
  EXPECT_NE(scattered.data_ptr(), t.data_ptr());
  broadcast(g, t, 0);
  barrier(g);
  PendingCollective pending = allReduceAsync(g, t);
  pending.wait();
  EXPECT_TRUE(t.equal(at::arange(6, at::kFloat)));
  EXPECT_THROW(pending.wait(), DistributedError);
  EXPECT_EQ(errorOf([&] { broadcast(g, t, 1); }),
            "rank 0: broadcast on group world: root 1 is not a rank of the group "
            "(size 1)");
  EXPECT_EQ(errorOf([&] {
              at::Tensor i = at::arange(3, at::kLong);
              allReduce(g, i, ReduceOp::Avg);
            }),
            "rank 0: all_reduce on group world: avg needs a floating point tensor, "
            "got Long");

  Mesh empty = Mesh::create(*world, {}, {});
  EXPECT_TRUE(empty.axes().empty());
  Mesh mesh = Mesh::create(*world, {"dp", "tp"}, {1, 1});
  EXPECT_EQ(mesh.group("tp").size(), 1);
  EXPECT_EQ(mesh.coordinate("dp"), 0);
  EXPECT_EQ(errorOf([&] { mesh.group("pp"); }), "mesh has no axis 'pp' (axes: dp, tp)");
  EXPECT_EQ(errorOf([&] { Group().size(); }),
            "use of an invalid group (this rank is not a member)");
}

TEST(SingleProcess, AutogradAndReducerPassThrough) {
  auto world = World::initialize(singleProcessEnvironment());
  const Group &g = world->group();
  at::Tensor x = at::arange(6, at::kFloat).view({2, 3}).set_requires_grad(true);
  at::Tensor y = reduceFromGroup(copyToGroup(x, g), g);
  y = scatterToGroup(gatherFromGroup(y, g, 1), g, -1);
  y = reduceScatterToGroup(y, g, 0);
  (y * 3).sum().backward();
  EXPECT_TRUE(x.grad().equal(at::ones({2, 3}) * 3));
  EXPECT_EQ(errorOf([&] { gatherFromGroup(x, g, 2); }),
            "gatherFromGroup: dim 2 is out of range for a 2-d tensor");

  at::Tensor w = at::arange(4, at::kFloat).set_requires_grad(true);
  at::Tensor unused = at::ones({2}).set_requires_grad(true);
  GradBucketReducer reducer(g, {unused, w}, GradReducerOptions{8, true});
  EXPECT_EQ(reducer.bucketLayout(), (std::vector<std::vector<size_t>>{{1}, {0}}));
  (w * w).sum().backward();
  reducer.finish();
  EXPECT_TRUE(w.grad().equal(at::arange(4, at::kFloat) * 2));
  EXPECT_TRUE(unused.grad().equal(at::zeros({2})));
  EXPECT_EQ(reducer.bucketsLaunchedDuringBackward(), 1u);
  // A second backward before finish() is refused.
  (w * w).sum().backward();
  EXPECT_THROW((w * w).sum().backward(), std::exception);
  reducer.finish();
  EXPECT_EQ(errorOf([&] { GradBucketReducer bad(g, {at::ones({1})}); }),
            "rank 0: gradient reducer: parameter 0 must be a leaf tensor that "
            "requires grad");
}

// computeBucketAssignmentBySize on hand-computed layouts (float32: 4 bytes an
// element). The walk goes from the last parameter to the first.
TEST(BucketAssignment, FillsUpToTheCapInReverseOrder) {
  using Layout = std::vector<std::vector<size_t>>;
  auto floats = [](std::vector<int64_t> numels) {
    std::vector<at::Tensor> tensors;
    for (int64_t n : numels)
      tensors.push_back(at::empty({n}, at::kFloat));
    return tensors;
  };
  // 8, 12, 16 and 4 bytes, cap 20: 4 + 16 = 20 fits exactly, 20 + 12 does
  // not; then 12 + 8 = 20.
  EXPECT_EQ(computeBucketAssignmentBySize(floats({2, 3, 4, 1}), 20),
            (Layout{{3, 2}, {1, 0}}));
  // Cap 19: neither 4 + 16 nor 12 + 8 fits; cap 24: 4 + 16, then 12 + 8.
  EXPECT_EQ(computeBucketAssignmentBySize(floats({2, 3, 4, 1}), 19),
            (Layout{{3}, {2}, {1}, {0}}));
  EXPECT_EQ(computeBucketAssignmentBySize(floats({2, 3, 4, 1}), 24),
            (Layout{{3, 2}, {1, 0}}));
  // Cap 32: 4 + 16 + 12 = 32, then 8 alone.
  EXPECT_EQ(computeBucketAssignmentBySize(floats({2, 3, 4, 1}), 32),
            (Layout{{3, 2, 1}, {0}}));
  // Everything under the default 1 MiB: one bucket.
  EXPECT_EQ(computeBucketAssignmentBySize(floats({1000, 10, 1000}),
                                          GradReducerOptions().bucketBytes),
            (Layout{{2, 1, 0}}));
  // An empty parameter adds no bytes; no parameters, no buckets.
  EXPECT_EQ(computeBucketAssignmentBySize(floats({2, 0, 3}), 20),
            (Layout{{2, 1, 0}}));
  EXPECT_EQ(computeBucketAssignmentBySize({}, 20), Layout{});
}

TEST(BucketAssignment, ALargeParameterGetsABucketOfItsOwn) {
  using Layout = std::vector<std::vector<size_t>>;
  std::vector<at::Tensor> params = {at::empty({1}, at::kFloat),
                                    at::empty({10}, at::kFloat),
                                    at::empty({1}, at::kFloat)};
  // 4, 40 and 4 bytes, cap 16.
  EXPECT_EQ(computeBucketAssignmentBySize(params, 16),
            (Layout{{2}, {1}, {0}}));
  // The first parameter walked (the last one) too.
  EXPECT_EQ(computeBucketAssignmentBySize({at::empty({10}, at::kFloat)}, 8),
            (Layout{{0}}));
}

TEST(BucketAssignment, OneDtypeAndDeviceABucket) {
  using Layout = std::vector<std::vector<size_t>>;
  const size_t cap = size_t(1) << 20;
  at::Tensor f = at::empty({1}, at::kFloat);
  at::Tensor d = at::empty({1}, at::kDouble);
  // A change of dtype starts a new bucket, also back to an earlier dtype
  // (only the current bucket is compared).
  EXPECT_EQ(computeBucketAssignmentBySize({f, d, f}, cap),
            (Layout{{2}, {1}, {0}}));
  EXPECT_EQ(computeBucketAssignmentBySize({d, f, f}, cap),
            (Layout{{2, 1}, {0}}));
  // A change of device too (meta tensors: no storage needed).
  at::Tensor meta = at::empty({1}, at::TensorOptions().device(at::kMeta));
  EXPECT_EQ(computeBucketAssignmentBySize({f, meta, meta}, cap),
            (Layout{{2, 1}, {0}}));
}
