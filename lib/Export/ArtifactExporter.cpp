// Writes legal snn IR as the runtime artifact: one ONNX program (nodes of domain `spikemesh`
// mirroring the snn ops, as the schema's op table lists them) plus manifest.json (the
// schema's Manifest, formatted by the schema). See docs/artifact-format.md.
//
// A planned module (--snn-plan) exports too, still as one replicated program: partitioning
// is a later pass. The plan and its mesh go to the manifest; `shard` annotations are
// looked through and `snn.*` planning attributes (e.g. snn.pp_stage) are not exported.

#include "snn/Export/ArtifactExporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"
#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/Manifest.h"
#include "snn/Support/ShardAPI.h"

#include "onnx/onnx_pb.h"

#include <fstream>

using namespace mlir;
namespace schema = snn::schema;

namespace {

std::vector<int64_t> manifestShape(RankedTensorType type) {
  std::vector<int64_t> shape;
  for (int64_t dim : type.getShape())
    shape.push_back(ShapedType::isDynamic(dim) ? -1 : dim);
  return shape;
}

void setValueInfo(onnx::ValueInfoProto *info, StringRef name, RankedTensorType type) {
  info->set_name(name.str());
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto *shape = tensor->mutable_shape();
  for (int64_t dim : type.getShape()) {
    auto *d = shape->add_dim();
    if (ShapedType::isDynamic(dim))
      d->set_dim_param("N");
    else
      d->set_dim_value(dim);
  }
}

std::string sourceName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  return "";
}

/// Converts one op attribute; returns false for an attribute kind the format cannot hold.
bool convertAttribute(NamedAttribute named, onnx::AttributeProto &out) {
  out.set_name(named.getName().str());
  Attribute attr = named.getValue();
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : ints.asArrayRef())
      out.add_ints(v);
  } else if (auto flag = dyn_cast<BoolAttr>(attr)) {
    out.set_type(onnx::AttributeProto::INT);
    out.set_i(flag.getValue() ? 1 : 0);
  } else if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    out.set_type(onnx::AttributeProto::INT);
    out.set_i(integer.getInt());
  } else if (auto real = dyn_cast<FloatAttr>(attr)) {
    out.set_type(onnx::AttributeProto::FLOAT);
    out.set_f(static_cast<float>(real.getValueAsDouble()));
  } else if (auto surrogate = dyn_cast<snn::SurrogateKindAttr>(attr)) {
    out.set_type(onnx::AttributeProto::STRING);
    out.set_s(snn::stringifySurrogateKind(surrogate.getValue()).str());
  } else if (auto str = dyn_cast<StringAttr>(attr)) {
    out.set_type(onnx::AttributeProto::STRING);
    out.set_s(str.getValue().str());
  } else {
    return false;
  }
  return true;
}

/// Builds the program ONNX and the manifest's parameter list from @main.
class ProgramWriter {
public:
  explicit ProgramWriter(func::FuncOp func) : func(func) {}

  LogicalResult write(onnx::ModelProto &model, schema::Manifest &manifest);

private:
  LogicalResult writeParameter(snn::ParameterOp param, onnx::GraphProto &graph,
                               std::vector<schema::ParameterSpec> &parameters);
  LogicalResult writeNode(Operation *op, onnx::GraphProto &graph);
  std::string nameOf(Value value) { return names.lookup(value); }

  func::FuncOp func;
  llvm::DenseMap<Value, std::string> names;
  int nextValue = 0;
};

LogicalResult ProgramWriter::writeParameter(snn::ParameterOp param, onnx::GraphProto &graph,
                                            std::vector<schema::ParameterSpec> &parameters) {
  auto values = dyn_cast<DenseFPElementsAttr>(param.getValue());
  auto type = cast<RankedTensorType>(param.getType());
  if (!values || !type.getElementType().isF32())
    return param.emitError("parameter '") << param.getName() << "' must be dense float32";
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(param.getName().str());
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : type.getShape())
    tensor->add_dims(dim);
  std::string raw;
  raw.reserve(values.getNumElements() * sizeof(float));
  for (float v : values.getValues<float>())
    raw.append(reinterpret_cast<const char *>(&v), sizeof(float));
  tensor->set_raw_data(std::move(raw));
  names[param.getResult()] = param.getName().str();
  parameters.push_back({param.getName().str(), manifestShape(type),
                        param.getBuffer() ? schema::ParameterKind::Buffer
                                          : schema::ParameterKind::Parameter,
                        schema::kReplicated});
  return success();
}

