// How a parser or loader met one malformed input, and the tally a robustness test asserts on.
// The contract (developers' guide, "Bad input"): either the input is accepted, or it is refused
// with portllm::Error (server: ApiError) whose message names the file or field. Any other
// exception (nlohmann's type_error, std::out_of_range, bad_alloc ...) is a finding: the CLI would
// print a message that names nothing, and the server would answer 500. A failed PL_CHECK is a
// finding too: the input reached an invariant that validation should have guarded.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace portllm::robustness {

struct Tally {
  int accepted = 0, refused = 0;
  std::vector<std::string> findings;  // one line per input handled outside the contract

  // Runs f; `names` must occur in a refusal's message (the file or source name).
  // A crash loses the tally: PORTLLM_ROBUSTNESS_TRACE=1 prints each input before it runs, so
  // the last one printed is the one that crashed.
  template <class F>
  void run(F&& f, const std::string& names, const std::string& input_log) {
    static const bool trace = std::getenv("PORTLLM_ROBUSTNESS_TRACE") != nullptr;
    if (trace) std::fprintf(stderr, "--- input %d:\n%s\n", accepted + refused + int(findings.size()), input_log.c_str());
    try {
      f();
      ++accepted;
      return;
    } catch (const Error& e) {
      const std::string m = e.what();
      if (m.find("check failed") != std::string::npos) add("failed invariant", m, input_log);
      else if (!names.empty() && m.find(names) == std::string::npos) add("unnamed source", m, input_log);
      else ++refused;
      return;
    } catch (const std::exception& e) {
      add("foreign exception", e.what(), input_log);
    }
  }

  void add(const char* kind, const std::string& what, const std::string& input_log) {
    if (findings.size() < 20) findings.push_back(fmt::format("{}: {}\n  input:\n{}", kind, what.substr(0, 300), input_log));
    else findings.emplace_back(kind);
  }

  std::string report() const {
    std::string s = fmt::format("{} accepted, {} refused, {} findings\n", accepted, refused, findings.size());
    for (size_t i = 0; i < findings.size() && i < 20; ++i) s += findings[i] + "\n";
    return s;
  }
};

// The verdict of a mutation test: no input handled outside the contract, and both sides of it
// reached (at least min_accepted inputs accepted, min_refused refused), or the mutations checked
// nothing. Prints the tally either way.
inline void expect_contract(const Tally& t, int min_accepted, int min_refused) {
  EXPECT_TRUE(t.findings.empty()) << t.report();
  EXPECT_GE(t.accepted, min_accepted) << t.report();
  EXPECT_GE(t.refused, min_refused) << t.report();
  std::printf("%s", t.report().c_str());
}

}  // namespace portllm::robustness
