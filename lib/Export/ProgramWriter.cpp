//===- ProgramWriter.cpp - @main as an ONNX program -----------------------===//
//
// See ProgramWriter.h. Nodes mirror the snn ops (the schema's op table lists what may
// appear), value names are v0, v1, ... in program order, initializers are float32 raw data.
//
//===----------------------------------------------------------------------===//
#include "ProgramWriter.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include "snn/Dialect/SNN/Transforms/AttentionHeadLayout.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Support/ShardAPI.h"

using namespace mlir;
namespace schema = snn::schema;

namespace snn {

namespace {


std::vector<int64_t> manifestShape(RankedTensorType type) {
  std::vector<int64_t> shape;
  for (int64_t dim : type.getShape())
    shape.push_back(ShapedType::isDynamic(dim) ? -1 : dim);
  return shape;
}

/// The graph's input and output name their dynamic (batch) dimension `N`; a `recv` output's
/// value info writes it as -1, as the manifest does (docs/artifact-format.md).
enum class DynamicDim { Named, MinusOne };

void setValueInfo(onnx::ValueInfoProto *info, StringRef name, RankedTensorType type,
                  DynamicDim dynamic = DynamicDim::Named) {
  info->set_name(name.str());
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto *shape = tensor->mutable_shape();
  for (int64_t dim : type.getShape()) {
    auto *d = shape->add_dim();
    if (!ShapedType::isDynamic(dim))
      d->set_dim_value(dim);
    else if (dynamic == DynamicDim::Named)
      d->set_dim_param("N");
    else
      d->set_dim_value(-1);
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
  } else if (auto surrogate = dyn_cast<SurrogateKindAttr>(attr)) {
    out.set_type(onnx::AttributeProto::STRING);
    out.set_s(stringifySurrogateKind(surrogate.getValue()).str());
  } else if (auto variant = dyn_cast<ParallelVariantAttr>(attr)) {
    out.set_type(onnx::AttributeProto::STRING);
    out.set_s(stringifyParallelVariant(variant.getValue()).str());
  } else if (auto str = dyn_cast<StringAttr>(attr)) {
    out.set_type(onnx::AttributeProto::STRING);
    out.set_s(str.getValue().str());
  } else if (auto array = dyn_cast<ArrayAttr>(attr);
             array && llvm::all_of(array, [](Attribute a) { return isa<StringAttr>(a); })) {
    out.set_type(onnx::AttributeProto::STRINGS);
    for (Attribute a : array)
      out.add_strings(cast<StringAttr>(a).getValue().str());
  } else {
    return false;
  }
  return true;
}

/// Part `part` of `parts` of `param`'s value along `axis` (all of it for parts = 1), as the
/// float32 bytes of an initializer, and its shape.
std::string partBytes(ParameterOp param, int64_t axis, int64_t part, int64_t parts,
                      std::vector<int64_t> &shape) {
  auto type = cast<RankedTensorType>(param.getType());
  shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    if (dim < axis)
      outer *= shape[dim];
    else if (dim > axis)
      inner *= shape[dim];
  }
  int64_t whole = type.getRank() ? shape[axis] : 1, size = whole / parts;
  if (type.getRank())
    shape[axis] = size;
  auto elements = cast<DenseFPElementsAttr>(param.getValue()).getValues<float>();
  std::vector<float> values(elements.begin(), elements.end());
  std::string raw;
  raw.reserve(outer * size * inner * sizeof(float));
  for (int64_t o = 0; o < outer; ++o) {
    const float *from = values.data() + (o * whole + part * size) * inner;
    raw.append(reinterpret_cast<const char *>(from), size * inner * sizeof(float));
  }
  return raw;
}

/// Sets `tensor` to `param`'s initializer for coordinate `part` (the whole value when
/// `sliced` is null).
void fillInitializer(onnx::TensorProto &tensor, ParameterOp param, const SlicedParameter *sliced,
                     int64_t part, int64_t parts) {
  std::vector<int64_t> shape;
  int64_t axis = sliced ? int64_t(sliced->slice.getAxis()) : 0;
  std::string raw = partBytes(param, axis, sliced ? part : 0, sliced ? parts : 1, shape);
  tensor.Clear();
  tensor.set_name(param.getName().str());
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : shape)
    tensor.add_dims(dim);
  tensor.set_raw_data(std::move(raw));
}

/// Builds the program ONNX and the manifest's parameter list from @main (or from one
/// pipeline stage function).
class ProgramWriter {
public:
  ProgramWriter(func::FuncOp func, const Partitioning &partitioning)
      : func(func), partitioning(partitioning) {
    if (auto stageAttr = func->getAttrOfType<IntegerAttr>(kStageAttrName))
      stage = stageAttr.getInt();
  }

