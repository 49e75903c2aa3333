#include "mimic/ops/dispatch.h"

#include <ATen/core/List.h>
#include <ATen/core/jit_type.h>
#include <ATen/ops/empty.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/Stream.h>

#include <span>
#include <string_view>

#include "mimic/eg/workload.h"

namespace mimic::ops {
namespace {

struct DTypeMap {
  proto::DType proto;
  c10::ScalarType torch;
  const char* python;  // torch.<python>
};
constexpr DTypeMap kDTypeMap[] = {
    {proto::FLOAT32, c10::kFloat, "float32"},
    {proto::FLOAT64, c10::kDouble, "float64"},
    {proto::FLOAT16, c10::kHalf, "float16"},
    {proto::BFLOAT16, c10::kBFloat16, "bfloat16"},
    {proto::INT8, c10::kChar, "int8"},
    {proto::UINT8, c10::kByte, "uint8"},
    {proto::INT16, c10::kShort, "int16"},
    {proto::INT32, c10::kInt, "int32"},
    {proto::INT64, c10::kLong, "int64"},
    {proto::BOOL, c10::kBool, "bool"},
    {proto::COMPLEX64, c10::kComplexFloat, "complex64"},
    {proto::COMPLEX128, c10::kComplexDouble, "complex128"},
    {proto::FLOAT8_E4M3FN, c10::ScalarType::Float8_e4m3fn, "float8_e4m3fn"},
    {proto::FLOAT8_E5M2, c10::ScalarType::Float8_e5m2, "float8_e5m2"},
    {proto::UINT16, c10::ScalarType::UInt16, "uint16"},
    {proto::UINT32, c10::ScalarType::UInt32, "uint32"},
    {proto::UINT64, c10::ScalarType::UInt64, "uint64"},
};

// Enum arguments a trace may record by name rather than by number (Kineto's concrete inputs,
// str() of a Python value): "torch.float32", "Float", "torch.strided", "torch.channels_last".
struct EnumName {
  const char* name;
  int64_t value;
};
constexpr EnumName kLayouts[] = {
    {"torch.strided", static_cast<int64_t>(c10::kStrided)},
    {"torch.sparse_coo", static_cast<int64_t>(c10::kSparse)},
    {"torch.sparse_csr", static_cast<int64_t>(c10::kSparseCsr)},
    {"torch.sparse_csc", static_cast<int64_t>(c10::kSparseCsc)},
    {"torch.sparse_bsr", static_cast<int64_t>(c10::kSparseBsr)},
    {"torch.sparse_bsc", static_cast<int64_t>(c10::kSparseBsc)},
    {"torch._mkldnn", static_cast<int64_t>(c10::kMkldnn)},
    {"torch.jagged", static_cast<int64_t>(c10::kJagged)},
};
constexpr EnumName kMemoryFormats[] = {
    {"torch.contiguous_format", static_cast<int64_t>(c10::MemoryFormat::Contiguous)},
    {"torch.preserve_format", static_cast<int64_t>(c10::MemoryFormat::Preserve)},
    {"torch.channels_last", static_cast<int64_t>(c10::MemoryFormat::ChannelsLast)},
    {"torch.channels_last_3d", static_cast<int64_t>(c10::MemoryFormat::ChannelsLast3d)},
};

bool EnumByName(c10::TypeKind kind, std::string_view name, int64_t* out) {
  if (kind == c10::TypeKind::ScalarTypeType) {
    for (const DTypeMap& m : kDTypeMap)
      if (name == std::string("torch.") + m.python || name == c10::toString(m.torch))
        return *out = static_cast<int64_t>(m.torch), true;
    return false;
  }
  const auto& table = kind == c10::TypeKind::LayoutType ? std::span<const EnumName>(kLayouts)
                                                        : std::span<const EnumName>(kMemoryFormats);
  for (const EnumName& e : table)
    if (name == e.name) return *out = e.value, true;
  return false;
}

using K = proto::Value::KindCase;

// Whether the op's recorded tensor outputs are on an accelerator: a factory op given no device
// made them on the default device, which was then not the host.
bool OutputsOffHost(const proto::Workload& w, const proto::Op& op) {
  for (const proto::Value& out : op.outputs())
    if (out.kind_case() == K::kTensor && out.tensor() >= 0) {
      const std::string& d = w.tensors(out.tensor()).device();
      return !d.empty() && d.rfind("cpu", 0) != 0;
    }
  return false;
}

// Converts recorded values to IValues of a schema's types. Tensors are not looked up: their
// position is noted in `slots` and an undefined tensor holds the place.
struct Converter {
  const proto::Workload& w;
  const proto::Op& op;
  c10::Device device;
  bool remap_host;
  std::vector<TensorSlot>& slots;
  int32_t arg = 0;    // the stack argument being converted
  int32_t item = -1;  // the list item being converted, -1 outside lists

