#include "mimic/base/file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
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
  // Default-initialized: pages are touched only as data arrives.
  std::unique_ptr<char[]> fresh(new char[min_capacity + kPadding]);
  if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
  data_ = std::move(fresh);
  capacity_ = min_capacity;
  std::memset(data_.get() + size_, 0, kPadding);
}

void PaddedBuffer::Resize(size_t new_size) {
  MIMIC_CHECK(new_size <= capacity_);
  size_ = new_size;
  std::memset(data_.get() + size_, 0, kPadding);  // the padding past the end reads as zeros
}

namespace {

std::string Errno() { return std::strerror(errno); }

bool IsGzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
         static_cast<unsigned char>(head[1]) == 0x8b;
}

// Streams a file, or bytes in memory, through zlib's inflate when they start with the gzip
// magic, and copies them through otherwise.
class ZStream final : public InputStream {
 public:
  ZStream(std::string name, int fd, std::string_view memory)
      : name_(std::move(name)), fd_(fd), memory_(memory) {}
  ~ZStream() override {
    if (inflating_) inflateEnd(&zs_);
    if (fd_ >= 0) close(fd_);
  }

  bool compressed() const override { return gzip_; }

  Result<size_t> Read(char* dst, size_t n) override {
    if (!started_) MIMIC_RETURN_IF_ERROR(Start());
    if (!gzip_) {
      MIMIC_ASSIGN_OR_RETURN(const size_t got, Raw(dst, n));
      bytes_read_ += got;
      return got;
    }
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    while (zs_.avail_out > 0 && !done_) {
      if (zs_.avail_in == 0) {
        MIMIC_ASSIGN_OR_RETURN(const size_t got, Raw(in_, sizeof(in_)));
        if (got == 0) {
          if (at_member_start_) {  // a clean end between members
            done_ = true;
            break;
          }
          return Status::InvalidInput(name_ + ":byte " + std::to_string(consumed_) +
                                      ": truncated gzip stream (compressed data ends early)");
        }
        zs_.next_in = reinterpret_cast<Bytef*>(in_);
        zs_.avail_in = static_cast<uInt>(got);
      }
      at_member_start_ = false;
      const uInt before = zs_.avail_in;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      consumed_ += before - zs_.avail_in;
      if (rc == Z_STREAM_END) {
        inflateReset(&zs_);  // another member may follow
        at_member_start_ = true;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        return Status::InvalidInput(name_ + ":byte " + std::to_string(consumed_) + ": corrupt gzip data (" +
                                    (zs_.msg ? zs_.msg : "inflate error") + ")");
    }
    const size_t got = n - zs_.avail_out;
    bytes_read_ += got;
    return got;
  }

 private:
  Status Start() {
    started_ = true;
    char head[2];
    MIMIC_ASSIGN_OR_RETURN(const size_t got, Raw(head, 2));
    if (got == 0) return Status::InvalidInput(name_ + ":byte 0: empty file");
    pending_.assign(head, got);
    gzip_ = IsGzip(pending_);
    if (gzip_) {
      if (inflateInit2(&zs_, 15 + 16) != Z_OK) return Status::Internal("inflateInit2 failed");
      inflating_ = true;
      std::memcpy(in_, pending_.data(), pending_.size());
      zs_.next_in = reinterpret_cast<Bytef*>(in_);
      zs_.avail_in = static_cast<uInt>(pending_.size());
      pending_.clear();
    }
    return Status::Ok();
  }

  // Reads stored bytes: what Start() peeked first, then the file or the memory.
  Result<size_t> Raw(char* dst, size_t n) {
    size_t got = 0;
    if (!pending_.empty()) {
      got = std::min(n, pending_.size());
      std::memcpy(dst, pending_.data(), got);
      pending_.erase(0, got);
      return got;
    }
    if (fd_ < 0) {
      got = std::min(n, memory_.size() - memory_pos_);
      std::memcpy(dst, memory_.data() + memory_pos_, got);
      memory_pos_ += got;
      return got;
    }
    while (true) {
      const ssize_t r = read(fd_, dst, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::Io(name_ + ": read failed: " + Errno());
      return static_cast<size_t>(r);
    }
  }

  std::string name_;
  int fd_;
  std::string_view memory_;
  size_t memory_pos_ = 0;
  std::string pending_;
  bool started_ = false, gzip_ = false, inflating_ = false, done_ = false;
  bool at_member_start_ = true;
  z_stream zs_{};
  uint64_t consumed_ = 0;  // compressed bytes fed to inflate
  char in_[1 << 16];
};

}  // namespace

Result<std::unique_ptr<InputStream>> InputStream::Open(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Io(path + ": " + Errno());
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidInput(path + ": is a directory, not a file");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(path + ": " + Errno());
  return std::unique_ptr<InputStream>(new ZStream(path, fd, {}));
}

std::unique_ptr<InputStream> InputStream::FromMemory(const std::string& name, std::string_view raw) {
  return std::unique_ptr<InputStream>(new ZStream(name, -1, raw));
}

std::string Hex(const unsigned char* digest, unsigned len) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return Hex(digest, len);
}

Result<std::string> ReadHead(InputStream& in, size_t n) {
  std::string head(n, '\0');
  size_t got = 0;
  while (got < n) {
    MIMIC_ASSIGN_OR_RETURN(const size_t read, in.Read(head.data() + got, n - got));
    if (read == 0) break;
    got += read;
  }
  head.resize(got);
  return head;
}

Result<std::string> Sha256OfFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io(path + ": " + Errno());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  while (true) {
    const ssize_t r = read(fd, buf.get(), 1 << 20);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      EVP_MD_CTX_free(ctx);
      close(fd);
      return Status::Io(path + ": read failed: " + Errno());
    }
    if (r == 0) break;
    EVP_DigestUpdate(ctx, buf.get(), static_cast<size_t>(r));
  }
  close(fd);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  return Hex(digest, len);
}

namespace {

// Reads a whole stream into a padded buffer, growing it by half each time it fills.
Status ReadAll(InputStream& in, PaddedBuffer& out) {
  out.Reserve(1 << 16);
  while (true) {
    if (out.size() == out.capacity()) out.Reserve(out.capacity() + out.capacity() / 2);
    MIMIC_ASSIGN_OR_RETURN(const size_t got,
                           in.Read(out.mutable_data() + out.size(), out.capacity() - out.size()));
    if (got == 0) return Status::Ok();
    out.Resize(out.size() + got);
  }
}

}  // namespace

Result<FileContents> ReadFile(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::Open(path));
  FileContents out;
  MIMIC_RETURN_IF_ERROR(ReadAll(*in, out.bytes));
  MIMIC_ASSIGN_OR_RETURN(out.sha256, Sha256OfFile(path));
  struct stat st {};
  stat(path.c_str(), &st);
  out.disk_size = static_cast<size_t>(st.st_size);
  out.was_gzip = in->compressed();
  return out;
}

Result<FileContents> ReadBytes(const std::string& name, std::string_view raw) {
  std::unique_ptr<InputStream> in = InputStream::FromMemory(name, raw);
  FileContents out;
  MIMIC_RETURN_IF_ERROR(ReadAll(*in, out.bytes));
  out.sha256 = Sha256Hex(raw);
  out.disk_size = raw.size();
  out.was_gzip = IsGzip(raw);
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
