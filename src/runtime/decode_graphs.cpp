#include "runtime/decode_graphs.h"

#include <algorithm>

#include "core/error.h"
#include "ops/ops.h"

namespace portllm {

std::vector<int> DecodeGraphs::default_sizes(int max_num_seqs) {
  // vLLM's list: 1, 2, 4, then every multiple of 8 up to 256. A step runs as the next captured
  // size, and at large batches the GEMMs' time grows with the padded rows: on the Qwen3-8B
  // throughput workload these 35 sizes ran 9187 output tok/s against 9136 with the 17 of the
  // spacing 16 / 32 list used before (H200, `bench throughput`, PORTLLM_GEMM_TUNE=0 for both).
  std::vector<int> v;
  for (int s : {1, 2, 4})
    if (s <= max_num_seqs) v.push_back(s);
  for (int s = 8; s <= 256 && s <= max_num_seqs; s += 8) v.push_back(s);
  return v;
}

bool DecodeGraphs::supported(const std::vector<LayerCacheSpec>& spec) {
  using K = LayerCacheSpec::Kind;
  for (const auto& s : spec) {
    switch (s.kind) {
      case K::None:
      case K::PagedKV:      // ATTN_DECODE splits each context on the device
      case K::PagedLatent:  // MLA_ATTENTION likewise (backends/gpu/mla_attention.cu)
      case K::Recurrent:    // GDN kernels read slots / init flags on the device; padding has slot -1
        continue;
    }
    return false;  // a cache kind added later stays eager until its kernels are checked for replay
  }
  return true;
}

DecodeGraphs::DecodeGraphs(Model& model, OpContext& ctx, KvCache& cache, std::vector<int> sizes, int64_t max_model_len)
    : model_(model),
      ctx_(ctx),
      cache_(cache),
      sizes_(std::move(sizes)),
      max_model_len_(max_model_len),
      staging_(*ctx.device, 2),
      ahead_(*ctx.device, *ctx.stream, 2) {
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  PL_CHECK(!sizes_.empty() && sizes_.front() >= 1, "--cuda-graph-bs: sizes must be >= 1");
  const int64_t page = cache_.config().page_size;
  max_blocks_ = (max_model_len_ + page - 1) / page;
  const size_t S = size_t(sizes_.back());
  auto pad4 = [](size_t n) { return (n + 3) / 4 * 4; };  // 16-byte aligned arrays
  size_t off = 0;
  auto take = [&](size_t n) {
    const size_t o = off;
    off += pad4(n);
    return o;
  };
  lay_.ids = take(S);
  lay_.pos = take(S);
  lay_.slots = take(S);
  lay_.lens = take(S);
  lay_.qsl = take(S + 1);
  lay_.rows = take(S);
  lay_.states = take(S);
  lay_.init = take(S);
  lay_.order = take(S);
  lay_.tables = take(S * size_t(max_blocks_));
  lay_.total = off;
  inputs_ = ctx_.device->zeros(DType::I32, {int64_t(lay_.total)});
  logits_ = ctx_.device->empty(DType::F32, {int64_t(S), model_.config().vocab_size});
}

ForwardBatch DecodeGraphs::batch_for(int size) const {
  auto view = [&](size_t off, std::vector<int64_t> shape) {
    return Tensor::view_of(inputs_.ptr<int32_t>() + off, DType::I32, std::move(shape), inputs_.device,
                           inputs_.device_index, inputs_.owner);
  };
  const int64_t n = size;
  ForwardBatch b;
  b.num_tokens = b.num_seqs = b.num_decode_seqs = size;
  b.max_q_len = 1;
  b.max_seq_len = int(max_model_len_);  // kernels plan for the longest context
  b.token_ids = view(lay_.ids, {n});
  b.positions = view(lay_.pos, {n});
  b.slot_mapping = view(lay_.slots, {n});
  b.seq_lens = view(lay_.lens, {n});
  b.query_start_loc = view(lay_.qsl, {n + 1});
  b.logits_indices = view(lay_.rows, {n});
  b.state_slots = view(lay_.states, {n});
  b.has_initial_state = view(lay_.init, {n});
  b.block_tables = view(lay_.tables, {n, max_blocks_});
  b.decode_order = view(lay_.order, {n});
  // No host mirrors: a replay changes the device inputs only, so anything planned from a mirror
  // would keep the capture-time batch. Left empty, a kernel that consults them sees none and
  // must plan from max_q_len / max_seq_len (the GPU kernels never read them).
  return b;
}

void DecodeGraphs::fill_host(const std::vector<SeqWork>& work, int size, int32_t* h) const {
  const int64_t page = cache_.config().page_size;
  std::fill(h, h + lay_.tables, 0);  // the per-sequence arrays past `size` are uploaded but never read
  for (int i = 0; i < size; ++i) {
    const bool real = i < int(work.size());
    int32_t* table = h + lay_.tables + size_t(i) * size_t(max_blocks_);
    std::fill(table, table + max_blocks_, 0);
    h[lay_.qsl + size_t(i)] = i;
    h[lay_.rows + size_t(i)] = i;
    if (!real) {  // padding: reads position 0 of block 0, writes no KV (slot -1) and no state (state slot -1)
      h[lay_.states + size_t(i)] = -1;
      h[lay_.init + size_t(i)] = 0;
      h[lay_.ids + size_t(i)] = 0;
      h[lay_.pos + size_t(i)] = 0;
      h[lay_.slots + size_t(i)] = -1;
      h[lay_.lens + size_t(i)] = 1;
      continue;
    }
    const SeqWork& w = work[size_t(i)];
    const int64_t p = w.start_pos;
    PL_CHECK(int64_t(w.block_table.size()) <= max_blocks_ && int64_t(w.block_table.size()) * page > p,
             "decode graph: block table of sequence {} does not cover position {}", i, p);
    PL_CHECK(!cache_.has_state_layers() || (w.state_slot >= 0 && w.state_slot < cache_.config().num_state_slots),
             "decode graph: sequence {} has state slot {} ({} slots)", i, w.state_slot, cache_.config().num_state_slots);
    std::copy(w.block_table.begin(), w.block_table.end(), table);
    h[lay_.ids + size_t(i)] = w.tokens[0];
    h[lay_.pos + size_t(i)] = int32_t(p);
    h[lay_.slots + size_t(i)] = int32_t(w.block_table[size_t(p / page)] * page + p % page);
    h[lay_.lens + size_t(i)] = int32_t(p + 1);
    // Recurrent state as build_forward_batch passes it: the sequence's slot (-1 for models
    // without state), carried over from earlier steps unless this is its first token.
    h[lay_.states + size_t(i)] = w.state_slot;
    h[lay_.init + size_t(i)] = p > 0 ? 1 : 0;
  }
  h[lay_.qsl + size_t(size)] = size;
  // Padding rows (context 1) sort last.
  const std::vector<int32_t> order = ops::longest_first(h + lay_.lens, size);
  std::copy(order.begin(), order.end(), h + lay_.order);
}

void DecodeGraphs::fill(const std::vector<SeqWork>& work, int size) {
  const size_t used = words_used(size);
  const StagingBuffer buf = staging_.acquire(used * 4);
  fill_host(work, size, static_cast<int32_t*>(buf.data));
  ctx_.device->copy_to_device(inputs_.data, buf.data, used * 4, ctx_.stream);
  buf.done->record(*ctx_.stream);
}

// The staged words are the inputs followed by `size` feed rows (-1: keep the staged id).
void DecodeGraphs::fill_ahead(const std::vector<SeqWork>& work, int size, const DeviceTokenFeed* feed) {
  const size_t used = words_used(size), words = used + size_t(size);
  const AheadUpload::Slot slot = ahead_.next(words * 4);
  int32_t* h = static_cast<int32_t*>(slot.host);
  fill_host(work, size, h);
  const int64_t R = feed && feed->ids.defined() ? feed->ids.numel() : 0;
  for (int i = 0; i < size; ++i) {
    const int r = feed && i < int(feed->src_rows.size()) ? feed->src_rows[size_t(i)] : -1;
    PL_CHECK(r < R, "token feed: row {} reads id {} of {}", i, r, R);  // as apply_token_feed checks
    h[used + size_t(i)] = r;
  }
  ahead_.commit(words * 4);
  auto view = [&](void* base, size_t off, size_t n) {
    return Tensor::view_of(static_cast<int32_t*>(base) + off, DType::I32, {int64_t(n)}, inputs_.device,
                           inputs_.device_index, base == slot.device ? slot.owner : inputs_.owner);
  };
  TokenFeedArgs a;
  a.out = view(inputs_.data, 0, used);
  a.staged = view(slot.device, 0, used);
  a.rows = view(slot.device, used, size_t(size));
  if (feed && feed->ids.defined()) a.sampled = feed->ids;
  a.ids_offset = int64_t(lay_.ids);
  ops::token_feed(ctx_, a);
  ahead_.release();
}

void DecodeGraphs::capture() {
  graphs_.clear();
  graphs_.resize(sizes_.size());
  for (size_t k = sizes_.size(); k-- > 0;) {
    const int s = sizes_[k];
    fill({}, s);
    const ForwardBatch b = batch_for(s);
    Tensor out = logits_.slice(0, 0, s);
    model_.forward(ctx_, b, cache_.layers(), out);  // warm-up: kernel choice, BLAS plans, lazy loading
    ctx_.stream->synchronize();
    graphs_[k] = ctx_.device->capture(*ctx_.stream, [&] { model_.forward(ctx_, b, cache_.layers(), out); });
    PL_CHECK(graphs_[k] != nullptr, "{}: this device does not capture graphs", ctx_.device->name());
  }
  ctx_.stream->synchronize();
}

bool DecodeGraphs::covers(const std::vector<SeqWork>& work) const {
  if (graphs_.empty() || work.empty() || int(work.size()) > sizes_.back()) return false;
  for (const SeqWork& w : work)
    if (w.tokens.size() != 1 || w.logits != SeqWork::Logits::Last || w.start_pos + 1 > max_model_len_)
      return false;
  return true;
}

size_t DecodeGraphs::size_index(int n) const {
  const size_t k = size_t(std::lower_bound(sizes_.begin(), sizes_.end(), n) - sizes_.begin());
  PL_CHECK(n >= 1 && k < sizes_.size(), "decode graph: no captured size holds {} sequences", n);
  return k;
}

ForwardBatch DecodeGraphs::stage(const std::vector<SeqWork>& work) {
  const int size = sizes_[size_index(int(work.size()))];
  fill(work, size);
  return batch_for(size);
}

Tensor DecodeGraphs::run(const std::vector<SeqWork>& work, const DeviceTokenFeed* feed) {
  const int n = int(work.size());
  const size_t k = size_index(n);
  if (ahead_.enabled()) {
    fill_ahead(work, sizes_[k], feed);
  } else {
    fill(work, sizes_[k]);
    if (feed) apply_token_feed(ctx_, batch_for(sizes_[k]).token_ids, *feed);
  }
  graphs_[k]->replay(*ctx_.stream);
  return logits_.slice(0, 0, n);
}

}  // namespace portllm
