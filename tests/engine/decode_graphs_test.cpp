// Decode-graph policy that does not need a GPU: which batch sizes are captured by default and
// which cache layouts may be replayed from graphs (runtime/decode_graphs.h). Graph replay itself is
// checked on a GPU by scripts/gpu-check.sh (graphs vs eager outputs on 40 requests).
#include <algorithm>

#include <gtest/gtest.h>

#include "runtime/decode_graphs.h"

namespace portllm {
namespace {

LayerCacheSpec spec_of(LayerCacheSpec::Kind k) {
  LayerCacheSpec s;
  s.kind = k;
  return s;
}

TEST(DecodeGraphs, DefaultSizesStopAtMaxNumSeqs) {
  EXPECT_EQ(DecodeGraphs::default_sizes(1), (std::vector<int>{1}));
  EXPECT_EQ(DecodeGraphs::default_sizes(20), (std::vector<int>{1, 2, 4, 8, 16}));
  const auto all = DecodeGraphs::default_sizes(1024);
  EXPECT_EQ(all.front(), 1);
  EXPECT_EQ(all.back(), 256);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST(DecodeGraphs, OnlyPlainPagedKvModelsTakeGraphs) {
  using K = LayerCacheSpec::Kind;
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::PagedKV), spec_of(K::PagedKV)}));
  EXPECT_TRUE(DecodeGraphs::supported({spec_of(K::PagedKV), spec_of(K::None)}));
  // MLA and recurrent-state kernels plan grids from host mirrors that a replay would not refresh.
  EXPECT_FALSE(DecodeGraphs::supported({spec_of(K::PagedKV), spec_of(K::PagedLatent)}));
  EXPECT_FALSE(DecodeGraphs::supported({spec_of(K::Recurrent), spec_of(K::PagedKV)}));
}

}  // namespace
}  // namespace portllm
