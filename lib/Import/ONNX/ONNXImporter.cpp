#include "snn/Import/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/OnnxProfile.h"

#include "onnx/onnx_pb.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace {

/// Turns one ONNX ModelProto into generic IR. Values are tracked by ONNX name.
class ONNXImporter {
public:
  ONNXImporter(MLIRContext *context, StringRef path)
      : context(context), builder(context), path(path.str()),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)) {}

  OwningOpRef<ModuleOp> import(const onnx::ModelProto &model);

private:
  LogicalResult importInitializer(const onnx::TensorProto &tensor);
  LogicalResult readFrozen(const onnx::ModelProto &model);
  LogicalResult readInputRepeatedOverTime(const onnx::ModelProto &model, ArrayRef<Type> inputs,
                                          ModuleOp module);
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  FailureOr<Type> importValueType(const onnx::TypeProto &type, StringRef name);
  FailureOr<Attribute> importAttribute(const onnx::AttributeProto &attr, Location loc,
                                       StringRef what);
  FailureOr<DictionaryAttr> importAttributes(const onnx::NodeProto &node, Location loc,
                                             StringRef what);
  FailureOr<DenseElementsAttr> importTensor(const onnx::TensorProto &tensor, Location loc);
  Location nodeLoc(const onnx::NodeProto &node, int index);
  InFlightDiagnostic error(const Twine &message) { return emitError(fileLoc, message); }

  MLIRContext *context;
  OpBuilder builder;
  std::string path;
  Location fileLoc;
  llvm::StringMap<Value> values;
  llvm::StringMap<Type> valueInfo;
  /// Initializers the exporter marked frozen (requires_grad=False in PyTorch).
  llvm::StringSet<> frozen;
};

/// The metadata key under which snnexport lists frozen parameters, comma-separated.
constexpr llvm::StringRef kFrozenKey = snn::schema::profile::kFrozenKey;
/// The metadata key saying the model repeats its static input over T ("true" or "false").
constexpr llvm::StringRef kRepeatedKey = snn::schema::profile::kInputRepeatedOverTimeKey;

} // namespace

/// The number of elements of `shape`; none for a negative dim (a flipped sign bit must not
/// become a tensor type with negative extents) or a product beyond int64_t.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    if (dim < 0 || llvm::MulOverflow(count, dim, count))
      return std::nullopt;
  return count;
}

static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return text;
}

Location ONNXImporter::nodeLoc(const onnx::NodeProto &node, int index) {
  std::string name = node.name().empty() ? node.op_type() + "#" + std::to_string(index)
                                         : node.name();
  return NameLoc::get(StringAttr::get(context, name),
                      FileLineColLoc::get(context, path, index + 1, 0));
}

FailureOr<Type> ONNXImporter::importValueType(const onnx::TypeProto &type, StringRef name) {
  if (!type.has_tensor_type())
    return error("value '" + name + "' is not a tensor"), failure();
  const auto &tensor = type.tensor_type();
  Type element;
  switch (tensor.elem_type()) {
  case onnx::TensorProto::FLOAT:
    element = builder.getF32Type();
    break;
  case onnx::TensorProto::INT64:
    element = builder.getI64Type();
    break;
  default:
    return error("value '" + name + "' has unsupported element type " +
                 Twine(tensor.elem_type()) + " (only float32 and int64)"),
           failure();
  }
  if (!tensor.has_shape())
    return Type(UnrankedTensorType::get(element));
  SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim()) {
    // An empty float activation (a batch of 0) never runs; its shape would only meet the
    // ops' inferred shapes later, as MLIR's bare "incompatible return type(s)". (An int64
    // shape tensor may be empty.)
    if (element.isF32() && dim.has_dim_value() && dim.dim_value() == 0)
      return error("value '" + name + "' is declared with dimension " +
                   Twine(shape.size()) + " of size 0: a float tensor of the model is " +
                   "never empty (a batch of at least 1, or a symbolic one such as N)"),
             failure();
    shape.push_back(dim.has_dim_value() && dim.dim_value() >= 0 ? dim.dim_value()
                                                                : ShapedType::kDynamic);
  }
  return Type(RankedTensorType::get(shape, element));
}