LogicalResult ProgramWriter::writeNode(Operation *op, onnx::GraphProto &graph) {
  // A collective means a partitioned (per-rank) program, which nothing runs yet.
  if (snn::shardapi::isShardOp(op) && !snn::shardapi::isPlanAnnotationOp(op))
    return op->emitError("cannot export '")
           << op->getName() << "': partitioned (per-rank) programs cannot be exported yet";
  if (snn::shardapi::isShardOp(op)) {
    // An annotation forwards its value; a sharding value feeds only annotations.
    if (Value source = snn::shardapi::annotatedSource(op))
      names[op->getResult(0)] = nameOf(source);
    return success();
  }
  if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "snn" ||
      isa<snn::ONNXNodeOp>(op))
    return op->emitError("cannot export '")
           << op->getName() << "' (run the legalization pipeline first)";
  StringRef opType = op->getName().stripDialect();
  const schema::ArtifactOp *artifactOp = schema::findArtifactOp(opType);
  if (!artifactOp)
    return op->emitError("'") << op->getName() << "' has no artifact encoding";
  onnx::NodeProto *node = graph.add_node();
  node->set_op_type(artifactOp->name);
  node->set_domain(schema::kArtifactDomain);
  node->set_name(sourceName(op));
  for (Value operand : op->getOperands())
    node->add_input(nameOf(operand));
  for (Value result : op->getResults()) {
    std::string name = "v" + std::to_string(nextValue++);
    names[result] = name;
    node->add_output(name);
  }
  for (NamedAttribute attr : op->getAttrDictionary()) {
    if (attr.getName().strref().starts_with("snn."))
      continue; // planning annotations, not part of the op's semantics
    onnx::AttributeProto converted;
    if (!convertAttribute(attr, converted))
      return op->emitError("cannot export attribute '") << attr.getName().str() << "'";
    *node->add_attribute() = std::move(converted);
  }
  return success();
}

LogicalResult ProgramWriter::write(onnx::ModelProto &model, schema::Manifest &manifest) {
  model.set_ir_version(8);
  model.set_producer_name("spikemesh");
  auto *opset = model.add_opset_import();
  opset->set_domain(schema::kArtifactDomain);
  opset->set_version(schema::kArtifactOpsetVersion);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name("main");

  if (func.getNumArguments() != 1 || func.getNumResults() != 1)
    return func.emitError("@main must take one input and return one output");
  auto inputType = dyn_cast<RankedTensorType>(func.getArgument(0).getType());
  auto outputType = dyn_cast<RankedTensorType>(func.getResultTypes()[0]);
  if (!inputType || !outputType)
    return func.emitError("@main input and output must be ranked tensors");
  names[func.getArgument(0)] = "input";
  setValueInfo(graph.add_input(), "input", inputType);

  std::vector<schema::ParameterSpec> parameters;
  for (Operation &op : func.getBody().front()) {
    if (auto param = dyn_cast<snn::ParameterOp>(op)) {
      if (failed(writeParameter(param, graph, parameters)))
        return failure();
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      // Rename the returned value so the graph output is always called `output`.
      Value result = ret.getOperand(0);
      onnx::NodeProto *producer = nullptr;
      for (auto &node : *graph.mutable_node())
        for (auto &out : *node.mutable_output())
          if (out == nameOf(result))
            producer = &node, out = "output";
      if (!producer)
        return ret.emitError("@main must return the result of an snn op");
      setValueInfo(graph.add_output(), "output", outputType);
    } else if (failed(writeNode(&op, graph))) {
      return failure();
    }
  }
  // The readout decides the layout; a planned module's annotations forward its value.
  Value readout = func.getBody().front().getTerminator()->getOperand(0);
  while (Operation *def = readout.getDefiningOp()) {
    if (!snn::shardapi::isShardOp(def))
      break;
    Value source = snn::shardapi::annotatedSource(def);
    if (!source)
      break;
    readout = source;
  }
  bool outputTimeMajor = !readout.getDefiningOp<snn::MeanTimeOp>();
  manifest.input = {"input", manifestShape(inputType), /*timeMajor=*/true};
  manifest.output = {"output", manifestShape(outputType), outputTimeMajor};
  manifest.parameters = std::move(parameters);
  return success();
}

