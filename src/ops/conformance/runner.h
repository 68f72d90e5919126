// Runs every registered kernel of a backend against the reference kernels on the conformance
// cases and reports PASS / FAIL / NOT_SUPPORTED per (kernel, case). A failure is a NaN/Inf
// mismatch, a normalized error over the case's tolerance, a write into the guard bytes around any
// tensor, or (RunOptions::repeat) outputs that differ between two runs on the same inputs.
#pragma once
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "backend/device.h"
#include "ops/conformance/op_case.h"

namespace portllm::conformance {

struct CaseResult {
  enum class Status { Pass, Fail, NotSupported };
  Op op;
  std::string kernel;
  std::string case_name;
  DType dtype;
  Status status;
  double error = 0;
  double tol = 0;
  std::string message;
};

struct RunOptions {
  std::string op;             // "" = all ops, else an op name (case-insensitive)
  std::string pattern;        // regex on "<kernel> <case>"
  std::vector<DType> dtypes = {DType::F32, DType::F16, DType::BF16};
  bool include_reference = false;  // also run the reference kernels against themselves
  // Also run each passing case a second time on fresh copies of its inputs and require the same
  // outputs bit for bit: a kernel whose sums depend on which thread arrives first (float atomics,
  // racing partials) passes the tolerance but changes greedy tokens from run to run.
  bool repeat = false;
  // Called with each result as it is decided, so a caller can report progress: a run stopped
  // part-way (a time limit on a lent GPU, a hung kernel) still shows what it got through.
  std::function<void(const CaseResult&)> on_result;
};

std::vector<CaseResult> run_conformance(Device& device, const RunOptions& opts);

// Deep copy of a host tensor (contiguous).
Tensor clone_host(const Tensor& t);

}  // namespace portllm::conformance