FailureOr<DenseElementsAttr> ONNXImporter::importTensor(const onnx::TensorProto &tensor,
                                                        Location loc) {
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  auto count = elementCount(shape);
  if (!count)
    return emitError(loc, "tensor '" + tensor.name() + "' has an invalid shape " +
                              formatShape(shape) +
                              " (dims must be >= 0 and their product fit in 64 bits)"),
           failure();
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc, "tensor '" + tensor.name() + "' uses external data (unsupported)"),
           failure();
  auto sizeError = [&](size_t values) {
    return emitError(loc, "tensor '" + tensor.name() + "' holds " + Twine(values) +
                              " value(s), but its shape " + formatShape(shape) + " needs " +
                              Twine(*count)),
           failure();
  };
  if (tensor.data_type() == onnx::TensorProto::FLOAT) {
    auto type = RankedTensorType::get(shape, builder.getF32Type());
    std::vector<float> data;
    if (tensor.has_raw_data()) {
      // Divided, not multiplied: a huge count times the element size could wrap to a match.
      if (tensor.raw_data().size() % sizeof(float) != 0 ||
          tensor.raw_data().size() / sizeof(float) != static_cast<uint64_t>(*count))
        return sizeError(tensor.raw_data().size() / sizeof(float));
      data.resize(*count);
      std::memcpy(data.data(), tensor.raw_data().data(), tensor.raw_data().size());
    } else {
      if (tensor.float_data_size() != *count)
        return sizeError(tensor.float_data_size());
      data.assign(tensor.float_data().begin(), tensor.float_data().end());
    }
    return DenseElementsAttr::get(type, ArrayRef<float>(data));
  }
  if (tensor.data_type() == onnx::TensorProto::INT64) {
    auto type = RankedTensorType::get(shape, builder.getI64Type());
    std::vector<int64_t> data;
    if (tensor.has_raw_data()) {
      // Divided, not multiplied: a huge count times the element size could wrap to a match.
      if (tensor.raw_data().size() % sizeof(int64_t) != 0 ||
          tensor.raw_data().size() / sizeof(int64_t) != static_cast<uint64_t>(*count))
        return sizeError(tensor.raw_data().size() / sizeof(int64_t));
      data.resize(*count);
      std::memcpy(data.data(), tensor.raw_data().data(), tensor.raw_data().size());
    } else {
      if (tensor.int64_data_size() != *count)
        return sizeError(tensor.int64_data_size());
      data.assign(tensor.int64_data().begin(), tensor.int64_data().end());
    }
    return DenseElementsAttr::get(type, ArrayRef<int64_t>(data));
  }
  return emitError(loc, "tensor '" + tensor.name() + "' has unsupported data type " +
                            Twine(tensor.data_type()) + " (only float32 and int64)"),
         failure();
}

LogicalResult ONNXImporter::importInitializer(const onnx::TensorProto &tensor) {
  Location loc = NameLoc::get(StringAttr::get(context, tensor.name()), fileLoc);
  auto value = importTensor(tensor, loc);
  if (failed(value))
    return failure();
  if (value->getElementType().isF32()) {
    auto param = snn::ParameterOp::create(builder, loc, tensor.name(), *value,
                                          /*buffer=*/false);
    if (frozen.contains(tensor.name()))
      param.setFrozen(true);
    values[tensor.name()] = param;
  } else {
    values[tensor.name()] = arith::ConstantOp::create(builder, loc, *value);
  }
  return success();
}

