#include "server/generation_run.h"

#include <atomic>
#include <map>

namespace portllm::server {

using Clock = std::chrono::steady_clock;

namespace {
std::atomic<int> g_live{0};
}

int GenerationRun::live() { return g_live.load(); }

struct GenerationRun::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<ChoiceOutput> queue;
  int finished = 0;
  Clock::time_point start = Clock::now();
  struct Timing {
    bool first = false;
    Clock::time_point last;
  };
  std::map<int, Timing> timing;
  ServerMetrics* metrics = nullptr;
};

GenerationRun::GenerationRun(std::shared_ptr<Engine> engine, ServerMetrics& metrics)
    : engine_(std::move(engine)), sh_(std::make_shared<Shared>()) {
  sh_->metrics = &metrics;
  g_live++;
}

GenerationRun::~GenerationRun() {
  abort();
  g_live--;
}

void GenerationRun::add(RequestInput input, int choice_base) {
  const int n = input.params.n;
  std::shared_ptr<Shared> sh = sh_;
  uint64_t id = engine_->add_request(std::move(input), [sh, choice_base](const RequestOutput& o) {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(sh->mu);
    const int choice = choice_base + o.index;
    // Latency metrics are taken here, on the engine thread, when the tokens exist.
    auto& t = sh->timing[choice];
    if (!o.token_ids.empty()) {
      if (!t.first) {
        t.first = true;
        sh->metrics->ttft.observe(std::chrono::duration<double>(now - sh->start).count());
      } else {
        double dt = std::chrono::duration<double>(now - t.last).count() / double(o.token_ids.size());
        for (size_t i = 0; i < o.token_ids.size(); ++i) sh->metrics->tpot.observe(dt);
      }
      t.last = now;
    }
    if (o.finished) {
      sh->finished++;
      sh->metrics->e2e.observe(std::chrono::duration<double>(now - sh->start).count());
      if (o.finish_reason == FinishReason::Abort) sh->metrics->requests_aborted++;
      else if (o.finish_reason == FinishReason::Error) sh->metrics->requests_failed++;
      else sh->metrics->requests_ok++;
    }
    sh->queue.push_back({choice, o});
    sh->cv.notify_all();
  });
  ids_.push_back(id);
  total_samples_ += n;
}

std::vector<ChoiceOutput> GenerationRun::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(sh_->mu);
  sh_->cv.wait_for(lock, timeout, [&] { return !sh_->queue.empty(); });
  std::vector<ChoiceOutput> out(std::make_move_iterator(sh_->queue.begin()), std::make_move_iterator(sh_->queue.end()));
  sh_->queue.clear();
  return out;
}

bool GenerationRun::done() {
  std::lock_guard<std::mutex> lock(sh_->mu);
  return sh_->finished >= total_samples_ && sh_->queue.empty();
}

void GenerationRun::abort() {
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    if (sh_->finished >= total_samples_) return;
  }
  for (uint64_t id : ids_) engine_->abort(id);  // finished ids are ignored by the engine
}

}  // namespace portllm::server
