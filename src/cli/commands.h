// Each subcommand of the portllm binary lives in its own cmd_<name>.cpp and adds itself to the
// CLI11 app through one function declared here (one registration line in main.cpp).
#pragma once
#include <CLI/CLI.hpp>

namespace portllm::cli {

// Every add_* function registers a subcommand whose callback runs the command and may throw
// portllm::Error; main() turns that into one "error: ..." line and exit code 1.
void add_generate_command(CLI::App& app);
void add_check_logits_command(CLI::App& app);
void add_ops_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
// `bench` with its latency and throughput subcommands (cmd_bench.cpp).
void add_bench_command(CLI::App& app);
// `bench serve`, added to the bench parent (implemented with the server).
void add_bench_serve_subcommand(CLI::App* bench);
// `serve`: the OpenAI-compatible HTTP server (cmd_serve.cpp).
void add_serve_command(CLI::App& app);
// `eval` with its `gsm8k` subcommand, an HTTP client of any OpenAI-compatible server (cmd_eval.cpp).
void add_eval_command(CLI::App& app);

}  // namespace portllm::cli