/// The frozen parameter names of the model's metadata (none when the key is absent).
LogicalResult ONNXImporter::readFrozen(const onnx::ModelProto &model) {
  for (const auto &entry : model.metadata_props()) {
    if (entry.key() != kFrozenKey)
      continue;
    SmallVector<StringRef> names;
    StringRef(entry.value()).split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef name : names)
      frozen.insert(name.trim());
  }
  return success();
}

/// Marks `module` when the metadata says the model repeats its input over T. The graph input
/// must then be the repetition, [T, N, ...]; a value other than "true" or "false" is refused
/// rather than guessed.
LogicalResult ONNXImporter::readInputRepeatedOverTime(const onnx::ModelProto &model,
                                                      ArrayRef<Type> inputs, ModuleOp module) {
  for (const auto &entry : model.metadata_props()) {
    if (entry.key() != kRepeatedKey || entry.value() == "false")
      continue;
    if (entry.value() != "true")
      return error("metadata '" + kRepeatedKey + "' is '" + entry.value() +
                   "'; expected 'true' or 'false'");
    auto type = inputs.size() == 1 ? dyn_cast<RankedTensorType>(inputs[0]) : RankedTensorType();
    if (!type || type.getRank() < 2)
      return error("metadata '" + kRepeatedKey +
                   "' says the model repeats its input over T, but the graph does not have "
                   "one ranked [T, N, ...] input");
    module->setAttr(snn::kInputRepeatedOverTimeAttrName, builder.getUnitAttr());
  }
  return success();
}

