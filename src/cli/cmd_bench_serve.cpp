// portllm bench serve: online serving benchmark against any OpenAI-compatible server, after
// vLLM's `vllm bench serve` / SGLang's bench_serving: random prompts (token ids) of fixed or
// random lengths, arrivals as a Poisson process (gamma intervals with --burstiness), optional
// concurrency cap, streaming /v1/completions so TTFT, TPOT and ITL are measured per request.
#include <climits>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <random>
#include <semaphore>
#include <thread>

#include "cli/commands.h"
#include "cli/openai_client.h"
#include "core/error.h"

namespace portllm::cli {

namespace {
using Clock = std::chrono::steady_clock;

struct BenchServeOptions {
  ServerAddress addr;
  std::string model;
  std::string endpoint = "/v1/completions";
  int num_prompts = 100;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int max_concurrency = 0;
  int input_len = 1024, output_len = 128;
  int prefix_len = 0;  // tokens every prompt starts with (a few-shot prefix), before its own input_len
  double range_ratio = 0.0;
  int vocab_size = 500;
  uint64_t seed = 0;
  bool disable_ignore_eos = false;
  bool json = false;
};

struct Stats {
  double mean = 0, median = 0, p99 = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  // Linear interpolation between closest ranks (numpy's default percentile).
  double pos = 0.99 * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, v.size() - 1);
  s.p99 = v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
  return s;
}

int draw_len(std::mt19937_64& rng, int len, double ratio) {
  // vLLM's random dataset: uniform in [len * (1 - ratio), len * (1 + ratio)].
  int lo = std::max(1, int(std::floor(len * (1.0 - ratio)))), hi = std::max(lo, int(std::ceil(len * (1.0 + ratio))));
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

void run(const BenchServeOptions& o) {
  if (o.num_prompts < 1) PL_THROW("--num-prompts must be >= 1");
  if (!(o.request_rate > 0)) PL_THROW("--request-rate must be > 0 (inf: all at once)");
  if (!(o.burstiness > 0)) PL_THROW("--burstiness must be > 0");
  if (o.range_ratio < 0 || o.range_ratio >= 1) PL_THROW("--random-range-ratio must be in [0, 1)");
  if (o.vocab_size < 10) PL_THROW("--random-vocab-size must be >= 10");
  if (o.prefix_len < 0) PL_THROW("--random-prefix-len must be >= 0");
  const std::string model = o.model.empty() ? first_model_id(o.addr) : o.model;
  if (model.empty()) PL_THROW("cannot reach an OpenAI-compatible server at {}:{} (GET /v1/models failed)", o.addr.host, o.addr.port);

  std::mt19937_64 rng(o.seed);
  struct Req {
    std::vector<int32_t> prompt;
    int output_len = 0;
    double send_at = 0;  // seconds after the start
  };
  std::vector<Req> reqs(o.num_prompts);
  std::uniform_int_distribution<int32_t> tok(3, o.vocab_size - 1);  // skip the usual <unk>/<s>/</s> ids
  std::gamma_distribution<double> gap(o.burstiness, 1.0 / (o.request_rate * o.burstiness));
  std::vector<int32_t> prefix(size_t(o.prefix_len));
  for (auto& x : prefix) x = tok(rng);
  double t = 0;
  for (auto& r : reqs) {
    r.prompt = prefix;
    r.prompt.resize(prefix.size() + size_t(draw_len(rng, o.input_len, o.range_ratio)));
    for (size_t j = prefix.size(); j < r.prompt.size(); ++j) r.prompt[j] = tok(rng);
    r.output_len = draw_len(rng, o.output_len, o.range_ratio);
    r.send_at = t;
    if (std::isfinite(o.request_rate)) t += gap(rng);
  }

  std::vector<CompletionResult> results(reqs.size());
  std::counting_semaphore<1 << 20> slots(o.max_concurrency > 0 ? o.max_concurrency : (1 << 20));
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(reqs[i].send_at));
    slots.acquire();
    threads.emplace_back([&, i] {
      nlohmann::json body{{"model", model}, {"prompt", reqs[i].prompt}, {"max_tokens", reqs[i].output_len},
                          {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
                          {"ignore_eos", !o.disable_ignore_eos}};
      results[i] = post_completion(o.addr, o.endpoint, body);
      slots.release();
    });
  }
  for (auto& th : threads) th.join();
  const double duration = std::chrono::duration<double>(Clock::now() - t0).count();

  int completed = 0, failed = 0;
  int64_t in_tok = 0, out_tok = 0;
  std::vector<double> ttft, tpot, itl, e2e;
  std::string first_error;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.ok) {
      failed++;
      if (first_error.empty()) first_error = r.error;
      std::fprintf(stderr, "request %zu failed: %s\n", i, r.error.c_str());  // every one: a pattern shows
      continue;
    }
    completed++;
    in_tok += r.prompt_tokens ? r.prompt_tokens : int64_t(reqs[i].prompt.size());
    out_tok += r.completion_tokens;
    ttft.push_back(r.ttft * 1e3);
    e2e.push_back(r.latency * 1e3);
    if (r.completion_tokens > 1) tpot.push_back((r.latency - r.ttft) * 1e3 / (r.completion_tokens - 1));
    for (double x : r.itl) itl.push_back(x * 1e3);
  }
  Stats st = stats_of(ttft), sp = stats_of(tpot), si = stats_of(itl), se = stats_of(e2e);
  if (o.json) {
    auto js = [](const Stats& s) { return nlohmann::json{{"mean", s.mean}, {"median", s.median}, {"p99", s.p99}}; };
    nlohmann::json j{{"completed", completed}, {"failed", failed}, {"duration_s", duration},
                     {"request_rate", std::isfinite(o.request_rate) ? nlohmann::json(o.request_rate) : nlohmann::json("inf")},
                     {"burstiness", o.burstiness}, {"max_concurrency", o.max_concurrency},
                     {"total_input_tokens", in_tok}, {"total_output_tokens", out_tok},
                     {"request_throughput", completed / duration}, {"input_throughput", in_tok / duration},
                     {"output_throughput", out_tok / duration}, {"total_token_throughput", (in_tok + out_tok) / duration},
                     {"ttft_ms", js(st)}, {"tpot_ms", js(sp)}, {"itl_ms", js(si)}, {"e2el_ms", js(se)}};
    if (!first_error.empty()) j["first_error"] = first_error;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("============ Serving Benchmark Result ============\n");
  std::printf("%-40s %10d\n%-40s %10d\n", "Successful requests:", completed, "Failed requests:", failed);
  if (!first_error.empty()) std::printf("First error: %s\n", first_error.c_str());
  std::printf("%-40s %10s\n", "Request rate (req/s):", std::isfinite(o.request_rate) ? std::to_string(o.request_rate).c_str() : "inf");
  std::printf("%-40s %10d\n", "Max concurrency:", o.max_concurrency);
  std::printf("%-40s %10.2f\n", "Benchmark duration (s):", duration);
  std::printf("%-40s %10lld\n%-40s %10lld\n", "Total input tokens:", (long long)in_tok, "Total generated tokens:", (long long)out_tok);
  std::printf("%-40s %10.2f\n", "Request throughput (req/s):", completed / duration);
  std::printf("%-40s %10.2f\n", "Output token throughput (tok/s):", out_tok / duration);
  std::printf("%-40s %10.2f\n", "Total token throughput (tok/s):", (in_tok + out_tok) / duration);
  auto block = [](const char* title, const char* key, const Stats& s) {
    std::printf("%s\n", title);
    std::printf("Mean %-35s %10.2f\nMedian %-33s %10.2f\nP99 %-36s %10.2f\n", key, s.mean, key, s.median, key, s.p99);
  };
  block("---------------Time to First Token----------------", "TTFT (ms):", st);
  block("-----Time per Output Token (excl. 1st token)------", "TPOT (ms):", sp);
  block("---------------Inter-token Latency----------------", "ITL (ms):", si);
  block("----------------End-to-end Latency----------------", "E2EL (ms):", se);
  std::printf("==================================================\n");
}

}  // namespace

