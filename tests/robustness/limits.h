// The robustness tests' limits: an address-space cap, so that a mutated config that asks for a
// huge tensor meets a clear error or std::bad_alloc (which the tally reports), not the CI
// machine's out-of-memory killer (ctest runs each test in a process of its own, so the cap stays
// there); and the number of mutants, which PORTLLM_ROBUSTNESS_SCALE multiplies for a longer
// search than CI's (the first mutants are CI's, the rest have new seeds).
#pragma once
#include <sys/resource.h>

#include <cstdlib>

namespace portllm::robustness {

inline void cap_address_space(unsigned long long bytes = 4ull << 30) {
  rlimit r{bytes, bytes};
  setrlimit(RLIMIT_AS, &r);
}

inline int mutants(int ci_count) {
  const char* s = std::getenv("PORTLLM_ROBUSTNESS_SCALE");
  const int scale = s ? std::atoi(s) : 1;
  return ci_count * (scale > 0 ? scale : 1);
}

}  // namespace portllm::robustness
