// Helpers for the engine tests: engines over the embedded stories260K and the HF fixtures with a
// small KV pool, and a synchronous "run these requests and collect every output" call.
#pragma once
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace portllm::test {

inline std::string stories_dir() { return std::string(PORTLLM_SOURCE_DIR) + "/models/stories260K"; }
inline std::string fixture_dir(const std::string& name) { return std::string(PORTLLM_TEST_DATA) + "/models/" + name; }

inline EngineConfig small_config(const std::string& dir = stories_dir()) {
  EngineConfig c;
  c.model_path = dir;
  c.num_kv_blocks = 512;
  c.max_num_seqs = 32;
  c.threads = 2;
  return c;
}

struct SampleOut {
  std::vector<int32_t> ids;
  std::string text;
  std::vector<std::string> pieces;  // text of each update
  std::vector<TokenLogprob> logprobs;
  std::optional<FinishReason> reason;
  std::string stop_reason, error;
  int cached_tokens = 0, num_updates = 0;
};

// Collects the outputs of requests submitted through submit().
class Collector {
 public:
  uint64_t submit(Engine& e, const RequestInput& in) {
    size_t slot;
    {
      std::lock_guard<std::mutex> lk(mu_);
      slot = results_.size();
      results_.emplace_back(size_t(in.params.n));
      left_ += in.params.n;
    }
    return e.add_request(in, [this, slot](const RequestOutput& o) {
      std::lock_guard<std::mutex> lk(mu_);
      SampleOut& s = results_[slot][size_t(o.index)];
      s.ids.insert(s.ids.end(), o.token_ids.begin(), o.token_ids.end());
      s.text += o.text;
      s.pieces.push_back(o.text);
      s.logprobs.insert(s.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      ++s.num_updates;
      if (o.finished) {
        s.reason = o.finish_reason;
        s.stop_reason = o.stop_reason;
        s.error = o.error;
        s.cached_tokens = o.cached_tokens;
        --left_;
        cv_.notify_all();
      }
    });
  }
  // Waits for every submitted request; results in submission order, one entry per sample.
  std::vector<std::vector<SampleOut>> wait() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return left_ == 0; });
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<SampleOut>> results_;
  int left_ = 0;
};

inline std::vector<SampleOut> run_all(Engine& e, const std::vector<RequestInput>& ins) {
  Collector c;
  for (auto& in : ins) c.submit(e, in);
  std::vector<SampleOut> out;
  for (auto& r : c.wait()) out.push_back(r[0]);
  return out;
}

inline RequestInput greedy(std::vector<int32_t> ids, int max_tokens, bool ignore_eos = true) {
  RequestInput in;
  in.prompt_ids = std::move(ids);
  in.params.temperature = 0;
  in.params.max_tokens = max_tokens;
  in.params.ignore_eos = ignore_eos;
  return in;
}

// The fixture's reference: tokens (prompt + greedy continuation), prompt length, logits [T, V].
struct Reference {
  std::vector<int32_t> tokens;
  int prompt_len = 0;
  int64_t vocab = 0;
  std::vector<float> logits;
};

inline Reference load_reference(const std::string& dir) {
  auto f = SafetensorsFile::open(dir + "/reference.safetensors");
  Reference r;
  Tensor t = f->tensor("tokens"), pl = f->tensor("prompt_len"), lg = f->tensor("logits");
  for (int64_t i = 0; i < t.numel(); ++i) r.tokens.push_back(int32_t(t.ptr<int64_t>()[i]));
  r.prompt_len = int(pl.ptr<int64_t>()[0]);
  r.vocab = lg.size(1);
  r.logits.assign(lg.ptr<float>(), lg.ptr<float>() + lg.numel());
  return r;
}

// Prompts of varied lengths cut from a seeded random walk over the vocabulary.
std::vector<std::vector<int32_t>> varied_prompts(int count, int min_len, int max_len, int64_t vocab, uint64_t seed);

}  // namespace portllm::test

namespace portllm::test {
// Natural-language prompts for stories260K (confident continuations: greedy is stable across
// batch compositions), tokenized with the engine's tokenizer.
inline std::vector<std::vector<int32_t>> story_prompts(Engine& e) {
  static const char* texts[] = {
      "Once upon a time",
      "One day, a little girl named Lily went to the park with her mom. She saw a big",
      "Tom had a red ball.",
      "The sun was shining and the birds were singing. Timmy wanted to go outside and play with his friends, but",
      "Sue and Ben",
      "There was a big tree in the garden. Every day",
      "The cat",
      "Mom said, \"It is time for bed.\" But Max was not tired. He wanted to",
  };
  std::vector<std::vector<int32_t>> out;
  for (const char* t : texts) out.push_back(e.tokenizer().encode(t, true));
  return out;
}
}  // namespace portllm::test
