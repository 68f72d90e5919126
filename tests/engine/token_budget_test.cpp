// The default token budget per step: vLLM's by usage context and device memory on GPUs, the
// previous rule on the CPU, never below max_num_seqs nor, without chunking, below max_model_len.
#include <gtest/gtest.h>

#include "engine/token_budget.h"

using namespace portllm;

namespace {
DeviceCaps with_memory(size_t gib) {
  DeviceCaps c;
  c.total_memory = gib << 30;
  return c;
}
}  // namespace

TEST(TokenBudget, GpuDefaultsFollowVllmByUsageAndMemory) {
  EngineConfig cfg;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(141), 2048), 16384);
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(24), 2048), 8192);
  cfg.serving = true;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(141), 2048), 8192);
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::MUSA, with_memory(48), 2048), 2048);
}

TEST(TokenBudget, CpuKeepsTheLongestPrompt) {
  EngineConfig cfg;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CPU, with_memory(24), 256), 2048);
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CPU, with_memory(24), 32768), 32768);
}

TEST(TokenBudget, ChunkSizeSeqsAndUnchunkedPromptsBoundIt) {
  EngineConfig cfg;
  cfg.chunked_prefill_size = 512;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(141), 4096), 512);
  cfg.max_num_seqs = 1024;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(141), 4096), 1024);
  cfg.chunked_prefill_size = -1;  // no chunking: a whole prompt must fit one step
  cfg.max_num_seqs = 256;
  EXPECT_EQ(default_token_budget(cfg, DeviceKind::CUDA, with_memory(141), 32768), 32768);
}
