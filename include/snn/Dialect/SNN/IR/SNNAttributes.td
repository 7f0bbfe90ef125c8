#ifndef SNN_ATTRIBUTES_TD
#define SNN_ATTRIBUTES_TD

include "mlir/IR/AttrTypeBase.td"
include "snn/Dialect/SNN/IR/SNNDialect.td"

//===----------------------------------------------------------------------===//
// Parameters with their own spelling (SNNAttributeParameters.h)
//===----------------------------------------------------------------------===//

// A value of an enum of snn/Schema/Enums.h, printed with its schema spelling, so the IR,
// the manifest and the command line agree on every name.
class SNN_SchemaEnumParameter<string cppType, string desc>
    : AttrParameter<cppType, desc> {
  let parser = "::snn::detail::parseSchemaEnum<" # cppType # ">($_parser)";
  let printer = "::snn::detail::printSchemaEnum($_printer, $_self)";
}

def SNN_ScheduleParameter
    : AttrParameter<"std::optional<::snn::schema::PipelineSchedule>",
                    "pipeline schedule, `none` when the plan has no pipeline"> {
  let parser = "::snn::detail::parseOptionalSchedule($_parser)";
  let printer = "::snn::detail::printOptionalSchedule($_printer, $_self)";
}

def SNN_BoolParameter : AttrParameter<"bool", "true or false"> {
  let parser = "::snn::detail::parseBool($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

// A flag that later passes set: absent (and not printed) while false, so IR written before
// the flag existed still parses.
def SNN_FalseByDefaultParameter : DefaultValuedParameter<"bool", "false", "true or false"> {
  let parser = "::snn::detail::parseBool($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

def SNN_IntListParameter : ArrayRefParameter<"int64_t", "[a, b, ...]"> {
  let parser = "::snn::detail::parseIntList($_parser)";
  let printer = "::snn::detail::printIntList($_printer, $_self)";
}

def SNN_SecondsParameter : APFloatParameter<"seconds"> {
  let parser = "::snn::detail::parseDouble($_parser)";
  let printer = "$_printer.printFloat($_self)";
}

class SNN_Attr<string name, string attrMnemonic> : AttrDef<SNN_Dialect, name> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
}

//===----------------------------------------------------------------------===//
// Analysis and plan (module attributes `snn.analysis`, `snn.plan`)
//===----------------------------------------------------------------------===//

def SNN_AnalysisAttr : SNN_Attr<"Analysis", "analysis"> {
  let summary = "What --snn-analyze found";
  let description = [{
    Module paths (the ops' source names) of every stateful neuron, of the tensor-parallel
    candidates under `roots`, and of the layers under the roots that cannot be split, plus
    notes. `roots` is empty when the whole model was searched.
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$roots,
    SNN_BoolParameter:$experimental_conv_tp,
    "::mlir::ArrayAttr":$memory_module_names,
    "::mlir::ArrayAttr":$tensor_parallel_candidate_names,
    "::mlir::ArrayAttr":$unsupported_tensor_parallel_names,
    "::mlir::ArrayAttr":$notes
  );
}

def SNN_ModelSummaryAttr : SNN_Attr<"ModelSummary", "model_summary"> {
  let summary = "The cost model's totals for the planned batch";
  let parameters = (ins
    "int64_t":$time_steps,
    "int64_t":$param_bytes,
    "int64_t":$buffer_bytes,
    SNN_SecondsParameter:$forward_flops,
    "int64_t":$activation_bytes,
    "int64_t":$pipeline_units
  );
}

def SNN_PlanCandidateAttr : SNN_Attr<"PlanCandidate", "plan_candidate"> {
  let summary = "One mode on one mesh as the cost model estimated it, per rank and step";
  let description = [{
    `label` is the mode as a user writes it (`dp+zero`, `fsdp_tp`), `mesh` its mesh
    (`dp=2 x tp=2`). An infeasible candidate says why in `reason`; its numbers are zero.
  }];
  let parameters = (ins
    StringRefParameter<"mode label">:$label,
    StringRefParameter<"mesh">:$mesh,
    SNN_BoolParameter:$feasible,
    StringRefParameter<"why infeasible">:$reason,
    SNN_SecondsParameter:$step_seconds,
    SNN_SecondsParameter:$compute_seconds,
    SNN_SecondsParameter:$comm_seconds,
    "int64_t":$comm_bytes,
    "int64_t":$memory_bytes,
    "int64_t":$state_bytes,
    "int64_t":$activation_bytes,
    "int64_t":$memopt_level,
    SNN_BoolParameter:$fits_budget
  );
}

def SNN_PlanAttr : SNN_Attr<"Plan", "plan"> {
  let summary = "The parallel plan --snn-plan chose";
  let description = [{
    The decisions later passes and the runtime act on (mode, mesh, optimizer strategy,
    pipeline stages and schedule, tensor-parallel pairs), the request they answer
    (objective, topology, batch size, feature flags, memory budget) and why (`decided_by`,
    `rationale`, `notes`, the compared `candidates`, the `model` totals). The exporter turns
    it into the manifest's `plan` (snn/Schema/Manifest.h) through one conversion.
    `partitioned` is set by --snn-partition once @main is the per-rank program of a tp or
    fsdp_tp plan (printed only when true). `predicted` is the chosen plan's estimate and
    `times` where its times come from (a device profile, or the default constants); the
    runtime logs both next to what it measures. Absent without estimates.
    `optimizer_states` is the optimizer state the memory estimate counts per parameter
    (0: SGD, 1: SGD with momentum, 2: Adam or AdamW; printed only when not 2).
    `pp_stage_costs` is a pipeline's cost of each logical stage, the FLOP-equivalents the
    memopt stages are chosen by (absent for other modes).
  }];
  let parameters = (ins
    SNN_SchemaEnumParameter<"::snn::schema::ParallelMode", "parallel mode">:$mode,
    SNN_SchemaEnumParameter<"::snn::schema::Objective", "objective">:$objective,
    SNN_SchemaEnumParameter<"::snn::schema::OptimizerStrategy", "optimizer state">
        :$optimizer_strategy,
    StringRefParameter<"requested topology, e.g. dp=2,tp=2">:$topology,
    "int64_t":$world_size,
    "int64_t":$batch_size,
    "::mlir::ArrayAttr":$mesh_axes,
    SNN_IntListParameter:$mesh_shape,
    "int64_t":$dp_mesh_dim,
    "int64_t":$tp_mesh_dim,
    "int64_t":$pp_mesh_dim,
    "int64_t":$memopt_level,
    "int64_t":$pp_microbatches,
    SNN_ScheduleParameter:$pp_schedule,
    "int64_t":$pp_virtual_stages,
    SNN_IntListParameter:$pp_layout,
    SNN_IntListParameter:$pp_memopt_stages,
    SNN_BoolParameter:$pp_delay_wgrad,
    "::mlir::ArrayAttr":$pp_stage_units,
    "::mlir::ArrayAttr":$tensor_parallel_roots,
    "::mlir::ArrayAttr":$tensor_parallel_pairs,
    SNN_BoolParameter:$experimental_conv_tp,
    SNN_BoolParameter:$allow_pipeline,
    SNN_BoolParameter:$allow_zero,
    "int64_t":$memory_budget,
    StringRefParameter<"cost-model, reference-table or forced">:$decided_by,
    "::mlir::ArrayAttr":$rationale,
    "::mlir::ArrayAttr":$notes,
    "::mlir::ArrayAttr":$candidates,
    OptionalParameter<"::snn::ModelSummaryAttr">:$model,
    SNN_FalseByDefaultParameter:$partitioned,
    OptionalParameter<"::snn::PlanCandidateAttr">:$predicted,
    OptionalParameter<"::mlir::StringAttr">:$times,
    DefaultValuedParameter<"int64_t", "2", "optimizer state tensors per parameter">
        :$optimizer_states,
    OptionalParameter<"::mlir::ArrayAttr">:$pp_stage_costs
  );
}

#endif // SNN_ATTRIBUTES_TD