/// `what` names the node for diagnostics.
FailureOr<Attribute> ONNXImporter::importAttribute(const onnx::AttributeProto &attr,
                                                   Location loc, StringRef what) {
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return Attribute(builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::FLOAT:
    return Attribute(builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::STRING:
    return Attribute(builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS:
    return Attribute(builder.getDenseI64ArrayAttr(
        SmallVector<int64_t>(attr.ints().begin(), attr.ints().end())));
  case onnx::AttributeProto::FLOATS:
    return Attribute(builder.getDenseF32ArrayAttr(
        SmallVector<float>(attr.floats().begin(), attr.floats().end())));
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> strings;
    for (const std::string &text : attr.strings())
      strings.push_back(builder.getStringAttr(text));
    return Attribute(builder.getArrayAttr(strings));
  }
  case onnx::AttributeProto::TENSOR: {
    auto tensor = importTensor(attr.t(), loc);
    if (failed(tensor))
      return failure();
    return Attribute(*tensor);
  }
  default:
    return emitError(loc, what + ": attribute '" + attr.name() + "' has an unsupported kind (" +
                              onnx::AttributeProto::AttributeType_Name(attr.type()) +
                              "; expected INT, FLOAT, STRING, INTS, FLOATS, STRINGS or TENSOR)"),
           failure();
  }
}

/// A node's attributes; a name given twice is refused (a dictionary would keep one silently).
FailureOr<DictionaryAttr> ONNXImporter::importAttributes(const onnx::NodeProto &node,
                                                         Location loc, StringRef what) {
  SmallVector<NamedAttribute> attrs;
  llvm::StringSet<> seen;
  for (const auto &attr : node.attribute()) {
    if (!seen.insert(attr.name()).second)
      return emitError(loc, what + ": attribute '" + attr.name() + "' is given more than once"),
             failure();
    auto value = importAttribute(attr, loc, what);
    if (failed(value))
      return failure();
    attrs.push_back(builder.getNamedAttr(attr.name(), *value));
  }
  return builder.getDictionaryAttr(attrs);
}

LogicalResult ONNXImporter::importNode(const onnx::NodeProto &node, int index) {
  Location loc = nodeLoc(node, index);
  std::string what = "node '" + cast<NameLoc>(loc).getName().str() + "' (" + node.op_type() +
                     ")";
  SmallVector<Value> inputs;
  for (const auto &[position, name] : llvm::enumerate(node.input())) {
    if (name.empty()) {
      // An omitted optional input; one before a given input would shift its position.
      if (llvm::any_of(llvm::drop_begin(node.input(), position + 1),
                       [](const std::string &later) { return !later.empty(); }))
        return emitError(loc, what + ": omitted input #" + Twine(position) +
                                  " before a given one is not supported");
      continue;
    }
    auto it = values.find(name);
    if (it == values.end())
      return emitError(loc, what + " uses undefined value '" + name + "'");
    inputs.push_back(it->second);
  }
  auto attrs = importAttributes(node, loc, what);
  if (failed(attrs))
    return failure();
  SmallVector<Type> resultTypes;
  for (const std::string &name : node.output()) {
    auto it = valueInfo.find(name);
    resultTypes.push_back(it != valueInfo.end() ? it->second
                                                : UnrankedTensorType::get(builder.getF32Type()));
  }
  auto op = snn::ONNXNodeOp::create(builder, loc, resultTypes, node.op_type(), node.domain(),
                                    *attrs, inputs);
  for (auto [name, result] : llvm::zip(node.output(), op.getResults()))
    values[name] = result;
  return success();
}

OwningOpRef<ModuleOp> ONNXImporter::import(const onnx::ModelProto &model) {
  const onnx::GraphProto &graph = model.graph();
  if (graph.output_size() == 0)
    return error("the graph has no output (not an ONNX model?)"), nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("snn.source", builder.getStringAttr(path));
  for (const auto &info : graph.value_info()) {
    auto type = importValueType(info.type(), info.name());
    if (failed(type)) // reported; a model that printed an error must not compile
      return nullptr;
    valueInfo[info.name()] = *type;
  }

  llvm::StringSet<> initializerNames;
  for (const auto &tensor : graph.initializer())
    initializerNames.insert(tensor.name());
  if (failed(readFrozen(model)))
    return nullptr;
  for (const auto &name : frozen.keys())
    if (!initializerNames.contains(name))
      return error("metadata '" + kFrozenKey + "' names '" + name +
                   "', which is no initializer of the graph"),
             nullptr;
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    auto type = importValueType(input.type(), input.name());
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
  }
  if (failed(readInputRepeatedOverTime(model, argTypes, *module)))
    return nullptr;
  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    auto type = importValueType(output.type(), output.name());
    if (failed(type))
      return nullptr;
    resultTypes.push_back(*type);
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(argTypes, resultTypes));
  Block *body = func.addEntryBlock();
  for (auto [index, name] : llvm::enumerate(argNames)) {
    values[name] = body->getArgument(index);
    func.setArgAttr(index, "snn.name", builder.getStringAttr(name));
  }
  builder.setInsertionPointToEnd(body);
  for (const auto &tensor : graph.initializer())
    if (failed(importInitializer(tensor)))
      return nullptr;
  for (const auto &[index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index)))
      return nullptr;

  SmallVector<Value> results;
  for (const auto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end())
      return error("graph output '" + output.name() + "' is never produced"), nullptr;
    results.push_back(it->second);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  // Intermediate types may be unknown until legalization; the signature follows the values.
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  return module;
}

OwningOpRef<ModuleOp> snn::importONNXBuffer(MLIRContext *context, StringRef bytes,
                                            StringRef name) {
  context->loadDialect<snn::SNNDialect, arith::ArithDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, name, 0, 0);
  onnx::ModelProto model;
  bool parsed = false;
  if (bytes.size() <= size_t(std::numeric_limits<int>::max())) {
    try {
      parsed = model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    } catch (const std::exception &e) {
      parsed = false;
    }
  }
  if (!parsed || !model.has_graph()) {
    emitError(fileLoc, "not a valid ONNX model (truncated or not protobuf)");
    return nullptr;
  }
  return ONNXImporter(context, name).import(model);
}

OwningOpRef<ModuleOp> snn::importONNXFile(MLIRContext *context, StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0),
              "cannot open: " + buffer.getError().message());
    return nullptr;
  }
  return importONNXBuffer(context, (*buffer)->getBuffer(), path);
}
