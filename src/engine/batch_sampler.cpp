#include "engine/batch_sampler.h"

#include <cstring>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/ops_sample.h"
#include "ops/sample_math.h"

namespace portllm {

SampleRowParams sample_row_params(const SampleRow& row) {
  const SamplingParams& p = *row.params;
  SampleRowParams r;
  r.temperature = p.temperature;
  r.top_p = p.top_p;
  r.min_p = p.min_p;
  r.top_k = p.top_k;
  r.set_seed(row.state->seed);
  r.set_counter(row.state->counter);
  r.repetition_penalty = p.repetition_penalty;
  r.presence_penalty = p.presence_penalty;
  r.frequency_penalty = p.frequency_penalty;
  return r;
}

void append_sample_adjustments(const SampleRow& row, std::vector<int32_t>& e) {
  const SamplingParams& p = *row.params;
  const SamplerState& st = *row.state;
  // The order of process_logits (logits_processor.cpp); the op applies the kinds in this order.
  for (const auto& [id, bias] : p.logit_bias) e.insert(e.end(), {id, kAdjBias, int32_t(sampling::float_bits(bias))});
  if (st.num_output < p.min_tokens)
    for (int32_t id : row.stop_ids) e.insert(e.end(), {id, kAdjMask, 0});
  if (p.repetition_penalty != 1.0f)
    for (int32_t id : st.penalties.seen_ids) e.insert(e.end(), {id, kAdjRepetition, 0});
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f)
    for (const auto& [id, c] : st.penalties.output_counts) e.insert(e.end(), {id, kAdjCount, c});
}

std::vector<SampleResult> sample_rows(OpContext& ctx, const Tensor& logits, std::span<const SampleRow> rows) {
  const int64_t B = int64_t(rows.size());
  std::vector<SampleResult> res(rows.size());
  if (B == 0) return res;
  PL_CHECK(logits.defined() && logits.ndim == 2 && logits.size(0) == B && logits.dtype == DType::F32,
           "sample_rows: expected f32 logits [{}, V], got {}", B, logits.shape_str());
  const int64_t V = logits.size(1);
  Device& dev = *ctx.device;
  const bool host = logits.on_host();
  std::vector<int64_t> op_rows, host_rows;
  for (int64_t i = 0; i < B; ++i) (rows[size_t(i)].params->logprobs >= 0 ? host_rows : op_rows).push_back(i);

  // Host rows: their logits, downloaded row by row on a GPU (the op leaves them untouched).
  std::vector<float> host_copy;
  std::vector<float*> host_ptr(rows.size(), nullptr);
  if (!host_rows.empty()) {
    if (!host) host_copy.resize(host_rows.size() * size_t(V));
    for (size_t k = 0; k < host_rows.size(); ++k) {
      float* src = logits.ptr<float>() + host_rows[k] * logits.strides[0];
      if (host) {
        host_ptr[size_t(host_rows[k])] = src;
      } else {
        host_ptr[size_t(host_rows[k])] = host_copy.data() + k * size_t(V);
        dev.copy_to_host(host_ptr[size_t(host_rows[k])], src, size_t(V) * sizeof(float), ctx.stream);
      }
    }
  }

  // Op rows: one upload of [params B x 12 | offsets B + 1 | entries N x 3], one op, B ids back.
  std::vector<int32_t> ids(rows.size(), -1);
  std::vector<int32_t> words;  // kept alive until the op has run (the CPU reads it in place)
  Tensor out;
  if (!op_rows.empty()) {
    std::vector<int32_t> entries;
    words.resize(size_t(B) * (kSampleParamWords + 1) + 1);
    int32_t* offsets = words.data() + B * kSampleParamWords;
    for (int64_t i = 0; i < B; ++i) {
      const SampleRow& row = rows[size_t(i)];
      SampleRowParams p;
      offsets[i] = int32_t(entries.size() / kSampleAdjWords);
      if (row.params->logprobs >= 0) {
        p.flags = kSampleSkipRow;
      } else {
        p = sample_row_params(row);
        append_sample_adjustments(row, entries);
      }
      std::memcpy(words.data() + i * kSampleParamWords, &p, sizeof p);
    }
    const int64_t n_adj = int64_t(entries.size()) / kSampleAdjWords;
    offsets[B] = int32_t(n_adj);
    words.insert(words.end(), entries.begin(), entries.end());
    Tensor all;
    if (host) {
      all = Tensor::view_of(words.data(), DType::I32, {int64_t(words.size())});
    } else {
      all = dev.empty(DType::I32, {int64_t(words.size())});
      dev.copy_to_device(all.data, words.data(), words.size() * sizeof(int32_t), ctx.stream);
    }
    SampleArgs a;
    a.out = ctx.empty(DType::I32, {B});
    a.logits = logits;
    a.params = all.slice(0, 0, B * kSampleParamWords).reshape({B, kSampleParamWords});
    if (n_adj > 0) {
      a.adj_offsets = all.slice(0, B * kSampleParamWords, B + 1);
      a.adj = all.slice(0, B * (kSampleParamWords + 1) + 1, n_adj * kSampleAdjWords).reshape({n_adj, kSampleAdjWords});
    }
    ops::sample(ctx, a);
    out = a.out;
    if (host) std::memcpy(ids.data(), out.data, size_t(B) * sizeof(int32_t));
    else dev.copy_to_host(ids.data(), out.data, size_t(B) * sizeof(int32_t), ctx.stream);
  }
  if (!host) ctx.stream->synchronize();

  for (int64_t i : op_rows) {
    const SampleRow& row = rows[size_t(i)];
    const int32_t t = ids[size_t(i)];
    PL_CHECK(t >= 0 && t < V, "SAMPLE returned token {} for row {} (vocab {})", t, i, V);
    res[size_t(i)].token = t;
    // What sample_token does after its draw.
    ++row.state->counter;
    row.state->penalties.observe(*row.params, t);
    ++row.state->num_output;
  }
  // Rows are independent (own RNG and penalty state): sample them in parallel.
  ThreadPool::global().parallel_for(int64_t(host_rows.size()), [&](int64_t b, int64_t e, int) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t i = host_rows[size_t(k)];
      const SampleRow& row = rows[size_t(i)];
      std::span<float> l(host_ptr[size_t(i)], size_t(V));
      res[size_t(i)] = sample_token(l, *row.params, *row.state, row.stop_ids);
    }
  });
  return res;
}

}  // namespace portllm
