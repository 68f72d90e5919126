#include "cli/engine_options.h"

#include "cli/common.h"
#include "core/error.h"

namespace portllm::cli {

void add_engine_options(CLI::App* cmd, EngineOptions& o) {
  EngineConfig& c = o.cfg;
  cmd->add_option("--model,--model-path,-m", c.model_path, "model directory (config.json, *.safetensors); default: embedded stories260K");
  cmd->add_option("--device,-d", c.device, "backend: cpu, cuda[:N], musa[:N]");
  cmd->add_option("--load-format", c.load_format, "auto | safetensors | dummy (seeded random weights)");
  cmd->add_option("--dtype", c.dtype, "activation dtype on GPUs: auto (the checkpoint's) | f32 | bf16 | f16");
  cmd->add_option("--threads,-t", c.threads, "CPU threads (default: all cores)");
  cmd->add_option("--num-layers", c.num_layers_override, "keep only the first N decoder layers (benchmarks)");
  cmd->add_option("--max-num-seqs", c.max_num_seqs, "sequences running at once")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", c.max_num_batched_tokens,
                  "token budget of one step (default: the chunked prefill size; on GPUs of 70 GiB or more 16384, "
                  "8192 for serve (smaller GPUs 8192 / 2048), as vLLM; on the CPU max(2048, max-model-len))");
  cmd->add_option("--chunked-prefill-size", c.chunked_prefill_size,
                  "at most this many prompt tokens of one request per step; -1 disables chunking (0: the step budget)");
  cmd->add_option("--num-kv-blocks", c.num_kv_blocks, "KV cache blocks (default: from --mem-fraction-static)");
  cmd->add_option("--mem-fraction-static", c.mem_fraction_static,
                  "fraction of free device memory (after weights) for the KV cache (CPU: capped at 2 GiB)")->capture_default_str();
  cmd->add_option("--max-model-len", c.max_model_len, "longest prompt + output (default: max_position_embeddings)");
  cmd->add_option("--kv-dtype,--kv-cache-dtype", c.kv_dtype, "auto | f32 | f16 | bf16 | fp8 (e4m3, saturating)")->capture_default_str();
  cmd->add_option("--page-size,--block-size", c.page_size, "tokens per KV block (default: the backend's preference)");
  cmd->add_option("--cuda-graph-bs", c.cuda_graph_batch_sizes,
                  "decode batch sizes captured as CUDA/MUSA graphs (default 1,2,4,8,16,24,...,256 up to --max-num-seqs)")
      ->delimiter(',');
  cmd->add_flag("--disable-cuda-graph", c.disable_cuda_graph, "never replay decode steps from graphs");
  cmd->add_flag("--async-scheduling", o.async_scheduling,
                "schedule and launch decode step n+1 before step n's tokens are read back, overlapping the host's "
                "work with the device's (default on GPUs; on the CPU nothing overlaps)");
  cmd->add_flag("--no-async-scheduling", o.no_async_scheduling, "read every step back before scheduling the next");
  cmd->add_flag("--enable-prefix-caching", o.enable_prefix_caching, "reuse the KV cache of shared prompt prefixes (default on)");
  cmd->add_flag("--disable-prefix-caching,--no-enable-prefix-caching", o.disable_prefix_caching, "turn prefix caching off");
}

EngineConfig engine_config(const EngineOptions& o) {
  if (o.enable_prefix_caching && o.disable_prefix_caching)
    PL_THROW("--enable-prefix-caching and --disable-prefix-caching contradict each other");
  EngineConfig c = o.cfg;
  if (c.model_path.empty()) c.model_path = default_model_dir();
  if (o.disable_prefix_caching) c.enable_prefix_caching = false;
  if (o.enable_prefix_caching) c.enable_prefix_caching = true;
  if (o.async_scheduling && o.no_async_scheduling)
    PL_THROW("--async-scheduling and --no-async-scheduling contradict each other");
  if (o.async_scheduling || o.no_async_scheduling) c.async_scheduling = o.async_scheduling;
  return c;
}

}  // namespace portllm::cli
