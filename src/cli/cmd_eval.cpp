// portllm eval gsm8k: GSM8K few-shot accuracy of any OpenAI-compatible server, with the method
// of SGLang's few_shot_gsm8k (data/gsm8k/README.md): shots are the first k test questions with
// their answers, each question is a raw completion at temperature 0 (max 512 tokens, stop at
// "Question" / "Assistant:" / "<|separator|>"), and the answer is the last number in the output.
#include <climits>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/openai_client.h"
#include "core/error.h"

#ifndef PORTLLM_SOURCE_DIR
#define PORTLLM_SOURCE_DIR ""
#endif

namespace portllm::cli {

namespace {

struct EvalOptions {
  ServerAddress addr;
  std::string model;
  int num_questions = 200;
  int parallel = 64;
  int num_shots = 5;
  int max_tokens = 512;
  std::string data;
  std::string output = "gsm8k_outputs.jsonl";
};

struct Item {
  std::string question, answer;
};

std::vector<Item> read_jsonl(const std::string& path) {
  std::ifstream f(path);
  if (!f) PL_THROW("cannot open GSM8K data '{}' (pass --data FILE)", path);
  std::vector<Item> items;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      items.push_back({j.at("question").get<std::string>(), j.at("answer").get<std::string>()});
    } catch (const std::exception& e) {
      PL_THROW("{}:{}: not a {{\"question\", \"answer\"}} object: {}", path, n, e.what());
    }
  }
  return items;
}

// data/gsm8k/test.jsonl next to the binary's tree or in the source tree.
std::string default_data() {
  namespace fs = std::filesystem;
  std::vector<fs::path> cands;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    fs::path dir = fs::path(exe).parent_path();
    cands = {dir / "data/gsm8k/test.jsonl", dir / "../data/gsm8k/test.jsonl", dir / "../share/portllm/data/gsm8k/test.jsonl"};
  }
  if (*PORTLLM_SOURCE_DIR) cands.push_back(fs::path(PORTLLM_SOURCE_DIR) / "data/gsm8k/test.jsonl");
  for (auto& c : cands)
    if (fs::exists(c)) return c.string();
  PL_THROW("data/gsm8k/test.jsonl was not found next to the binary; pass --data FILE");
}

}  // namespace

// The last run of digits after removing commas; "" when there is none (an invalid answer).
std::string gsm8k_extract_answer(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ',') s += c;
  static const std::regex num("\\d+");
  std::string last;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it) last = it->str();
  return last;
}

namespace {

void run_gsm8k(const EvalOptions& o) {
  const std::string path = o.data.empty() ? default_data() : o.data;
  std::vector<Item> items = read_jsonl(path);
  if (items.size() < size_t(std::max(o.num_questions, o.num_shots)))
    PL_THROW("{} has {} questions; --num-questions {} / --num-shots {} need more", path, items.size(), o.num_questions, o.num_shots);
  std::string shots;
  for (int i = 0; i < o.num_shots; ++i) shots += "Question: " + items[i].question + "\nAnswer: " + items[i].answer + "\n\n";
  const std::string model = o.model.empty() ? first_model_id(o.addr) : o.model;
  if (model.empty()) PL_THROW("cannot reach an OpenAI-compatible server at {}:{} (GET /v1/models failed)", o.addr.host, o.addr.port);

  struct Out {
    CompletionResult r;
    std::string pred, label;
  };
  std::vector<Out> outs(o.num_questions);
  std::atomic<int> next{0}, done{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (int i; (i = next++) < o.num_questions;) {
      nlohmann::json body{{"model", model},
                          {"prompt", shots + "Question: " + items[i].question + "\nAnswer:"},
                          {"temperature", 0},
                          {"max_tokens", o.max_tokens},
                          {"stop", {"Question", "Assistant:", "<|separator|>"}}};
      outs[i].r = post_completion(o.addr, "/v1/completions", body);
      outs[i].pred = outs[i].r.ok ? gsm8k_extract_answer(outs[i].r.text) : "";
      outs[i].label = gsm8k_extract_answer(items[i].answer);
      int d = ++done;
      if (d % 10 == 0 || d == o.num_questions) std::fprintf(stderr, "\r%d/%d", d, o.num_questions);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(o.parallel, o.num_questions); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::fprintf(stderr, "\n");
  const double latency = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int correct = 0, invalid = 0, failed = 0;
  int64_t out_tokens = 0;
  std::ofstream f(o.output);
  if (!f) PL_THROW("cannot write --output '{}'", o.output);
  for (int i = 0; i < o.num_questions; ++i) {
    const Out& x = outs[i];
    correct += !x.pred.empty() && x.pred == x.label;
    invalid += x.pred.empty();
    failed += !x.r.ok;
    out_tokens += x.r.completion_tokens;
    nlohmann::json line{{"index", i}, {"question", items[i].question}, {"output", x.r.text}, {"pred", x.pred}, {"label", x.label},
                        {"correct", !x.pred.empty() && x.pred == x.label}, {"completion_tokens", x.r.completion_tokens}};
    if (!x.r.ok) line["error"] = x.r.error;
    f << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  const double n = o.num_questions;
  std::printf("Accuracy: %.3f\nInvalid: %.3f\nLatency: %.3f s\nOutput throughput: %.3f token/s\n", correct / n, invalid / n, latency, out_tokens / latency);
  if (failed) {
    std::string first;
    for (auto& x : outs)
      if (!x.r.ok) {
        first = x.r.error;
        break;
      }
    std::printf("Failed requests: %d (first: %s)\n", failed, first.c_str());
  }
  std::printf("Outputs: %s\n", o.output.c_str());
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto* eval = app.add_subcommand("eval", "accuracy evaluations against an OpenAI-compatible server");
  eval->require_subcommand(1);
  auto o = std::make_shared<EvalOptions>();
  auto* g = eval->add_subcommand("gsm8k", "GSM8K few-shot accuracy (SGLang's few_shot_gsm8k method)");
  g->add_option("--host", o->addr.host, "server host")->capture_default_str();
  g->add_option("--port", o->addr.port, "server port")->capture_default_str()->check(CLI::Range(1, 65535));
  g->add_option("--api-key", o->addr.api_key, "API key (Authorization: Bearer)");
  g->add_option("--model", o->model, "model name (default: the server's first model)");
  g->add_option("--num-questions", o->num_questions, "questions evaluated (the first N of the data)")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  g->add_option("--parallel", o->parallel, "requests in flight")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  g->add_option("--num-shots", o->num_shots, "solved examples before each question")->capture_default_str()->check(CLI::Range(0, INT_MAX));
  g->add_option("--max-tokens", o->max_tokens, "max new tokens per answer")->capture_default_str()->check(CLI::Range(1, INT_MAX));
  g->add_option("--data", o->data, "GSM8K test.jsonl (default: data/gsm8k/test.jsonl of portllm)");
  g->add_option("--output", o->output, "where the outputs are written (jsonl)")->capture_default_str();
  g->callback([o] { run_gsm8k(*o); });
}

}  // namespace portllm::cli
