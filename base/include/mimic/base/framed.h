// Checksummed file framing shared by Mimic's binary formats (.mimic workloads, bundles):
// MAGIC (8 bytes, ending in '\n') + SHA-256 of the payload in 64 hex digits + '\n' + payload.
// Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "mimic/base/status.h"

namespace mimic {

// REQUIRES: magic.size() == 8.
std::string Frame(std::string_view magic, std::string_view payload);

// True when `bytes` start with `magic`.
bool HasMagic(std::string_view bytes, std::string_view magic);

// The payload of framed `bytes`, checked against its checksum. Errors (InvalidInput, naming
// `path` and the byte offset): wrong magic, truncated header, checksum mismatch.
Result<std::string_view> Unframe(const std::string& path, std::string_view magic,
                                 std::string_view bytes);

}  // namespace mimic
