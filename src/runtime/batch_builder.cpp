#include "runtime/batch_builder.h"

#include <algorithm>

#include "core/error.h"
#include "ops/ops.h"

namespace portllm {

namespace {
// The step's index arrays go to the device in one copy: concatenated (each padded to 16 bytes)
// into one host buffer, uploaded into one allocation, and handed out as views of it. One
// host-to-device copy per step instead of nine.
class PackedUpload {
 public:
  // Returns the offset (in i32 elements) at which v will sit.
  size_t add(const std::vector<int32_t>& v) {
    const size_t off = host_.size();
    host_.insert(host_.end(), v.begin(), v.end());
    host_.resize((host_.size() + 3) / 4 * 4, 0);
    return off;
  }
  void upload(OpContext& ctx) {
    dev_ = ctx.device->empty(DType::I32, {int64_t(std::max<size_t>(host_.size(), 4))});
    if (!host_.empty()) ctx.device->copy_to_device(dev_.data, host_.data(), host_.size() * 4, ctx.stream);
  }
  Tensor view(size_t off, std::vector<int64_t> shape) const {
    return Tensor::view_of(static_cast<int32_t*>(dev_.data) + off, DType::I32, std::move(shape), dev_.device,
                           dev_.device_index, dev_.owner);
  }

 private:
  std::vector<int32_t> host_;
  Tensor dev_;
};
}  // namespace

ForwardBatch build_forward_batch(OpContext& ctx, const std::vector<SeqWork>& seqs, int64_t page) {
  ForwardBatch b;
  b.num_seqs = int(seqs.size());
  size_t max_blocks = 1;
  for (auto& s : seqs) max_blocks = std::max(max_blocks, s.block_table.size());
  // Layout order: the sequences that feed one token (decode) first, then the others, each group
  // in the given order (ForwardBatch::num_decode_seqs). Logit rows keep the given order, so the
  // caller sees its sequences' logits where it expects them.
  std::vector<size_t> order;
  order.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i].tokens.size() == 1) order.push_back(i);
  b.num_decode_seqs = int(order.size());
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i].tokens.size() != 1) order.push_back(i);
  std::vector<int32_t> ids, pos, slots, tables(seqs.size() * max_blocks, 0), logit_rows, first_row(seqs.size());
  b.host_query_start_loc.push_back(0);
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    const SeqWork& s = seqs[i];
    const int64_t n = int64_t(s.tokens.size()), end = s.start_pos + n;
    PL_CHECK(n > 0, "sequence {} has no tokens to feed", i);
    PL_CHECK(s.block_table.empty() || int64_t(s.block_table.size()) * page >= end,
             "block table of sequence {} covers {} tokens, needs {}", i, s.block_table.size() * page, end);
    first_row[i] = int32_t(ids.size());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t p = s.start_pos + j;
      ids.push_back(s.tokens[size_t(j)]);
      pos.push_back(int32_t(p));
      slots.push_back(s.block_table.empty() ? -1 : int32_t(s.block_table[size_t(p / page)] * page + p % page));
    }
    std::copy(s.block_table.begin(), s.block_table.end(), tables.begin() + long(k * max_blocks));
    b.host_seq_lens.push_back(int32_t(end));
    b.host_query_start_loc.push_back(int32_t(ids.size()));
    b.host_state_slots.push_back(s.state_slot);
    b.host_has_initial_state.push_back(s.start_pos > 0 ? 1 : 0);
    b.max_q_len = std::max<int>(b.max_q_len, int(n));
    b.max_seq_len = std::max<int>(b.max_seq_len, int(end));
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t n = int32_t(seqs[i].tokens.size());
    if (seqs[i].logits == SeqWork::Logits::All)
      for (int32_t j = 0; j < n; ++j) logit_rows.push_back(first_row[i] + j);
    else if (seqs[i].logits == SeqWork::Logits::Last)
      logit_rows.push_back(first_row[i] + n - 1);
  }
  // A mixed step's prefill part [D, B) as a batch of its own: its query offsets from 0.
  const size_t D = size_t(b.num_decode_seqs);
  const bool mixed = D > 0 && D < seqs.size();
  std::vector<int32_t>& prefill_qsl = b.host_prefill_query_start_loc;
  if (mixed)
    for (size_t k = D; k <= seqs.size(); ++k) prefill_qsl.push_back(b.host_query_start_loc[k] - int32_t(D));
  const std::vector<int32_t> decode_order = ops::longest_first(b.host_seq_lens.data(), b.num_decode_seqs);
  b.num_tokens = int(ids.size());
  b.host_positions = pos;
  PackedUpload up;
  const size_t o_ids = up.add(ids), o_pos = up.add(pos), o_slots = up.add(slots), o_tables = up.add(tables),
               o_lens = up.add(b.host_seq_lens), o_qsl = up.add(b.host_query_start_loc), o_logits = up.add(logit_rows),
               o_state = up.add(b.host_state_slots), o_init = up.add(b.host_has_initial_state),
               o_pqsl = up.add(prefill_qsl), o_order = up.add(decode_order);
  up.upload(ctx);
  const int64_t B = int64_t(seqs.size());
  b.token_ids = up.view(o_ids, {int64_t(ids.size())});
  b.positions = up.view(o_pos, {int64_t(pos.size())});
  b.slot_mapping = up.view(o_slots, {int64_t(slots.size())});
  b.block_tables = up.view(o_tables, {B, int64_t(max_blocks)});
  b.seq_lens = up.view(o_lens, {B});
  b.query_start_loc = up.view(o_qsl, {B + 1});
  b.logits_indices = up.view(o_logits, {int64_t(logit_rows.size())});
  b.state_slots = up.view(o_state, {B});
  b.has_initial_state = up.view(o_init, {B});
  if (mixed) b.prefill_query_start_loc = up.view(o_pqsl, {int64_t(prefill_qsl.size())});
  if (D > 0) b.decode_order = up.view(o_order, {int64_t(D)});
  return b;
}

void apply_token_feed(OpContext& ctx, const Tensor& token_ids, const DeviceTokenFeed& feed) {
  const int64_t n = int64_t(feed.src_rows.size()), R = feed.ids.defined() ? feed.ids.numel() : 0;
  PL_CHECK(token_ids.dtype == DType::I32 && token_ids.numel() >= n, "token feed: {} rows for {} token ids", n,
           token_ids.numel());
  PL_CHECK(R == 0 || feed.ids.dtype == DType::I32, "token feed: ids must be i32");
  int32_t* dst = token_ids.ptr<int32_t>();
  const int32_t* src = R ? feed.ids.ptr<int32_t>() : nullptr;
  for (int64_t i = 0; i < n;) {
    const int s0 = feed.src_rows[size_t(i)];
    if (s0 < 0) {
      ++i;
      continue;
    }
    PL_CHECK(s0 < R, "token feed: row {} reads id {} of {}", i, s0, R);
    int64_t len = 1;
    while (i + len < n && feed.src_rows[size_t(i + len)] == s0 + len && s0 + len < R) ++len;
    ctx.device->copy_on_device(dst + i, src + s0, size_t(len) * sizeof(int32_t), ctx.stream);
    i += len;
  }
}

}  // namespace portllm
