#include "cli/generate_batch.h"

#include <condition_variable>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "cli/progress_bar.h"
#include "cli/sampling_json.h"
#include "core/error.h"

namespace portllm::cli {

namespace {
struct SampleResult {
  std::string text;
  std::vector<int32_t> ids;
  nlohmann::json logprobs = nlohmann::json::array();
  std::string finish_reason, stop_reason, error;
  int cached_tokens = 0;
};
struct LineResult {
  nlohmann::json prompt;  // the input's prompt or prompt_ids, echoed
  int prompt_tokens = 0;
  std::vector<SampleResult> samples;
  int unfinished = 0;
};
}  // namespace

void run_generate_batch(Engine& engine, const std::string& input_path, const std::string& output_path,
                        const SamplingParams& defaults) {
  std::ifstream in(input_path);
  if (!in) PL_THROW("{}: cannot open", input_path);
  std::vector<RequestInput> inputs;
  std::vector<nlohmann::json> echoes;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = input_path + ":" + std::to_string(lineno);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      PL_THROW("{}: invalid JSON: {}", where, e.what());
    }
    if (!j.is_object()) PL_THROW("{}: each line must be a JSON object", where);
    RequestInput ri;
    if (j.contains("prompt_ids")) {
      try {
        ri.prompt_ids = j["prompt_ids"].get<std::vector<int32_t>>();
      } catch (const nlohmann::json::exception&) {
        PL_THROW("{}: field 'prompt_ids' must be a list of integers", where);
      }
      echoes.push_back(j["prompt_ids"]);
    } else if (j.contains("prompt") && j["prompt"].is_string()) {
      ri.prompt = j["prompt"].get<std::string>();
      echoes.push_back(j["prompt"]);
    } else {
      PL_THROW("{}: needs a string field 'prompt' or a list 'prompt_ids'", where);
    }
    ri.params = sampling_from_json(j, defaults, where);
    inputs.push_back(std::move(ri));
  }

  std::ofstream out(output_path);
  if (!out) PL_THROW("{}: cannot open for writing", output_path);
  std::vector<LineResult> results(inputs.size());
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  int64_t out_tokens = 0;
  ProgressBar bar(int(inputs.size()), "generate");
  // All in before the first step (Engine::hold_intake): the same batches, so the same tokens, on
  // every run.
  {
    IntakeHold hold(engine);
    for (size_t i = 0; i < inputs.size(); ++i) {
      LineResult& r = results[i];
      r.prompt = echoes[i];
      r.samples.resize(size_t(inputs[i].params.n));
      r.unfinished = inputs[i].params.n;
      // An invalid line becomes an "error" output line; the others still run.
      try {
        engine.add_request(inputs[i], [&, i](const RequestOutput& o) {
        std::lock_guard<std::mutex> lk(mu);
        LineResult& lr = results[i];
        SampleResult& s = lr.samples[size_t(o.index)];
        s.text += o.text;
        s.ids.insert(s.ids.end(), o.token_ids.begin(), o.token_ids.end());
        for (const TokenLogprob& lp : o.logprobs) {
          nlohmann::json top = nlohmann::json::array();
          for (auto& [tid, v] : lp.top) top.push_back({tid, v});
          s.logprobs.push_back({{"id", lp.id}, {"logprob", lp.logprob}, {"top", top}});
        }
        out_tokens += int64_t(o.token_ids.size());
        lr.prompt_tokens = o.prompt_tokens;
        if (o.finished) {
          s.finish_reason = o.finish_reason ? finish_reason_name(*o.finish_reason) : "";
          s.stop_reason = o.stop_reason;
          s.error = o.error;
          s.cached_tokens = o.cached_tokens;
          if (--lr.unfinished == 0) ++done;
          bar.update(done, out_tokens);
          cv.notify_all();
        }
        });
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lk(mu);
        for (auto& smp : r.samples) {
          smp.finish_reason = "error";
          smp.error = e.what();
        }
        r.unfinished = 0;
        ++done;
      }
    }
  }
  // Write lines in input order as soon as each and all before it are done.
  size_t next = 0;
  std::unique_lock<std::mutex> lk(mu);
  while (next < results.size()) {
    cv.wait(lk, [&] { return results[next].unfinished == 0; });
    const LineResult& r = results[next];
    for (size_t k = 0; k < r.samples.size(); ++k) {
      const SampleResult& s = r.samples[k];
      nlohmann::json o;
      o["index"] = next;
      if (r.samples.size() > 1) o["sample"] = k;
      o[r.prompt.is_string() ? "prompt" : "prompt_ids"] = r.prompt;
      o["text"] = s.text;
      o["token_ids"] = s.ids;
      o["finish_reason"] = s.finish_reason;
      if (!s.logprobs.empty()) o["logprobs"] = s.logprobs;
      if (!s.stop_reason.empty()) o["stop_reason"] = s.stop_reason;
      if (!s.error.empty()) o["error"] = s.error;
      o["prompt_tokens"] = r.prompt_tokens;
      o["completion_tokens"] = s.ids.size();
      o["cached_tokens"] = s.cached_tokens;
      out << o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    out.flush();
    ++next;
  }
  lk.unlock();
  bar.finish();
}

}  // namespace portllm::cli
