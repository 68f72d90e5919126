// portllm generate: greedy (by default) continuation of one prompt on the embedded stories260K
// model or any model directory, printing text as it is produced.
// (Single-sequence path; batched generation through the engine replaces it in the engine issue.)
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "runtime/single_sequence.h"
#include "tokenizer/tokenizer.h"

namespace portllm::cli {

namespace {
struct Options {
  ModelOptions model;
  std::string prompt = "Once upon a time";
  std::string prompt_ids;
  int max_tokens = 200;
  bool ignore_eos = false;
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

void run(const Options& o) {
  const std::string dir = resolved_model_dir(o.model);
  auto device = open_device(o.model);
  OpContext ctx(*device);
  ModelLoadOptions lo;
  lo.path = dir;
  lo.load_format = o.model.load_format;
  lo.num_layers_override = o.model.num_layers;
  auto model = load_model(lo, ctx);
  auto tok = tok::Tokenizer::from_dir(dir);
  std::vector<int32_t> ids = o.prompt_ids.empty() ? tok->encode(o.prompt, true) : parse_ids(o.prompt_ids);
  if (ids.empty()) PL_THROW("the prompt is empty");
  const int64_t V = model->config().vocab_size;
  for (int32_t id : ids)
    if (id < 0 || id >= V) PL_THROW("prompt token id {} is outside the vocabulary (0..{})", id, V - 1);
  std::vector<int64_t> eos = model->config().eos_token_ids;
  for (int32_t e : tok->eos_ids()) eos.push_back(e);

  const int64_t max_len = std::min<int64_t>(model->config().max_position_embeddings, int64_t(ids.size()) + o.max_tokens);
  SingleSequence seq(*model, ctx, max_len, device->caps().preferred_page_size);
  tok::StreamDecoder out(*tok, true);
  std::fputs(tok->decode(ids, true).c_str(), stdout);
  std::fflush(stdout);
  std::vector<int32_t> feed = ids;
  for (int i = 0; i < o.max_tokens && seq.length() + int64_t(feed.size()) <= max_len; ++i) {
    Tensor logits = seq.feed(feed, false);
    const float* l = logits.ptr<float>();
    int32_t best = 0;
    for (int64_t j = 1; j < V; ++j)
      if (l[j] > l[best]) best = int32_t(j);
    if (!o.ignore_eos && std::find(eos.begin(), eos.end(), best) != eos.end()) break;
    std::fputs(out.push(best).c_str(), stdout);
    std::fflush(stdout);
    feed = {best};
  }
  std::fputs(out.finish().c_str(), stdout);
  std::fputs("\n", stdout);
}
}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("generate", "generate text from a prompt (default model: embedded stories260K)");
  add_model_options(cmd, o->model);
  cmd->add_option("--prompt,-p", o->prompt, "prompt text");
  cmd->add_option("--prompt-ids", o->prompt_ids, "comma-separated prompt token ids (instead of --prompt)");
  cmd->add_option("--max-tokens,-n", o->max_tokens, "tokens to generate");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating after EOS");
  cmd->callback([o] { run(*o); });
}

}  // namespace portllm::cli