  LogicalResult write(onnx::ModelProto &model, schema::Manifest &manifest);

private:
  LogicalResult checkSignature();
  LogicalResult writeParameter(ParameterOp param, onnx::GraphProto &graph,
                               std::vector<schema::ParameterSpec> &parameters);
  LogicalResult writeNode(Operation *op, onnx::GraphProto &graph);
  LogicalResult writeOutput(func::ReturnOp ret, onnx::GraphProto &graph);
  void writeBoundary(schema::Manifest &manifest);
  std::string nameOf(Value value) { return names.lookup(value); }
  /// The slice of `param` when the programs hold its parts; null otherwise.
  const SlicedParameter *sliceOf(ParameterOp param) const;

  func::FuncOp func;
  const Partitioning &partitioning;
  /// The logical pipeline stage of a stage function; -1 for @main.
  int64_t stage = -1;
  llvm::DenseMap<Value, std::string> names;
  int nextValue = 0;
};

const SlicedParameter *ProgramWriter::sliceOf(ParameterOp param) const {
  for (Operation *user : param->getUsers())
    if (auto it = partitioning.slicedBy.find(user); it != partitioning.slicedBy.end())
      return &it->second;
  return nullptr;
}

LogicalResult ProgramWriter::writeParameter(ParameterOp param, onnx::GraphProto &graph,
                                            std::vector<schema::ParameterSpec> &parameters) {
  auto values = dyn_cast<DenseFPElementsAttr>(param.getValue());
  auto type = cast<RankedTensorType>(param.getType());
  if (!values || !type.getElementType().isF32())
    return param.emitError("parameter '") << param.getName() << "' must be dense float32";
  const SlicedParameter *sliced = sliceOf(param);
  fillInitializer(*graph.add_initializer(), param, sliced, /*part=*/0, partitioning.parts);
  names[param.getResult()] = param.getName().str();
  schema::ParameterSpec spec{param.getName().str(), manifestShape(type),
                             param.getBuffer() ? schema::ParameterKind::Buffer
                                               : schema::ParameterKind::Parameter,
                             schema::kReplicated};
  spec.stage = stage;
  spec.frozen = param.getFrozen();
  if (sliced) {
    spec.sharding = schema::kSplit;
    spec.splitDim = int64_t(sliced->slice.getAxis());
    spec.meshAxis = sliced->slice.getMeshAxis().str();
    if (auto groups = param->getAttrOfType<IntegerAttr>(kSplitGroupsAttrName))
      spec.splitGroups = groups.getInt();
    // The slice is no node: its users read the program's own part under the parameter name.
    names[sliced->slice.getResult()] = param.getName().str();
  }
  parameters.push_back(std::move(spec));
  return success();
}

LogicalResult ProgramWriter::writeNode(Operation *op, onnx::GraphProto &graph) {
  if (partitioning.slicedBy.count(op))
    return success(); // written with its parameter
  if (shardapi::isShardOp(op) && !shardapi::isPlanAnnotationOp(op))
    return op->emitError("cannot export '")
           << op->getName() << "': run --snn-partition to turn shard collectives into snn ones";
  if (shardapi::isShardOp(op)) {
    // An annotation forwards its value; a sharding value feeds only annotations.
    if (Value source = shardapi::annotatedSource(op))
      names[op->getResult(0)] = nameOf(source);
    return success();
  }
  if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "snn" ||
      isa<ONNXNodeOp>(op))
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
  // What a stage receives has no producer in its program: its value info gives the shape.
  if (auto recv = dyn_cast<RecvOp>(op))
    setValueInfo(graph.add_value_info(), nameOf(recv.getResult()),
                 cast<RankedTensorType>(recv.getType()), DynamicDim::MinusOne);
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

/// @main takes one input and returns one output. Of a pipeline's stage functions, the first
/// takes the input and the last returns the output; the exporter checks which is which.
LogicalResult ProgramWriter::checkSignature() {
  if (stage < 0 && (func.getNumArguments() != 1 || func.getNumResults() != 1))
    return func.emitError("@main must take one input and return one output");
  if (func.getNumArguments() > 1 || func.getNumResults() > 1)
    return func.emitError("@") << func.getSymName()
                               << " must take at most one input and return at most one output";
  for (Type type : llvm::concat<const Type>(func.getArgumentTypes(), func.getResultTypes()))
    if (!isa<RankedTensorType>(type))
      return func.emitError("@") << func.getSymName()
                                 << " input and output must be ranked tensors";
  return success();
}

/// Renames the returned value so the graph output is always called `output`.
LogicalResult ProgramWriter::writeOutput(func::ReturnOp ret, onnx::GraphProto &graph) {
  if (ret.getNumOperands() == 0)
    return success(); // a pipeline stage before the last
  Value result = ret.getOperand(0);
  onnx::NodeProto *producer = nullptr;
  for (auto &node : *graph.mutable_node())
    for (auto &out : *node.mutable_output())
      if (out == nameOf(result))
        producer = &node, out = "output";
  if (!producer)
    return ret.emitError("@") << func.getSymName() << " must return the result of an snn op";
  setValueInfo(graph.add_output(), "output", cast<RankedTensorType>(result.getType()));
  return success();
}

