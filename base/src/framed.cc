#include "mimic/base/framed.h"

#include "mimic/base/file.h"

namespace mimic {
namespace {
constexpr size_t kDigestHex = 64;
}  // namespace

std::string Frame(std::string_view magic, std::string_view payload) {
  MIMIC_CHECK(magic.size() == 8);
  std::string out(magic);
  out += Sha256Hex(payload);
  out += '\n';
  out += payload;
  return out;
}

bool HasMagic(std::string_view bytes, std::string_view magic) {
  return bytes.substr(0, magic.size()) == magic;
}

Result<std::string_view> Unframe(const std::string& path, std::string_view magic,
                                 std::string_view bytes) {
  if (!HasMagic(bytes, magic))
    return Status::InvalidInput(path + ":byte 0: not a " + std::string(magic.substr(0, 7)) + " file");
  const size_t header = magic.size() + kDigestHex + 1;
  if (bytes.size() < header || bytes[header - 1] != '\n')
    return Status::InvalidInput(path + ":byte " + std::to_string(magic.size()) + ": truncated header");
  const std::string_view payload = bytes.substr(header);
  if (Sha256Hex(payload) != bytes.substr(magic.size(), kDigestHex))
    return Status::InvalidInput(path + ":byte " + std::to_string(header) +
                                ": checksum mismatch: the file is corrupt or truncated");
  return payload;
}

}  // namespace mimic