void add_bench_serve_subcommand(CLI::App* bench) {
  auto o = std::make_shared<BenchServeOptions>();
  auto* s = bench->add_subcommand("serve", "online benchmark of an OpenAI-compatible server (streaming /v1/completions)");
  s->add_option("--host", o->addr.host, "server host")->capture_default_str();
  s->add_option("--port", o->addr.port, "server port")->capture_default_str()->check(CLI::Range(1, 65535));
  s->add_option("--api-key", o->addr.api_key, "API key (Authorization: Bearer)");
  s->add_option("--model", o->model, "model name (default: the server's first model)");
  s->add_option("--endpoint", o->endpoint, "completions path")->capture_default_str();
  s->add_option("--num-prompts", o->num_prompts, "requests sent")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  s->add_option("--request-rate", o->request_rate, "requests per second (Poisson arrivals); inf: all at once")->capture_default_str();
  s->add_option("--burstiness", o->burstiness, "gamma shape of the arrival intervals (1: Poisson; <1 burstier)")->capture_default_str();
  s->add_option("--max-concurrency", o->max_concurrency, "requests in flight at most (0: no cap)")->capture_default_str();
  s->add_option("--random-input-len", o->input_len, "prompt tokens (after the shared prefix, if any)")->capture_default_str();
  s->add_option("--random-output-len", o->output_len, "output tokens (ignore_eos makes them exact)")->capture_default_str();
  s->add_option("--random-prefix-len", o->prefix_len, "tokens shared by every prompt, before its own input (a few-shot prefix: exercises prefix caching)")->capture_default_str();
  s->add_option("--random-range-ratio", o->range_ratio, "lengths uniform in [len*(1-r), len*(1+r)]; 0: fixed")->capture_default_str();
  s->add_option("--random-vocab-size", o->vocab_size, "prompt token ids are drawn from [3, N)")->capture_default_str();
  s->add_option("--seed", o->seed, "workload seed")->capture_default_str();
  s->add_flag("--disable-ignore-eos", o->disable_ignore_eos, "let requests stop at EOS (lengths then vary)");
  s->add_flag("--json", o->json, "print the results as JSON");
  s->callback([o] { run(*o); });
}

}  // namespace portllm::cli
