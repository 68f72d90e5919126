#include "ops/op_profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace portllm {

namespace {
struct Row {
  double ms = 0;
  int64_t calls = 0;
};
struct Pending {
  std::string key;
  std::unique_ptr<Event> start, end;
};

class Profile {
 public:
  void add(std::string key, std::unique_ptr<Event> start, std::unique_ptr<Event> end) {
    std::lock_guard<std::mutex> lk(mu_);
    pending_.push_back({std::move(key), std::move(start), std::move(end)});
    if (pending_.size() >= 256) harvest_locked();
  }
  void flush() {
    std::lock_guard<std::mutex> lk(mu_);
    harvest_locked();
    print_locked();
  }

 private:
  void harvest_locked() {
    for (auto& p : pending_) {
      p.end->synchronize();
      Row& r = rows_[p.key];
      r.ms += p.end->elapsed_ms(*p.start);
      ++r.calls;
    }
    pending_.clear();
  }
  void print_locked() {
    if (rows_.empty()) return;
    std::vector<std::pair<std::string, Row>> v(rows_.begin(), rows_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double total = 0;
    for (const auto& [k, r] : v) total += r.ms;
    std::fprintf(stderr, "\n== op profile (PORTLLM_PROFILE_OPS=1, device events) total %.2f ms\n", total);
    std::fprintf(stderr, "%10s %6s %8s %9s  %s\n", "total_ms", "share", "calls", "us/call", "kernel | op");
    for (const auto& [k, r] : v)
      std::fprintf(stderr, "%10.3f %5.1f%% %8lld %9.2f  %s\n", r.ms, 100.0 * r.ms / total, (long long)r.calls,
                   1000.0 * r.ms / double(r.calls), k.c_str());
    std::fprintf(stderr, "\n");
    rows_.clear();
  }
  std::mutex mu_;
  std::vector<Pending> pending_;
  std::map<std::string, Row> rows_;
};

Profile& profile() {
  static Profile* p = new Profile;  // never destroyed: its events must not outlive the runtime
  return *p;
}
}  // namespace

bool op_profiling_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("PORTLLM_PROFILE_OPS");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

void profile_op(OpContext& ctx, const KernelInfo& k, const OpDesc& desc, const std::function<void()>& launch) {
  auto start = ctx.device->create_event(), end = ctx.device->create_event();
  start->record(*ctx.stream);
  launch();
  end->record(*ctx.stream);
  profile().add(k.name + " | " + desc.str(), std::move(start), std::move(end));
}

void flush_op_profile() {
  if (op_profiling_enabled()) profile().flush();
}

}  // namespace portllm
