// The pieces of the SAMPLE op that every backend must compute the same way, as plain inline
// functions usable from host code and from GPU kernels: the counter-based uniform number
// (splitmix64 of (seed, counter)), the greedy threshold, and the order-preserving key of a float
// logit (ranking is "larger logit first, lower token id first on ties").
#pragma once
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace portllm::sampling {

// Temperatures below this are greedy (vLLM's _SAMPLING_EPS).
constexpr float kSamplingEps = 1e-5f;

// A well-mixed 64-bit value (splitmix64's finalizer).
PL_HD inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The uniform number in [0, 1) for (seed, counter): one per sampled token.
PL_HD inline double uniform_at(uint64_t seed, uint64_t counter) {
  const uint64_t r = mix64(mix64(seed) ^ (counter * 0xd1b54a32d192ed03ULL));
  return double(r >> 11) * 0x1.0p-53;
}

PL_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__MUSA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

PL_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__MUSA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// Monotone key of a non-NaN float: a > b <=> key(a) > key(b), a == b <=> key(a) == key(b)
// (-0 and +0 share a key).
PL_HD inline uint32_t order_key(float f) {
  uint32_t u = float_bits(f);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace portllm::sampling
