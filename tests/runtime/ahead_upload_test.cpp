// AheadUpload's event protocol (backend/ahead_upload.h) on a device whose streams really run
// out of order: DeferredDevice queues every copy and event per stream and runs queued work only
// when the host waits (or the test lets the device "progress"), picking at random among the
// streams whose next item may run. So an upload overwriting a slot its reader has not read yet,
// a reader running before its upload, or the host rewriting a buffer whose copy has not run yet,
// each shows up as a wrong value. (The GPU runs the same protocol on real streams: gpu-check's
// async and graphs stages, BENCHMARKS.md forty-fourth session.)
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ahead_upload.h"
#include "backend/registry.h"
#include "backends/builtin.h"
#include "core/error.h"

namespace portllm {
namespace {

class DeferredDevice;

class DeferredStream final : public Stream {
 public:
  explicit DeferredStream(DeferredDevice& dev) : dev_(dev) {}
  void synchronize() override;
  struct Item {
    std::function<bool()> ready;  // null: always
    std::function<void()> run;
  };
  std::deque<Item> queue;

 private:
  DeferredDevice& dev_;
};

class DeferredEvent final : public Event {
 public:
  explicit DeferredEvent(DeferredDevice& dev) : dev_(dev) {}
  void record(Stream& s) override {
    const uint64_t gen = ++recorded_;
    static_cast<DeferredStream&>(s).queue.push_back({nullptr, [this, gen] { reached_ = gen; }});
  }
  void wait(Stream& s) override {
    const uint64_t gen = recorded_;  // the record made before this call, as cudaStreamWaitEvent
    static_cast<DeferredStream&>(s).queue.push_back({[this, gen] { return reached_ >= gen; }, nullptr});
  }
  void synchronize() override;
  float elapsed_ms(const Event&) const override { return 0.f; }
  bool passed() const { return reached_ >= recorded_; }

 private:
  DeferredDevice& dev_;
  uint64_t recorded_ = 0, reached_ = 0;
};

class DeferredDevice final : public Device {
 public:
  explicit DeferredDevice(uint64_t seed) : rng_(seed), main_(*this), up_(*this), aux_(*this) {}
  DeviceKind kind() const override { return DeviceKind::CUDA; }
  const DeviceCaps& caps() const override { return caps_; }
  std::shared_ptr<void> allocate_bytes(size_t bytes) override {
    return std::shared_ptr<void>(std::malloc(bytes ? bytes : 1), std::free);
  }
  void copy_to_device(void* dst, const void* src, size_t n, Stream* s) override { enqueue(s, dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n, Stream* s) override { enqueue(s, dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n, Stream* s) override { enqueue(s, dst, src, n); }
  void memset(void* dst, int v, size_t n, Stream* s) override {
    stream_or_main(s).queue.push_back({nullptr, [=] { std::memset(dst, v, n); }});
  }
  Stream& stream() override { return main_; }
  Stream* aux_stream() override { return &aux_; }
  Stream* upload_stream() override { return &up_; }
  std::unique_ptr<Event> create_event() override { return std::make_unique<DeferredEvent>(*this); }
  void synchronize() override {
    run_until([&] { return main_.queue.empty() && up_.queue.empty() && aux_.queue.empty(); });
  }
  MemoryStats memory_stats() const override { return {}; }

  // A kernel: `fn` runs when the stream reaches it.
  void launch(Stream& s, std::function<void()> fn) { static_cast<DeferredStream&>(s).queue.push_back({nullptr, std::move(fn)}); }
  // Runs up to n items, each from a stream chosen at random among those that can go on.
  void progress(int n) {
    for (int i = 0; i < n && step(); ++i) {
    }
  }
  void run_until(const std::function<bool()>& done) {
    while (!done()) PL_CHECK(step(), "deferred device: deadlock (no stream can go on)");
  }

 private:
  DeferredStream& stream_or_main(Stream* s) { return s ? static_cast<DeferredStream&>(*s) : main_; }
  void enqueue(Stream* s, void* dst, const void* src, size_t n) {
    stream_or_main(s).queue.push_back({nullptr, [=] { std::memcpy(dst, src, n); }});
  }
  bool step() {
    std::vector<DeferredStream*> can;
    for (DeferredStream* s : {&main_, &up_, &aux_})
      if (!s->queue.empty() && (!s->queue.front().ready || s->queue.front().ready())) can.push_back(s);
    if (can.empty()) return false;
    DeferredStream* s = can[std::uniform_int_distribution<size_t>(0, can.size() - 1)(rng_)];
    DeferredStream::Item item = std::move(s->queue.front());
    s->queue.pop_front();
    if (item.run) item.run();
    return true;
  }

  DeviceCaps caps_;
  std::mt19937_64 rng_;
  DeferredStream main_, up_, aux_;
};

void DeferredStream::synchronize() {
  dev_.run_until([&] { return queue.empty(); });
}
void DeferredEvent::synchronize() {
  dev_.run_until([&] { return passed(); });
}

// Each step uploads a buffer of its own values and a main-stream "kernel" copies what it finds in
// the slot's device buffer into that step's result; the device progresses at random in between.
void run_steps(uint64_t seed, int slots, int steps) {
  DeferredDevice dev(seed);
  AheadUpload up(dev, dev.stream(), slots);
  ASSERT_TRUE(up.enabled());
  std::mt19937_64 rng(seed + 1);
  std::vector<std::vector<int32_t>> seen(static_cast<size_t>(steps));
  for (int k = 0; k < steps; ++k) {
    const size_t words = 16 + size_t(rng() % 48);  // sizes vary, so slots grow now and then
    const AheadUpload::Slot slot = up.next(words * 4);
    auto* h = static_cast<int32_t*>(slot.host);
    for (size_t i = 0; i < words; ++i) h[i] = int32_t(k * 1000 + int(i));
    up.commit(words * 4);
    dev.launch(dev.stream(), [&seen, k, words, d = slot.device, keep = slot.owner] {
      const auto* p = static_cast<const int32_t*>(d);
      seen[size_t(k)].assign(p, p + words);
    });
    up.release();
    dev.progress(int(rng() % 6));
  }
  dev.synchronize();
  for (int k = 0; k < steps; ++k) {
    ASSERT_FALSE(seen[size_t(k)].empty()) << "step " << k << " never read";
    for (size_t i = 0; i < seen[size_t(k)].size(); ++i)
      ASSERT_EQ(seen[size_t(k)][i], int32_t(k * 1000 + int(i))) << "step " << k << " word " << i << " (seed " << seed << ")";
  }
}

TEST(AheadUpload, EveryReaderSeesItsOwnUploadWhateverTheStreamsOrder) {
  for (uint64_t seed = 1; seed <= 40; ++seed) run_steps(seed, 2, 200);
  for (uint64_t seed = 41; seed <= 50; ++seed) run_steps(seed, 1, 100);
}

TEST(AheadUpload, OffWithoutAnUploadStreamOrWhenSwitchedOff) {
  register_builtin_backends();
  std::shared_ptr<Device> cpu = BackendRegistry::instance().device("cpu");
  EXPECT_FALSE(AheadUpload(*cpu, cpu->stream(), 2).enabled());
  DeferredDevice dev(7);
  ::setenv("PORTLLM_AHEAD_UPLOAD", "0", 1);
  EXPECT_FALSE(AheadUpload(dev, dev.stream(), 2).enabled());
  ::unsetenv("PORTLLM_AHEAD_UPLOAD");
  EXPECT_TRUE(AheadUpload(dev, dev.stream(), 2).enabled());
}

}  // namespace
}  // namespace portllm
