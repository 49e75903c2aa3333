#include "mimic/synth/standalone.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

#include "mimic/base/file.h"
#include "mimic/synth/bundle.h"

namespace mimic::synth {
namespace {

constexpr char kBundleTag[8] = {'M', 'I', 'M', 'I', 'C', 'E', 'X', 'E'};
constexpr char kRunnerTag[8] = {'M', 'I', 'M', 'I', 'C', 'R', 'U', 'N'};
constexpr uint64_t kTrailerSize = 16;

// An open file, closed on scope exit.
class Fd {
 public:
  explicit Fd(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  uint64_t size() const {
    struct stat st {};
    return fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

 private:
  int fd_;
};

// The part whose trailer ends at `end` when the trailer carries `tag`, else nullopt.
std::optional<EmbeddedPart> PartBefore(const Fd& fd, uint64_t end, const char (&tag)[8]) {
  char tail[kTrailerSize];
  if (end < kTrailerSize ||
      pread(fd.get(), tail, kTrailerSize, static_cast<off_t>(end - kTrailerSize)) !=
          static_cast<ssize_t>(kTrailerSize))
    return std::nullopt;
  if (std::memcmp(tail + 8, tag, 8) != 0) return std::nullopt;
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(tail[i]);
  if (size > end - kTrailerSize) return std::nullopt;
  return EmbeddedPart{end - kTrailerSize - size, size};
}

// The bytes of an executable before any part appended to it.
Result<std::string> ReadBareExecutable(const std::string& path) {
  Fd fd(path);
  if (fd.get() < 0) return Status::Io(path + ": " + std::strerror(errno));
  uint64_t end = fd.size();
  if (std::optional<EmbeddedPart> bundle = PartBefore(fd, end, kBundleTag)) {
    end = bundle->offset;
    if (std::optional<EmbeddedPart> runner = PartBefore(fd, end, kRunnerTag)) end = runner->offset;
  }
  std::string bytes(end, '\0');
  for (uint64_t done = 0; done < end;) {
    const ssize_t n = pread(fd.get(), bytes.data() + done, end - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Io(path + ": read failed: " + std::strerror(errno));
    done += static_cast<uint64_t>(n);
  }
  return bytes;
}

void AppendPart(std::string& out, std::string_view part, const char (&tag)[8]) {
  out.append(part);
  uint64_t size = part.size();
  for (int i = 0; i < 8; ++i, size >>= 8) out.push_back(static_cast<char>(size & 0xff));
  out.append(tag, 8);
}

}  // namespace

Status BuildStandalone(const std::string& launcher, const std::string& runner,
                       const std::string& bundle_path, const std::string& out) {
  MIMIC_ASSIGN_OR_RETURN(FileContents bundle, ReadFile(bundle_path));
  MIMIC_RETURN_IF_ERROR(ParseBundle(bundle_path, bundle.bytes.view()).status());
  MIMIC_ASSIGN_OR_RETURN(std::string exe, ReadBareExecutable(launcher));
  MIMIC_ASSIGN_OR_RETURN(const std::string runner_bytes, ReadBareExecutable(runner));
  AppendPart(exe, runner_bytes, kRunnerTag);
  AppendPart(exe, bundle.bytes.view(), kBundleTag);
  MIMIC_RETURN_IF_ERROR(WriteFileAtomic(out, exe));
  if (chmod(out.c_str(), 0755) != 0) return Status::Io(out + ": chmod failed: " + std::strerror(errno));
  return Status::Ok();
}

Result<std::optional<EmbeddedPart>> FindEmbeddedRunner(const std::string& exe) {
  Fd fd(exe);
  if (fd.get() < 0) return Status::Io(exe + ": " + std::strerror(errno));
  const std::optional<EmbeddedPart> bundle = PartBefore(fd, fd.size(), kBundleTag);
  if (!bundle) return std::optional<EmbeddedPart>();
  std::optional<EmbeddedPart> runner = PartBefore(fd, bundle->offset, kRunnerTag);
  if (!runner)
    return Status::InvalidInput(exe +
                                ": carries a bundle but no runner (built by an older mimic?)");
  return runner;
}

Result<std::optional<proto::Bundle>> ReadEmbeddedBundle(const std::string& exe) {
  Fd fd(exe);
  if (fd.get() < 0) return Status::Io(exe + ": " + std::strerror(errno));
  const std::optional<EmbeddedPart> part = PartBefore(fd, fd.size(), kBundleTag);
  if (!part) return std::optional<proto::Bundle>();
  std::string bytes(part->size, '\0');
  const ssize_t got = pread(fd.get(), bytes.data(), part->size, static_cast<off_t>(part->offset));
  if (got != static_cast<ssize_t>(part->size))
    return Status::Io(exe + ": cannot read the embedded bundle");
  MIMIC_ASSIGN_OR_RETURN(proto::Bundle bundle, ParseBundle(exe + " (embedded bundle)", bytes));
  return std::optional<proto::Bundle>(std::move(bundle));
}

}  // namespace mimic::synth
