// The arguments of a recorded operator schema string, read without LibTorch
// ("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)").
// Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace mimic::eg {

struct SchemaArg {
  std::string type;   // "Tensor(a!)", "SymInt[]", "ScalarType?", ...
  std::string name;   // "self", "size", ...
  bool mutated = false;  // annotated with '!' (written in place)
};

// The arguments in order (the keyword-only marker '*' is dropped); empty for a malformed schema.
std::vector<SchemaArg> ParseSchemaArgs(const std::string& schema);

}  // namespace mimic::eg
