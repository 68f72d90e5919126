// portllm check-logits: teacher-forced logits of a model against a reference file produced by
// Hugging Face transformers (tokens, prompt_len, logits). Last line:
//   max_abs_diff=<float> greedy_agree=<k>/<n>
// where agreement is counted at positions whose reference top-2 margin exceeds the tolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "engine/kv_sizing.h"
#include "model/safetensors.h"
#include "runtime/single_sequence.h"

namespace portllm::cli {

namespace {
struct Options {
  ModelOptions model;
  std::string reference;
  double tol = 1e-3;
  int chunk = 0;
  std::string kv_dtype = "f32";
};

void run(const Options& o) {
  const std::string dir = resolved_model_dir(o.model);
  auto ref = SafetensorsFile::open(o.reference);
  for (const char* name : {"tokens", "logits"})
    if (!ref->find(name)) PL_THROW("{}: missing tensor '{}' (expected tokens, prompt_len, logits)", o.reference, name);
  Tensor tokens = ref->tensor("tokens"), ref_logits = ref->tensor("logits");
  if (tokens.dtype != DType::I64 || tokens.ndim != 1) PL_THROW("{}: 'tokens' must be int64 [T]", o.reference);
  if (ref_logits.dtype != DType::F32 || ref_logits.ndim != 2 || ref_logits.size(0) != tokens.size(0))
    PL_THROW("{}: 'logits' must be float32 [T, vocab] with T = len(tokens)", o.reference);

  auto device = open_device(o.model);
  OpContext ctx(*device);
  ModelLoadOptions lo;
  lo.path = dir;
  lo.load_format = o.model.load_format;
  lo.dtype = o.model.dtype;
  auto model = load_model(lo, ctx);
  const int64_t T = tokens.size(0), V = ref_logits.size(1);
  if (V != model->config().vocab_size)
    PL_THROW("{}: reference vocab {} != model vocab {}", o.reference, V, model->config().vocab_size);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) ids[size_t(i)] = int32_t(tokens.ptr<int64_t>()[i]);

  auto kv = kv_dtype_from_name(o.kv_dtype);
  if (!kv) PL_THROW("--kv-dtype '{}': expected f32, f16, bf16 or fp8", o.kv_dtype);
  SingleSequence seq(*model, ctx, T, device->caps().preferred_page_size, *kv);
  std::vector<float> got(static_cast<size_t>(T * V));
  const int64_t chunk = o.chunk > 0 ? o.chunk : T;
  for (int64_t s = 0; s < T; s += chunk) {
    const int64_t n = std::min(chunk, T - s);
    Tensor l = seq.feed(std::vector<int32_t>(ids.begin() + s, ids.begin() + s + n), true);
    std::copy(l.ptr<float>(), l.ptr<float>() + n * V, got.begin() + s * V);
  }

  double max_diff = 0;
  int agree = 0, counted = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* r = ref_logits.ptr<float>() + t * V;
    const float* g = got.data() + t * V;
    int64_t rbest = 0, gbest = 0;
    for (int64_t j = 0; j < V; ++j) {
      if (!std::isfinite(g[j])) max_diff = INFINITY;
      else max_diff = std::max(max_diff, double(std::abs(g[j] - r[j])));
      if (r[j] > r[rbest]) rbest = j;
      if (g[j] > g[gbest]) gbest = j;
    }
    float second = -INFINITY;
    for (int64_t j = 0; j < V; ++j)
      if (j != rbest) second = std::max(second, r[j]);
    if (r[rbest] - second > o.tol) {
      ++counted;
      agree += rbest == gbest;
    }
  }
  std::printf("model=%s arch=%s device=%s tokens=%lld vocab=%lld\n", dir.c_str(), model->config().architecture.c_str(),
              device->name().c_str(), (long long)T, (long long)V);
  std::printf("max_abs_diff=%.6g greedy_agree=%d/%d\n", max_diff, agree, counted);
  std::fflush(stdout);
  if (!(max_diff <= o.tol)) PL_THROW("max_abs_diff {:.6g} exceeds --tol {}", max_diff, o.tol);
}
}  // namespace

void add_check_logits_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("check-logits", "compare teacher-forced logits against a reference file");
  add_model_options(cmd, opts->model);
  cmd->add_option("--reference,-r", opts->reference, "reference.safetensors (tokens, prompt_len, logits)")->required();
  cmd->add_option("--tol", opts->tol, "max abs logit difference allowed (default 1e-3)");
  cmd->add_option("--chunk-size", opts->chunk, "feed the tokens in chunks of N (tests chunked prefill)");
  cmd->add_option("--kv-dtype", opts->kv_dtype, "KV cache dtype: f32, f16, bf16, fp8 (e4m3, saturating)");
  cmd->callback([opts] { run(*opts); });
}

}  // namespace portllm::cli
