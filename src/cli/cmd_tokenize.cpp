// `portllm tokenize`: encode/decode with a model's tokenizer.json, batch modes for checking
// against Hugging Face (jsonl in, jsonl out), chat template rendering, and a throughput bench.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace portllm::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string decode;
  std::string input;
  std::string chat_input;
  std::string bench;
  std::string bench_mode = "whole";
  int bench_runs = 3;
  bool add_special = false;
  bool skip_special = false;
};

// JSON string for display; never throws on odd bytes.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (item.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument("");
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      PL_THROW("--decode: '{}' is not an integer token id", item);
    }
  }
  return ids;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) PL_THROW("{}: cannot open file", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Calls fn(parsed_line, line_no) for each non-empty line of a .jsonl file.
template <class J, class F>
void for_each_jsonl(const std::string& path, F&& fn) {
  std::ifstream f(path);
  if (!f) PL_THROW("{}: cannot open file", path);
  std::string line;
  for (size_t no = 1; std::getline(f, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    J j;
    try {
      j = J::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      PL_THROW("{}:{}: invalid JSON: {}", path, no, e.what());
    }
    fn(j, no);
  }
}

// CPU time of this thread: unlike wall time it does not grow when other processes share the
// cores, so the MB/s per CPU second is comparable across busy and idle machines.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void run_bench(const tok::Tokenizer& tok, const TokenizeOptions& o) {
  const std::string corpus = read_all(o.bench);
  std::vector<std::string> lines;
  if (o.bench_mode == "lines") {
    std::stringstream ss(corpus);
    for (std::string l; std::getline(ss, l);) lines.push_back(l + "\n");
  } else if (o.bench_mode != "whole") {
    PL_THROW("--bench-mode must be 'whole' or 'lines', got '{}'", o.bench_mode);
  }
  double best = 0, best_cpu = 0;
  for (int r = 0; r < o.bench_runs; ++r) {
    size_t tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    if (lines.empty()) {
      tokens = tok.encode(corpus, false).size();
    } else {
      for (const auto& l : lines) tokens += tok.encode(l, false).size();
    }
    const double cpu = thread_cpu_seconds() - c0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mb = static_cast<double>(corpus.size()) / 1e6;
    best = std::max(best, mb / s);
    best_cpu = std::max(best_cpu, mb / cpu);
    std::printf("run %d: %zu bytes -> %zu tokens in %.3f s wall (%.3f s cpu): %.2f MB/s\n", r + 1,
                corpus.size(), tokens, s, cpu, mb / s);
  }
  std::printf("portllm encode (%s, 1 thread): best %.2f MB/s wall, %.2f MB/s per cpu-second\n",
              o.bench_mode.c_str(), best, best_cpu);
}

void run_tokenize(const TokenizeOptions& o) {
  if (!o.chat_input.empty()) {
    const auto tmpl = tok::ChatTemplate::from_tokenizer_dir(o.model);
    for_each_jsonl<nlohmann::ordered_json>(o.chat_input, [&](const nlohmann::ordered_json& j, size_t no) {
      if (!j.contains("messages")) PL_THROW("{}:{}: missing field 'messages'", o.chat_input, no);
      const auto kwargs = j.contains("kwargs") ? j["kwargs"] : nlohmann::ordered_json::object();
      nlohmann::ordered_json out;
      out["rendered"] = tmpl.render(j["messages"], kwargs);
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    });
    return;
  }
  const auto tok = tok::Tokenizer::from_dir(o.model);
  if (!o.bench.empty()) return run_bench(*tok, o);
  if (!o.input.empty()) {
    for_each_jsonl<nlohmann::json>(o.input, [&](const nlohmann::json& j, size_t no) {
      if (!j.contains("text") || !j["text"].is_string())
        PL_THROW("{}:{}: field 'text' missing or not a string", o.input, no);
      nlohmann::json out;
      out["ids"] = tok->encode(j["text"].get<std::string>(), o.add_special);
      std::cout << out.dump() << "\n";
    });
    return;
  }
  if (!o.decode.empty()) {
    const auto ids = parse_ids(o.decode);
    std::cout << tok->decode(ids, o.skip_special) << "\n";
    return;
  }
  const auto ids = tok->encode(o.text, o.add_special);
  std::cout << nlohmann::json(ids).dump() << "\n";
  for (int32_t id : ids) {
    const int32_t one[1] = {id};
    std::cout << id << "\t" << quoted(tok->id_to_token(id)) << "\t"
              << quoted(tok->decode(one, false)) << "\n";
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand("tokenize", "Encode/decode text with a model's tokenizer.json");
  cmd->add_option("--model", o->model, "Model (or tokenizer) directory with tokenizer.json")
      ->required();
  cmd->add_option("text", o->text, "Text to encode (prints ids, then id/token/text per line)");
  cmd->add_option("--decode", o->decode, "Comma-separated ids to decode instead");
  cmd->add_flag("--add-special-tokens", o->add_special, "Apply the post-processor (e.g. BOS)");
  cmd->add_flag("--skip-special-tokens", o->skip_special, "With --decode: drop special tokens");
  cmd->add_option("--input", o->input, "JSONL of {\"text\": ...}; prints {\"ids\": [...]} per line");
  cmd->add_option("--chat-input", o->chat_input,
                  "JSONL of {\"messages\": ..., \"kwargs\": {...}}; prints {\"rendered\": ...}");
  cmd->add_option("--bench", o->bench, "Measure single-thread encode throughput on FILE");
  cmd->add_option("--bench-mode", o->bench_mode, "whole: one encode call; lines: one per line");
  cmd->add_option("--bench-runs", o->bench_runs, "Number of timed runs (best is reported)");
  cmd->callback([o] { run_tokenize(*o); });
}

}  // namespace portllm::cli
