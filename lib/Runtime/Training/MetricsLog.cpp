//===- MetricsLog.cpp - The JSON-lines training log -----------------------===//

#include "snn/Runtime/Training/MetricsLog.h"
#include "snn/Runtime/Support/Error.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace snn::runtime {

// ordered_json keeps "event" first, as a reader scanning the file expects.
using Json = nlohmann::ordered_json;

namespace {

/// {"<layer>": value, ...} in the program's order ("firing_rates", "grad_norms").
Json ratesJson(const std::vector<std::pair<std::string, double>> &rates) {
  Json out = Json::object();
  for (const auto &[layer, rate] : rates)
    out[layer] = rate;
  return out;
}

} // namespace

MetricsLog::MetricsLog(const std::string &path, bool append)
    : file(std::fopen(path.c_str(), append ? "a" : "w")), path(path) {
  if (!file)
    throw Error("--log " + path + ": cannot open: " + std::strerror(errno));
}

void MetricsLog::writeLine(const std::string &line) {
  if (file && (std::fputs(line.c_str(), file.get()) < 0 ||
               std::fputc('\n', file.get()) == EOF || std::fflush(file.get()) != 0))
    throw Error("--log " + path + ": write failed: " + std::strerror(errno));
  if (follower)
    follower(line);
}

void MetricsLog::step(const StepMetrics &metrics,
                      const std::vector<CommCount> *comm) {
  // NaN/Inf have no JSON form; nlohmann writes them as null.
  Json line{{"event", "step"},
            {"epoch", metrics.epoch},
            {"step", metrics.step},
            {"loss", metrics.loss},
            {"accuracy", metrics.accuracy},
            {"lr", metrics.lr},
            {"samples_per_s", metrics.samplesPerSecond},
            {"seconds", metrics.seconds}};
  if (metrics.skipped)
    line["skipped"] = true;
  if (metrics.checkpointing) {
    line["checkpoint_seconds"] = metrics.checkpointSeconds;
    line["checkpoint_writing"] = metrics.checkpointWriting;
  }
  if (!metrics.firingRates.empty())
    line["firing_rates"] = ratesJson(metrics.firingRates);
  if (!metrics.gradNorms.empty())
    line["grad_norms"] = ratesJson(metrics.gradNorms);
  if (comm) {
    Json counts = Json::array();
    for (const CommCount &count : *comm)
      counts.push_back(Json{{"kind", count.kind},
                            {"mesh_axis", count.meshAxis},
                            {"calls", count.calls},
                            {"bytes", count.bytes},
                            {"seconds", count.seconds}});
    line["comm"] = counts;
  }
  writeLine(line.dump());
}

void MetricsLog::epoch(const EpochMetrics &metrics) {
  Json line{{"event", "epoch"},
            {"epoch", metrics.epoch},
            {"steps", metrics.steps},
            {"loss", metrics.loss},
            {"accuracy", metrics.accuracy}};
  if (metrics.hasEval) {
    line["eval_loss"] = metrics.eval.loss;
    line["eval_accuracy"] = metrics.eval.accuracy;
  }
  line["seconds"] = metrics.seconds;
  if (!metrics.firingRates.empty())
    line["firing_rates"] = ratesJson(metrics.firingRates);
  writeLine(line.dump());
}

std::string evalJson(const EvalMetrics &metrics) {
  return Json{{"event", "eval"},
              {"loss", metrics.loss},
              {"accuracy", metrics.accuracy},
              {"samples", metrics.samples},
              {"seconds", metrics.seconds}}
      .dump();
}

void MetricsLog::eval(const EvalMetrics &metrics) {
  writeLine(evalJson(metrics));
}

void MetricsLog::rankStart(int rank, int worldSize, const std::string &mode,
                           const MeshContext *mesh) {
  Json line{{"event", "rank"},
            {"rank", rank},
            {"world_size", worldSize},
            {"pid", int64_t(::getpid())},
            {"mode", mode}};
  if (mesh) {
    Json coordinates = Json::array();
    for (const std::string &axis : mesh->axes())
      coordinates.push_back(mesh->coordinate(axis));
    line["mesh"] = Json{{"axes", mesh->axes()},
                        {"shape", mesh->shape()},
                        {"coordinates", coordinates}};
  }
  writeLine(line.dump());
}

