#include "mimic/base/file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mimic {

PaddedBuffer::PaddedBuffer(size_t size) {
  Reserve(size);
  Resize(size);
}

void PaddedBuffer::Reserve(size_t min_capacity) {
  if (min_capacity <= capacity_ && data_) return;
  auto fresh = std::make_unique<char[]>(min_capacity + kPadding);
  if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
  std::memset(fresh.get() + size_, 0, min_capacity + kPadding - size_);
  data_ = std::move(fresh);
  capacity_ = min_capacity;
}

void PaddedBuffer::Resize(size_t new_size) {
  MIMIC_CHECK(new_size <= capacity_);
  if (new_size < size_) std::memset(data_.get() + new_size, 0, size_ - new_size);
  size_ = new_size;
}

namespace {

std::string Errno() { return std::strerror(errno); }

// Inflates one or more concatenated gzip members from `in` into `out`.
Status Gunzip(const std::string& path, std::string_view in, PaddedBuffer& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return Status::Internal("inflateInit2 failed");
  out.Reserve(std::max<size_t>(in.size() * 4, 4096));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  size_t produced = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out.capacity()) {
      out.Resize(produced);
      out.Reserve(out.capacity() * 2);
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.mutable_data() + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.capacity() - produced, 1u << 30));
    const uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      const size_t at = in.size();
      inflateEnd(&zs);
      return Status::InvalidInput(path + ":byte " + std::to_string(at) +
                                  ": truncated gzip stream (compressed data ends early)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const size_t at = in.size() - zs.avail_in;
      std::string why = zs.msg ? zs.msg : "inflate error";
      inflateEnd(&zs);
      return Status::InvalidInput(path + ":byte " + std::to_string(at) + ": corrupt gzip data (" +
                                  why + ")");
    }
  }
  inflateEnd(&zs);
  out.Resize(produced);
  return Status::Ok();
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

Result<FileContents> ReadFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": " + Errno());
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidInput(path + ": is a directory, not a file");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(path + ": " + Errno());
  PaddedBuffer raw(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < raw.size()) {
    const ssize_t n = read(fd, raw.mutable_data() + got, raw.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = Errno();
      close(fd);
      return Status::Io(path + ": read failed: " + err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  raw.Resize(got);
  const auto* b = reinterpret_cast<const unsigned char*>(raw.data());
  if (got >= 2 && b[0] == 0x1f && b[1] == 0x8b) return ReadBytes(path, raw.view());
  if (got == 0) return Status::InvalidInput(path + ":byte 0: empty file");
  FileContents out;  // plain JSON: keep the buffer as read, no copy
  out.disk_size = got;
  out.sha256 = Sha256Hex(raw.view());
  out.bytes = std::move(raw);
  return out;
}

Result<FileContents> ReadBytes(const std::string& path, std::string_view raw) {
  if (raw.empty()) return Status::InvalidInput(path + ":byte 0: empty file");
  FileContents out;
  out.disk_size = raw.size();
  out.sha256 = Sha256Hex(raw);
  const auto* b = reinterpret_cast<const unsigned char*>(raw.data());
  if (raw.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    out.was_gzip = true;
    MIMIC_RETURN_IF_ERROR(Gunzip(path, raw, out.bytes));
    if (out.bytes.size() == 0) return Status::InvalidInput(path + ":byte 0: empty gzip stream");
  } else {
    out.bytes = PaddedBuffer(raw.size());
    std::memcpy(out.bytes.mutable_data(), raw.data(), raw.size());
  }
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Io(path + ": cannot create: " + Errno());
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string err = Errno();
      close(fd);
      unlink(tmp.c_str());
      return Status::Io(path + ": write failed: " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const std::string err = Errno();
    unlink(tmp.c_str());
    return Status::Io(path + ": " + err);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = Errno();
    unlink(tmp.c_str());
    return Status::Io(path + ": rename failed: " + err);
  }
  return Status::Ok();
}

}  // namespace mimic
