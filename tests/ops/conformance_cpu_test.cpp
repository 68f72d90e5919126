// The CPU backend's kernels pass the conformance suite against the reference kernels, and the
// suite itself catches a wrong kernel (a deliberately broken one must fail).
#include <cmath>

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

// A kernel that hands a call to another (a fallback by priority) is judged at the tolerance floor
// of the kernel that computed the result: here a "coarse" kernel, 10% off by design with a floor of
// 0.3, passes through the hand-off, and the result reports that floor; alone, the same output would
// fail the case's own tolerance.
TEST(Conformance, AHandedOnCallIsJudgedByTheKernelThatRanIt) {
  register_builtin_backends();
  Device& dev = *BackendRegistry::instance().device("cpu");
  auto coarse = [](const RmsNormArgs& a, Stream& s) {
    KernelRegistry::instance().reference(Op::RMS_NORM)->run(&a, s);
    for (int64_t r = 0; r < a.out.num_rows(); ++r) {
      float* o = a.out.ptr<float>() + a.out.row_offset(r);
      for (int64_t j = 0; j < a.out.size(-1); ++j) o[j] *= 1.1f;
    }
  };
  auto f32 = [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; };
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "test.coarse_rms_norm", -70, f32, coarse, 0.3);
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "test.hand_on_rms_norm", -60, f32,
                               [](const RmsNormArgs& a, Stream& s) {
                                 KernelRegistry::instance().find("test.coarse_rms_norm")->run(&a, s);
                               });
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "test.coarse_unflagged_rms_norm", -80, f32, coarse);
  conformance::RunOptions o;
  o.op = "RMS_NORM";
  o.pattern = "test\\.(hand_on|coarse_unflagged)";
  o.dtypes = {DType::F32};
  auto results = conformance::run_conformance(dev, o);
  int handed = 0, unflagged = 0;
  for (auto& r : results) {
    if (r.status == CaseResult::Status::NotSupported) continue;
    if (r.kernel == "test.hand_on_rms_norm") {
      ++handed;
      EXPECT_EQ(r.status, CaseResult::Status::Pass) << r.case_name << ": " << r.message;
      EXPECT_EQ(r.tol, 0.3) << r.case_name;
      EXPECT_GT(r.error, 0.05) << r.case_name;
    } else {
      ++unflagged;
      EXPECT_EQ(r.status, CaseResult::Status::Fail) << r.case_name;
    }
  }
  EXPECT_GT(handed, 0);
  EXPECT_EQ(handed, unflagged);
}

// --repeat: a kernel whose last bit depends on the run (here a call counter, as float atomics
// depend on arrival order) passes the tolerance but fails the repeat check; the CPU's own RMSNorm
// passes both.
TEST(Conformance, RepeatCatchesAKernelThatDiffersRunToRun) {
  register_builtin_backends();
  Device& dev = *BackendRegistry::instance().device("cpu");
  static int calls = 0;
  register_kernel<RmsNormArgs>(Op::RMS_NORM, DeviceKind::CPU, "test.wobbly_rms_norm", -90,
                               [](const OpDesc& d, const DeviceCaps&) { return d.dtype[0] == DType::F32; },
                               [](const RmsNormArgs& a, Stream& s) {
                                 KernelRegistry::instance().reference(Op::RMS_NORM)->run(&a, s);
                                 float* o = a.out.ptr<float>();
                                 o[0] = std::nextafter(o[0], (++calls % 2) ? 1e30f : -1e30f);
                               });
  conformance::RunOptions o;
  o.op = "RMS_NORM";
  o.pattern = "test\\.wobbly|cpu\\.";
  o.dtypes = {DType::F32};
  int wobbly = 0, cpu = 0;
  for (bool repeat : {false, true}) {
    o.repeat = repeat;
    for (auto& r : conformance::run_conformance(dev, o)) {
      if (r.status == CaseResult::Status::NotSupported) continue;
      if (r.kernel == "test.wobbly_rms_norm") {
        ++wobbly;
        EXPECT_EQ(r.status, repeat ? CaseResult::Status::Fail : CaseResult::Status::Pass) << r.case_name;
        if (repeat) EXPECT_NE(r.message.find("in one run and"), std::string::npos) << r.message;
      } else {
        ++cpu;
        EXPECT_EQ(r.status, CaseResult::Status::Pass) << r.kernel << " " << r.case_name << ": " << r.message;
      }
    }
  }
  EXPECT_GT(wobbly, 0);
  EXPECT_GT(cpu, 0);
}
