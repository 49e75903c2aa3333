#include "mimic/synth/standalone.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "mimic/base/file.h"
#include "mimic/synth/bundle.h"

namespace mimic::synth {
namespace {

constexpr char kTrailerMagic[8] = {'M', 'I', 'M', 'I', 'C', 'E', 'X', 'E'};
constexpr size_t kTrailerSize = 16;

// Reads the whole file as stored (no gunzip: executables are not gzip).
Result<std::string> ReadRaw(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(path + ": " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return Status::Io(path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The size of the bundle a file's tail announces, or 0 when it carries none.
uint64_t BundleSize(const char* tail, uint64_t file_size) {
  if (std::memcmp(tail + 8, kTrailerMagic, 8) != 0) return 0;
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(tail[i]);
  return size <= file_size - kTrailerSize ? size : 0;
}

}  // namespace

Status BuildStandalone(const std::string& runner, const std::string& bundle_path,
                       const std::string& out) {
  MIMIC_ASSIGN_OR_RETURN(FileContents bundle, ReadFile(bundle_path));
  MIMIC_RETURN_IF_ERROR(ParseBundle(bundle_path, bundle.bytes.view()).status());
  MIMIC_ASSIGN_OR_RETURN(std::string exe, ReadRaw(runner));
  if (exe.size() >= kTrailerSize) {
    const uint64_t old = BundleSize(exe.data() + exe.size() - kTrailerSize, exe.size());
    if (old > 0) exe.resize(exe.size() - kTrailerSize - old);
  }
  const std::string_view payload = bundle.bytes.view();
  exe.append(payload);
  uint64_t size = payload.size();
  for (int i = 0; i < 8; ++i, size >>= 8) exe.push_back(static_cast<char>(size & 0xff));
  exe.append(kTrailerMagic, 8);
  MIMIC_RETURN_IF_ERROR(WriteFileAtomic(out, exe));
  if (chmod(out.c_str(), 0755) != 0) return Status::Io(out + ": chmod failed: " + std::strerror(errno));
  return Status::Ok();
}

Result<std::optional<proto::Bundle>> ReadEmbeddedBundle(const std::string& exe) {
  const int fd = open(exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(exe + ": " + std::strerror(errno));
  struct stat st {};
  fstat(fd, &st);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char tail[kTrailerSize];
  if (file_size < kTrailerSize ||
      pread(fd, tail, kTrailerSize, static_cast<off_t>(file_size - kTrailerSize)) != kTrailerSize) {
    close(fd);
    return std::optional<proto::Bundle>();
  }
  const uint64_t size = BundleSize(tail, file_size);
  if (size == 0) {
    close(fd);
    return std::optional<proto::Bundle>();
  }
  std::string bytes(size, '\0');
  const ssize_t got = pread(fd, bytes.data(), size, static_cast<off_t>(file_size - kTrailerSize - size));
  close(fd);
  if (got != static_cast<ssize_t>(size)) return Status::Io(exe + ": cannot read the embedded bundle");
  MIMIC_ASSIGN_OR_RETURN(proto::Bundle bundle, ParseBundle(exe + " (embedded bundle)", bytes));
  return std::optional<proto::Bundle>(std::move(bundle));
}

}  // namespace mimic::synth
