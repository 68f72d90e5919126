#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"portllm: portable LLM inference and serving engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "portllm 0.1.0");
  portllm::cli::add_generate_command(app);
  portllm::cli::add_check_logits_command(app);
  portllm::cli::add_ops_command(app);
  portllm::cli::add_info_command(app);
  portllm::cli::add_tokenize_command(app);
  portllm::cli::add_bench_command(app);
  portllm::cli::add_serve_command(app);
  portllm::cli::add_eval_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const portllm::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
