// Engine setup, request validation and the thread-safe public calls. The loop is in
// engine_loop.cpp.
#include "engine/engine_impl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <climits>
#include <cmath>
#include <filesystem>

#include "backend/registry.h"
#include "ops/op_profiler.h"
#include "ops/sample_math.h"
#include "backends/builtin.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/generation_config.h"
#include "engine/kv_sizing.h"
#include "engine/token_budget.h"

namespace portllm {

namespace {
constexpr int kMaxLogprobs = 20;    // vLLM's default max_logprobs
constexpr size_t kDetokPrime = 6;   // prompt tokens that give the detokenizer its left context
}  // namespace

EngineImpl::EngineImpl(const EngineConfig& cfg) : cfg_(cfg) {
  load(cfg);
  thread_ = std::thread([this] { loop(); });
}

EngineImpl::~EngineImpl() { shutdown(); }

void EngineImpl::load(const EngineConfig& cfg) {
  if (cfg.max_num_seqs < 1) PL_THROW("--max-num-seqs must be >= 1, got {}", cfg.max_num_seqs);
  // 0 means "the default" for these; a negative value is a mistake, not a default.
  if (cfg.max_model_len < 0) PL_THROW("--max-model-len must be >= 1 (or 0 for the model's), got {}", cfg.max_model_len);
  if (cfg.num_kv_blocks < 0) PL_THROW("--num-kv-blocks must be >= 1 (or 0 to size the cache), got {}", cfg.num_kv_blocks);
  if (cfg.page_size < 0) PL_THROW("--block-size must be >= 1 (or 0 for the backend's), got {}", cfg.page_size);
  // Each thread is a pool worker started here: 100,000 of them would take minutes to start.
  if (cfg.threads < 0 || cfg.threads > 1024) PL_THROW("--threads must be in [1, 1024] (or 0 for all cores), got {}", cfg.threads);
  if (cfg.threads > 0) ThreadPool::set_global_threads(cfg.threads);
  register_builtin_backends();
  device_ = BackendRegistry::instance().device(cfg.device);
  ctx_ = std::make_unique<OpContext>(*device_);
  async_scheduling_ = cfg.async_scheduling.value_or(device_->kind() != DeviceKind::CPU);
  ModelLoadOptions lo;
  lo.path = cfg.model_path;
  lo.load_format = cfg.load_format;
  lo.dtype = cfg.dtype;
  lo.num_layers_override = cfg.num_layers_override;
  lo.seed = cfg.seed;
  model_ = load_model(lo, *ctx_);
  const ModelConfig& mc = model_->config();
  if (std::filesystem::exists(std::filesystem::path(cfg.model_path) / "tokenizer.json"))
    tokenizer_ = tok::Tokenizer::from_dir(cfg.model_path);

  // End of sequence: config.json, generation_config.json and the tokenizer's eos token.
  auto add_eos = [&](int64_t id) {
    if (id >= 0 && id < mc.vocab_size && std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
      eos_ids_.push_back(int32_t(id));
  };
  for (int64_t id : mc.eos_token_ids) add_eos(id);
  for (int32_t id : read_generation_eos_ids(cfg.model_path)) add_eos(id);
  if (tokenizer_)
    for (int32_t id : tokenizer_->eos_ids()) add_eos(id);

  // The RoPE table covers max_served_positions (max_position_embeddings up to 2^18): positions
  // past it would read beyond the table.
  const int64_t max_pos = mc.max_served_positions();
  max_model_len_ = cfg.max_model_len > 0 ? cfg.max_model_len : max_pos;
  if (max_model_len_ > mc.max_position_embeddings)
    PL_THROW("--max-model-len {} exceeds the model's max_position_embeddings ({})", max_model_len_, mc.max_position_embeddings);
  if (max_model_len_ > max_pos)
    PL_THROW("--max-model-len {} exceeds the {} positions portllm serves", max_model_len_, max_pos);

  const auto spec = model_->cache_spec();
  const bool recurrent = has_recurrent_layers(spec);
  const KvPlan plan = plan_kv_cache(cfg, spec, *device_, ctx_->act_dtype, max_model_len_);
  KvCacheConfig kc;
  kc.num_blocks = std::min<int64_t>(plan.num_blocks, INT_MAX);
  kc.page_size = plan.page_size;
  kc.dtype = plan.dtype;
  kc.num_state_slots = plan.num_state_slots;
  runner_ = std::make_unique<ModelRunner>(*model_, *ctx_, kc);
  sampler_ = std::make_unique<BatchSampler>(*ctx_);
  // Per-op profiling times each kernel with events, which a replayed graph would not record.
  if (device_->caps().graphs && !cfg.disable_cuda_graph && DecodeGraphs::supported(spec) && !op_profiling_enabled()) {
    const auto sizes = cfg.cuda_graph_batch_sizes.empty() ? DecodeGraphs::default_sizes(cfg.max_num_seqs)
                                                          : cfg.cuda_graph_batch_sizes;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      runner_->enable_decode_graphs(sizes, max_model_len_);
      std::fprintf(stderr, "portllm: captured %zu decode graphs (batch sizes %d..%d) in %.2f s\n", sizes.size(),
                   runner_->decode_graphs()->sizes().front(), runner_->decode_graphs()->sizes().back(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "portllm: decode graphs disabled (%s)\n", e.what());
    }
  }

  SchedulerConfig& sc = sched_cfg_;
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.max_model_len = int(max_model_len_);
  sc.enable_chunked_prefill = cfg.chunked_prefill_size != -1;
  sc.long_prefill_token_threshold = cfg.chunked_prefill_size > 0 ? cfg.chunked_prefill_size : 0;
  sc.max_num_batched_tokens = cfg.max_num_batched_tokens > 0
                                  ? cfg.max_num_batched_tokens
                                  : int(default_token_budget(cfg, device_->kind(), device_->caps(), max_model_len_));
  // A hybrid model's recurrent state is not cached with the blocks: a prefix hit would skip the
  // tokens that build it. Such models always run without prefix caching.
  sc.enable_prefix_caching = cfg.enable_prefix_caching && !recurrent;
  sc.block_size = int(plan.page_size);
  sc.num_blocks = int(kc.num_blocks);
  sc.num_state_slots = int(plan.num_state_slots);
  scheduler_ = std::make_unique<Scheduler>(sc);
  seed_rng_.seed(cfg.seed ^ 0x5eedULL);
  loop_stats_.num_kv_blocks = sc.num_blocks;
  loop_stats_.num_free_kv_blocks = sc.num_blocks;
  stats_ = loop_stats_;
}

const tok::Tokenizer& EngineImpl::tokenizer() const {
  if (!tokenizer_) PL_THROW("{}: the model directory has no tokenizer.json", cfg_.model_path);
  return *tokenizer_;
}

std::vector<int32_t> EngineImpl::prompt_ids(const RequestInput& in) const {
  if (!in.prompt_ids.empty()) return in.prompt_ids;
  if (in.prompt.empty()) PL_THROW("the prompt is empty");
  if (!tokenizer_) PL_THROW("{}: no tokenizer.json, so only token-id prompts are accepted", cfg_.model_path);
  return tokenizer_->encode(in.prompt, in.add_special_tokens);
}

void EngineImpl::validate(const std::vector<int32_t>& prompt, const SamplingParams& p) const {
  const int64_t V = model_->config().vocab_size;
  if (prompt.empty()) PL_THROW("the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= V)
      PL_THROW("prompt token id {} (position {}) is outside the vocabulary (0..{})", prompt[i], i, V - 1);
  // Each sample is a sequence with its own sampler state, made here: a bound keeps a stray n
  // from allocating millions of them (the server allows 128, as vLLM's default max).
  if (p.n < 1 || p.n > 1024) PL_THROW("n must be in [1, 1024], got {}", p.n);
  if (p.max_tokens < 1) PL_THROW("max_tokens must be >= 1, got {}", p.max_tokens);
  if (p.min_tokens < 0 || p.min_tokens > p.max_tokens)
    PL_THROW("min_tokens must be in [0, max_tokens={}], got {}", p.max_tokens, p.min_tokens);
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature))
    PL_THROW("temperature must be >= 0, got {}", p.temperature);
  if (!(p.top_p > 0 && p.top_p <= 1)) PL_THROW("top_p must be in (0, 1], got {}", p.top_p);
  if (p.top_k < -1) PL_THROW("top_k must be -1 (off), 0 (off) or positive, got {}", p.top_k);
  if (!(p.min_p >= 0 && p.min_p <= 1)) PL_THROW("min_p must be in [0, 1], got {}", p.min_p);
  if (!(p.repetition_penalty > 0) || !std::isfinite(p.repetition_penalty))
    PL_THROW("repetition_penalty must be > 0, got {}", p.repetition_penalty);
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2))
    PL_THROW("presence_penalty must be in [-2, 2], got {}", p.presence_penalty);
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2))
    PL_THROW("frequency_penalty must be in [-2, 2], got {}", p.frequency_penalty);
  if (p.logprobs > kMaxLogprobs) PL_THROW("logprobs must be <= {}, got {}", kMaxLogprobs, p.logprobs);
  for (const auto& [id, bias] : p.logit_bias)
    if (id < 0 || id >= V) PL_THROW("logit_bias: token id {} is outside the vocabulary (0..{})", id, V - 1);
  for (int32_t id : p.stop_token_ids)
    if (id < 0 || id >= V) PL_THROW("stop_token_ids: token id {} is outside the vocabulary (0..{})", id, V - 1);
  for (const auto& s : p.stop)
    if (s.empty()) PL_THROW("stop: empty stop strings are not allowed");
  if (!p.stop.empty() && !tokenizer_) PL_THROW("stop strings need a tokenizer; {} has no tokenizer.json", cfg_.model_path);
  const int64_t longest = int64_t(prompt.size()) + p.max_tokens;
  if (longest > max_model_len_)
    PL_THROW("prompt ({} tokens) + max_tokens ({}) = {} exceeds the maximum context length ({})",
             prompt.size(), p.max_tokens, longest, max_model_len_);
  // The last sampled token is never fed back: longest - 1 tokens need K/V.
  const int64_t page = sched_cfg_.block_size, blocks = (longest - 1 + page - 1) / page;
  if (blocks > sched_cfg_.num_blocks)
    PL_THROW("prompt ({} tokens) + max_tokens ({}) needs {} KV blocks of {} tokens but the cache has "
             "only {} (raise --num-kv-blocks or --mem-fraction-static)",
             prompt.size(), p.max_tokens, blocks, page, sched_cfg_.num_blocks);
}

