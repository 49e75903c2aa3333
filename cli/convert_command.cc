// mimic convert TRACE [--kineto K] -o W.mimic
#include <cstdio>

#include "cli.h"
#include "mimic/eg/workload.h"

namespace mimic::cli {

Runner AddConvert(CLI::App& app) {
  struct Args {
    std::string trace, kineto, out;
  };
  auto args = std::make_shared<Args>();
  app.add_option("trace", args->trace,
                 "Execution trace (.json or .json.gz), or a Kineto trace alone")
      ->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  app.add_option("-o,--output", args->out, "Workload file to write (.mimic)")->required();
  return [args]() {
    Result<proto::Workload> w =
        eg::LoadWorkload(args->trace, {.kineto_path = args->kineto, .allow_kineto_only = true});
    if (!w.ok()) return Fail(w.status());
    Status st = eg::SaveWorkload(args->out, *w);
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "mimic: wrote %s (%d ops, %d tensors)\n", args->out.c_str(), w->ops_size(),
                 w->tensors_size());
    return static_cast<int>(kExitOk);
  };
}

}  // namespace mimic::cli
