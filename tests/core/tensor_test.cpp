#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

using namespace portllm;

TEST(Tensor, ViewsShareMemoryAndKnowTheirStrides) {
  std::vector<float> buf(2 * 3 * 4);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);
  Tensor t = Tensor::view_of(buf.data(), DType::F32, {2, 3, 4});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  Tensor s = t.slice(2, 1, 2);  // [2, 3, 2]
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.ptr<float>()[s.row_offset(4)], 17.f);  // row 4 = (1, 1) -> element (1,1,1)
  Tensor r = t.reshape({6, -1});
  EXPECT_EQ(r.size(1), 4);
  Tensor sel = t.select(1, 2);  // [2, 4]
  EXPECT_EQ(sel.ptr<float>()[sel.row_offset(1)], 20.f);
  EXPECT_THROW(s.reshape({12}), Error);
  EXPECT_THROW(t.slice(0, 1, 2), Error);
}

TEST(ThreadPool, CoversTheRangeExactlyOnce) {
  ThreadPool pool(3);
  std::vector<int> hits(1000, 0);
  pool.parallel_for(1000, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
  });
  for (int h : hits) ASSERT_EQ(h, 1);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int64_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// Jobs below kMinChunkWork per chunk stay on the calling thread (a hand-off costs more than it
// saves); larger ones are split over the pool.
TEST(ThreadPool, GrainForKeepsSmallJobsOnTheCallingThread) {
  ThreadPool pool(3);
  auto parts = [&](int64_t n, int64_t work) {
    std::vector<int> used(3, 0);
    pool.parallel_for(n, [&](int64_t, int64_t, int t) { used[size_t(t)] = 1; }, grain_for(work));
    return used[0] + used[1] + used[2];
  };
  EXPECT_EQ(parts(64, 1000), 1);                           // 64k units in all
  EXPECT_EQ(parts(kMinChunkWork / 1000 * 2, 1000), 2);    // two chunks' worth
  EXPECT_EQ(parts(1 << 20, 1000), 3);                      // plenty: every thread
  EXPECT_EQ(grain_for(0), kMinChunkWork);
  EXPECT_EQ(grain_for(int64_t(1) << 40), 1);
}