uint64_t EngineImpl::add_request(RequestInput input, OutputCallback cb) {
  std::vector<int32_t> prompt = prompt_ids(input);
  validate(prompt, input.params);
  auto r = std::make_unique<EngineRequest>();
  r->prompt = std::move(prompt);
  r->params = std::move(input.params);
  r->callback = std::move(cb);
  for (int32_t id : r->params.stop_token_ids) r->stop_ids.push_back(id);
  if (!r->params.ignore_eos)
    for (int32_t id : eos_ids_) r->stop_ids.push_back(id);
  const SamplingParams& p = r->params;
  const int64_t V = model_->config().vocab_size;
  for (int i = 0; i < p.n; ++i) {
    auto s = std::make_unique<SeqState>();
    s->owner = r.get();
    s->index = i;
    s->stop = StopChecker(p.stop);
    s->sampler.penalties.init(p, r->prompt, V);
    if (tokenizer_) {
      s->detok = std::make_unique<tok::StreamDecoder>(*tokenizer_, p.skip_special_tokens);
      // Decode outputs in the context of the prompt's tail (leading spaces, multi-token chars).
      const size_t from = r->prompt.size() > kDetokPrime ? r->prompt.size() - kDetokPrime : 0;
      for (size_t j = from; j < r->prompt.size(); ++j) s->detok->push(r->prompt[j]);
    }
    r->seqs.push_back(std::move(s));
  }
  r->num_unfinished = p.n;
  std::lock_guard<std::mutex> lk(mu_);
  if (stopping_) PL_THROW("the engine is shut down");
  for (auto& s : r->seqs)
    s->sampler.seed = p.seed ? sampling::mix64(*p.seed + uint64_t(s->index)) : seed_rng_();
  r->id = next_id_++;
  const uint64_t id = r->id;
  inbox_.push_back(std::move(r));
  cv_.notify_one();
  return id;
}

void EngineImpl::hold_intake(bool held) {
  std::lock_guard<std::mutex> lk(mu_);
  intake_held_ = held;
  cv_.notify_one();
}

void EngineImpl::abort(uint64_t request_id) {
  std::lock_guard<std::mutex> lk(mu_);
  abort_inbox_.push_back(request_id);
  cv_.notify_one();
}

EngineStats EngineImpl::stats() const {
  EngineStats s;
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    s = stats_;
  }
  s.device_allocations = device_->memory_stats().driver_allocations;
  return s;
}

void EngineImpl::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace portllm
