//===- PipelineEstimate.cpp - Time and memory of a pipeline (pp) ----------===//
//
// A pipeline step is (microbatches x virtual stages + stages - 1) ticks of its slowest
// chunk; each tick adds its stage's messages and tp collectives. The busiest rank bounds
// the memory, and every rank synchronises the step after the drain.
//
//===----------------------------------------------------------------------===//
#include "Estimator.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

namespace snn::planner {

Estimator::Chunks Estimator::chunksOf(const ModeConfig &config) const {
  int64_t chunks = config.pp * config.virtualStages;
  Chunks c{std::vector<std::vector<int>>(chunks), std::vector<std::vector<int>>(chunks)};
  size_t nextUnit = 0;
  for (int64_t k = 0; k < chunks && k < int64_t(config.layout.size()); ++k)
    for (int64_t i = 0; i < config.layout[k] && nextUnit < units_.size(); ++i, ++nextUnit) {
      c.units[k].push_back(int(nextUnit));
      for (int op : units_[nextUnit].ops)
        c.ops[k].push_back(op);
    }
  return c;
}

std::vector<int64_t> Estimator::boundaryBytes(const Chunks &chunk, int64_t micro) const {
  std::vector<int64_t> boundary(chunk.ops.size(), 0);
  int lastOp = -1;
  for (size_t k = 0; k < chunk.ops.size(); ++k) {
    if (!chunk.ops[k].empty())
      lastOp = chunk.ops[k].back();
    boundary[k] = lastOp < 0 ? 0 : perSample_[lastOp].outputBytes * micro;
  }
  return boundary;
}

/// A pipeline step from each rank's ticks of one microbatch through its chunks
/// (`perRank`) and the slowest chunk's tick: the busiest rank runs its ticks for each of
/// the m microbatches, filling and draining add stages - 1 of the slowest tick. With equal
/// chunks that is (m v + stages - 1) ticks; with unequal ones a rank's light chunks are not
/// charged as its heaviest (a tensor-parallel classifier in one of four chunks measured
/// 0.75 of a prediction that did).
static double pipelineSeconds(const std::vector<double> &perRank, double slowest, int64_t m) {
  double busiest = *std::max_element(perRank.begin(), perRank.end());
  return double(m) * busiest + double(perRank.size() - 1) * slowest;
}

namespace {
/// A pipeline's ticks of one kind (compute alone, or with transfers): each rank's chunks'
/// sum over one round, and the slowest chunk.
struct PipelineTicks {
  std::vector<double> perRank;
  double slowest = 0;
  explicit PipelineTicks(int64_t stages) : perRank(size_t(stages), 0.0) {}
  void add(int64_t rank, double seconds) {
    perRank[size_t(rank)] += seconds;
    slowest = std::max(slowest, seconds);
  }
  double seconds(int64_t m) const { return pipelineSeconds(perRank, slowest, m); }
  void hide(const std::vector<double> &hidden) {
    for (size_t r = 0; r < perRank.size(); ++r)
      perRank[r] -= hidden[r];
  }
};

/// Each rank's chunks in one round of ticks (one microbatch through all of them): compute
/// alone, with its transfers, and with its tp collectives' lag at full load too.
struct PipelineRounds {
  PipelineTicks compute, transfers, lagged;
  explicit PipelineRounds(int64_t stages)
      : compute(stages), transfers(stages), lagged(stages) {}
};
} // namespace

/// How much more each rank computes in a round than the ranks it exchanges with (0 where
/// a neighbour computes as much): that long its neighbours idle each round while it never
/// waits. Virtual stages wrap around: the last rank sends to the first.
static std::vector<double> leadOverNeighbours(const std::vector<double> &compute, bool ring) {
  size_t n = compute.size();
  std::vector<double> lead(n, 0.0);
  for (size_t r = 0; r < n; ++r) {
    double neighbour = 0;
    if (r > 0 || ring)
      neighbour = std::max(neighbour, compute[(r + n - 1) % n]);
    if (r + 1 < n || ring)
      neighbour = std::max(neighbour, compute[(r + 1) % n]);
    lead[r] = std::max(0.0, compute[r] - neighbour);
  }
  return lead;
}

/// A rank that leads its neighbours (leadOverNeighbours) runs its ticks back to back: its
/// compute tends to the steady step's (`warm`, not the cold one of a tick after other
/// work), and its neighbours' messages are there before it asks (they run ahead, with
/// microbatches in flight) and its own reach them while they idle, so of each message's
/// wall time only its CPU remains (`waits`: the rest). The lead pays for both, the warm
/// compute first. An unbalanced pp=4 (one stage 94 % of the FLOPs) measured 46 ms against
/// 80 ms predicted with cold compute and every message's wall time on its heaviest rank
/// (seeds 10000-12019).
static void settleLeadingRanks(const std::vector<double> &warm,
                               const std::vector<double> &waits, bool ring,
                               PipelineRounds &rounds) {
  std::vector<double> lead = leadOverNeighbours(rounds.compute.perRank, ring);
  std::vector<double> warmer(lead.size()), hidden(lead.size());
  for (size_t r = 0; r < lead.size(); ++r) {
    warmer[r] = std::clamp(rounds.compute.perRank[r] - warm[r], 0.0, lead[r]);
    hidden[r] = std::min(waits[r], lead[r] - warmer[r]);
  }
  for (PipelineTicks *t : {&rounds.compute, &rounds.transfers, &rounds.lagged})
    t->hide(warmer);
  rounds.transfers.hide(hidden);
  rounds.lagged.hide(hidden);
}

/// Whether pipeline chunk `k` recomputes its activations (memopt).
static bool recomputesStage(const ModeConfig &config, int64_t k) {
  return std::find(config.memoptStages.begin(), config.memoptStages.end(), k) !=
         config.memoptStages.end();
}

Estimator::MessagePrice Estimator::pipelineMessage(const ModeConfig &config, int64_t bytes,
                                                   double tickCompute) const {
  int64_t dp = std::max<int64_t>(config.dp, 1);
  int64_t jobRanks = dp * config.pp * std::max<int64_t>(config.tp, 1);
  // Two-stage pipelines on every pair of the job's ranks are what calibrate ran: their
  // messages wait and take CPU as it measured. (Priced at the 4-rank all-pairs ping-pong's
  // CPU, 1.26 ms a message, dp=2 x pp=2 with virtual stages measured 0.49-0.99 of its
  // predicted steps; the pipelines measured 0.55 ms.)
  bool measuredShape =
      config.pp == 2 && config.tp <= 1 && hw_.measuredPipelineMessageCpu(jobRanks);
  MessagePrice price;
  price.seconds = hw_.busyMessageSeconds(bytes, jobRanks, tickCompute, measuredShape);
  price.cpuSeconds = measuredShape
                         ? hw_.pipelineMessageCpuSeconds(bytes, jobRanks, dp > 1, tickCompute)
                         : hw_.messageCpuSeconds(bytes, jobRanks, dp > 1);
  // Oversubscribed: the all-pairs wait as often as the CPUs are taken (estimate(),
  // Hardware::descheduledMessageSeconds); a forward or backward before each message.
  price.lagSeconds = hw_.descheduledMessageSeconds(bytes, jobRanks);
  return price;
}

bool Estimator::neighboursRunBeside(const ModeConfig &config) const {
  if (!hw_.calibration || hw_.calibration->logicalCpus <= 0)
    return true;
  int64_t slots =
      hw_.calibration->logicalCpus / std::max<int64_t>(hw_.calibration->threadsPerRank, 1);
  return std::max<int64_t>(config.dp, 1) * std::max<int64_t>(config.tp, 1) < slots;
}

/// Chunk `k`'s memory on its rank (of `config`'s pipeline at `micro` samples a microbatch).
void Estimator::addChunkMemory(const ModeConfig &config, const Chunks &chunk, const Scales &s,
                               int64_t k, int64_t micro, const std::vector<int64_t> &boundary,
                               RankTotals &totals) const {
  int64_t stages = config.pp, chunks = int64_t(chunk.ops.size());
  int64_t m = std::max<int64_t>(config.microbatches, 1), rank = k % stages;
  int64_t inFlight = config.schedule == Schedule::GPipe ? m : std::min(m, chunks - k);
  totals.state[rank] += params(chunk.ops[k], s);
  if (m > 1) // a later microbatch's weight gradient (pipelineRanks)
    totals.largestLayer[rank] = std::max(totals.largestLayer[rank], largestLayer(chunk.ops[k], s));
  // A replica's BatchNorms are its own: its blocks run fused, recomputed or not.
  ActivationMemory held =
      activations(chunk.units[k], s, micro, recomputesStage(config, k), /*fused=*/true);
  totals.activations[rank] += held.kept * (inFlight - 1) + held.peak;
  // The transport's tensors (StageTransport): each microbatch's output is held, and sent,
  // until its gradient is back; the gradients sent back until the step ends.
  if (k + 1 < chunks)
    totals.activations[rank] += boundary[k] * inFlight;
  if (k > 0)
    totals.activations[rank] += boundary[k - 1] * m;
  if (k < stages) // every rank of a replica loads its batch
    totals.activations[rank] += batchBytes(micro * m);
}

void Estimator::estimatePipeline(const ModeConfig &config, Estimate &e) const {
  int64_t stages = config.pp, chunks = config.pp * config.virtualStages;
  int64_t m = std::max<int64_t>(config.microbatches, 1);
  int64_t dp = std::max<int64_t>(config.dp, 1);
  int64_t micro = (batch_ + dp * m - 1) / (dp * m); // each replica splits its share
  Scales s = scalesFor(config.tp);
  Chunks chunk = chunksOf(config);
  std::vector<int64_t> boundary = boundaryBytes(chunk, micro);
  int64_t jobRanks = dp * stages * std::max<int64_t>(config.tp, 1);
  std::vector<double> stageBusy(size_t(stages), 0.0), messageWaits(size_t(stages), 0.0),
      warm(size_t(stages), 0.0);
  PipelineRounds rounds(stages);
  RankTotals totals(stages);
  for (int64_t k = 0; k < chunks; ++k) {
    // A recomputed stage runs its forward twice. A tick follows other microbatches' ticks
    // (their activations, the sends): its compute is a cold one (but settleLeadingRanks).
    double recompute = recomputesStage(config, k) ? 4.0 / 3.0 : 1.0;
    double compute =
        computeSeconds(chunk.ops[k], s, micro, /*fused=*/true, /*cold=*/true) * recompute;
    int64_t sent = 0;
    double messagesCpu = 0, messageLag = 0;
    auto send = [&](int64_t bytes) {
      sent += bytes;
      MessagePrice price = pipelineMessage(config, bytes, compute);
      messagesCpu += price.cpuSeconds;
      messageLag = std::max(messageLag, price.lagSeconds);
      return price.seconds;
    };
    double forward = k + 1 < chunks ? send(boundary[k]) : 0.0; // activations forward
    double backward = k > 0 ? send(boundary[k - 1]) : 0.0;    // the input's gradient back
    double collectives = 0, collectivesCpu = 0, lag = 0;
    if (config.tp > 1) { // the stage's own tp collectives, per microbatch (subgroupCollectives)
      Communication tp = tensorParallelCommunication(model_, tp_, config.tp, micro, &chunk.ops[k]);
      collectivesCpu = tp.rankCpuSeconds(hw_, jobRanks);
      sent += tp.bytes;
      std::tie(collectives, lag) =
          subgroupCollectives(tp, compute / double(std::max<int64_t>(groupCalls(tp), 1)), jobRanks);
    }
    // A chunk between two others waits for both of its messages (activation in, gradient
    // back), which arrive at different times of the schedule (the later alone had 2-rank
    // interleaved pipelines at 1.40-1.54x their prediction; docs/planner.md). The tp
    // collectives block.
    double transfer = forward + backward + collectives;
    // Messages and collectives take CPU from their ranks too (loopback copies, the
    // backend's threads): what calibrate measured, not their wall time (on 4 ranks of 2
    // CPUs a 64-256 KiB message took 0.5-1.4 ms of CPU where 2 x its 0.9-1.5 ms had every
    // pp=4 row predicted 1.3-1.6x its measurement; a 4 KiB all-reduce kept its ranks'
    // CPUs busy a third of its time).
    int64_t rank = k % stages;
    stageBusy[size_t(rank)] += (compute + messagesCpu + collectivesCpu) * double(m);
    messageWaits[size_t(rank)] += std::max(0.0, forward + backward - messagesCpu);
    warm[size_t(rank)] +=
        computeSeconds(chunk.ops[k], s, micro, /*fused=*/true, /*cold=*/false) * recompute;
    rounds.compute.add(rank, compute);
    rounds.transfers.add(rank, compute + transfer);
    rounds.lagged.add(rank, compute + transfer + lag + messageLag);
    addChunkMemory(config, chunk, s, k, micro, boundary, totals);
    totals.comm[rank] += sent * m;
  }
  // GPipe holds every microbatch's activations until its backward: each tick's work
  // touches memory the last one did not, and stays cold.
  if (neighboursRunBeside(config))
    settleLeadingRanks(config.schedule == Schedule::GPipe ? rounds.compute.perRank : warm,
                       messageWaits, config.virtualStages > 1, rounds);
  e.computeSeconds = rounds.compute.seconds(m);
  e.commSeconds = std::max(0.0, rounds.transfers.seconds(m) - e.computeSeconds);
  e.stageCollectiveLagSeconds =
      std::max(0.0, rounds.lagged.seconds(m) - rounds.transfers.seconds(m));
  e.busySeconds = std::accumulate(stageBusy.begin(), stageBusy.end(), 0.0) *
                  double(dp * std::max<int64_t>(config.tp, 1));
  e.stageBusySeconds = std::move(stageBusy);
  pipelineRanks(config, chunk, s, std::move(totals), e);
}

/// The busiest pipeline rank bounds the memory every rank must have and the bytes it
/// sends. After the pipeline drains, every rank synchronises the step (metrics, and with dp
/// replicas its stages' gradients, running statistics and buffers), all groups at once.
void Estimator::pipelineRanks(const ModeConfig &config, const Chunks &chunk, const Scales &s,
                              RankTotals ranks, Estimate &e) const {
  int64_t stages = config.pp, chunks = int64_t(chunk.ops.size());
  int64_t world = config.dp * config.pp * std::max<int64_t>(config.tp, 1);
  double slowestSync = 0;
  for (int64_t r = 0; r < stages; ++r) {
    std::vector<int> ops;
    for (int64_t k = r; k < chunks; k += stages)
      ops.insert(ops.end(), chunk.ops[k].begin(), chunk.ops[k].end());
    int64_t state = stateBytes(ranks.state[r], buffers(ops), 1, 1);
    // From the second microbatch on, backward computes a layer's weight gradient beside the
    // one accumulated so far, then adds it (the MLP's pp=4: 1.30 MB measured on the rank of
    // a 257 KiB layer, 1.04 predicted without it). With replicas, the gradients' all-reduce
    // after the drain goes through one flat copy of them while the batch is still loaded
    // (the backward's tensors are gone by then). Neither grows with the batch: transient.
    int64_t transient = ranks.largestLayer[r];
    if (config.dp > 1) // the flat copy, and the all-reduce's scratch of its size
      transient = std::max<int64_t>(
          transient, ranks.state[r] + allReduceScratchBytes(config.dp, ranks.state[r]) +
                         batchBytes((batch_ + config.dp - 1) / config.dp) -
                         ranks.activations[r]);
    if (r == 0 || state + ranks.activations[r] + transient >
                      e.stateBytes + e.activationBytes + e.transientBytes) {
      e.stateBytes = state;
      e.activationBytes = ranks.activations[r];
      e.transientBytes = transient;
    }
    Communication sync = pipelineStepCommunication(
        config.pp, config.dp, ranks.state[r], batchNormChannels(ops, s), buffers(ops));
    ranks.comm[r] += sync.bytes;
    slowestSync = std::max(slowestSync, sync.seconds(hw_, world));
  }
  e.commBytes = *std::max_element(ranks.comm.begin(), ranks.comm.end());
  e.commSeconds += slowestSync;
  e.drainSyncSeconds = slowestSync;
}

} // namespace snn::planner