/// The manifest's input and output specs, for the boundary this function has.
void ProgramWriter::writeBoundary(schema::Manifest &manifest) {
  if (func.getNumArguments() == 1)
    manifest.input = {"input", manifestShape(cast<RankedTensorType>(func.getArgument(0).getType())),
                      /*timeMajor=*/true};
  if (func.getNumResults() != 1)
    return;
  // The readout decides the layout; a planned module's annotations forward its value.
  Value readout = func.getBody().front().getTerminator()->getOperand(0);
  while (Operation *def = readout.getDefiningOp()) {
    if (!shardapi::isShardOp(def))
      break;
    Value source = shardapi::annotatedSource(def);
    if (!source)
      break;
    readout = source;
  }
  bool outputTimeMajor = !isa_and_nonnull<MeanTimeOp, SumTimeOp>(readout.getDefiningOp());
  manifest.output = {"output", manifestShape(cast<RankedTensorType>(func.getResultTypes()[0])),
                     outputTimeMajor};
}

LogicalResult ProgramWriter::write(onnx::ModelProto &model, schema::Manifest &manifest) {
  model.set_ir_version(8);
  model.set_producer_name(schema::kArtifactProducer);
  auto *opset = model.add_opset_import();
  opset->set_domain(schema::kArtifactDomain);
  opset->set_version(schema::kArtifactOpsetVersion);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name(func.getSymName().str());
  if (failed(checkSignature()))
    return failure();
  if (func.getNumArguments() == 1) {
    names[func.getArgument(0)] = "input";
    setValueInfo(graph.add_input(), "input", cast<RankedTensorType>(func.getArgument(0).getType()));
  }
  std::vector<schema::ParameterSpec> parameters;
  for (Operation &op : func.getBody().front()) {
    LogicalResult written = success();
    if (auto param = dyn_cast<ParameterOp>(op))
      written = writeParameter(param, graph, parameters);
    else if (auto ret = dyn_cast<func::ReturnOp>(op))
      written = writeOutput(ret, graph);
    else
      written = writeNode(&op, graph);
    if (failed(written))
      return failure();
  }
  writeBoundary(manifest);
  manifest.parameters = std::move(parameters);
  return success();
}

} // namespace

FailureOr<Partitioning> findSlicedParameters(func::FuncOp func, StringRef meshAxis,
                                             int64_t parts) {
  Partitioning partitioning;
  partitioning.meshAxis = meshAxis.str();
  partitioning.parts = parts;
  if (meshAxis.empty())
    return partitioning;
  for (auto param : func.getBody().front().getOps<ParameterOp>()) {
    auto users = llvm::to_vector(param->getUsers());
    size_t slices = llvm::count_if(users, [](Operation *user) { return isa<AllSliceOp>(user); });
    if (slices == 0)
      continue;
    // The artifact holds one part per program: every use must read that part.
    if (slices > 1)
      return param.emitError("parameter '")
             << param.getName() << "' is sliced " << slices
             << " times: a partitioned artifact stores one part of it per program";
    if (users.size() != 1)
      return param.emitError("parameter '")
             << param.getName()
             << "' is used both sliced and whole: a partitioned artifact stores only its part";
    auto slice = cast<AllSliceOp>(users.front());
    if (slice.getMeshAxis() != meshAxis)
      return param.emitError("parameter '")
             << param.getName() << "' is sliced over mesh axis '" << slice.getMeshAxis()
             << "': the programs are per '" << meshAxis << "' coordinate";
    partitioning.slicedBy[slice] = {param, slice};
  }
  return partitioning;
}

LogicalResult writeProgram(func::FuncOp func, const Partitioning &partitioning,
                           onnx::ModelProto &model, schema::Manifest &manifest) {
  return ProgramWriter(func, partitioning).write(model, manifest);
}

onnx::ModelProto programForPart(const onnx::ModelProto &model, const Partitioning &partitioning,
                                int64_t part) {
  onnx::ModelProto copy = model;
  for (const auto &[op, sliced] : partitioning.slicedBy)
    for (onnx::TensorProto &tensor : *copy.mutable_graph()->mutable_initializer())
      if (tensor.name() == sliced.parameter.getName())
        fillInitializer(tensor, sliced.parameter, &sliced, part, partitioning.parts);
  return copy;
}

void setMeshCoordinate(onnx::ModelProto &model,
                       const std::vector<std::pair<std::string, int64_t>> &coordinate) {
  std::string value;
  for (const auto &[axis, index] : coordinate)
    value += (value.empty() ? "" : ",") + axis + "=" + std::to_string(index);
  onnx::StringStringEntryProto *entry = model.add_metadata_props();
  entry->set_key(schema::kMeshCoordinateKey);
  entry->set_value(value);
}

} // namespace snn
