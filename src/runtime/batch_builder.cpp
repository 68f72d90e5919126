#include "runtime/batch_builder.h"

#include <algorithm>

#include "core/error.h"

namespace portllm {

namespace {
Tensor upload_i32(OpContext& ctx, const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  Tensor t = ctx.device->empty(DType::I32, std::move(shape));
  if (!v.empty()) ctx.device->copy_to_device(t.data, v.data(), v.size() * 4, ctx.stream);
  return t;
}
}  // namespace

ForwardBatch build_forward_batch(OpContext& ctx, const std::vector<SeqWork>& seqs, int64_t page) {
  ForwardBatch b;
  b.num_seqs = int(seqs.size());
  size_t max_blocks = 1;
  for (auto& s : seqs) max_blocks = std::max(max_blocks, s.block_table.size());
  std::vector<int32_t> ids, pos, slots, tables(seqs.size() * max_blocks, 0), logit_rows;
  b.host_query_start_loc.push_back(0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SeqWork& s = seqs[i];
    const int64_t n = int64_t(s.tokens.size()), end = s.start_pos + n;
    PL_CHECK(n > 0, "sequence {} has no tokens to feed", i);
    PL_CHECK(s.block_table.empty() || int64_t(s.block_table.size()) * page >= end,
             "block table of sequence {} covers {} tokens, needs {}", i, s.block_table.size() * page, end);
    const int32_t row0 = int32_t(ids.size());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t p = s.start_pos + j;
      ids.push_back(s.tokens[size_t(j)]);
      pos.push_back(int32_t(p));
      slots.push_back(s.block_table.empty() ? -1 : int32_t(s.block_table[size_t(p / page)] * page + p % page));
    }
    std::copy(s.block_table.begin(), s.block_table.end(), tables.begin() + long(i * max_blocks));
    if (s.logits == SeqWork::Logits::All)
      for (int64_t j = 0; j < n; ++j) logit_rows.push_back(row0 + int32_t(j));
    else if (s.logits == SeqWork::Logits::Last)
      logit_rows.push_back(row0 + int32_t(n - 1));
    b.host_seq_lens.push_back(int32_t(end));
    b.host_query_start_loc.push_back(int32_t(ids.size()));
    b.host_state_slots.push_back(s.state_slot);
    b.host_has_initial_state.push_back(s.start_pos > 0 ? 1 : 0);
    b.max_q_len = std::max<int>(b.max_q_len, int(n));
    b.max_seq_len = std::max<int>(b.max_seq_len, int(end));
  }
  b.num_tokens = int(ids.size());
  b.host_positions = pos;
  b.token_ids = upload_i32(ctx, ids, {int64_t(ids.size())});
  b.positions = upload_i32(ctx, pos, {int64_t(pos.size())});
  b.slot_mapping = upload_i32(ctx, slots, {int64_t(slots.size())});
  b.block_tables = upload_i32(ctx, tables, {int64_t(seqs.size()), int64_t(max_blocks)});
  b.seq_lens = upload_i32(ctx, b.host_seq_lens, {int64_t(seqs.size())});
  b.query_start_loc = upload_i32(ctx, b.host_query_start_loc, {int64_t(seqs.size() + 1)});
  b.logits_indices = upload_i32(ctx, logit_rows, {int64_t(logit_rows.size())});
  b.state_slots = upload_i32(ctx, b.host_state_slots, {int64_t(seqs.size())});
  b.has_initial_state = upload_i32(ctx, b.host_has_initial_state, {int64_t(seqs.size())});
  return b;
}

}  // namespace portllm
