// The pieces every mimic command shares: error reporting and output.
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "cli.h"
#include "mimic/base/file.h"

namespace mimic::cli {
namespace {

std::vector<char*> g_argv{nullptr};

}  // namespace

void SetCommandLine(int argc, char** argv) { g_argv.assign(argv, argv + argc + 1); }

char* const* CommandLine() { return g_argv.data(); }

int Fail(const Status& status) {
  std::fprintf(stderr, "mimic: error: %s\n", status.message().c_str());
  return status.IsInputError() ? kExitBadInput : kExitRuntime;
}

Status WriteOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return WriteFileAtomic(path, text);
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  const std::string self(buf, static_cast<size_t>(n));
  const size_t slash = self.find_last_of('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

}  // namespace mimic::cli
