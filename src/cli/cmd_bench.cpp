// portllm bench latency | throughput: offline benchmarks through the Engine, as vLLM's
// `vllm bench latency/throughput`. The throughput default is nano-vllm's workload: 256 sequences,
// input and output lengths uniform in [100, 1024], random token ids, ignore_eos, seeded.
// (`bench serve`, the HTTP client benchmark, is added by the server.)
#include <climits>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/progress_bar.h"
#include "core/error.h"
#include "ops/op_profiler.h"

namespace portllm::cli {

namespace {
using Clock = std::chrono::steady_clock;

struct Range {
  int lo = 0, hi = 0;
};

// "N" or "LO:HI" (inclusive).
Range parse_range(const std::string& s, const char* flag) {
  Range r;
  try {
    const auto colon = s.find(':');
    if (colon == std::string::npos) {
      r.lo = r.hi = std::stoi(s);
    } else {
      r.lo = std::stoi(s.substr(0, colon));
      r.hi = std::stoi(s.substr(colon + 1));
    }
  } catch (...) {
    PL_THROW("{}: '{}' is not N or LO:HI", flag, s);
  }
  if (r.lo < 1 || r.hi < r.lo) PL_THROW("{}: '{}' needs 1 <= LO <= HI", flag, s);
  return r;
}

std::vector<int32_t> random_ids(std::mt19937_64& rng, int n, int64_t vocab) {
  // nano-vllm draws ids below 10000; tiny vocabularies use all of theirs.
  std::uniform_int_distribution<int32_t> d(0, int32_t(std::min<int64_t>(vocab, 10000) - 1));
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

struct RunResult {
  double elapsed = 0;
  std::vector<double> ttft, e2e;  // seconds, per request
  int64_t output_tokens = 0;
};

// Submits all requests at once and waits for them all.
RunResult run_batch(Engine& engine, std::vector<RequestInput>& reqs, ProgressBar* bar) {
  RunResult res;
  res.ttft.assign(reqs.size(), 0);
  res.e2e.assign(reqs.size(), 0);
  std::mutex mu;
  std::condition_variable cv;
  size_t left = reqs.size();
  int done = 0;
  std::string error;
  const auto t0 = Clock::now();
  // All in before the first step (Engine::hold_intake): the same batches on every run.
  {
    IntakeHold hold(engine);
    for (size_t i = 0; i < reqs.size(); ++i) {
      engine.add_request(reqs[i], [&, i](const RequestOutput& o) {
        const double t = std::chrono::duration<double>(Clock::now() - t0).count();
        std::lock_guard<std::mutex> lk(mu);
        if (res.ttft[i] == 0 && !o.token_ids.empty()) res.ttft[i] = t;
        res.output_tokens += int64_t(o.token_ids.size());
        if (o.finished) {
          if (!o.error.empty() && error.empty()) error = o.error;
          res.e2e[i] = t;
          --left;
          ++done;
          cv.notify_all();
        }
        if (bar) bar->update(done, res.output_tokens);
      });
    }
  }
  std::unique_lock<std::mutex> lk(mu);
  cv.wait(lk, [&] { return left == 0; });
  res.elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!error.empty()) PL_THROW("a benchmark request failed: {}", error);
  return res;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

// The engine loop's time per step: on a GPU, schedule + outputs is host time between steps with
// the device idle, and sample includes waiting for the forward pass, unless the step was
// scheduled ahead (async scheduling), whose host work overlaps the step before.
void print_step_times(const EngineStats& st) {
  if (st.steps == 0) return;
  const double k = 1e3 / double(st.steps);
  std::printf("engine steps   %lld (%lld scheduled ahead): schedule %.3f, forward %.3f, sample %.3f, outputs %.3f ms/step\n",
              static_cast<long long>(st.steps), static_cast<long long>(st.steps_ahead), st.schedule_s * k,
              st.forward_s * k, st.sample_s * k, st.outputs_s * k);
}

struct LatencyOptions {
  EngineOptions engine;
  int batch_size = 8, input_len = 32, output_len = 128, iters = 3, warmup = 1;
  uint64_t seed = 0;
  bool json = false;
};

void run_latency(const LatencyOptions& o) {
  EngineConfig cfg = engine_config(o.engine);
  cfg.seed = o.seed;
  auto engine = Engine::create(cfg);
  std::mt19937_64 rng(o.seed);
  const int64_t V = engine->model_config().vocab_size;
  std::vector<double> ttft, tpot, e2e, tps;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    std::vector<RequestInput> reqs(size_t(o.batch_size));
    for (auto& r : reqs) {  // fresh random prompts: no prefix-cache hits across iterations
      r.prompt_ids = random_ids(rng, o.input_len, V);
      r.params.temperature = 0;
      r.params.ignore_eos = true;
      r.params.max_tokens = o.output_len;
    }
    RunResult res = run_batch(*engine, reqs, nullptr);
    if (it < o.warmup) continue;
    for (size_t i = 0; i < reqs.size(); ++i) {
      ttft.push_back(res.ttft[i]);
      e2e.push_back(res.e2e[i]);
      if (o.output_len > 1) tpot.push_back((res.e2e[i] - res.ttft[i]) / (o.output_len - 1));
    }
    tps.push_back(double(res.output_tokens) / res.elapsed);
  }
  nlohmann::json j = {{"batch_size", o.batch_size}, {"input_len", o.input_len}, {"output_len", o.output_len},
                      {"num_iters", o.iters},
                      {"mean_ttft_ms", mean(ttft) * 1e3}, {"p50_ttft_ms", percentile(ttft, 0.5) * 1e3},
                      {"mean_tpot_ms", mean(tpot) * 1e3}, {"p50_tpot_ms", percentile(tpot, 0.5) * 1e3},
                      {"mean_e2e_latency_s", mean(e2e)}, {"output_throughput_tok_s", mean(tps)}};
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("batch %d, input %d, output %d tokens, %d iterations\n", o.batch_size, o.input_len, o.output_len, o.iters);
    std::printf("TTFT           mean %8.2f ms   p50 %8.2f ms\n", mean(ttft) * 1e3, percentile(ttft, 0.5) * 1e3);
    std::printf("TPOT           mean %8.2f ms   p50 %8.2f ms\n", mean(tpot) * 1e3, percentile(tpot, 0.5) * 1e3);
    std::printf("E2E latency    mean %8.3f s\n", mean(e2e));
    std::printf("output tok/s   %10.1f\n", mean(tps));
    print_step_times(engine->stats());  // warm-up and prefill steps included
  }
  flush_op_profile();  // PORTLLM_PROFILE_OPS=1: the per-kernel table, while the device is alive
  engine->shutdown();
}

struct ThroughputOptions {
  EngineOptions engine;
  int num_prompts = 256;
  std::string input_len = "100:1024", output_len = "100:1024";
  int shared_prefix_len = 0;
  float temperature = 0.6f;  // nano-vllm's
  uint64_t seed = 0;
  bool json = false;
};

void run_throughput(const ThroughputOptions& o) {
  const Range in = parse_range(o.input_len, "--input-len"), out = parse_range(o.output_len, "--output-len");
  EngineConfig cfg = engine_config(o.engine);
  cfg.seed = o.seed;
  auto engine = Engine::create(cfg);
  std::mt19937_64 rng(o.seed);
  const int64_t V = engine->model_config().vocab_size;
  const std::vector<int32_t> prefix = random_ids(rng, o.shared_prefix_len, V);
  std::vector<RequestInput> reqs(size_t(o.num_prompts));
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto& r = reqs[i];
    const int n_in = std::uniform_int_distribution<int>(in.lo, in.hi)(rng);
    r.prompt_ids = prefix;
    auto suffix = random_ids(rng, n_in, V);
    r.prompt_ids.insert(r.prompt_ids.end(), suffix.begin(), suffix.end());
    r.params.temperature = o.temperature;
    r.params.seed = o.seed + i;
    r.params.ignore_eos = true;
    r.params.max_tokens = std::uniform_int_distribution<int>(out.lo, out.hi)(rng);
    prompt_tokens += int64_t(r.prompt_ids.size());
  }
  const int64_t allocations_before = engine->stats().device_allocations;
  ProgressBar bar(o.num_prompts, "throughput");
  RunResult res = run_batch(*engine, reqs, &bar);
  bar.finish();
  const EngineStats st = engine->stats();
  // Driver allocations inside the timed run (-1: the device does not count them).
  const int64_t allocations = st.device_allocations < 0 ? -1 : st.device_allocations - allocations_before;
  const double t = res.elapsed;
  nlohmann::json j = {{"num_prompts", o.num_prompts}, {"elapsed_s", t},
                      {"prompt_tokens", prompt_tokens}, {"output_tokens", res.output_tokens},
                      {"requests_per_s", o.num_prompts / t}, {"input_tok_s", double(prompt_tokens) / t},
                      {"output_tok_s", double(res.output_tokens) / t},
                      {"total_tok_s", double(prompt_tokens + res.output_tokens) / t},
                      {"prefix_cache_hit_tokens", st.prefix_cache_hits},
                      {"prefix_cache_query_tokens", st.prefix_cache_queries},
                      {"num_preemptions", st.num_preemptions}, {"num_kv_blocks", st.num_kv_blocks},
                      {"device_allocations", allocations}};
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%d requests, %lld prompt + %lld output tokens in %.2f s\n", o.num_prompts,
                static_cast<long long>(prompt_tokens), static_cast<long long>(res.output_tokens), t);
    std::printf("requests/s     %10.2f\n", o.num_prompts / t);
    std::printf("input tok/s    %10.1f\n", double(prompt_tokens) / t);
    std::printf("output tok/s   %10.1f\n", double(res.output_tokens) / t);
    std::printf("total tok/s    %10.1f\n", double(prompt_tokens + res.output_tokens) / t);
    std::printf("prefix cache   %lld of %lld prompt tokens hit; %lld preemptions; %lld KV blocks\n",
                static_cast<long long>(st.prefix_cache_hits), static_cast<long long>(st.prefix_cache_queries),
                static_cast<long long>(st.num_preemptions), static_cast<long long>(st.num_kv_blocks));
    if (allocations >= 0)
      std::printf("device allocs  %lld during the run (%lld before it)\n", static_cast<long long>(allocations),
                  static_cast<long long>(allocations_before));
    print_step_times(st);
  }
  flush_op_profile();  // PORTLLM_PROFILE_OPS=1: the per-kernel table, while the device is alive
  engine->shutdown();
}
}  // namespace