  Status Unconvertible(const proto::Value& v, const c10::TypePtr& type, const std::string& name) {
    return Status::Unsupported("argument '" + name + "' of type " + type->str() +
                               " cannot take the recorded value (" + eg::TypeName(w, v.type()) +
                               ")");
  }

  c10::IValue TensorPlaceholder(int entry, bool storage) {
    if (entry < 0) return c10::IValue(at::Tensor());
    slots.push_back({arg, item, entry, storage});
    return c10::IValue(at::Tensor());
  }

  // An optional argument given nothing. A factory op given no device made its outputs on the
  // default device: where that was the recorded accelerator (or a host the replay remaps), the
  // replay's device stands for it.
  c10::IValue Absent(const c10::TypePtr& type) const {
    const bool device_arg = type->kind() == c10::TypeKind::OptionalType &&
                            type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
                                c10::TypeKind::DeviceObjType;
    return device_arg && (remap_host || OutputsOffHost(w, op)) ? c10::IValue(device)
                                                               : c10::IValue();
  }

  Result<c10::IValue> Convert(const proto::Value& v, const c10::TypePtr& type,
                              const std::string& name) {
    const K kind = v.kind_case();
    switch (type->kind()) {
      case c10::TypeKind::OptionalType:
        if (kind == K::kNone || kind == K::KIND_NOT_SET || kind == K::kOpaque ||
            (kind == K::kTensor && v.tensor() < 0))
          return Absent(type);
        return Convert(v, type->castRaw<c10::OptionalType>()->getElementType(), name);
      case c10::TypeKind::TensorType:
        if (kind == K::kTensor) return TensorPlaceholder(v.tensor(), false);
        break;
      case c10::TypeKind::StorageType:
        return ConvertStorage(v, type, name);
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        if (kind == K::kIntValue) return c10::IValue(v.int_value());
        if (kind == K::kBoolValue) return c10::IValue(static_cast<int64_t>(v.bool_value()));
        if (kind == K::kDoubleValue) return c10::IValue(static_cast<int64_t>(v.double_value()));
        break;
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
        if (kind == K::kDoubleValue) return c10::IValue(v.double_value());
        if (kind == K::kIntValue) return c10::IValue(static_cast<double>(v.int_value()));
        break;
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType:
        // Pinned host memory needs a GPU driver; where the replay has none it is plain memory.
        if (name == "pin_memory" && !device.is_cuda()) return c10::IValue(false);
        if (kind == K::kBoolValue) return c10::IValue(v.bool_value());
        if (kind == K::kIntValue) return c10::IValue(v.int_value() != 0);
        break;
      case c10::TypeKind::NumberType:  // Scalar
        if (kind == K::kIntValue) return c10::IValue(v.int_value());
        if (kind == K::kDoubleValue) return c10::IValue(v.double_value());
        if (kind == K::kBoolValue) return c10::IValue(v.bool_value());
        break;
      case c10::TypeKind::StringType:  // str and Dimname
        if (kind == K::kStringValue) return c10::IValue(v.string_value());
        if (kind == K::kDevice) return c10::IValue(v.device());
        break;
      case c10::TypeKind::DeviceObjType:
        return ConvertDevice(v, type, name);
      case c10::TypeKind::StreamObjType:
        // Streams are the replay's own (each op runs on its lane's stream): the device's
        // default stream stands for whatever the trace recorded.
        return c10::IValue(c10::Stream(c10::Stream::DEFAULT, device));
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType: {
        int64_t e = 0;
        if (kind == K::kIntValue) return c10::IValue(v.int_value());
        if (kind == K::kStringValue && EnumByName(type->kind(), v.string_value(), &e))
          return c10::IValue(e);
        break;
      }
      case c10::TypeKind::GeneratorType:  // a fresh default generator of the device
        if (kind == K::kOpaque || kind == K::kNone) return c10::IValue();
        break;
      case c10::TypeKind::AnyType:
      case c10::TypeKind::VarType:
        return ConvertAny(v, name);
      case c10::TypeKind::ListType:
        return ConvertList(v, type->castRaw<c10::ListType>()->getElementType(), name);
      default:
        break;
    }
    return Unconvertible(v, type, name);
  }

