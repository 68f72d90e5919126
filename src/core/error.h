// One error type for the whole engine. Messages name the file, field or op that is wrong,
// so a user can fix the input without reading the source.
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace portllm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A device or host allocation that failed. Callers that know why the memory was asked for
// (model loading: the config's sizes) catch it and name that.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& msg) : Error(msg) {}
};

// PL_THROW("config.json: field '{}' must be an integer", name);
#define PL_THROW(...) throw ::portllm::Error(fmt::format(__VA_ARGS__))

// Invariant checks that stay on in release builds: a violated invariant is a bug report, not UB.
#define PL_CHECK(cond, ...)                                                            \
  do {                                                                                 \
    if (!(cond)) throw ::portllm::Error(fmt::format("{}:{}: check failed: {}: {}",     \
                                                    __FILE__, __LINE__, #cond,         \
                                                    fmt::format(__VA_ARGS__)));        \
  } while (0)

}  // namespace portllm
