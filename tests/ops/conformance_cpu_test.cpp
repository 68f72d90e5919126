// The CPU backend's kernels pass the conformance suite against the reference kernels, and the
// suite itself catches a wrong kernel (a deliberately broken one must fail).
#include <gtest/gtest.h>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "ops/conformance/runner.h"
#include "ops/op_args.h"
#include "ops/registry.h"

using namespace portllm;
using conformance::CaseResult;

TEST(Conformance, CpuKernelsMatchTheReference) {
  register_builtin_backends();
  Device& dev = *BackendRegistry::instance().device("cpu");
  auto results = conformance::run_conformance(dev, {});
  int pass = 0;
  for (auto& r : results) {
    EXPECT_NE(r.status, CaseResult::Status::Fail) << op_name(r.op) << " " << r.kernel << " " << r.case_name << ": " << r.message;
    pass += r.status == CaseResult::Status::Pass;
  }
  EXPECT_GT(pass, 100);
}

TEST(Conformance, ABrokenKernelFails) {
  register_builtin_backends();
  Device& dev = *BackendRegistry::instance().device("cpu");
  // An RMSNorm that forgets the weight: right shape, wrong values.
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "test.broken_rms_norm", -50,
                               [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; },
                               [](const RmsNormArgs& a, Stream&) {
                                 for (int64_t r = 0; r < a.x.num_rows(); ++r) {
                                   const float* x = a.x.ptr<float>() + a.x.row_offset(r);
                                   float* o = a.out.ptr<float>() + a.out.row_offset(r);
                                   for (int64_t j = 0; j < a.x.size(-1); ++j) o[j] = x[j];
                                 }
                               });
  conformance::RunOptions o;
  o.op = "RMS_NORM";
  o.pattern = "test.broken_rms_norm";
  o.dtypes = {DType::F32};
  auto results = conformance::run_conformance(dev, o);
  ASSERT_FALSE(results.empty());
  for (auto& r : results) EXPECT_EQ(r.status, CaseResult::Status::Fail) << r.case_name;
}

// on_result sees every result as it is decided, in the order of the returned list (ops test prints
// failures from it, so a run stopped part-way still shows them).
TEST(Conformance, ResultsAreReportedAsTheyAreDecided) {
  register_builtin_backends();
  Device& dev = *BackendRegistry::instance().device("cpu");
  conformance::RunOptions o;
  o.op = "RMS_NORM";
  o.dtypes = {DType::F32, DType::BF16};
  std::vector<std::string> seen;
  o.on_result = [&](const CaseResult& r) { seen.push_back(r.kernel + " " + r.case_name); };
  auto results = conformance::run_conformance(dev, o);
  ASSERT_GT(results.size(), 2u);
  ASSERT_EQ(seen.size(), results.size());
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(seen[i], results[i].kernel + " " + results[i].case_name);
}