namespace {

Json planCheckJson(const PlanCheck &check) {
  const schema::PlanPrediction &p = check.predicted;
  auto ratio = [](double measured, double predicted) {
    return predicted > 0 ? Json(measured / predicted) : Json(nullptr);
  };
  return Json{{"predicted",
               {{"step_seconds", p.stepSeconds},
                {"comm_seconds", p.commSeconds},
                {"memory_bytes", p.memoryBytes},
                {"times", p.times}}},
              {"measured",
               {{"step_seconds", check.stepSeconds},
                {"comm_seconds", check.commSeconds},
                {"memory_bytes", check.memoryBytes}}},
              {"ratio",
               {{"step", ratio(check.stepSeconds, p.stepSeconds)},
                {"comm", ratio(check.commSeconds, p.commSeconds)},
                {"memory", ratio(double(check.memoryBytes), double(p.memoryBytes))}}},
              {"optimizer_states",
               {{"planned", p.optimizerStates}, {"trained", check.optimizerStates}}}};
}

} // namespace

void MetricsLog::rankEnd(const RankEnd &report) {
  Json end{{"event", "end"},
           {"steps", report.steps},
           {"peak_rss_bytes", report.peakResidentBytes},
           {"param_bytes", report.footprint.paramBytes},
           {"grad_bytes", report.footprint.gradBytes},
           {"optimizer_state_bytes", report.footprint.optimizerStateBytes}};
  if (report.tensors)
    end["tensor_bytes"] = Json{{"before_steps", report.tensors->beforeSteps},
                               {"peak", report.tensors->peak}};
  if (const std::optional<BubbleReport> &bubble = report.bubble)
    end["bubble"] = Json{{"measured", bubble->measured},
                         {"theoretical", bubble->theoretical},
                         {"pipeline", bubble->pipeline},
                         {"schedule", bubble->schedule}};
  if (report.planCheck)
    end["plan_check"] = planCheckJson(*report.planCheck);
  if (const SpikeLinearCounts &spikes = report.spikeLinear; spikes.any())
    end["spike_linear"] = Json{{"calls", spikes.calls},
                               {"mean_density", spikes.meanDensity},
                               {"dense_above_density", spikes.denser},
                               {"dense_not_spikes", spikes.notSpikes}};
  if (const SpikingBlockCounts &blocks = report.spikingBlocks; blocks.any())
    end["spiking_blocks"] = Json{{"fused", blocks.fused},
                                 {"node_by_node", blocks.unfused},
                                 {"one_step_layers", blocks.oneStepLayers},
                                 {"fused_norm_backward", blocks.fusedNormBackwards}};
  if (const SpikeBitsCounts &bits = report.spikeBits; bits.tensors > 0)
    end["spike_bits"] = Json{{"tensors", bits.tensors},
                             {"float_bytes", bits.floatBytes},
                             {"bit_bytes", bits.bitBytes}};
  if (const RecomputationCounts &r = report.recomputation; r.any())
    end["recomputation"] = Json{{"segments", r.segments},
                                {"replays", r.replays},
                                {"kept_bytes", r.keptBytes},
                                {"kept_float_bytes", r.floatBytes}};
  if (const std::optional<StepArena::Stats> &arena = report.stepArena)
    end["step_arena"] = Json{{"layouts", arena->layouts},
                             {"arena_bytes", arena->arenaBytes},
                             {"served", arena->servedInArena},
                             {"own_mappings", arena->ownMappings}};
  if (const SpikeConvCounts &conv = report.spikeConv; conv.calls + conv.dense > 0)
    end["spike_conv"] = Json{{"calls", conv.calls}, {"dense", conv.dense}};
  if (!report.eventKernels.empty()) {
    Json layers = Json::array();
    for (const EventKernelLayer &layer : report.eventKernels) {
      const KernelCrossover &c = layer.crossover;
      layers.push_back(Json{{"layer", layer.key},
                            {"dense_seconds", c.denseSeconds},
                            {"event_seconds", c.eventSeconds},
                            {"event_seconds_without_spikes", c.fixedSeconds},
                            {"density", c.density},
                            {"threshold", c.threshold},
                            {"from_file", layer.fromFile},
                            {"event_calls", layer.eventCalls},
                            {"dense_calls", layer.denseCalls},
                            {"mean_density", layer.meanDensity()}});
    }
    end["event_kernels"] = layers;
  }
  writeLine(end.dump());
}

} // namespace snn::runtime
