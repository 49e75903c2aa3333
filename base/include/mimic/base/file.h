// File access for Mimic: whole-file reads that undo gzip transparently, and writes that never
// leave a half-written file behind (temporary file + rename). Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "mimic/base/status.h"

namespace mimic {

// A byte buffer with at least kPadding readable zero bytes past size(), the slack that
// simdjson needs to parse in place.
class PaddedBuffer {
 public:
  static constexpr size_t kPadding = 64;
  PaddedBuffer() = default;
  explicit PaddedBuffer(size_t size);
  const char* data() const { return data_.get(); }
  char* mutable_data() { return data_.get(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }
  // Shrinks or grows the logical size; REQUIRES: new_size <= capacity().
  void Resize(size_t new_size);
  size_t capacity() const { return capacity_; }
  // Grows the capacity to at least `min_capacity`, keeping the contents.
  void Reserve(size_t min_capacity);

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// A forward-only reader of a file's contents, undoing gzip transparently (by the magic bytes,
// not the name; concatenated gzip members are read to the end). Not thread-safe.
class InputStream {
 public:
  virtual ~InputStream() = default;
  // Opens `path`. Errors: NotFound for a missing file, InvalidInput for a directory or an empty
  // file, Io when it cannot be opened.
  static Result<std::unique_ptr<InputStream>> Open(const std::string& path);
  // Reads `raw` (plain or gzip bytes, which must outlive the stream); `name` is for messages.
  static std::unique_ptr<InputStream> FromMemory(const std::string& name, std::string_view raw);

  // Reads up to `n` bytes into `dst`; 0 at the end. Errors: InvalidInput naming the file and the
  // compressed byte offset for corrupt or truncated gzip, Io for read failures.
  virtual Result<size_t> Read(char* dst, size_t n) = 0;
  // True when the stored bytes are gzip (known after the first Read).
  virtual bool compressed() const = 0;
  // Decompressed bytes read so far.
  uint64_t bytes_read() const { return bytes_read_; }

 protected:
  uint64_t bytes_read_ = 0;
};

// Up to `n` first bytes of the stream's (decompressed) contents: enough to tell formats apart
// by their magic bytes.
Result<std::string> ReadHead(InputStream& in, size_t n);

// SHA-256 of the file's bytes as stored, as 64 lowercase hex digits.
Result<std::string> Sha256OfFile(const std::string& path);

struct FileContents {
  PaddedBuffer bytes;     // decompressed contents
  std::string sha256;     // of the bytes on disk (before decompression), lowercase hex
  size_t disk_size = 0;   // bytes on disk
  bool was_gzip = false;
};

// Reads `path` whole. A gzip file (by its magic bytes, not its name) is decompressed; a file of
// several gzip members is read to its end. Errors: NotFound for a missing file, InvalidInput
// for a directory, an empty file, or corrupt/truncated gzip (naming the byte offset), Io for
// read failures. Never returns a partial buffer.
Result<FileContents> ReadFile(const std::string& path);

// As ReadFile, for bytes already in memory (an embedded file, say); `name` is used in messages.
Result<FileContents> ReadBytes(const std::string& name, std::string_view raw);

// Writes `data` to `path` atomically: into `path.tmp.<pid>` in the same folder, fsync, then
// rename. On failure the temporary file is removed and `path` is untouched.
Status WriteFileAtomic(const std::string& path, std::string_view data);

// SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace mimic
