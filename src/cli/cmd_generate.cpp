// portllm generate: continuation of one prompt (default: "Once upon a time" on the embedded
// stories260K, greedy), printing text as it is produced; or a batch of prompts from a JSONL file
// (--input/--output). Both run through the Engine (continuous batching, paged KV cache).
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/generate_batch.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace portllm::cli {

namespace {
struct Options {
  EngineOptions engine;
  SamplingParams sampling;
  std::string prompt = "Once upon a time";
  std::string prompt_ids;
  std::string input, output;
  std::vector<std::string> stop;
  std::optional<uint64_t> seed;
};

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    try {
      ids.push_back(std::stoi(item));
    } catch (...) {
      PL_THROW("--prompt-ids: '{}' is not an integer", item);
    }
  return ids;
}

void run_single(Engine& engine, const Options& o, SamplingParams p) {
  RequestInput in;
  if (!o.prompt_ids.empty()) in.prompt_ids = parse_ids(o.prompt_ids);
  else in.prompt = o.prompt;
  std::vector<int32_t> ids = in.prompt_ids;
  if (ids.empty() && engine.has_tokenizer()) ids = engine.tokenizer().encode(in.prompt, true);
  // As before the engine existed: the output is cut at the model's context, not refused.
  if (!ids.empty() && int64_t(ids.size()) + p.max_tokens > engine.max_model_len())
    p.max_tokens = int(std::max<int64_t>(1, engine.max_model_len() - int64_t(ids.size())));
  in.params = p;
  const bool stream = p.n == 1;
  std::mutex mu;
  std::condition_variable cv;
  int left = p.n;
  std::vector<std::string> texts(size_t(p.n));
  std::vector<std::string> reasons(size_t(p.n));
  // The prompt is echoed once the engine has accepted the request (an invalid one prints only
  // its error); holding `mu` meanwhile keeps the first tokens, which the engine thread delivers
  // through the callback, behind it.
  std::unique_lock<std::mutex> lk(mu);
  engine.add_request(in, [&](const RequestOutput& out) {
    std::lock_guard<std::mutex> lk(mu);
    if (stream) {
      std::fputs(out.text.c_str(), stdout);
      if (!engine.has_tokenizer())  // no tokenizer.json (test fixtures, dummy configs): print ids
        for (int32_t t : out.token_ids) std::printf("%d ", t);
      std::fflush(stdout);
    }
    texts[size_t(out.index)] += out.text;
    if (!engine.has_tokenizer())
      for (int32_t t : out.token_ids) texts[size_t(out.index)] += std::to_string(t) + " ";
    if (out.finished) {
      reasons[size_t(out.index)] = out.error.empty() ? finish_reason_name(*out.finish_reason) : out.error;
      --left;
      cv.notify_all();
    }
  });
  if (engine.has_tokenizer() && stream) {
    std::fputs(engine.tokenizer().decode(ids, true).c_str(), stdout);
    std::fflush(stdout);
  }
  cv.wait(lk, [&] { return left == 0; });
  if (stream) {
    std::fputs("\n", stdout);
    return;
  }
  for (int i = 0; i < p.n; ++i)
    std::printf("--- sample %d (%s) ---\n%s\n", i, reasons[size_t(i)].c_str(), texts[size_t(i)].c_str());
}

void run(Options& o) {
  EngineConfig cfg = engine_config(o.engine);
  if (o.seed) cfg.seed = *o.seed;
  SamplingParams p = o.sampling;
  p.seed = o.seed;
  p.stop = o.stop;
  auto engine = Engine::create(cfg);
  if (!o.input.empty()) {
    if (o.output.empty()) PL_THROW("--input needs --output");
    run_generate_batch(*engine, o.input, o.output, p);
  } else {
    run_single(*engine, o, p);
  }
  engine->shutdown();
}
}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  o->sampling.temperature = 0.f;  // greedy unless asked otherwise
  o->sampling.max_tokens = 200;
  auto* cmd = app.add_subcommand("generate", "generate text from a prompt or a JSONL batch (default model: embedded stories260K)");
  add_engine_options(cmd, o->engine);
  cmd->add_option("--prompt,-p", o->prompt, "prompt text")->capture_default_str();
  cmd->add_option("--prompt-ids", o->prompt_ids, "comma-separated prompt token ids (instead of --prompt)");
  cmd->add_option("--input", o->input, "JSONL file of prompts: {\"prompt\": ...} or {\"prompt_ids\": [...]} per line, optional sampling fields");
  cmd->add_option("--output", o->output, "JSONL file of results (with --input)");
  SamplingParams& s = o->sampling;
  cmd->add_option("--max-tokens", s.max_tokens, "tokens to generate")->capture_default_str();
  cmd->add_option("--min-tokens", s.min_tokens, "no EOS / stop tokens before this many tokens");
  cmd->add_option("--temperature", s.temperature, "0 = greedy (default)")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", s.top_p, "nucleus sampling mass");
  cmd->add_option("--min-p", s.min_p, "drop tokens below min_p x the best probability");
  cmd->add_option("--repetition-penalty", s.repetition_penalty, "HF-style repetition penalty");
  cmd->add_option("--presence-penalty", s.presence_penalty, "OpenAI presence penalty");
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "OpenAI frequency penalty");
  cmd->add_option("--seed", o->seed, "sampling seed (and dummy-weight seed)");
  cmd->add_option("--n", s.n, "samples per prompt");
  cmd->add_option("--stop", o->stop, "stop string (repeatable)");
  cmd->add_option("--stop-token-ids", s.stop_token_ids, "stop token ids")->delimiter(',');
  cmd->add_option("--logprobs", s.logprobs, "(with --input) sampled-token logprob and the top N per token in the output lines");
  cmd->add_flag("--ignore-eos", s.ignore_eos, "keep generating after EOS");
  cmd->callback([o] { run(*o); });
}

}  // namespace portllm::cli
