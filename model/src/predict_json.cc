#include "mimic/base/json_writer.h"
#include "mimic/model/predict.h"

namespace mimic::model {
namespace {

std::optional<double> Known(double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; }

}  // namespace

std::string PredictionToJson(const Prediction& p) {
  JsonWriter j;
  j.BeginObject();
  j.Key("platform").String(p.platform);
  j.Key("selection").String(p.selection);
  j.Key("iteration_ms").Double(p.iteration_ms);
  j.Key("gpu_active_ms").Double(p.gpu_active_ms);
  j.Key("original_gpu_active_ms").Optional(Known(p.original_gpu_active_ms));
  j.Key("ranks").Int(p.ranks);
  j.Key("collectives").Int(p.collectives);
  j.Key("comm_ms").Double(p.comm_ms);
  j.Key("exposed_comm_ms").Double(p.exposed_comm_ms);
  j.Key("cpu_overhead_ms").Double(p.cpu_overhead_ms);
  j.Key("page_fault_ms").Double(p.page_fault_ms);
  j.Key("page_faults_per_iteration").Optional(Known(p.page_faults));
  for (const auto& [key, g] :
       {std::pair<const char*, const GpuActive&>{"compute", p.compute}, {"modelled", p.modelled}}) {
    j.Key(std::string("gpu_active_") + key + "_ms").Optional(Known(g.predicted_ms));
    j.Key(std::string("original_gpu_active_") + key + "_ms").Optional(Known(g.original_ms));
  }
  j.Key("unmodelled").BeginObject();
  j.Key("ops").Int(p.unmodelled.ops);
  j.Key("predicted_ms").Double(p.unmodelled.predicted_ms);
  j.Key("original_gpu_active_ms").Optional(Known(p.unmodelled.original_gpu_active_ms));
  j.Key("reasons").BeginObject();
  for (const auto& [reason, n] : p.unmodelled.reasons) j.Key(reason).Int(n);
  j.EndObject();
  j.EndObject();
  j.Key("by_class").BeginObject();
  for (const auto& [name, c] : p.by_class) {
    j.Key(name).BeginObject();
    j.Key("ops").Int(c.ops);
    j.Key("predicted_ms").Double(c.predicted_ms);
    j.Key("original_ms").Optional(Known(c.original_ms));
    j.Key("predicted_gpu_active_ms").Optional(Known(c.predicted_gpu_active_ms));
    j.Key("original_gpu_active_ms").Optional(Known(c.original_gpu_active_ms));
    j.EndObject();
  }
  j.EndObject();
  j.Key("ops").BeginArray();
  for (const OpPrediction& o : p.ops) {
    j.BeginObject();
    j.Key("id").Int(o.op_id);
    j.Key("name").String(o.name);
    j.Key("op_class").String(o.op_class);
    j.Key("model").String(o.model);
    j.Key("bound").StringOrNull(o.bound);
    j.Key("flops").Double(o.flops);
    j.Key("bytes").Double(o.bytes);
    j.Key("compute_us").Double(o.compute_us);
    j.Key("overhead_us").Double(o.overhead_us);
    j.Key("predicted_us").Double(o.predicted_us);
    j.Key("start_us").Double(o.start_us);
    j.Key("original_us")
        .Optional(o.original_us >= 0 ? std::optional<double>(o.original_us) : std::nullopt);
    j.Key("unmodelled").StringOrNull(o.unmodelled);
    j.Key("inputs").BeginArray();
    for (const OpPrediction::Input& in : o.inputs) {
      j.BeginObject();
      j.Key("shape");
      if (!in.shape) {
        j.Null();
      } else {
        j.BeginArray();
        for (int64_t d : *in.shape) j.Int(d);
        j.EndArray();
      }
      j.Key("dtype").String(in.dtype);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("notes").BeginArray();
  for (const std::string& n : p.notes) j.String(n);
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

}  // namespace mimic::model
