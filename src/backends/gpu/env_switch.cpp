#include "backends/gpu/env_switch.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace portllm::gpu {

int env_switch(const char* var, std::initializer_list<const char*> words, int unset) {
  const char* v = std::getenv(var);
  if (!v || !*v) return unset;
  int i = 0;
  std::string list;
  for (const char* w : words) {
    if (std::string(v) == w) return i;
    list += (i++ ? ", " : "") + std::string(w);
  }
  PL_THROW("{}={}: expected one of {}", var, v, list);
}

int env_int(const char* var, int unset) {
  const char* v = std::getenv(var);
  return v && *v ? std::atoi(v) : unset;
}

bool l2_evict_first() {
  static const bool v = env_switch("PORTLLM_L2_EVICT_FIRST", {"0", "1"}, 1) == 1;
  return v;
}

}  // namespace portllm::gpu
