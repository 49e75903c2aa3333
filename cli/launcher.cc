// The LibTorch-free side of the mimic binary: the commands that replay or measure are handed over
// to `mimic-torch` (exec), with LibTorch's folder on the library path. Nothing in either
// executable points into the build machine's site-packages: LibTorch is looked up where it runs.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "mimic/synth/standalone.h"

namespace mimic::cli {
namespace {

bool HasLibTorch(const std::string& dir) {
  return access((dir + "/libtorch_cpu.so").c_str(), R_OK) == 0;
}

// torch's lib folder as python3 sees it ("" when python3 or torch is missing).
std::string AskPython() {
  constexpr char kCommand[] =
      "python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "
      "\"lib\"))' "
      "2>/dev/null";
  FILE* p = popen(kCommand, "r");
  if (!p) return "";
  char buf[4096];
  std::string out = fgets(buf, sizeof(buf), p) ? buf : "";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// LibTorch's lib folder: MIMIC_TORCH_LIB, else the one this binary was built against when it is
// present, else the one of python3's torch; "" when none (the system's library path may have it).
Result<std::string> FindLibTorch() {
  if (const char* env = std::getenv("MIMIC_TORCH_LIB"); env && *env) {
    if (!HasLibTorch(env))
      return Status::InvalidInput(std::string("MIMIC_TORCH_LIB=") + env +
                                  ": no libtorch_cpu.so there");
    return std::string(env);
  }
  if (HasLibTorch(MIMIC_TORCH_LIB_DIR)) return std::string(MIMIC_TORCH_LIB_DIR);
  const std::string py = AskPython();
  return !py.empty() && HasLibTorch(py) ? py : "";
}

// LibTorch's folder and the CUDA runtime's folders that pip installs beside torch
// (site-packages/nvidia/*/lib), ahead of any LD_LIBRARY_PATH already set.
Status PutLibTorchOnLibraryPath() {
  MIMIC_ASSIGN_OR_RETURN(const std::string torch, FindLibTorch());
  if (torch.empty()) return Status::Ok();
  std::string path = torch;
  const std::string nvidia = torch + "/../../nvidia";
  if (DIR* d = opendir(nvidia.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string lib = nvidia + "/" + e->d_name + "/lib";
      if (e->d_name[0] != '.' && access(lib.c_str(), R_OK) == 0) path += ":" + lib;
    }
    closedir(d);
  }
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) path += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  return Status::Ok();
}

// Copies the runner embedded in `exe` into an anonymous in-memory file; -1 on failure.
int CopyRunner(const std::string& exe, const synth::EmbeddedPart& part) {
  const int in = open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  const int out = memfd_create("mimic-torch", MFD_CLOEXEC);
  off_t offset = static_cast<off_t>(part.offset);
  for (uint64_t left = part.size; out >= 0 && left > 0;) {
    const ssize_t n = sendfile(out, in, &offset, left);
    if (n <= 0) {
      close(out);
      close(in);
      return -1;
    }
    left -= static_cast<uint64_t>(n);
  }
  close(in);
  return out;
}

}  // namespace

Status NeedLibTorch() {
  const std::string runner = ExecutableDir() + "/mimic-torch";
  if (access(runner.c_str(), X_OK) != 0)
    return Status::Io("this command needs LibTorch, which lives in " + runner + ": " +
                      std::strerror(errno) + " (build the mimic-torch target)");
  MIMIC_RETURN_IF_ERROR(PutLibTorchOnLibraryPath());
  execv(runner.c_str(), CommandLine());
  return Status::Io("cannot run " + runner + ": " + std::strerror(errno));
}

int MaybeRunStandalone(int argc, char** argv) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  Result<std::optional<synth::EmbeddedPart>> runner = synth::FindEmbeddedRunner(self);
  if (!runner.ok()) return Fail(runner.status());
  if (!runner->has_value()) return -1;
  const int fd = CopyRunner(self, **runner);
  if (fd < 0)
    return Fail(
        Status::Io(std::string(self) + ": cannot load its runner: " + std::strerror(errno)));
  setenv("MIMIC_STANDALONE", self, 1);
  if (Status st = PutLibTorchOnLibraryPath(); !st.ok()) return Fail(st);
  fexecve(fd, argv, environ);
  return Fail(Status::Io(std::string(self) + ": cannot run its runner: " + std::strerror(errno)));
}

Result<double> MeasureByReplay(const proto::Workload&, const replay::ReplayOptions&,
                               const std::function<void(int, int)>&, std::string*) {
  return Status::Internal("measuring by replay needs LibTorch (mimic-torch)");
}

}  // namespace mimic::cli
