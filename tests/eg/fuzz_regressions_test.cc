// Every input under tests/fuzz_regressions/<target>/ (inputs that once crashed a fuzz target),
// and the whole bad-input corpus, goes through the fuzz targets' bodies; under the asan preset
// this is the regression check for memory errors.
#include <dirent.h>

#include <cstdio>
#include <vector>

#include "targets.h"
#include "testing.h"

namespace mimic {
namespace {

constexpr const char* kTargets[] = {"execution_trace", "kineto", "workload", "manifest", "chakra", "platform",
                                     "fleet_manifest", "job_log"};

// The regular files in `dir` (none when it does not exist).
std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_type == DT_REG && e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

// Fuzz inputs are raw bytes: the file as stored, gzip or not.
std::string ReadRaw(const std::string& path) {
  std::string bytes;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  return bytes;
}

TEST(FuzzRegressions, RecordedCrashInputsAreHandled) {
  for (const char* target : kTargets) {
    const fuzz::Target body = fuzz::Find(target);
    ASSERT_NE(body, nullptr) << target;
    for (const std::string& path : FilesIn(mimic::testing::SourceDir() + "/tests/fuzz_regressions/" + target))
      body(ReadRaw(path));
  }
}

TEST(FuzzRegressions, BadInputCorpusGoesThroughEveryReader) {
  const std::vector<std::string> files = FilesIn(mimic::testing::SourceDir() + "/tests/bad_inputs");
  ASSERT_GT(files.size(), 20u);
  for (const std::string& path : files) {
    const std::string bytes = ReadRaw(path);
    for (const char* target : kTargets) fuzz::Find(target)(bytes);
  }
}

}  // namespace
}  // namespace mimic
