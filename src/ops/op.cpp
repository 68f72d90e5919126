#include "ops/op.h"

#include <cctype>

#include <fmt/format.h>

namespace portllm {

namespace {
struct OpInfo {
  const char* name;
  const char* desc;
};
constexpr OpInfo kOps[] = {
#define PL_OP(name, desc) {#name, desc},
#include "ops/ops.def"
#undef PL_OP
};
}  // namespace

const char* op_name(Op op) { return kOps[int(op)].name; }
const char* op_description(Op op) { return kOps[int(op)].desc; }

std::optional<Op> op_from_name(std::string_view name) {
  for (int i = 0; i < int(Op::COUNT); ++i) {
    std::string_view n = kOps[i].name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t j = 0; j < n.size(); ++j)
      if (std::toupper(static_cast<unsigned char>(name[j])) != n[j]) eq = false;
    if (eq) return Op(i);
  }
  return std::nullopt;
}

uint64_t OpDesc::key() const {
  // FNV-1a over the fields: cheap, and collisions only cost a wrong cache hit between descs
  // that differ in fields; we store the full desc beside the key to rule that out.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (i * 8)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(uint64_t(op));
  for (auto d : dtype) mix(uint64_t(d));
  for (auto d : dim) mix(uint64_t(d));
  mix(flags);
  return h;
}

std::string OpDesc::str() const {
  return fmt::format("{}(dtypes {}/{}/{}/{}, dims {}/{}/{}/{}, flags {:#x})", op_name(op),
                     dtype_name(dtype[0]), dtype_name(dtype[1]), dtype_name(dtype[2]),
                     dtype_name(dtype[3]), dim[0], dim[1], dim[2], dim[3], flags);
}

}  // namespace portllm