/// The plan, its mesh and explanation from `snn.plan`. For the data-parallel family (dp,
/// dp + ZeRO, fsdp) the one program serves every rank of the mesh: world_size is the mesh's
/// size and program_0 lists all ranks. The other modes need per-rank programs, which are not
/// partitioned yet: rather than write an artifact that would compute something else, the
/// export fails naming the mode.
LogicalResult writePlan(ModuleOp module, schema::Manifest &manifest) {
  auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
  if (!plan)
    return success();
  if (!schema::canExportMode(plan.getMode()))
    return module.emitError("plan mode '")
           << schema::nameOf(plan.getMode())
           << "' cannot be exported yet: its per-rank programs are not partitioned, and "
              "snn-run runs none, dp, zero and fsdp (plan with --mode dp|zero|fsdp, or "
              "leave out -o to only --explain the plan)";
  manifest.plan = snn::toPlanSpec(plan);
  manifest.plan.partitioned = false;
  manifest.mesh = snn::toMeshSpec(plan);
  manifest.explanation = snn::toPlanExplanation(plan);
  const schema::MeshSpec &mesh = manifest.mesh;
  if (!schema::runsReplicatedProgram(manifest.plan.mode) || mesh.axes.size() != 1 ||
      mesh.axes[0] != "dp" || mesh.shape[0] < 1)
    return success();
  manifest.worldSize = int(mesh.shape[0]);
  manifest.programs[0].ranks.clear();
  for (int rank = 0; rank < manifest.worldSize; ++rank)
    manifest.programs[0].ranks.push_back(rank);
  return success();
}

LogicalResult writeFiles(StringRef dir, const onnx::ModelProto &model,
                         const schema::Manifest &manifest, Location loc) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc, "cannot create '" + dir + "': " + ec.message());
  SmallString<256> programPath(dir);
  llvm::sys::path::append(programPath, "program_0.onnx");
  std::ofstream program(programPath.str().str(), std::ios::binary);
  if (!program || !model.SerializeToOstream(&program))
    return emitError(loc, "cannot write '" + programPath + "'");
  SmallString<256> manifestPath(dir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  std::ofstream out(manifestPath.str().str());
  out << schema::formatManifest(manifest);
  if (!out)
    return emitError(loc, "cannot write '" + manifestPath + "'");
  return success();
}

/// Moves the finished temporary directory to `dir`, replacing an older artifact there.
LogicalResult commitDirectory(StringRef tmp, StringRef dir, Location loc) {
  if (llvm::sys::fs::exists(dir)) {
    if (!llvm::sys::fs::is_directory(dir))
      return emitError(loc, "'" + dir + "' exists and is not a directory");
    if (std::error_code ec = llvm::sys::fs::remove_directories(dir))
      return emitError(loc, "cannot replace '" + dir + "': " + ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir))
    return emitError(loc, "cannot move artifact into '" + dir + "': " + ec.message());
  return success();
}

} // namespace

LogicalResult snn::exportArtifact(ModuleOp module, StringRef directory) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("module has no @main function to export");

  onnx::ModelProto model;
  schema::Manifest manifest;
  manifest.producer = "spikemesh";
  manifest.programs = {{"program_0.onnx", {0}}};
  if (auto source = module->getAttrOfType<StringAttr>("snn.source"))
    manifest.source = llvm::sys::path::filename(source.getValue()).str();
  if (failed(ProgramWriter(func).write(model, manifest)))
    return failure();
  if (failed(writePlan(module, manifest)))
    return failure();

  SmallString<256> tmp(directory);
  while (!tmp.empty() && llvm::sys::path::is_separator(tmp.back()))
    tmp.pop_back();
  tmp += ".tmp-" + std::to_string(llvm::sys::Process::getProcessId());
  (void)llvm::sys::fs::remove_directories(tmp);
  if (failed(writeFiles(tmp, model, manifest, module.getLoc()))) {
    (void)llvm::sys::fs::remove_directories(tmp);
    return failure();
  }
  if (failed(commitDirectory(tmp, directory, module.getLoc()))) {
    (void)llvm::sys::fs::remove_directories(tmp);
    return failure();
  }
  return success();
}
