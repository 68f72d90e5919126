// Paged KV write and attention cases: GQA ratios 1..8, head dims 32..256, page sizes 16 and 64,
// ragged batches with cached prefixes (chunked prefill), decode (q_len 1) with long contexts,
// f32/f16/bf16 caches and fp8 ones under every activation dtype, block tables in shuffled order.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"
#include "ops/ops.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A large decode batch (Qwen3-8B's heads, or head dims of 64 / 256; more (sequence, KV head) pairs
// than a GPU has compute units) with contexts of 20 to ~1500 keys under a graph's bound of 2048:
// the large-batch paths.
AttnShape large_decode_batch(int D = 128) {
  AttnShape s{{}, {}, 32, 8, D, 16, 2048};
  for (int b = 0; b < 40; ++b) {
    s.q_lens.push_back(1);
    s.ctx_lens.push_back(20 + (b * 389) % 1500);
  }
  return s;
}

// The same shape with head-major pages (PORTLLM_KV_LAYOUT=hnd).
AttnShape head_major(AttnShape s) {
  s.head_major = true;
  return s;
}

// The same shape with a work order, longest context first (the engine's decode steps).
AttnShape longest_first(AttnShape s) {
  s.longest_first = true;
  return s;
}

std::vector<AttnShape> shapes(bool decode) {
  if (decode)
    return {{{1}, {1}, 4, 2, 64, 16},          {{1, 1, 1}, {5, 17, 33}, 8, 2, 128, 16},
            {{1, 1}, {300, 7}, 8, 1, 64, 64},  {{1}, {1000}, 32, 8, 128, 16},
            {{1, 1, 1, 1}, {13, 64, 65, 129}, 16, 16, 32, 16}, {{1, 1}, {40, 200}, 4, 4, 256, 64},
            {{1}, {2100}, 16, 2, 96, 64},
            // 8 and 3 query heads per KV head at head dim 128 (Qwen3-30B-A3B's group; an odd one):
            // the fp8 cache's heads-as-N form takes up to 8
            {{1, 1, 1}, {70, 333, 16}, 16, 2, 128, 16}, {{1, 1}, {77, 300}, 6, 2, 128, 16},
            // a decode graph's bound (max_seq_len) far above the contexts: the splits a sequence
            // uses follow its own context (1, several, and 2 of the launch's splits)
            {{1, 1, 1}, {40, 700, 129}, 8, 2, 128, 16, 4096},
            large_decode_batch(), large_decode_batch(64), large_decode_batch(256),
            head_major({{1, 1, 1}, {5, 17, 33}, 8, 2, 128, 16}), head_major(large_decode_batch()),
            longest_first(large_decode_batch()), longest_first({{1, 1, 1}, {40, 700, 129}, 8, 2, 128, 16, 4096})};
  return {{{5}, {5}, 4, 2, 64, 16},           {{7, 13}, {7, 20}, 8, 2, 128, 16},
          {{1, 5, 3}, {9, 5, 40}, 4, 1, 32, 16}, {{33}, {100}, 8, 8, 64, 64},
          {{17, 2}, {17, 66}, 6, 3, 256, 16},  {{64}, {64}, 16, 2, 128, 64},
          {{13}, {13}, 2, 2, 192, 16},         head_major({{7, 13}, {7, 20}, 8, 2, 128, 16})};
}

// A cache of nb blocks with the sequences' blocks spread over it in shuffled order.
std::vector<int32_t> block_tables(CaseRng& r, const AttnShape& s, int& max_blocks, int& nb) {
  max_blocks = 0;
  int total = 0;
  for (int c : s.ctx_lens) {
    const int n = (c + s.page - 1) / s.page;
    max_blocks = std::max(max_blocks, n);
    total += n;
  }
  nb = total + 3;  // spare blocks nobody owns
  std::vector<int32_t> perm(static_cast<size_t>(nb));
  std::iota(perm.begin(), perm.end(), 0);
  for (int i = nb - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(r.integer(0, i))]);
  std::vector<int32_t> tables(s.ctx_lens.size() * size_t(max_blocks), 0);
  int next = 0;
  for (size_t b = 0; b < s.ctx_lens.size(); ++b) {
    const int n = (s.ctx_lens[b] + s.page - 1) / s.page;
    for (int j = 0; j < n; ++j) tables[b * size_t(max_blocks) + size_t(j)] = perm[size_t(next++)];
  }
  return tables;
}

}  // namespace

