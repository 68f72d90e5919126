#include "engine/batch_sampler.h"

#include <algorithm>
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

BatchSampler::BatchSampler(OpContext& ctx)
    : ctx_(ctx), params_(*ctx.device, 2), ids_(*ctx.device, 3), ahead_(*ctx.device, *ctx.stream, 2) {
  if (ahead_.enabled() && ctx.device->aux_stream()) sampled_ = ctx.device->create_event();
}

PendingSample BatchSampler::launch(const Tensor& logits, std::span<const SampleRow> rows) {
  PendingSample p;
  const int64_t B = int64_t(rows.size());
  p.rows.assign(rows.begin(), rows.end());
  if (B == 0) return p;
  PL_CHECK(logits.defined() && logits.ndim == 2 && logits.size(0) == B && logits.dtype == DType::F32,
           "sampling: expected f32 logits [{}, V], got {}", B, logits.shape_str());
  p.logits = logits;
  const int64_t V = logits.size(1);
  Device& dev = *ctx_.device;
  const bool host = logits.on_host();
  for (int64_t i = 0; i < B; ++i) (rows[size_t(i)].params->logprobs >= 0 ? p.host_rows : p.op_rows).push_back(i);

  // Host rows: their logits, downloaded row by row on a GPU (the op leaves them untouched). This
  // waits for the device: a step with such rows is never followed by a launch before its finish.
  p.host_ptr.assign(rows.size(), nullptr);
  if (!p.host_rows.empty()) {
    if (!host) p.host_copy.resize(p.host_rows.size() * size_t(V));
    for (size_t k = 0; k < p.host_rows.size(); ++k) {
      float* src = logits.ptr<float>() + p.host_rows[k] * logits.strides[0];
      float*& dst = p.host_ptr[size_t(p.host_rows[k])];
      if (host) {
        dst = src;
      } else {
        dst = p.host_copy.data() + k * size_t(V);
        dev.copy_to_host(dst, src, size_t(V) * sizeof(float), ctx_.stream);
      }
    }
  }
  if (p.op_rows.empty()) return p;

  // Op rows: one upload of [params B x 12 | offsets B + 1 | entries N x 3], one op, B ids back.
  // The adjustment entries first (their count sizes the buffer), then the rows' parameters
  // written straight into the staging buffer.
  std::vector<int32_t> entries;
  std::vector<int32_t> first_entry(size_t(B) + 1);
  for (int64_t i = 0; i < B; ++i) {
    first_entry[size_t(i)] = int32_t(entries.size() / kSampleAdjWords);
    if (rows[size_t(i)].params->logprobs < 0) append_sample_adjustments(rows[size_t(i)], entries);
  }
  const int64_t n_adj = int64_t(entries.size()) / kSampleAdjWords;
  first_entry[size_t(B)] = int32_t(n_adj);
  const size_t head = size_t(B) * kSampleParamWords + first_entry.size(), words = head + entries.size();
  const bool ahead = !host && ahead_.enabled();
  StagingBuffer up;
  AheadUpload::Slot slot;
  if (ahead) slot = ahead_.next(words * sizeof(int32_t));
  else up = params_.acquire(words * sizeof(int32_t));
  int32_t* w = static_cast<int32_t*>(ahead ? slot.host : up.data);
  for (int64_t i = 0; i < B; ++i) {
    const SampleRow& row = rows[size_t(i)];
    SampleRowParams rp;
    if (row.params->logprobs >= 0) {
      rp.flags = kSampleSkipRow;
    } else {
      rp = sample_row_params(row);
      // What sample_token does with the state that does not depend on the token drawn.
      ++row.state->counter;
      ++row.state->num_output;
    }
    std::memcpy(w + i * kSampleParamWords, &rp, sizeof rp);
  }
  std::copy(first_entry.begin(), first_entry.end(), w + B * kSampleParamWords);
  std::copy(entries.begin(), entries.end(), w + head);
  Tensor all;
  if (host) {
    all = Tensor::view_of(w, DType::I32, {int64_t(words)});  // the op reads the staging buffer in place
  } else if (ahead) {
    ahead_.commit(words * sizeof(int32_t));
    all = Tensor::view_of(slot.device, DType::I32, {int64_t(words)}, logits.device, logits.device_index, slot.owner);
  } else {
    all = dev.empty(DType::I32, {int64_t(words)});
    dev.copy_to_device(all.data, w, words * sizeof(int32_t), ctx_.stream);
  }
  if (!ahead) up.done->record(*ctx_.stream);
  SampleArgs a;
  a.out = ctx_.empty(DType::I32, {B});
  a.logits = logits;
  a.params = all.slice(0, 0, B * kSampleParamWords).reshape({B, kSampleParamWords});
  if (n_adj > 0) {
    a.adj_offsets = all.slice(0, B * kSampleParamWords, B + 1);
    a.adj = all.slice(0, B * (kSampleParamWords + 1) + 1, n_adj * kSampleAdjWords).reshape({n_adj, kSampleAdjWords});
  }
  ops::sample(ctx_, a);
  if (ahead) ahead_.release();
  p.ids = a.out;
  if (!host) {
    p.ids_host = ids_.acquire(size_t(B) * sizeof(int32_t));
    Stream* down = ctx_.stream;
    if (sampled_) {  // the download waits for the op on the auxiliary stream; the main stream goes on
      down = dev.aux_stream();
      sampled_->record(*ctx_.stream);
      sampled_->wait(*down);
    }
    dev.copy_to_host(p.ids_host.data, p.ids.data, size_t(B) * sizeof(int32_t), down);
    p.ids_host.done->record(*down);
  }
  return p;
}

std::vector<SampleResult> BatchSampler::finish(PendingSample& p) {
  std::vector<SampleResult> res(p.rows.size());
  if (p.rows.empty()) return res;
  const int64_t V = p.logits.size(1);
  const int32_t* ids = nullptr;
  if (!p.op_rows.empty()) {
    if (p.ids_host.data) {
      p.ids_host.done->synchronize();
      ids = static_cast<const int32_t*>(p.ids_host.data);
    } else {
      ids = p.ids.ptr<int32_t>();  // the CPU op wrote host memory
    }
  }
  for (int64_t i : p.op_rows) {
    const SampleRow& row = p.rows[size_t(i)];
    if (!row.state) continue;  // dropped by the caller since launch
    const int32_t t = ids[size_t(i)];
    PL_CHECK(t >= 0 && t < V, "SAMPLE returned token {} for row {} (vocab {})", t, i, V);
    res[size_t(i)].token = t;
    row.state->penalties.observe(*row.params, t);  // the rest of sample_token's update was at launch
  }
  // Rows are independent (own RNG and penalty state): sample them in parallel.
  ThreadPool::global().parallel_for(int64_t(p.host_rows.size()), [&](int64_t b, int64_t e, int) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t i = p.host_rows[size_t(k)];
      const SampleRow& row = p.rows[size_t(i)];
      if (!row.state) continue;
      std::span<float> l(p.host_ptr[size_t(i)], size_t(V));
      res[size_t(i)] = sample_token(l, *row.params, *row.state, row.stop_ids);
    }
  });
  return res;
}

}  // namespace portllm
