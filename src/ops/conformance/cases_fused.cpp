// Cases for the fused ops (the reference is the composition of the unfused references).
// MATMUL_SILU_MUL: decode-sized M (the GEMV epilogue), odd M and I, a long K, an unaligned K.
// QK_NORM_ROPE_KV_WRITE: q, k and v as head views of one fused qkv row, as the attention layers
// pass them, for Qwen3 (q/k norm, NeoX over the whole head), Llama (no norm), a partial rotary
// dim, interleaved pairs, a 256-wide head (a whole warp per row), a batch large enough that blocks
// loop, padding tokens (slot -1), and an odd column offset (views a 16-byte kernel cannot take).
// ADD_RMS_NORM_MATMUL: see its generator.
#include <cmath>
#include <numeric>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"

namespace portllm::conformance {

namespace {
Tensor head_cols(const Tensor& t, int64_t col0, int64_t H, int64_t D) {
  Tensor x = t.slice(1, col0, H * D);
  x.ndim = 3;
  x.shape = {t.shape[0], H, D, 0, 0};
  x.strides = {t.strides[0], D, 1, 0, 0};
  return x;
}

// A real cos/sin table (cos then sin of one angle per pair), as model/rope.cpp builds it.
Tensor rope_table(int max_pos, int rot) {
  Tensor cs = CaseRng::filled(DType::F32, {max_pos, rot}, 0);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < rot / 2; ++i) {
      const double ang = p * std::pow(10000.0, -2.0 * i / rot);
      cs.ptr<float>()[p * rot + i] = float(std::cos(ang));
      cs.ptr<float>()[p * rot + rot / 2 + i] = float(std::sin(ang));
    }
  return cs;
}

std::vector<OpCase> qk_norm_rope_kv_write_cases(DType act) {
  std::vector<OpCase> v;
  struct S { int T, Hq, Hk, D, rot, col0; bool inter, norm; };
  const S shapes[] = {S{1, 32, 8, 128, 128, 0, false, true},  S{7, 4, 2, 128, 64, 0, false, true},
                      S{5, 4, 1, 64, 64, 0, true, false},     S{300, 16, 4, 128, 128, 0, false, true},
                      S{3, 2, 1, 256, 256, 0, false, true},   S{4, 4, 2, 128, 128, 1, false, true},
                      S{6, 2, 2, 64, 32, 0, true, true}};
  // fp8 caches (--kv-dtype fp8) under every activation dtype.
  for (DType cache_dt : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3}) {
    if (act != DType::F32 && cache_dt != act && cache_dt != DType::F8E4M3) continue;
    for (const S& s : shapes) {
      CaseRng r(uint64_t(s.T * 31 + s.D + s.rot + s.col0 + int(cache_dt)));
      const int page = 16, nb = (s.T + page - 1) / page + 2, max_pos = 512;
      const int W = s.col0 + (s.Hq + 2 * s.Hk) * s.D;
      std::vector<int32_t> slots(static_cast<size_t>(nb * page)), pos;
      std::iota(slots.begin(), slots.end(), 0);
      for (int i = nb * page - 1; i > 0; --i) std::swap(slots[size_t(i)], slots[size_t(r.integer(0, i))]);
      slots.resize(size_t(s.T));
      if (s.T > 2) slots[1] = -1;  // padding token: no cache write
      for (int i = 0; i < s.T; ++i) pos.push_back(int32_t(r.integer(0, max_pos - 1)));
      OpCase c;
      c.op = Op::QK_NORM_ROPE_KV_WRITE;
      c.name = fmt::format("T={} Hq={} Hk={} D={} rot={} col0={} {} {} cache={}", s.T, s.Hq, s.Hk, s.D, s.rot, s.col0,
                           s.inter ? "interleaved" : "neox", s.norm ? "qk-norm" : "no-norm", dtype_name(cache_dt));
      // An fp8 cache entry may round the other way when the two sides' f32 values differ in the last bit.
      c.tol = cache_dt == DType::F8E4M3 ? default_tolerance(cache_dt) : default_tolerance(act);
      c.tensors = {r.tensor(act, {s.T, W}, -2, 2),           r.tensor(act, {s.D}, 0.5, 1.5),
                   r.tensor(act, {s.D}, 0.5, 1.5),           r.ints(pos, {s.T}),
                   rope_table(max_pos, s.rot),               r.tensor(cache_dt, {nb, page, s.Hk, s.D}),
                   r.tensor(cache_dt, {nb, page, s.Hk, s.D}), r.ints(slots, {s.T})};
      c.outputs = {0, 5, 6};
      c.invoke = [s](const std::vector<Tensor>& t, const ArgsSink& sink) {
        QkNormRopeKvWriteArgs a;
        a.q = head_cols(t[0], s.col0, s.Hq, s.D);
        a.k = head_cols(t[0], s.col0 + s.Hq * s.D, s.Hk, s.D);
        a.v = head_cols(t[0], s.col0 + (s.Hq + s.Hk) * s.D, s.Hk, s.D);
        if (s.norm) {
          a.q_norm = t[1];
          a.k_norm = t[2];
        }
        a.eps = 1e-6f;
        a.positions = t[3];
        a.cos_sin = t[4];
        a.rot_dim = s.rot;
        a.interleaved = s.inter;
        a.k_cache = t[5];
        a.v_cache = t[6];
        a.slot_mapping = t[7];
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  return v;
}
std::vector<OpCase> matmul_silu_mul_cases(DType act) {
  std::vector<OpCase> v;
  struct S { int M, I, K; };
  for (S s : {S{1, 64, 256}, S{1, 200, 1024}, S{3, 37, 64}, S{1, 96, 4096}, S{2, 48, 120}, S{1, 50, 36}}) {
    CaseRng r(uint64_t(s.M * 101 + s.I + s.K));
    OpCase c;
    c.op = Op::MATMUL_SILU_MUL;
    c.name = fmt::format("M={} I={} K={}", s.M, s.I, s.K);
    c.tol = default_tolerance(act);
    c.tensors = {CaseRng::filled(act, {s.M, s.I}, std::nan("")), r.tensor(act, {s.M, s.K}),
                 r.tensor(act, {2 * s.I, s.K}, -0.2, 0.2)};
    c.outputs = {0};
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MatmulSiluMulArgs a{t[0], t[1], t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// ADD_RMS_NORM_MATMUL at decode shapes (M = 1: the GEMV with the norm inside it) and others: a
// Qwen3-8B-wide row (K = 4096) into a gated MLP, a router-like f32 output with h kept (MoE
// layers read h again), Qwen3-Next's 1 + w norm, bias, M = 2-3, and a K the 16-byte kernel cannot
// take (K = 36). The residual is drawn in +-4 and x in +-1, so the add's rounding matters.
std::vector<OpCase> add_rms_norm_matmul_cases(DType act) {
  std::vector<OpCase> v;
  struct S { int M, N, K; bool gated, bias, keep_h, f32_out; float offset; };
  const S shapes[] = {S{1, 96, 4096, true, false, false, false, 0.f}, S{1, 128, 2048, false, false, true, true, 0.f},
                      S{1, 200, 1024, false, true, false, false, 0.f}, S{1, 64, 512, true, false, true, false, 1.f},
                      S{2, 48, 256, false, false, true, false, 0.f},   S{3, 40, 512, true, false, false, false, 0.f},
                      S{1, 50, 36, false, false, true, false, 0.f}};
  const double nan = std::nan("");
  for (const S& s : shapes) {
    CaseRng r(uint64_t(s.M * 7919 + s.N * 17 + s.K + (s.gated ? 1 : 0)));
    const int64_t wrows = s.gated ? 2 * s.N : s.N;
    const DType out_dt = s.f32_out ? DType::F32 : act;
    OpCase c;
    c.op = Op::ADD_RMS_NORM_MATMUL;
    c.name = fmt::format("M={} N={} K={}{}{}{}{}{}", s.M, s.N, s.K, s.gated ? " gated" : "", s.bias ? " bias" : "",
                         s.keep_h ? " h" : "", s.f32_out ? " out=f32" : "", s.offset != 0.f ? " 1+w" : "");
    c.tol = default_tolerance(act);
    const double ws = 1.0 / std::sqrt(double(s.K));
    c.tensors = {r.tensor(act, {s.M, s.K}, -4, 4),
                 CaseRng::filled(act, {s.M, s.K}, nan),
                 r.tensor(act, {s.M, s.K}),
                 r.tensor(act, {s.K}, s.offset != 0.f ? -0.5 : 0.5, s.offset != 0.f ? 0.5 : 1.5),
                 s.keep_h ? CaseRng::filled(act, {s.M, s.K}, nan) : Tensor(),
                 CaseRng::filled(out_dt, {s.M, s.N}, nan),
                 r.tensor(act, {wrows, s.K}, -ws, ws),
                 s.bias ? r.tensor(act, {s.N}) : Tensor()};
    c.outputs = s.keep_h ? std::vector<int>{1, 4, 5} : std::vector<int>{1, 5};
    c.invoke = [s](const std::vector<Tensor>& t, const ArgsSink& sink) {
      AddRmsNormMatmulArgs a;
      a.residual = t[0];
      a.residual_out = t[1];
      a.x = t[2];
      a.norm_weight = t[3];
      a.eps = 1e-6f;
      a.weight_offset = s.offset;
      a.h = t[4];
      a.out = t[5];
      a.w = t[6];
      a.bias = t[7];
      a.gated = s.gated;
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// MATMUL_ADD_RMS_NORM at a sub-layer's last projection: Qwen3-8B's o_proj (4096 x 4096) and
// down_proj (4096 x 12288), Qwen3-0.6B's o_proj, a bias, Qwen3-Next's 1 + w, M = 2-3, a row whose
// length is not a multiple of 8 (50), and a K the 16-byte kernel cannot take (36). The last
// block's norm reads rows every other block wrote, so a wide N (many blocks) is the case to pass.
// Decode batches (the split-K GEMM whose partials the norm adds): o_proj at 16 rows, a bias at 64,
// 1 + w and a width below a block's vector span at 7, 130 rows over K = 12288 (a slice of 6144).
std::vector<OpCase> matmul_add_rms_norm_cases(DType act) {
  std::vector<OpCase> v;
  struct S { int M, N, K; bool bias; float offset; };
  const S shapes[] = {S{1, 4096, 4096, false, 0.f}, S{1, 4096, 12288, false, 0.f}, S{1, 1024, 2048, false, 0.f},
                      S{1, 200, 1024, true, 0.f},   S{1, 64, 512, false, 1.f},      S{2, 48, 256, false, 0.f},
                      S{3, 40, 512, false, 0.f},    S{1, 50, 64, false, 0.f},       S{1, 48, 36, false, 0.f},
                      S{16, 4096, 4096, false, 0.f}, S{64, 1024, 4096, true, 0.f},  S{7, 520, 4096, false, 1.f},
                      S{130, 256, 12288, false, 0.f}};
  const double nan = std::nan("");
  for (const S& s : shapes) {
    CaseRng r(uint64_t(s.M * 7907 + s.N * 13 + s.K));
    OpCase c;
    c.op = Op::MATMUL_ADD_RMS_NORM;
    c.name = fmt::format("M={} N={} K={}{}{}", s.M, s.N, s.K, s.bias ? " bias" : "", s.offset != 0.f ? " 1+w" : "");
    c.tol = default_tolerance(act);
    const double ws = 1.0 / std::sqrt(double(s.K));
    c.tensors = {r.tensor(act, {s.M, s.K}),
                 r.tensor(act, {s.N, s.K}, -ws, ws),
                 s.bias ? r.tensor(act, {s.N}) : Tensor(),
                 r.tensor(act, {s.M, s.N}, -4, 4),
                 r.tensor(act, {s.N}, s.offset != 0.f ? -0.5 : 0.5, s.offset != 0.f ? 0.5 : 1.5),
                 CaseRng::filled(act, {s.M, s.N}, nan)};
    c.outputs = {3, 5};
    c.invoke = [s](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MatmulAddRmsNormArgs a;
      a.x = t[0];
      a.w = t[1];
      a.bias = t[2];
      a.residual = t[3];
      a.norm_weight = t[4];
      a.eps = 1e-6f;
      a.weight_offset = s.offset;
      a.h = t[5];
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_fused_cases() {
  register_case_generator(Op::QK_NORM_ROPE_KV_WRITE, qk_norm_rope_kv_write_cases);
  register_case_generator(Op::MATMUL_SILU_MUL, matmul_silu_mul_cases);
  register_case_generator(Op::ADD_RMS_NORM_MATMUL, add_rms_norm_matmul_cases);
  register_case_generator(Op::MATMUL_ADD_RMS_NORM, matmul_add_rms_norm_cases);
}

}  // namespace portllm::conformance
