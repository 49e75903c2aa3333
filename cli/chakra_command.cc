// mimic export-chakra W [--kineto K] -o PREFIX [--kernel-nodes] [--gzip]
// mimic import-chakra FILE.et [--json]
#include <cstdio>

#include "cli.h"
#include "mimic/base/json_writer.h"
#include "mimic/eg/workload.h"
#include "mimic/synth/chakra.h"

namespace mimic::cli {
namespace {

std::string ImportJson(const std::string& path, const synth::ChakraSummary& s) {
  JsonWriter j;
  j.BeginObject();
  j.Key("file").String(path);
  j.Key("version").String(s.version);
  j.Key("metadata").BeginObject();
  for (const auto& [name, value] : s.metadata) j.Key(name).String(value);
  j.EndObject();
  j.Key("nodes").Int(s.nodes);
  j.Key("node_types").BeginObject();
  for (const auto& [type, count] : s.node_types) j.Key(type).Int(count);
  j.EndObject();
  j.Key("cpu_nodes").Int(s.cpu_nodes);
  j.Key("gpu_nodes").Int(s.gpu_nodes);
  j.Key("comms").BeginObject();
  for (const auto& [kind, c] : s.comms) {
    j.Key(kind).BeginObject();
    j.Key("count").Int(c.count);
    j.Key("total_bytes").Int(c.total_bytes);
    j.Key("min_bytes").Int(c.min_bytes);
    j.Key("max_bytes").Int(c.max_bytes);
    j.EndObject();
  }
  j.EndObject();
  j.Key("deps").BeginObject();
  j.Key("ctrl").Int(s.ctrl_deps);
  j.Key("data").Int(s.data_deps);
  j.Key("cross_stream").Int(s.cross_stream_deps);
  j.Key("dangling").Int(s.dangling_deps);
  j.Key("forward").Int(s.forward_deps);
  j.EndObject();
  j.Key("roots").Int(s.roots);
  j.Key("duplicate_ids").Int(s.duplicate_ids);
  j.EndObject();
  return j.str() + "\n";
}

void PrintImport(const std::string& path, const synth::ChakraSummary& s) {
  auto ll = [](int64_t v) { return static_cast<long long>(v); };
  std::printf("%s\n", path.c_str());
  std::printf("  chakra version  %s\n", s.version.empty() ? "(none)" : s.version.c_str());
  for (const auto& [name, value] : s.metadata)
    std::printf("  metadata        %s = %s\n", name.c_str(), value.c_str());
  std::printf("  nodes           %lld", ll(s.nodes));
  const char* sep = " (";
  for (const auto& [type, count] : s.node_types) {
    std::printf("%s%s %lld", sep, type.c_str(), ll(count));
    sep = ", ";
  }
  std::printf("%s\n", s.node_types.empty() ? "" : ")");
  if (s.cpu_nodes + s.gpu_nodes > 0)
    std::printf("  compute         %lld on the CPU, %lld on the GPU\n", ll(s.cpu_nodes), ll(s.gpu_nodes));
  for (const auto& [kind, c] : s.comms)
    std::printf("  comm            %-14s x%lld  %lld bytes total (min %lld, max %lld)\n", kind.c_str(),
                ll(c.count), ll(c.total_bytes), ll(c.min_bytes), ll(c.max_bytes));
  std::printf("  deps            ctrl %lld, data %lld (%lld across streams); roots %lld\n", ll(s.ctrl_deps),
              ll(s.data_deps), ll(s.cross_stream_deps), ll(s.roots));
  if (s.dangling_deps + s.forward_deps + s.duplicate_ids > 0)
    std::printf("  warning         %lld deps to missing ids, %lld to later nodes, %lld duplicate ids\n",
                ll(s.dangling_deps), ll(s.forward_deps), ll(s.duplicate_ids));
}

}  // namespace

Runner AddExportChakra(CLI::App& app) {
  struct Args {
    std::string input, kineto, prefix;
    bool kernel_nodes = false;
    bool gzip = false;
    bool portable_names = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("input", args->input, "Execution trace (.json or .json.gz) or .mimic workload")->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  app.add_option("-o,--output", args->prefix, "Output prefix: writes PREFIX.<rank>.et")->required();
  app.add_flag("--kernel-nodes", args->kernel_nodes,
               "One GPU node per linked kernel, after the CPU node of the op that launched it");
  app.add_flag("--gzip", args->gzip, "Write PREFIX.<rank>.et.gz, gzip-compressed");
  app.add_flag("--portable-names", args->portable_names,
               "Name vendor ops' nodes (cudnn_*, miopen_*, mkldnn_*) after their portable ATen "
               "equivalents; the vendor name stays in the attribute vendor_name");
  return [args]() {
    Result<proto::Workload> w = eg::LoadWorkload(args->input, {.kineto_path = args->kineto});
    if (!w.ok()) return Fail(w.status());
    const synth::ChakraTrace trace = synth::ToChakra(
        *w, {.kernel_nodes = args->kernel_nodes, .portable_names = args->portable_names});
    std::string path = synth::ChakraPath(args->prefix, w->provenance().rank());
    if (args->gzip) path += ".gz";
    Status st = synth::WriteChakra(path, trace);
    if (!st.ok()) return Fail(st);
    const synth::ChakraSummary s = synth::SummarizeChakra(trace);
    std::string types;
    for (const auto& [type, count] : s.node_types)
      types += (types.empty() ? "" : ", ") + type + " " + std::to_string(count);
    std::fprintf(stderr, "mimic: wrote %s (%lld nodes%s%s; %lld ctrl and %lld data deps)\n", path.c_str(),
                 static_cast<long long>(s.nodes), types.empty() ? "" : ": ", types.c_str(),
                 static_cast<long long>(s.ctrl_deps), static_cast<long long>(s.data_deps));
    return static_cast<int>(kExitOk);
  };
}

Runner AddImportChakra(CLI::App& app) {
  struct Args {
    std::string file;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("file", args->file, "Chakra trace (.et, or .et.gz)")->required();
  app.add_flag("--json", args->json, "Print JSON instead of text");
  return [args]() {
    Result<synth::ChakraTrace> trace = synth::ReadChakra(args->file);
    if (!trace.ok()) return Fail(trace.status());
    const synth::ChakraSummary s = synth::SummarizeChakra(*trace);
    if (args->json) {
      Status st = WriteOutput("-", ImportJson(args->file, s));
      if (!st.ok()) return Fail(st);
    } else {
      PrintImport(args->file, s);
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace mimic::cli