void add_bench_command(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "offline benchmarks through the engine (latency, throughput)");
  bench->require_subcommand(1);

  auto lo = std::make_shared<LatencyOptions>();
  auto* lat = bench->add_subcommand("latency", "time to first token and per-token latency of one batch");
  add_engine_options(lat, lo->engine);
  lat->add_option("--batch-size", lo->batch_size, "requests per batch")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  lat->add_option("--input-len", lo->input_len, "prompt tokens per request")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  lat->add_option("--output-len", lo->output_len, "output tokens per request")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  lat->add_option("--num-iters", lo->iters, "measured iterations")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  lat->add_option("--num-iters-warmup", lo->warmup, "warm-up iterations")->capture_default_str()->check(CLI::Range(0, INT_MAX));
  lat->add_option("--seed", lo->seed, "workload (and dummy weight) seed");
  lat->add_flag("--json", lo->json, "print the results as JSON");
  lat->callback([lo] { run_latency(*lo); });

  auto to = std::make_shared<ThroughputOptions>();
  auto* thr = bench->add_subcommand("throughput", "offline throughput on random prompts (nano-vllm workload by default)");
  add_engine_options(thr, to->engine);
  thr->add_option("--num-prompts", to->num_prompts, "requests")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  thr->add_option("--input-len", to->input_len, "prompt tokens: N or LO:HI (uniform)")->capture_default_str();
  thr->add_option("--output-len", to->output_len, "output tokens: N or LO:HI (uniform)")->capture_default_str();
  thr->add_option("--shared-prefix-len", to->shared_prefix_len, "tokens of one common prefix before every prompt (prefix-cache workload)");
  thr->add_option("--temperature", to->temperature, "sampling temperature")->capture_default_str();
  thr->add_option("--seed", to->seed, "workload (and dummy weight) seed");
  thr->add_flag("--json", to->json, "print the results as JSON");
  thr->callback([to] { run_throughput(*to); });

  // `bench serve` (HTTP client benchmark) is the server's: the lead wires
  add_bench_serve_subcommand(bench);
}

}  // namespace portllm::cli
