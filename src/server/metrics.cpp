#include "server/metrics.h"

#include <fmt/format.h>

namespace portllm::server {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i]++;
  sum_ += v;
  count_++;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

ServerMetrics::ServerMetrics()
    : ttft({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      tpot({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}),
      e2e({0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0}) {}

namespace {
void metric(std::string& out, const char* name, const char* type, const char* help, double v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
}
}  // namespace

std::string ServerMetrics::render(const EngineStats* s) const {
  std::string out;
  metric(out, "portllm_model_loaded", "gauge", "1 once the model is loaded and requests are served", s ? 1 : 0);
  if (s) {
    metric(out, "portllm_num_requests_running", "gauge", "requests in the running batch", s->num_running);
    metric(out, "portllm_num_requests_waiting", "gauge", "requests waiting to be scheduled", s->num_waiting);
    metric(out, "portllm_kv_cache_usage_perc", "gauge", "fraction of KV cache blocks in use (0..1)", s->kv_usage);
    metric(out, "portllm_kv_blocks_total", "gauge", "KV cache blocks in the pool", double(s->num_kv_blocks));
    metric(out, "portllm_kv_blocks_free", "gauge", "free KV cache blocks", double(s->num_free_kv_blocks));
    metric(out, "portllm_prompt_tokens_total", "counter", "prompt tokens processed", double(s->prompt_tokens_total));
    metric(out, "portllm_generation_tokens_total", "counter", "tokens generated", double(s->generation_tokens_total));
    metric(out, "portllm_prefix_cache_queries_total", "counter", "prompt tokens looked up in the prefix cache", double(s->prefix_cache_queries));
    metric(out, "portllm_prefix_cache_hits_total", "counter", "prompt tokens found in the prefix cache", double(s->prefix_cache_hits));
    metric(out, "portllm_prefix_cache_hit_rate", "gauge", "prefix cache hits / queries (tokens)",
           s->prefix_cache_queries ? double(s->prefix_cache_hits) / double(s->prefix_cache_queries) : 0.0);
    metric(out, "portllm_num_preemptions_total", "counter", "requests preempted for lack of KV blocks", double(s->num_preemptions));
  }
  out += "# HELP portllm_request_success_total requests finished, by outcome\n# TYPE portllm_request_success_total counter\n";
  out += fmt::format("portllm_request_success_total{{outcome=\"ok\"}} {}\n", requests_ok.load());
  out += fmt::format("portllm_request_success_total{{outcome=\"aborted\"}} {}\n", requests_aborted.load());
  out += fmt::format("portllm_request_success_total{{outcome=\"error\"}} {}\n", requests_failed.load());
  metric(out, "portllm_client_errors_total", "counter", "requests rejected with a 4xx status", double(client_errors.load()));
  ttft.render(out, "portllm_time_to_first_token_seconds", "time from request arrival to the first output token");
  tpot.render(out, "portllm_time_per_output_token_seconds", "time per output token after the first");
  e2e.render(out, "portllm_e2e_request_latency_seconds", "time from request arrival to its last token");
  return out;
}

}  // namespace portllm::server