Tensor head_major_view(Tensor t) {
  std::swap(t.shape[1], t.shape[2]);
  std::swap(t.strides[1], t.strides[2]);
  return t;
}

std::string attention_case_name(DType cache_dt, const AttnShape& s) {
  const int B = int(s.q_lens.size());
  std::string lens;
  const bool uniform = std::equal(s.q_lens.begin() + 1, s.q_lens.end(), s.q_lens.begin()) &&
                       std::equal(s.ctx_lens.begin() + 1, s.ctx_lens.end(), s.ctx_lens.begin());
  if (uniform && B > 4) lens = fmt::format("{}x{}/{}", B, s.q_lens[0], s.ctx_lens[0]);  // B sequences alike
  else if (B > 16)  // a large ragged batch: its range
    lens = fmt::format("{}x{}/{}..{}", B, s.q_lens[0], *std::min_element(s.ctx_lens.begin(), s.ctx_lens.end()),
                       *std::max_element(s.ctx_lens.begin(), s.ctx_lens.end()));
  else
    for (int b = 0; b < B; ++b) lens += fmt::format("{}{}/{}", b ? "," : "", s.q_lens[size_t(b)], s.ctx_lens[size_t(b)]);
  return fmt::format("q/ctx={} Hq={} Hkv={} D={} page={} cache={}{}{}", lens, s.Hq, s.Hkv, s.D, s.page,
                     dtype_name(cache_dt), s.head_major ? " hnd" : "", s.longest_first ? " longest-first" : "");
}

OpCase attention_case(DType act, DType cache_dt, const AttnShape& s, bool decode) {
  CaseRng r(uint64_t(s.D * 7 + s.Hq + s.page + int(cache_dt) + (decode ? 1000 : 0)));
  int max_blocks, nb;
  auto tables = block_tables(r, s, max_blocks, nb);
  const int B = int(s.q_lens.size());
  std::vector<int32_t> qsl{0};
  for (int q : s.q_lens) qsl.push_back(qsl.back() + q);
  const int T = qsl.back();
  OpCase c;
  c.op = decode ? Op::ATTN_DECODE : Op::ATTN_PREFILL;
  c.name = attention_case_name(cache_dt, s);
  // An fp8 cache's values are read exactly on every side (e4m3 widens exactly to any float type),
  // so it adds no rounding of its own: the bound of a 16-bit cache.
  c.tol = std::max(default_tolerance(act), default_tolerance(cache_dt == DType::F8E4M3 ? DType::BF16 : cache_dt));
  c.tensors = {CaseRng::filled(act, {T, s.Hq, s.D}, kNaN),
               r.tensor(act, {T, s.Hq, s.D}),
               r.tensor(cache_dt, s.head_major ? std::vector<int64_t>{nb, s.Hkv, s.page, s.D}
                                               : std::vector<int64_t>{nb, s.page, s.Hkv, s.D}),
               r.tensor(cache_dt, s.head_major ? std::vector<int64_t>{nb, s.Hkv, s.page, s.D}
                                               : std::vector<int64_t>{nb, s.page, s.Hkv, s.D}),
               r.ints(tables, {B, max_blocks}),
               r.ints(std::vector<int32_t>(s.ctx_lens.begin(), s.ctx_lens.end()), {B}),
               r.ints(qsl, {B + 1})};
  if (s.longest_first) {
    c.tensors.push_back(r.ints(ops::longest_first(s.ctx_lens.data(), B), {B}));
  }
  c.outputs = {0};
  const float scale = float(1.0 / std::sqrt(double(s.D)));
  const int max_q = *std::max_element(s.q_lens.begin(), s.q_lens.end());
  const int max_ctx = std::max(s.max_seq_len, *std::max_element(s.ctx_lens.begin(), s.ctx_lens.end()));
  std::vector<int32_t> lens_v(s.ctx_lens.begin(), s.ctx_lens.end());
  c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
    AttentionArgs a;
    a.out = t[0];
    a.q = t[1];
    a.k_cache = s.head_major ? head_major_view(t[2]) : t[2];
    a.v_cache = s.head_major ? head_major_view(t[3]) : t[3];
    a.block_tables = t[4];
    a.seq_lens = t[5];
    a.query_start_loc = t[6];
    if (s.longest_first) a.work_order = t[7];
    a.scale = scale;
    a.max_q_len = max_q;
    a.max_seq_len = max_ctx;
    a.host_seq_lens = lens_v;
    a.host_query_start_loc = qsl;
    sink(a.desc(decode ? Op::ATTN_DECODE : Op::ATTN_PREFILL), &a);
  };
  return c;
}

