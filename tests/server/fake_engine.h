// A stand-in Engine for HTTP-layer tests: every sample "generates" the tokens of a scripted text
// (one token per update), so protocol details (SSE framing, reasoning/tool-call parsing, errors,
// aborts) are checked deterministically without a model. Uses a real tokenizer fixture.
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace portllm::test {

class FakeEngine : public Engine {
 public:
  explicit FakeEngine(const std::string& tokenizer_dir, int64_t max_len = 512)
      : tok_(shared_tokenizer(tokenizer_dir)), max_len_(max_len) {}
  ~FakeEngine() override { shutdown(); }

  std::string script = "Hello world, this is a test.";
  int fail_after = -1;          // >= 0: finish with FinishReason::Error after this many tokens
  std::string raw_text;         // non-empty: emitted as the text of the first update, verbatim
  int token_delay_ms = 1;

  // The fake starts each request at once; nothing of the server holds its intake.
  void hold_intake(bool) override {}

  uint64_t add_request(RequestInput in, OutputCallback cb) override {
    if (in.prompt_ids.empty()) PL_THROW("empty prompt");
    for (int32_t id : in.prompt_ids)
      if (id < 0 || id >= tok_->vocab_size()) PL_THROW("token id {} outside the vocabulary", id);
    if (int64_t(in.prompt_ids.size()) + in.params.max_tokens > max_len_) PL_THROW("prompt + max_tokens over the context");
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = next_id_++;
    running_.insert(id);
    threads_.emplace_back([this, id, in = std::move(in), cb = std::move(cb)] { generate(id, in, cb); });
    return id;
  }
  void abort(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    abort_requests_.insert(id);
  }
  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s;
    s.num_running = int(running_.size());
    s.num_kv_blocks = 100;
    s.num_free_kv_blocks = 100 - 4 * int64_t(running_.size());
    s.kv_usage = (100.0 - double(s.num_free_kv_blocks)) / 100.0;
    return s;
  }
  const tok::Tokenizer& tokenizer() const override { return *tok_; }
  const ModelConfig& model_config() const override { return cfg_; }
  int64_t max_model_len() const override { return max_len_; }
  void shutdown() override {
    std::vector<std::thread> ts;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      ts.swap(threads_);
    }
    for (auto& t : ts) t.join();
  }

  // Ids for which abort() was called and the request was still running.
  std::set<uint64_t> aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }
  std::vector<RequestInput> received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

 private:
  void generate(uint64_t id, const RequestInput& in, const OutputCallback& cb) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(in);
    }
    const std::vector<int32_t> ids = tok_->encode(script, false);
    const int n = in.params.n;
    std::vector<tok::StreamDecoder> dec(n, tok::StreamDecoder(*tok_, in.params.skip_special_tokens));
    const int limit = std::min<int>(int(ids.size()), in.params.max_tokens);
    auto out = [&](int k, int step) {
      RequestOutput o;
      o.request_id = id;
      o.index = k;
      o.prompt_tokens = int(in.prompt_ids.size());
      o.completion_tokens = step;
      return o;
    };
    for (int step = 1;; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(token_delay_ms));
      bool abort_now;
      {
        std::lock_guard<std::mutex> lock(mu_);
        abort_now = abort_requests_.count(id) || stopping_;
        if (abort_now) aborted_.insert(id);
      }
      for (int k = 0; k < n; ++k) {
        RequestOutput o = out(k, step - 1);
        if (abort_now) {
          o.finished = true;
          o.finish_reason = FinishReason::Abort;
        } else if (fail_after >= 0 && step > fail_after) {
          o.finished = true;
          o.finish_reason = FinishReason::Error;
          o.error = "simulated device failure";
        } else {
          const int32_t t = ids[step - 1];
          o.token_ids = {t};
          o.completion_tokens = step;
          o.text = step == 1 && !raw_text.empty() ? raw_text : dec[k].push(t);
          if (in.params.logprobs >= 0) o.logprobs.push_back({t, -0.5f, {{t, -0.5f}}});
          if (step == limit) {
            o.text += dec[k].finish();
            o.finished = true;
            o.finish_reason = limit < int(ids.size()) ? FinishReason::Length : FinishReason::Stop;
          }
        }
        cb(o);
      }
      if (abort_now || (fail_after >= 0 && step > fail_after) || step == limit) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(id);
  }

  // Loading the Qwen3 tokenizer takes a while: tests share one per directory.
  static std::shared_ptr<tok::Tokenizer> shared_tokenizer(const std::string& dir) {
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<tok::Tokenizer>> cache;
    std::lock_guard<std::mutex> lock(mu);
    auto& t = cache[dir];
    if (!t) t = tok::Tokenizer::from_dir(dir);
    return t;
  }

  std::shared_ptr<tok::Tokenizer> tok_;
  ModelConfig cfg_;
  int64_t max_len_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::set<uint64_t> running_, abort_requests_, aborted_;
  std::vector<std::thread> threads_;
  std::vector<RequestInput> received_;
};

}  // namespace portllm::test
