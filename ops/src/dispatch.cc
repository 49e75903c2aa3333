#include "mimic/ops/dispatch.h"

#include <ATen/core/List.h>
#include <ATen/core/jit_type.h>

#include "mimic/eg/workload.h"

namespace mimic::ops {
namespace {

struct DTypeMap {
  proto::DType proto;
  c10::ScalarType torch;
};
constexpr DTypeMap kDTypeMap[] = {
    {proto::FLOAT32, c10::kFloat},        {proto::FLOAT64, c10::kDouble},
    {proto::FLOAT16, c10::kHalf},         {proto::BFLOAT16, c10::kBFloat16},
    {proto::INT8, c10::kChar},            {proto::UINT8, c10::kByte},
    {proto::INT16, c10::kShort},          {proto::INT32, c10::kInt},
    {proto::INT64, c10::kLong},           {proto::BOOL, c10::kBool},
    {proto::COMPLEX64, c10::kComplexFloat}, {proto::COMPLEX128, c10::kComplexDouble},
    {proto::FLOAT8_E4M3FN, c10::ScalarType::Float8_e4m3fn},
    {proto::FLOAT8_E5M2, c10::ScalarType::Float8_e5m2},
    {proto::UINT16, c10::ScalarType::UInt16}, {proto::UINT32, c10::ScalarType::UInt32},
    {proto::UINT64, c10::ScalarType::UInt64},
};


struct Converter {
  TensorSource& store;
  c10::Device device;
  bool remap_host;

  Result<c10::IValue> Convert(const proto::Value& v, const c10::TypePtr& type,
                              const std::string& arg_name) {
    using K = proto::Value::KindCase;
    const K kind = v.kind_case();
    switch (type->kind()) {
      case c10::TypeKind::OptionalType: {
        if (kind == K::kNone || kind == K::KIND_NOT_SET || (kind == K::kTensor && v.tensor() < 0) ||
            kind == K::kOpaque)
          return c10::IValue();
        return Convert(v, type->castRaw<c10::OptionalType>()->getElementType(), arg_name);
      }
      case c10::TypeKind::TensorType:
        if (kind != K::kTensor) break;
        return c10::IValue(v.tensor() < 0 ? at::Tensor() : store.Get(v.tensor()));
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
        if (arg_name == "pin_memory" && !device.is_cuda()) return c10::IValue(false);
        if (kind == K::kBoolValue) return c10::IValue(v.bool_value());
        if (kind == K::kIntValue) return c10::IValue(v.int_value() != 0);
        break;
      case c10::TypeKind::NumberType:  // Scalar
        if (kind == K::kIntValue) return c10::IValue(v.int_value());
        if (kind == K::kDoubleValue) return c10::IValue(v.double_value());
        if (kind == K::kBoolValue) return c10::IValue(v.bool_value());
        break;
      case c10::TypeKind::StringType:
        if (kind == K::kStringValue) return c10::IValue(v.string_value());
        if (kind == K::kDevice) return c10::IValue(v.device());
        break;
      case c10::TypeKind::DeviceObjType:
        if (kind == K::kDevice || kind == K::kStringValue) {
          // Recorded accelerator devices are remapped to the replay's; host devices stay.
          const std::string& name = kind == K::kDevice ? v.device() : v.string_value();
          try {
            const c10::Device recorded(name);
            return c10::IValue(recorded.is_cpu() && !remap_host ? recorded : device);
          } catch (const c10::Error&) {
            break;
          }
        }
        break;
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType:
        if (kind == K::kIntValue) return c10::IValue(v.int_value());
        break;
      case c10::TypeKind::ListType:
        return ConvertList(v, type->castRaw<c10::ListType>()->getElementType(), arg_name);
      default:
        break;
    }
    return Status::Unsupported("argument '" + arg_name + "' of type " + type->str() +
                               " cannot take the recorded value (" + eg::TypeName(store.workload(), v.type()) + ")");
  }

  // Converts every item to `elem` and gathers them into a List (or vector) with `get`.
  template <typename ListT, typename Get>
  Result<c10::IValue> Collect(const proto::ValueList& items, const c10::TypePtr& elem,
                              const std::string& arg_name, Get get) {
    ListT list;
    for (const proto::Value& item : items.items()) {
      MIMIC_ASSIGN_OR_RETURN(c10::IValue iv, Convert(item, elem, arg_name));
      list.push_back(get(iv));
    }
    return c10::IValue(std::move(list));
  }

  Result<c10::IValue> ConvertList(const proto::Value& v, const c10::TypePtr& elem,
                                  const std::string& arg_name) {
    // A scalar recorded for a list argument (int[1] dims passed as one int, say) is a list of one.
    const proto::ValueList* items = nullptr;
    proto::ValueList one;
    if (v.kind_case() == proto::Value::kList) {
      items = &v.list();
    } else {
      *one.add_items() = v;
      items = &one;
    }
    switch (elem->kind()) {
      case c10::TypeKind::TensorType:
        return Collect<c10::List<at::Tensor>>(*items, elem, arg_name,
                                              [](const c10::IValue& iv) { return iv.toTensor(); });
      case c10::TypeKind::OptionalType:  // Tensor?[]
        if (elem->castRaw<c10::OptionalType>()->getElementType()->kind() != c10::TypeKind::TensorType)
          break;
        return Collect<c10::List<std::optional<at::Tensor>>>(
            *items, elem, arg_name, [](const c10::IValue& iv) {
              return iv.isNone() ? std::optional<at::Tensor>() : iv.toTensor();
            });
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        return Collect<std::vector<int64_t>>(*items, elem, arg_name,
                                             [](const c10::IValue& iv) { return iv.toInt(); });
      case c10::TypeKind::FloatType:
        return Collect<std::vector<double>>(*items, elem, arg_name,
                                            [](const c10::IValue& iv) { return iv.toDouble(); });
      case c10::TypeKind::BoolType:
        return Collect<c10::List<bool>>(*items, elem, arg_name,
                                        [](const c10::IValue& iv) { return iv.toBool(); });
      default:
        break;
    }
    return Status::Unsupported("argument '" + arg_name + "' is a list of " + elem->str() +
                               ", which Mimic does not build");
  }
};

}  // namespace

bool ToScalarType(proto::DType dtype, c10::ScalarType* out) {
  for (const auto& m : kDTypeMap)
    if (m.proto == dtype) return *out = m.torch, true;
  return false;
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

Status BuildStack(const proto::Op& op, const c10::FunctionSchema& schema, TensorSource& store,
                  c10::Device device, torch::jit::Stack* stack, bool remap_host_devices) {
  const auto& args = schema.arguments();
  if (static_cast<size_t>(op.inputs_size()) > args.size())
    return Status::Unsupported("recorded " + std::to_string(op.inputs_size()) + " inputs for " +
                               std::to_string(args.size()) + " schema arguments");
  Converter conv{store, device, remap_host_devices};
  stack->clear();
  stack->reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < static_cast<size_t>(op.inputs_size())) {
      MIMIC_ASSIGN_OR_RETURN(c10::IValue iv, conv.Convert(op.inputs(static_cast<int>(i)), args[i].type(), args[i].name()));
      stack->push_back(std::move(iv));
    } else if (args[i].default_value()) {
      stack->push_back(*args[i].default_value());
    } else {
      return Status::Unsupported("argument '" + args[i].name() + "' was not recorded and has no default");
    }
  }
  return Status::Ok();
}

}  // namespace mimic::ops