namespace {

std::vector<OpCase> attention_cases(DType act, bool decode) {
  std::vector<OpCase> v;
  // fp8 caches (--kv-dtype fp8) under every activation dtype.
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3}) {
    if (act != DType::F32 && cache_dt != act && cache_dt != DType::F8E4M3) continue;
    for (const AttnShape& s : shapes(decode)) v.push_back(attention_case(act, cache_dt, s, decode));
  }
  return v;
}

std::vector<OpCase> kv_write_cases(DType act) {
  std::vector<OpCase> v;
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3}) {
    if (act != DType::F32 && cache_dt != act && cache_dt != DType::F8E4M3) continue;
    // hnd: head-major pages (PORTLLM_KV_LAYOUT=hnd)
    for (auto [T, H, D, page, hnd] : {std::tuple{1, 2, 64, 16, false}, {7, 4, 128, 16, false},
                                      {13, 1, 576, 64, false}, {33, 8, 32, 16, false}, {7, 4, 128, 16, true}}) {
      CaseRng r(uint64_t(T * 3 + H + D + page + int(cache_dt) + (hnd ? 500 : 0)));
      const int nb = (T + page - 1) / page * 2 + 1;
      std::vector<int32_t> slots(static_cast<size_t>(nb * page));
      std::iota(slots.begin(), slots.end(), 0);
      for (int i = nb * page - 1; i > 0; --i) std::swap(slots[size_t(i)], slots[size_t(r.integer(0, i))]);
      slots.resize(size_t(T));
      if (T > 2) slots[1] = -1;  // padding token: must not be written
      OpCase c;
      c.op = Op::KV_WRITE;
      c.name = fmt::format("T={} H={} D={} page={} cache={}{}", T, H, D, page, dtype_name(cache_dt), hnd ? " hnd" : "");
      c.tol = 0;
      const std::vector<int64_t> cache_shape = hnd ? std::vector<int64_t>{nb, H, page, D} : std::vector<int64_t>{nb, page, H, D};
      c.tensors = {r.tensor(act, {T, H, D}), r.tensor(act, {T, H, D}), r.tensor(cache_dt, cache_shape),
                   r.tensor(cache_dt, cache_shape), r.ints(slots, {T})};
      c.outputs = {2, 3};
      c.invoke = [hnd = hnd](const std::vector<Tensor>& t, const ArgsSink& sink) {
        KvWriteArgs a{t[0], t[1], hnd ? head_major_view(t[2]) : t[2], hnd ? head_major_view(t[3]) : t[3], t[4]};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  // MLA's latent cache [NB, page, 1, Dc + Dr]: "K" is the c half and "V" the k_pe half of each
  // row (strided cache views with K and V widths that differ), both read from one [T, Dc + Dr]
  // projection row (strided k/v views), as layers/mla_attention.cpp writes it.
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16}) {
    if (act != DType::F32 && cache_dt != act) continue;
    for (auto [T, Dc, Dr, page] : {std::tuple{7, 32, 8, 16}, {13, 512, 64, 64}}) {
      CaseRng r(uint64_t(T * 5 + Dc + Dr + page + int(cache_dt) + 1000));
      const int nb = (T + page - 1) / page * 2 + 1, W = Dc + Dr + 3;
      std::vector<int32_t> slots(static_cast<size_t>(nb * page));
      std::iota(slots.begin(), slots.end(), 0);
      for (int i = nb * page - 1; i > 0; --i) std::swap(slots[size_t(i)], slots[size_t(r.integer(0, i))]);
      slots.resize(size_t(T));
      slots[1] = -1;
      OpCase c;
      c.op = Op::KV_WRITE;
      c.name = fmt::format("MLA latent T={} Dc={} Dr={} page={} cache={}", T, Dc, Dr, page, dtype_name(cache_dt));
      c.tol = 0;
      c.tensors = {r.tensor(act, {T, W}), r.tensor(cache_dt, {nb, page, 1, Dc + Dr}), r.ints(slots, {T})};
      c.outputs = {1};
      const int64_t dc = Dc, dr = Dr;
      c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
        auto heads1 = [&](int64_t col0, int64_t d) {  // [T, 1, d] view of columns col0.. of t[0]
          Tensor x = t[0].slice(1, col0, d);
          x.ndim = 3;
          x.shape = {t[0].shape[0], 1, d, 0, 0};
          x.strides = {t[0].strides[0], d, 1, 0, 0};
          return x;
        };
        KvWriteArgs a{heads1(0, dc), heads1(dc, dr), t[1].slice(3, 0, dc), t[1].slice(3, dc, dr), t[2]};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  // K and V as head views of one fused qkv row (the models' layout): 16-byte vectors with enough
  // tokens that blocks loop; a head dim of 36 (scalar path in bf16/f16); and MLA's latent row
  // without padding (c at column 0, k_pe at column Dc: the vector path).
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3}) {
    if (act != DType::F32 && cache_dt != act && cache_dt != DType::F8E4M3) continue;
    for (auto [T, Hq, H, D, page] : {std::tuple{1100, 4, 8, 128, 16}, {9, 2, 2, 36, 16}}) {
      CaseRng r(uint64_t(T * 7 + H + D + page + int(cache_dt) + 2000));
      const int nb = (T + page - 1) / page + 3, W = (Hq + 2 * H) * D;
      std::vector<int32_t> slots(static_cast<size_t>(nb * page));
      std::iota(slots.begin(), slots.end(), 0);
      for (int i = nb * page - 1; i > 0; --i) std::swap(slots[size_t(i)], slots[size_t(r.integer(0, i))]);
      slots.resize(size_t(T));
      slots[1] = -1;
      OpCase c;
      c.op = Op::KV_WRITE;
      c.name = fmt::format("qkv views T={} H={} D={} page={} cache={}", T, H, D, page, dtype_name(cache_dt));
      c.tol = 0;
      c.tensors = {r.tensor(act, {T, W}), r.tensor(cache_dt, {nb, page, H, D}), r.tensor(cache_dt, {nb, page, H, D}),
                   r.ints(slots, {T})};
      c.outputs = {1, 2};
      const int64_t hq = Hq, h = H, d = D;
      c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
        auto heads = [&](int64_t col0) {
          Tensor x = t[0].slice(1, col0, h * d);
          x.ndim = 3;
          x.shape = {t[0].shape[0], h, d, 0, 0};
          x.strides = {t[0].strides[0], d, 1, 0, 0};
          return x;
        };
        KvWriteArgs a{heads(hq * d), heads((hq + h) * d), t[1], t[2], t[3]};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
    const int T = 11, Dc = 512, Dr = 64, page = 16, nb = 3;
    CaseRng r(uint64_t(T + Dc + int(cache_dt) + 3000));
    std::vector<int32_t> slots(static_cast<size_t>(nb * page));
    std::iota(slots.begin(), slots.end(), 0);
    for (int i = nb * page - 1; i > 0; --i) std::swap(slots[size_t(i)], slots[size_t(r.integer(0, i))]);
    slots.resize(size_t(T));
    slots[4] = -1;
    OpCase c;
    c.op = Op::KV_WRITE;
    c.name = fmt::format("MLA latent unpadded T={} Dc={} Dr={} page={} cache={}", T, Dc, Dr, page, dtype_name(cache_dt));
    c.tol = 0;
    c.tensors = {r.tensor(act, {T, Dc + Dr}), r.tensor(cache_dt, {nb, page, 1, Dc + Dr}), r.ints(slots, {T})};
    c.outputs = {1};
    c.invoke = [=](const std::vector<Tensor>& t, const ArgsSink& sink) {
      auto heads1 = [&](int64_t col0, int64_t d) {
        Tensor x = t[0].slice(1, col0, d);
        x.ndim = 3;
        x.shape = {t[0].shape[0], 1, d, 0, 0};
        x.strides = {t[0].strides[0], d, 1, 0, 0};
        return x;
      };
      KvWriteArgs a{heads1(0, Dc), heads1(Dc, Dr), t[1].slice(3, 0, Dc), t[1].slice(3, Dc, Dr), t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_attention_cases() {
  register_case_generator(Op::KV_WRITE, kv_write_cases);
  register_case_generator(Op::ATTN_PREFILL, [](DType d) { return attention_cases(d, false); });
  register_case_generator(Op::ATTN_DECODE, [](DType d) { return attention_cases(d, true); });
}

}  // namespace portllm::conformance
