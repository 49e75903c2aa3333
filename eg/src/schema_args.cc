#include "mimic/eg/schema_args.h"

namespace mimic::eg {

std::vector<SchemaArg> ParseSchemaArgs(const std::string& schema) {
  std::vector<SchemaArg> out;
  const size_t open = schema.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i < schema.size(); ++i) {
    const char c = schema[i];
    if (c == '(' || c == '[') ++depth;
    const bool end = (c == ')' || c == ']') && depth-- == 0;
    if (!end && !(c == ',' && depth == 0)) continue;
    std::string arg = schema.substr(start, i - start);
    arg = arg.substr(0, arg.find('='));  // drop the default
    const size_t first = arg.find_first_not_of(' ');
    const size_t last = arg.find_last_not_of(' ');
    if (first != std::string::npos && arg.substr(first, last - first + 1) != "*") {
      arg = arg.substr(first, last - first + 1);
      const size_t space = arg.find_last_of(' ');
      SchemaArg a;
      a.type = space == std::string::npos ? arg : arg.substr(0, space);
      a.name = space == std::string::npos ? "" : arg.substr(space + 1);
      a.mutated = a.type.find('!') != std::string::npos;
      out.push_back(std::move(a));
    }
    start = i + 1;
    if (end) break;
  }
  return out;
}

}  // namespace mimic::eg
