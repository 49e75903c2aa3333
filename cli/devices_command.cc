// mimic devices [--json]: the executors compiled into this Mimic and the devices present.
#include <cstdio>

#include "cli.h"
#include "mimic/base/json_writer.h"
#include "mimic/replay/replayer.h"

namespace mimic::cli {
namespace {

std::string DevicesJson(const std::vector<replay::ExecutorDevices>& all, const std::string& best) {
  JsonWriter j;
  j.BeginObject();
  j.Key("best").String(best);
  j.Key("torch_version").String(replay::TorchVersion());
  j.Key("executors").BeginArray();
  for (const replay::ExecutorDevices& e : all) {
    j.BeginObject()
        .Key("type")
        .String(e.type)
        .Key("note")
        .String(e.note)
        .Key("devices")
        .BeginArray();
    for (const replay::DeviceInfo& d : e.devices)
      j.BeginObject()
          .Key("name")
          .String(d.name)
          .Key("description")
          .String(d.description)
          .Key("memory_bytes")
          .Int(d.memory_bytes)
          .EndObject();
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str();
}

void PrintDevices(const std::vector<replay::ExecutorDevices>& all, const std::string& best) {
  std::printf("executors compiled in (LibTorch %s):\n", replay::TorchVersion().c_str());
  for (const replay::ExecutorDevices& e : all) {
    std::printf("  %-6s %s\n", e.type.c_str(), e.devices.empty() ? e.note.c_str() : "");
    for (const replay::DeviceInfo& d : e.devices)
      std::printf("    %-8s %s, %.1f GiB%s\n", d.name.c_str(), d.description.c_str(),
                  static_cast<double>(d.memory_bytes) / (1 << 30),
                  d.name.rfind(best, 0) == 0 ? "  (default)" : "");
  }
}

}  // namespace

Runner AddDevices(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json,
               "Print JSON: {best, torch_version, executors: [{type, note, devices: [{name, "
               "description, memory_bytes}]}]}");
  return [json]() {
    const std::vector<replay::ExecutorDevices> all = replay::ListDevices();
    const std::string best = replay::BestDevice();
    if (*json)
      std::fputs(DevicesJson(all, best).c_str(), stdout);
    else
      PrintDevices(all, best);
    return kExitOk;
  };
}

}  // namespace mimic::cli