  // A Storage argument (set_.source_Storage): the recorded tensor's storage when the trace
  // names one, else fresh memory large enough for the op's recorded output.
  Result<c10::IValue> ConvertStorage(const proto::Value& v, const c10::TypePtr& type,
                                     const std::string& name) {
    if (v.kind_case() == K::kTensor && v.tensor() >= 0) return TensorPlaceholder(v.tensor(), true);
    int64_t bytes = 0;
    for (const proto::Value& out : op.outputs()) {
      if (out.kind_case() != K::kTensor || out.tensor() < 0) continue;
      const proto::Tensor& t = w.tensors(out.tensor());
      bytes = std::max(bytes, (t.offset() + t.numel()) * std::max<int64_t>(t.itemsize(), 1));
    }
    if (bytes == 0) return Unconvertible(v, type, name);
    return c10::IValue(NewStorage(bytes, device));
  }

  Result<c10::IValue> ConvertDevice(const proto::Value& v, const c10::TypePtr& type,
                                    const std::string& name) {
    if (v.kind_case() != K::kDevice && v.kind_case() != K::kStringValue)
      return Unconvertible(v, type, name);
    const std::string& text = v.kind_case() == K::kDevice ? v.device() : v.string_value();
    try {
      // Recorded accelerator devices are remapped to the replay's; host devices stay.
      const c10::Device recorded(text);
      return c10::IValue(recorded.is_cpu() && !remap_host ? recorded : device);
    } catch (const c10::Error&) {
      return Unconvertible(v, type, name);
    }
  }

  // A type variable or Any: the recorded value as it is.
  Result<c10::IValue> ConvertAny(const proto::Value& v, const std::string& name) {
    switch (v.kind_case()) {
      case K::kIntValue:
        return c10::IValue(v.int_value());
      case K::kDoubleValue:
        return c10::IValue(v.double_value());
      case K::kBoolValue:
        return c10::IValue(v.bool_value());
      case K::kStringValue:
        return c10::IValue(v.string_value());
      case K::kTensor:
        return TensorPlaceholder(v.tensor(), false);
      case K::kNone:
        return c10::IValue();
      default:
        return Status::Unsupported("argument '" + name + "' holds a recorded " +
                                   eg::TypeName(w, v.type()) + " Mimic cannot pass untyped");
    }
  }

  // Converts every item to `elem` and gathers them with `push`.
  template <typename List, typename Push>
  Result<c10::IValue> Collect(List list, const proto::ValueList& items, const c10::TypePtr& elem,
                              const std::string& name, Push push) {
    for (int k = 0; k < items.items_size(); ++k) {
      item = k;
      Result<c10::IValue> iv = Convert(items.items(k), elem, name);
      item = -1;
      if (!iv.ok()) return iv.status();
      push(list, *iv);
    }
    return c10::IValue(std::move(list));
  }

  Result<c10::IValue> ConvertList(const proto::Value& v, const c10::TypePtr& elem,
                                  const std::string& name) {
    // A scalar recorded for a list argument (int[1] dims passed as one int, say) is a list of one.
    proto::ValueList one;
    if (v.kind_case() != K::kList) *one.add_items() = v;
    const proto::ValueList& items = v.kind_case() == K::kList ? v.list() : one;
    switch (elem->kind()) {
      case c10::TypeKind::TensorType:
        return Collect(c10::List<at::Tensor>(), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv.toTensor()); });
      case c10::TypeKind::OptionalType:
        if (elem->castRaw<c10::OptionalType>()->getElementType()->kind() ==
            c10::TypeKind::TensorType)  // Tensor?[]
          return Collect(c10::List<std::optional<at::Tensor>>(), items, elem, name,
                         [](auto& l, const c10::IValue& iv) {
                           l.push_back(iv.isNone() ? std::optional<at::Tensor>() : iv.toTensor());
                         });
        if (!IsBuildable(elem)) break;
        [[fallthrough]];             // Scalar?[] and the like: a generic list of values and Nones
      case c10::TypeKind::ListType:  // int[][], str[][]: lists of lists
        if (elem->kind() == c10::TypeKind::ListType && !IsBuildable(elem)) break;
        return Collect(c10::impl::GenericList(elem), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv); });
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        return Collect(std::vector<int64_t>(), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv.toInt()); });
      case c10::TypeKind::FloatType:
        return Collect(std::vector<double>(), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv.toDouble()); });
      case c10::TypeKind::BoolType:
        return Collect(c10::List<bool>(), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv.toBool()); });
      case c10::TypeKind::NumberType:  // Scalar[]: a generic list of numbers
      case c10::TypeKind::StringType:  // str[], Dimname[]
      case c10::TypeKind::DeviceObjType:
        return Collect(c10::impl::GenericList(elem), items, elem, name,
                       [](auto& l, const c10::IValue& iv) { l.push_back(iv); });
      default:
        break;
    }
    return Status::Unsupported("argument '" + name + "' is a list of " + elem->str() +
                               ", which Mimic does not build");
  }
};

}  // namespace

