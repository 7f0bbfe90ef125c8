//===- Estimate.cpp - A candidate's label and mesh ----------------------===//
#include "snn/Planner/Estimate.h"

#include <string>

namespace snn::planner {

std::string Estimate::label() const {
  std::string name = modeName(mode);
  if (optimizer == OptimizerStrategy::Zero)
    name += "+zero";
  return name;
}

std::string Estimate::mesh() const {
  switch (mode) {
  case Mode::None: return "1 rank";
  case Mode::DP:
  case Mode::FSDP: return "dp=" + std::to_string(dp);
  case Mode::TP: return "tp=" + std::to_string(tp);
  case Mode::FSDP_TP: return "dp=" + std::to_string(dp) + " x tp=" + std::to_string(tp);
  case Mode::PP:
    // In the mesh's axis order [dp, pp, tp].
    return (dp > 1 ? "dp=" + std::to_string(dp) + " x " : std::string()) + "pp=" +
           std::to_string(pp) + (tp > 1 ? " x tp=" + std::to_string(tp) : std::string()) +
           (virtualStages > 1 ? " (vpp " + std::to_string(virtualStages) + ")" : "");
  }
  return "";
}

} // namespace snn::planner
