// Prometheus text exposition for GET /metrics: engine gauges/counters (read from
// Engine::stats() at scrape time) plus latency histograms the server measures per request.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace portllm::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  Histogram ttft;            // request arrival -> first output token, seconds
  Histogram tpot;            // time per output token after the first, seconds
  Histogram e2e;             // request arrival -> last token, seconds
  std::atomic<int64_t> requests_ok{0}, requests_aborted{0}, requests_failed{0};
  std::atomic<int64_t> client_errors{0};  // 4xx responses

  // `stats` is null while the model is loading.
  std::string render(const EngineStats* stats) const;
};

}  // namespace portllm::server