bool ToScalarType(proto::DType dtype, c10::ScalarType* out) {
  for (const auto& m : kDTypeMap)
    if (m.proto == dtype) return *out = m.torch, true;
  return false;
}

c10::Storage NewStorage(int64_t bytes, c10::Device device) {
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device)).storage();
}

Result<c10::OperatorHandle> ResolveOperator(const std::string& schema) {
  const size_t paren = schema.find('(');
  const std::string qualified = schema.substr(0, paren);
  const size_t ns = qualified.find("::");
  const size_t dot = qualified.find('.', ns == std::string::npos ? 0 : ns + 2);
  const std::string name = qualified.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return Status::NotFound("no operator " + qualified + " in this LibTorch");
  return *handle;
}

Result<CompiledArgs> CompileArgs(const proto::Op& op, const proto::Workload& w,
                                 const c10::FunctionSchema& schema, c10::Device device,
                                 bool remap_host_devices) {
  const auto& args = schema.arguments();
  if (static_cast<size_t>(op.inputs_size()) > args.size())
    return Status::Unsupported("recorded " + std::to_string(op.inputs_size()) + " inputs for " +
                               std::to_string(args.size()) + " schema arguments");
  CompiledArgs out;
  Converter conv{w, op, device, remap_host_devices, out.tensors};
  out.stack.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    conv.arg = static_cast<int32_t>(i);
    const size_t slots_before = out.tensors.size();
    if (i < static_cast<size_t>(op.inputs_size())) {
      // The real type: the schema's own spelling (ScalarType, Layout, MemoryFormat, SymInt),
      // where type() says int.
      MIMIC_ASSIGN_OR_RETURN(c10::IValue iv, conv.Convert(op.inputs(static_cast<int>(i)),
                                                          args[i].real_type(), args[i].name()));
      if ((iv.isTensorList() || iv.isOptionalTensorList()) && out.tensors.size() > slots_before)
        out.list_args.push_back(conv.arg);
      out.stack.push_back(std::move(iv));
    } else if (const auto& d = args[i].default_value()) {
      out.stack.push_back(d->isNone() ? conv.Absent(args[i].real_type()) : *d);
    } else {
      return Status::Unsupported("argument '" + args[i].name() +
                                 "' was not recorded and has no default");
    }
  }
  return out;
}

Status BuildStack(const proto::Op& op, const c10::FunctionSchema& schema, TensorSource& tensors,
                  c10::Device device, torch::jit::Stack* stack, bool remap_host_devices) {
  MIMIC_ASSIGN_OR_RETURN(CompiledArgs args,
                         CompileArgs(op, tensors.workload(), schema, device, remap_host_devices));
  FillStack(
      args, [&](size_t k) { return tensors.Get(args.tensors[k].entry); }, stack);
  return Status::Ok();
}

bool IsBuildable(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::OptionalType:
      return IsBuildable(type->castRaw<c10::OptionalType>()->getElementType()) ||
             type->castRaw<c10::OptionalType>()->getElementType()->kind() ==
                 c10::TypeKind::GeneratorType;
    case c10::TypeKind::ListType: {
      const c10::TypePtr& elem = type->castRaw<c10::ListType>()->getElementType();
      switch (elem->kind()) {
        case c10::TypeKind::OptionalType:
        case c10::TypeKind::ListType:  // Tensor?[], Scalar?[], int[][], str[][] (not Tensor[][])
          return IsBuildable(elem) && !(elem->kind() == c10::TypeKind::ListType &&
                                        elem->castRaw<c10::ListType>()->getElementType()->kind() ==
                                            c10::TypeKind::TensorType);
        case c10::TypeKind::TensorType:
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
        case c10::TypeKind::FloatType:
        case c10::TypeKind::BoolType:
        case c10::TypeKind::NumberType:
        case c10::TypeKind::StringType:
        case c10::TypeKind::DeviceObjType:
          return true;
        default:
          return false;
      }
    }
    case c10::TypeKind::TensorType:
    case c10::TypeKind::StorageType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::SymFloatType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::SymBoolType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::StringType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::StreamObjType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
    case c10::TypeKind::AnyType:
    case c10::TypeKind::VarType:
      return true;
    default:
      return false;
  }
}

}  // namespace mimic::ops
