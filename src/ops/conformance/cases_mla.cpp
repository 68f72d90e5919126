// MLA_ATTENTION cases: decode (q_len 1, long contexts) and ragged chunked prefill, latent
// widths from tiny to DeepSeek's (kv_lora_rank 512 + rope 64), 1..128 heads, page sizes 16/64,
// f32/f16/bf16 latent caches, block tables in shuffled order, strided q_pe (a view into the
// full query, as the model passes it).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/conformance/cases.h"
#include "ops/op_args_moe.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Decode shapes with Dc % 64 == 0 and Dr % 16 == 0 are what the tensor-core kernel
// (gpu.mla_decode_mma_sm80) takes at bf16/f16. The last four add: DeepSeek's 16 heads of
// 512 + 64 over a batch of contexts that differ, are not multiples of its 32-key tile and span
// several pages; a max_seq_len bound far above the contexts (a decode graph plans for
// max_model_len, so most splits get no keys); 128 heads (DeepSeek-V3, 8 head groups); a head
// count that leaves a partial 16-head group.
std::vector<MlaShape> shapes() {
  return {{{1}, {1}, 4, 32, 8, 16},           {{1, 1, 1}, {5, 17, 33}, 16, 64, 16, 16},
          {{1}, {300}, 8, 512, 64, 64},        {{1, 1}, {40, 70}, 128, 64, 16, 16},
          {{5}, {5}, 4, 32, 8, 16},            {{7, 13}, {7, 20}, 8, 64, 16, 16},
          {{1, 5, 3}, {9, 5, 40}, 16, 128, 32, 64}, {{33}, {60}, 2, 512, 64, 16},
          {{3}, {3}, 1, 16, 8, 16},
          // Long decode contexts (split-KV with many splits) at DeepSeek's latent width; a short
          // chunk over a long cached prefix (splits in prefill); one head with more queries
          // than a GPU row block; an odd head count whose row blocks straddle tokens.
          {{1, 1}, {1000, 2000}, 16, 512, 64, 64}, {{3, 1}, {500, 1200}, 4, 64, 16, 16},
          {{70}, {100}, 1, 32, 8, 16},             {{5, 9}, {12, 9}, 3, 48, 16, 16},
          {{1, 1, 1, 1, 1}, {1, 33, 100, 517, 4133}, 16, 512, 64, 16},
          {{1, 1, 1}, {50, 300, 129}, 16, 512, 64, 16, 16384},
          {{1}, {700}, 128, 512, 64, 64},
          {{1, 1}, {77, 260}, 20, 128, 32, 16}};
}

std::vector<OpCase> mla_cases(DType act) {
  std::vector<OpCase> v;
  // fp8 caches (--kv-dtype fp8) under every activation dtype.
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3}) {
    if (act != DType::F32 && cache_dt != act && cache_dt != DType::F8E4M3) continue;
    for (const MlaShape& s : shapes()) v.push_back(mla_case(act, cache_dt, s));
  }
  return v;
}
}  // namespace

OpCase mla_case(DType act, DType cache_dt, const MlaShape& s) {
  CaseRng r(uint64_t(s.Dc * 7 + s.H + s.page + s.Dr + int(cache_dt) + s.ctx_lens[0]));
  const int B = int(s.q_lens.size());
  int max_blocks = 0, total = 0;
  for (int c : s.ctx_lens) {
    max_blocks = std::max(max_blocks, (c + s.page - 1) / s.page);
    total += (c + s.page - 1) / s.page;
  }
  const int nb = total + 2;
  std::vector<int32_t> perm(static_cast<size_t>(nb));
  std::iota(perm.begin(), perm.end(), 0);
  for (int i = nb - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(r.integer(0, i))]);
  std::vector<int32_t> tables(static_cast<size_t>(B * max_blocks), 0);
  int next = 0;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < (s.ctx_lens[size_t(b)] + s.page - 1) / s.page; ++j)
      tables[size_t(b * max_blocks + j)] = perm[size_t(next++)];
  std::vector<int32_t> qsl{0};
  for (int q : s.q_lens) qsl.push_back(qsl.back() + q);
  const int T = qsl.back();
  const int max_q = *std::max_element(s.q_lens.begin(), s.q_lens.end());
  const int max_ctx = std::max(s.max_seq_len, *std::max_element(s.ctx_lens.begin(), s.ctx_lens.end()));
  std::vector<int32_t> lens(s.ctx_lens.begin(), s.ctx_lens.end());
  std::string desc;
  const bool uniform = std::equal(s.q_lens.begin() + 1, s.q_lens.end(), s.q_lens.begin()) &&
                       std::equal(s.ctx_lens.begin() + 1, s.ctx_lens.end(), s.ctx_lens.begin());
  if (uniform && B > 4) desc = fmt::format("{}x{}/{}", B, s.q_lens[0], s.ctx_lens[0]);  // B sequences alike
  else
    for (int b = 0; b < B; ++b) desc += fmt::format("{}{}/{}", b ? "," : "", s.q_lens[size_t(b)], s.ctx_lens[size_t(b)]);
  OpCase c;
  c.op = Op::MLA_ATTENTION;
  c.name = fmt::format("q/ctx={} H={} Dc={} Dr={} page={} cache={}", desc, s.H, s.Dc, s.Dr, s.page, dtype_name(cache_dt));
  if (s.max_seq_len > 0) c.name += fmt::format(" max_seq_len={}", s.max_seq_len);
  // fp8 cache values are read exactly on every side: the bound of a 16-bit cache (as attention's).
  c.tol = std::max(default_tolerance(act), default_tolerance(cache_dt == DType::F8E4M3 ? DType::BF16 : cache_dt));
  const int Dq = 16 + s.Dr;  // q_pe lives at the end of each head's [nope | rope] query
  c.tensors = {CaseRng::filled(act, {T, s.H, s.Dc}, kNaN), r.tensor(act, {T, s.H, s.Dc}),
               r.tensor(act, {T, s.H, Dq}), r.tensor(cache_dt, {nb, s.page, 1, s.Dc + s.Dr}),
               r.ints(tables, {B, max_blocks}), r.ints(lens, {B}), r.ints(qsl, {B + 1})};
  c.outputs = {0};
  const float scale = float(1.0 / std::sqrt(double(128 + s.Dr)));
  const int Dr = s.Dr, H = s.H;
  c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
    MlaAttentionArgs a;
    a.out = t[0];
    a.q_latent = t[1];
    Tensor qpe = t[2];
    qpe.data = static_cast<char*>(qpe.data) + 16 * int64_t(dtype_size(qpe.dtype));
    qpe.shape = {T, H, Dr, 0, 0};
    a.q_pe = qpe;
    a.latent_cache = t[3];
    a.block_tables = t[4];
    a.seq_lens = t[5];
    a.query_start_loc = t[6];
    a.scale = scale;
    a.max_q_len = max_q;
    a.max_seq_len = max_ctx;
    a.host_seq_lens = lens;
    a.host_query_start_loc = qsl;
    sink(a.desc(), &a);
  };
  return c;
}

void register_mla_cases() { register_case_generator(Op::MLA_ATTENTION, mla_cases); }

}  // namespace portllm::conformance
