// Perf cases: the shapes the seed models run at (dummy data), for `portllm ops perf`. Each case
// states the least bytes it must move and the FLOPs it must do, so a timing becomes a fraction of
// the device's bandwidth or FLOP peak. Geometries: Qwen3-8B (32 q / 8 kv heads of 128, hidden
// 4096, intermediate 12288, vocab 151936), Qwen3-30B-A3B experts (128 experts, hidden 2048,
// moe intermediate 768, top 8), DeepSeek-V3 (hidden 7168, intermediate 18432, fp8 128x128) and
// the MLA decode of DeepSeek-V2-Lite / V3 (latent 512 + 64, 16 / 128 heads).
#include <cmath>
#include <limits>
#include <tuple>

#include "ops/conformance/cases.h"
#include "ops/op_args.h"
#include "ops/op_args_moe.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double bytes_of(const Tensor& t) { return t.defined() ? double(t.numel()) * double(dtype_size(t.dtype)) : 0.0; }

// Decode over a KV cache: every K and V row of every context is read once. Qwen3-8B heads (8 KV
// heads) at batch 1 from a short to a long context and at batches 64 / 256; Qwen3-30B-A3B heads
// (4 KV heads) at batch 1 with the short context of the MoE decode benchmark; batch 256 again with
// pages of 64 keys (the CUDA default is 16), and with head-major pages (PORTLLM_KV_LAYOUT=hnd,
// "hnd"), and ragged batches of 256 / 96 / 32 / 20 sequences with contexts spread over 100..2048
// keys as in the throughput workload (ctx 0 below: 100 + (997 b mod 1949)), those of 256 / 96 / 32
// again with the engine's work order (longest context first). The bounds are what a
// decode graph passes as max_seq_len (the model's maximum), so the split count is the graph's.
// Each with a cache of the activation dtype and an fp8 one (--kv-dtype fp8).
std::vector<OpCase> attn_decode_perf(DType act) {
  if (act == DType::F32) return {};  // the engine keeps 16-bit caches on GPUs
  std::vector<OpCase> v;
  // ctx 0: ragged, lo + (b * 997) % span keys. The last two are the throughput workload's first
  // decode steps (256 sequences of 150..1074 keys) and its tail (48 of 1000..1949).
  struct S { int B, ctx, bound, hkv, page = 16; bool hnd = false; bool longest_first = false; int lo = 100, span = 1949; };
  for (DType cache : {act, DType::F8E4M3})
    for (S s : {S{1, 512, 8192, 8}, S{1, 4096, 8192, 8}, S{1, 32768, 40960, 8}, S{64, 1024, 2048, 8},
                S{256, 1024, 2048, 8}, S{1, 192, 1024, 4}, S{256, 1024, 2048, 8, 64}, S{256, 1024, 2048, 8, 16, true},
                S{1, 32768, 40960, 8, 16, true}, S{256, 0, 2048, 8}, S{96, 0, 2048, 8}, S{32, 0, 2048, 8},
                S{20, 0, 2048, 8}, S{256, 0, 2048, 8, 16, false, true}, S{160, 0, 2048, 8}, S{160, 0, 2048, 8, 16, false, true}, S{96, 0, 2048, 8, 16, false, true},
                S{32, 0, 2048, 8, 16, false, true}, S{256, 0, 2048, 8, 16, false, false, 150, 925},
                S{48, 0, 2048, 8, 16, false, true, 1000, 950}}) {
      AttnShape sh{std::vector<int>(size_t(s.B), 1), std::vector<int>(size_t(s.B), s.ctx), 32, s.hkv, 128, s.page, s.bound,
                   s.hnd, s.longest_first};
      if (s.ctx == 0)  // ragged
        for (int b = 0; b < s.B; ++b) sh.ctx_lens[size_t(b)] = s.lo + (b * 997) % s.span;
      double keys = 0;
      for (int n : sh.ctx_lens) keys += n;
      // Seeded only when selected: all 40 cases' caches took 102 s to fill on a 2-core CPU.
      OpCase c;
      c.op = Op::ATTN_DECODE;
      c.name = attention_case_name(cache, sh) + fmt::format(" max_seq_len={}", s.bound);
      c.bytes = keys * s.hkv * (128 + 128) * dtype_size(cache) + 2.0 * s.B * 32 * 128 * dtype_size(act);
      c.flops = 2.0 * keys * 32 * (128 + 128);
      defer_tensors(c, [act, cache, sh] { return attention_case(act, cache, sh, true); });
      v.push_back(std::move(c));
    }
  return v;
}

// MLA over the paged latent cache (Dc 512 + Dr 64, bf16/f16, the CUDA page size 16). Decode:
// DeepSeek-V2-Lite (16 heads) at batch 1 / 4k and batch 64 / 1k, DeepSeek-V3 (128 heads) at
// batch 1 / 4k; max_seq_len bounds as a decode graph would pass. Prefill (V2-Lite): a 512-token
// prompt, and 8 GSM8K-shaped chunks of 100 tokens over a 700-token cached prefix. Least bytes:
// every latent row of every context once, plus q and out; FLOPs: scores over Dc + Dr and P V
// over Dc for every causal (query, key) pair.
std::vector<OpCase> mla_perf(DType act) {
  if (act == DType::F32) return {};  // the engine keeps 16-bit caches on GPUs
  std::vector<OpCase> v;
  struct S { int B, q, ctx, H, bound; };
  for (S s : {S{1, 1, 4096, 16, 8192}, S{64, 1, 1024, 16, 2048}, S{1, 1, 4096, 128, 8192}, S{1, 512, 512, 16, 512},
              S{8, 100, 800, 16, 800}}) {
    const int Dc = 512, Dr = 64;
    MlaShape sh{std::vector<int>(size_t(s.B), s.q), std::vector<int>(size_t(s.B), s.ctx), s.H, Dc, Dr, 16, s.bound};
    OpCase c = mla_case(act, act, sh);
    const double pairs = double(s.B) * (double(s.q) * (s.ctx - s.q) + double(s.q) * (s.q + 1) / 2);
    c.bytes = double(s.B) * s.ctx * (Dc + Dr) * dtype_size(act) + double(s.B) * s.q * s.H * (Dc + Dr + Dc) * dtype_size(act);
    c.flops = 2.0 * pairs * s.H * (Dc + Dr + Dc);
    v.push_back(std::move(c));
  }
  return v;
}

// Causal prefill: a 4k prompt, a 2k chunk over a 2k cached prefix (chunked prefill), and the
// nano-vllm throughput workload's prefill step: 16 whole prompts of 100..898 tokens (7615 in
// all; the workload's are uniform in [100, 1024]). With a cache of the activation dtype and an
// fp8 one.
std::vector<OpCase> attn_prefill_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  std::vector<int> ragged;
  for (int b = 0; b < 16; ++b) ragged.push_back(100 + (b * 397) % 925);
  for (DType cache : {act, DType::F8E4M3})
    for (auto [q, ctx] : {std::pair{std::vector<int>{4096}, std::vector<int>{4096}},
                          std::pair{std::vector<int>{2048}, std::vector<int>{4096}}, std::pair{ragged, ragged}}) {
      AttnShape sh{q, ctx, 32, 8, 128, 16};
      OpCase c = attention_case(act, cache, sh, false);
      // Query i (of q) sees ctx - q + i + 1 keys.
      double pairs = 0, keys = 0, queries = 0;
      for (size_t b = 0; b < q.size(); ++b) {
        pairs += double(q[b]) * (ctx[b] - q[b]) + double(q[b]) * (q[b] + 1) / 2;
        keys += ctx[b];
        queries += q[b];
      }
      c.flops = 2.0 * pairs * 32 * (128 + 128);
      c.bytes = keys * 8 * 256 * dtype_size(cache) + 2.0 * queries * 32 * 128 * dtype_size(act);
      v.push_back(std::move(c));
    }
  return v;
}

void set_gemm_cost(OpCase& c, const MatmulShape& s) {
  c.flops = 2.0 * s.M * s.N * s.K;
  c.bytes = 0;
  for (int i = 1; i < int(c.tensors.size()); ++i) c.bytes += bytes_of(c.tensors[size_t(i)]);
  c.bytes += bytes_of(c.tensors[0]);  // the output is written once
}

std::vector<OpCase> matmul_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  auto add = [&](MatmulShape s) {
    OpCase c = matmul_case(act, act, s, 0);
    set_gemm_cost(c, s);
    v.push_back(std::move(c));
  };
  // Qwen3-8B: gate_up at decode batch sizes and a 4k prefill, down, qkv, the LM head at M = 1;
  // Qwen3-30B-A3B's attention projections and router at M = 1;
  // DeepSeek-V3's dense MLP shapes in bf16, the baseline for the fp8 cases below.
  for (MatmulShape s : {MatmulShape{1, 24576, 4096, false}, MatmulShape{2, 24576, 4096, false},
                        MatmulShape{4, 24576, 4096, false}, MatmulShape{8, 24576, 4096, false},
                        MatmulShape{64, 24576, 4096, false}, MatmulShape{256, 24576, 4096, false},
                        MatmulShape{4096, 24576, 4096, false}, MatmulShape{1, 4096, 12288, false}, MatmulShape{1, 4096, 4096, false},
                        MatmulShape{1, 6144, 4096, false}, MatmulShape{1, 151936, 4096, false},
                        // Qwen3-30B-A3B at batch 1: qkv, o_proj, the router
                        MatmulShape{1, 5120, 2048, false}, MatmulShape{1, 2048, 4096, false},
                        MatmulShape{1, 128, 2048, false},
                        MatmulShape{64, 18432, 7168, false}, MatmulShape{4096, 18432, 7168, false},
                        MatmulShape{4096, 7168, 18432, false}})
    add(s);
  // Qwen3-8B's qkv, o_proj, down_proj, and gate_up at more decode batch
  // sizes of the throughput workload, where a GEMM should stream its weights.
  for (int m : {16, 32, 64, 128, 192, 256}) {
    for (auto [n, k] : {std::pair<int, int>{6144, 4096}, {4096, 4096}, {4096, 12288}}) add({m, n, k, false});
    if (m != 64 && m != 256) add({m, 24576, 4096, false});
  }
  return v;
}

std::vector<OpCase> matmul_fp8_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  for (MatmulShape s : {MatmulShape{1, 18432, 7168, false}, MatmulShape{64, 18432, 7168, false},
                        MatmulShape{4096, 18432, 7168, false}, MatmulShape{4096, 7168, 18432, false},
                        MatmulShape{4096, 2048, 7168, false},
                        // DeepSeek-V2-Lite's block-FP8 decode at batch 64: q_proj, the shared
                        // experts' down (K / 128 = 22: W8A8 with its scale rows padded) and the first
                        // layer's dense down (K = 10944, not a multiple of 128), which only the
                        // dequantizing path serves.
                        MatmulShape{64, 3072, 2048, false}, MatmulShape{64, 2048, 2816, false},
                        MatmulShape{64, 2048, 10944, false},
                        // The same two below 32 rows, where cuBLASLt's W8A8 serves them from 8 rows
                        // (PORTLLM_W8A8_MIN_ROWS moves the crossover with the fp8 GEMV).
                        MatmulShape{8, 3072, 2048, false}, MatmulShape{16, 3072, 2048, false},
                        MatmulShape{24, 3072, 2048, false}, MatmulShape{8, 2048, 2816, false},
                        MatmulShape{16, 2048, 2816, false}, MatmulShape{24, 2048, 2816, false}}) {
    OpCase c = matmul_case(act, DType::F8E4M3, s, 128);
    set_gemm_cost(c, s);
    v.push_back(std::move(c));
  }
  return v;
}

// --- MOE_GEMM at prefill and large-decode sizes (the tensor-core kernels, moe_gemm_mma.cu) ---
// DeepSeek-V2-Lite (64 experts, top 6, hidden 2048, expert intermediate 1408): gate_up N = 2816,
// K = 2048 and down N = 2048, K = 1408, at 64 tokens (R = 384, the decode batch the GEMV hands on)
// and 4096 tokens (R = 24576, a prefill chunk), bf16 and block-fp8 (128 x 128) weights; Qwen3-30B-
// A3B's gate_up (128 experts, top 8, N = 1536, K = 2048) at 4096 tokens. Rows go to distinct
// uniform experts per token, as a router would send them. One weight tensor serves every token
// count of a shape. Least bytes: the weights (and scales) of the experts that got rows, x and out
// once; FLOPs 2 R N K.
std::vector<OpCase> moe_gemm_model_perf(DType act) {
  std::vector<OpCase> v;
  const DType F8 = DType::F8E4M3;
  struct S { const char* what; int E, topk, N, K; DType wt; std::vector<int> tokens; };
  const S shapes[] = {{"DeepSeek-V2-Lite gate_up", 64, 6, 2816, 2048, act, {64, 4096}},
                      {"DeepSeek-V2-Lite down", 64, 6, 2048, 1408, act, {64, 4096}},
                      {"DeepSeek-V2-Lite gate_up", 64, 6, 2816, 2048, F8, {64, 4096}},
                      {"DeepSeek-V2-Lite down", 64, 6, 2048, 1408, F8, {64, 4096}},
                      {"Qwen3-30B-A3B gate_up", 128, 8, 1536, 2048, act, {4096}}};
  for (const S& s : shapes) {
    CaseRng r(uint64_t(s.E * 1009 + s.N * 7 + s.K + int(s.wt)));
    const bool fp8 = s.wt == F8;
    const int bl = 128, SN = (s.N + bl - 1) / bl, SK = (s.K + bl - 1) / bl;
    const auto [w, scale] = expert_weights(r, s.wt, s.E, s.N, s.K, bl, bl);
    for (int tokens : s.tokens) {
      std::vector<int> count(size_t(s.E), 0);
      std::vector<int> perm(size_t(s.E));
      for (int t = 0; t < tokens; ++t) {
        for (int e = 0; e < s.E; ++e) perm[size_t(e)] = e;
        for (int j = 0; j < s.topk; ++j) {
          std::swap(perm[size_t(j)], perm[size_t(r.integer(j, s.E - 1))]);
          ++count[size_t(perm[size_t(j)])];
        }
      }
      std::vector<int32_t> off{0};
      int used = 0;
      for (int e = 0; e < s.E; ++e) {
        off.push_back(off.back() + count[size_t(e)]);
        used += count[size_t(e)] > 0;
      }
      const int R = off.back();
      OpCase c;
      c.op = Op::MOE_GEMM;
      c.name = fmt::format("{} tokens={} R={} experts used={}/{} N={} K={} w={}", s.what, tokens, R, used, s.E, s.N,
                           s.K, fp8 ? "f8_e4m3 block128" : dtype_name(act));
      c.tensors = {CaseRng::filled(act, {R, s.N}, kNaN), r.tensor(act, {R, s.K}), w, scale, r.ints(off, {s.E + 1})};
      c.outputs = {0};
      c.bytes = double(used) * s.N * s.K * dtype_size(s.wt) + (fp8 ? double(used) * SN * SK * 4 : 0.0) +
                double(R) * (s.N + s.K) * dtype_size(act);
      c.flops = 2.0 * R * s.N * s.K;
      c.invoke = [fp8, bl](const std::vector<Tensor>& t, const ArgsSink& sink) {
        MoeGemmArgs a;
        a.out = t[0];
        a.x = t[1];
        a.w = t[2];
        a.w_scale = t[3];
        a.expert_offsets = t[4];
        a.block_n = fp8 ? bl : 0;
        a.block_k = fp8 ? bl : 0;
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  return v;
}
// --- end of the tensor-core MOE_GEMM block ---

// Qwen3-30B-A3B expert GEMMs: R routed rows spread over the experts as a router would (top 8 of
// 128 per token), gate_up (N = 2 x 768, K = 2048) and down (N = 2048, K = 768). Bytes: the
// weights of the experts that got rows, plus x and out.
std::vector<OpCase> moe_gemm_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  const int E = 128, topk = 8;
  for (int tokens : {1, 64, 512}) {
    // gate_up: the stacked [gate | up] projection, also timed with the SwiGLU epilogue.
    for (auto [N, K, gate_up] : {std::tuple{1536, 2048, true}, std::tuple{2048, 768, false}}) {
      CaseRng r(uint64_t(tokens * 31 + N));
      std::vector<int> count(size_t(E), 0);
      for (int t = 0; t < tokens; ++t) {
        std::vector<bool> taken(size_t(E), false);
        for (int j = 0; j < topk; ++j) {
          int e;
          do e = int(r.integer(0, E - 1)); while (taken[size_t(e)]);
          taken[size_t(e)] = true;
          ++count[size_t(e)];
        }
      }
      std::vector<int32_t> off{0};
      int used = 0;
      for (int e = 0; e < E; ++e) {
        off.push_back(off.back() + count[size_t(e)]);
        used += count[size_t(e)] > 0;
      }
      const int R = off.back();
      // tensors: out, x, w, w_scale, expert_offsets, topk_ids (the absent mode's left undefined)
      auto add = [&](std::string name, std::vector<Tensor> tensors, double bytes, double rows, bool swiglu = false) {
        OpCase c;
        c.op = Op::MOE_GEMM;
        c.name = std::move(name);
        c.tensors = std::move(tensors);
        c.outputs = {0};
        c.bytes = bytes;
        c.flops = 2.0 * rows * N * K;
        c.invoke = [swiglu](const std::vector<Tensor>& t, const ArgsSink& sink) {
          MoeGemmArgs a;
          a.out = t[0];
          a.x = t[1];
          a.w = t[2];
          a.w_scale = t[3];
          a.expert_offsets = t[4];
          a.topk_ids = t[5];
          a.swiglu = swiglu;
          sink(a.desc(), &a);
        };
        v.push_back(std::move(c));
      };
      const double es = dtype_size(act);
      add(fmt::format("tokens={} R={} experts used={}/{} N={} K={} w={}", tokens, R, used, E, N, K, dtype_name(act)),
          {CaseRng::filled(act, {R, N}, kNaN), r.tensor(act, {R, K}), expert_weights(r, act, E, N, K, 0, 0).w, Tensor(),
           r.ints(off, {E + 1}), Tensor()},
          double(used) * N * K * es + double(R) * (N + K) * es, R);
      if (tokens == 1) {  // the same token in gather mode (topk_ids, ops::moe_experts' batch-1 path)
        std::vector<int32_t> ids;
        for (int e = 0; e < E; ++e)
          if (count[size_t(e)] > 0) ids.push_back(e);
        add(fmt::format("gather tokens=1 k={} N={} K={} w={}", topk, N, K, dtype_name(act)),
            {CaseRng::filled(act, {topk, N}, kNaN), r.tensor(act, {1, K}), expert_weights(r, act, E, N, K, 0, 0).w, Tensor(),
             Tensor(), r.ints(ids, {1, topk})},
            (double(topk) * N * K + double(topk) * N + double(K)) * es, topk);
        if (gate_up)  // with the SwiGLU epilogue: out [k, N/2]
          add(fmt::format("gather swiglu tokens=1 k={} N={} K={} w={}", topk, N, K, dtype_name(act)),
              {CaseRng::filled(act, {topk, N / 2}, kNaN), r.tensor(act, {1, K}), expert_weights(r, act, E, N, K, 0, 0).w,
               Tensor(), Tensor(), r.ints(ids, {1, topk})},
              (double(topk) * N * K + double(topk) * N / 2 + double(K)) * es, topk, true);
      }
    }
  }
  for (auto& c : moe_gemm_model_perf(act)) v.push_back(std::move(c));
  return v;
}

// Qwen3-8B's per-layer row and elementwise kernels, at decode (1 token, 256) and prefill (2048
// tokens) sizes, on the views the model passes: q/k heads inside the fused qkv row (32 q + 8 kv
// heads of 128: [T, 6144]), gate/up as the halves of the gate_up row. Bytes: what must be read
// and written once (in place: read + write of the touched values).
constexpr int kQ8Hq = 32, kQ8Hkv = 8, kQ8D = 128, kQ8Qkv = (kQ8Hq + 2 * kQ8Hkv) * kQ8D, kQ8Hidden = 4096,
              kQ8Inter = 12288;

Tensor heads_view(const Tensor& t, int64_t col0, int64_t H, int64_t D) {
  Tensor x = t.slice(1, col0, H * D);
  x.ndim = 3;
  x.shape = {t.shape[0], H, D, 0, 0};
  x.strides = {t.strides[0], D, 1, 0, 0};
  return x;
}

std::vector<OpCase> silu_mul_perf(DType act) {
  std::vector<OpCase> v;
  for (int T : {1, 256, 2048}) {
    CaseRng r(uint64_t(T + 7));
    OpCase c;
    c.op = Op::SILU_MUL;
    c.name = fmt::format("T={} I={} (gate_up views)", T, kQ8Inter);
    c.tensors = {CaseRng::filled(act, {T, kQ8Inter}, kNaN), r.tensor(act, {T, 2 * kQ8Inter})};
    c.outputs = {0};
    c.bytes = 3.0 * T * kQ8Inter * dtype_size(act);
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      SiluMulArgs a{t[0], t[1].slice(1, 0, kQ8Inter), t[1].slice(1, kQ8Inter, kQ8Inter)};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// q norm and k norm (in place on the qkv row's heads), and the hidden-size norm of 2-D rows.
std::vector<OpCase> rms_norm_perf(DType act) {
  std::vector<OpCase> v;
  for (int T : {1, 2048}) {
    for (auto [col0, H] : {std::pair{0, kQ8Hq}, std::pair{kQ8Hq * kQ8D, kQ8Hkv}}) {
      CaseRng r(uint64_t(T * 3 + H));
      OpCase c;
      c.op = Op::RMS_NORM;
      c.name = fmt::format("{} norm T={} [T, {}, {}] view of [T, {}]", col0 == 0 ? "q" : "k", T, H, kQ8D, kQ8Qkv);
      c.tensors = {r.tensor(act, {T, kQ8Qkv}), r.tensor(act, {kQ8D}, 0.5, 1.5)};
      c.outputs = {0};
      c.bytes = (2.0 * T * H + 1) * kQ8D * dtype_size(act);
      const int64_t c0 = col0, h = H;
      c.invoke = [c0, h](const std::vector<Tensor>& t, const ArgsSink& sink) {
        Tensor x = heads_view(t[0], c0, h, kQ8D);
        RmsNormArgs a{x, x, t[1]};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  for (int R : {1, 2048}) {
    CaseRng r(uint64_t(R) + 5);
    OpCase c;
    c.op = Op::RMS_NORM;
    c.name = fmt::format("R={} D={}", R, kQ8Hidden);
    c.tensors = {CaseRng::filled(act, {R, kQ8Hidden}, kNaN), r.tensor(act, {R, kQ8Hidden}),
                 r.tensor(act, {kQ8Hidden}, 0.5, 1.5)};
    c.outputs = {0};
    c.bytes = (2.0 * R + 1) * kQ8Hidden * dtype_size(act);
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      RmsNormArgs a{t[0], t[1], t[2]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

std::vector<OpCase> add_rms_norm_perf(DType act) {
  std::vector<OpCase> v;
  for (int R : {1, 256, 2048}) {
    CaseRng r(uint64_t(R) + 11);
    OpCase c;
    c.op = Op::ADD_RMS_NORM;
    c.name = fmt::format("R={} D={}", R, kQ8Hidden);
    c.tensors = {r.tensor(act, {R, kQ8Hidden}), CaseRng::filled(act, {R, kQ8Hidden}, kNaN),
                 r.tensor(act, {R, kQ8Hidden}), r.tensor(act, {kQ8Hidden})};
    c.outputs = {0, 1};
    c.bytes = 4.0 * R * kQ8Hidden * dtype_size(act);
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      AddRmsNormArgs a;
      a.residual = t[0];
      a.out = t[1];
      a.x = t[2];
      a.weight = t[3];
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// NeoX rope over all 128 dims of the q and k heads, in place; positions 0..T-1 (a prompt).
std::vector<OpCase> rope_perf(DType act) {
  std::vector<OpCase> v;
  for (int T : {1, 2048}) {
    CaseRng r(uint64_t(T) + 13);
    OpCase c;
    c.op = Op::ROPE;
    c.name = fmt::format("T={} q [T, {}, {}] k [T, {}, {}] views of [T, {}] neox", T, kQ8Hq, kQ8D, kQ8Hkv, kQ8D, kQ8Qkv);
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int i = 0; i < T; ++i) pos[size_t(i)] = i;
    c.tensors = {r.tensor(act, {T, kQ8Qkv}), r.ints(pos, {T}), r.tensor(DType::F32, {T, kQ8D})};
    c.outputs = {0};
    c.bytes = 2.0 * T * (kQ8Hq + kQ8Hkv) * kQ8D * dtype_size(act) + double(T) * kQ8D * 4;
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      RopeArgs a{heads_view(t[0], 0, kQ8Hq, kQ8D), heads_view(t[0], kQ8Hq * kQ8D, kQ8Hkv, kQ8D), t[1], t[2], kQ8D, false};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// K and V heads of the qkv row into a paged cache of 16-token pages, consecutive slots.
std::vector<OpCase> kv_write_perf(DType act) {
  std::vector<OpCase> v;
  for (int T : {1, 2048}) {
    CaseRng r(uint64_t(T) + 17);
    OpCase c;
    c.op = Op::KV_WRITE;
    const int page = 16, nb = (T + page - 1) / page;
    c.name = fmt::format("T={} [T, {}, {}] views of [T, {}] page={}", T, kQ8Hkv, kQ8D, kQ8Qkv, page);
    std::vector<int32_t> slots(static_cast<size_t>(T));
    for (int i = 0; i < T; ++i) slots[size_t(i)] = i;
    c.tensors = {r.tensor(act, {T, kQ8Qkv}), CaseRng::filled(act, {nb, page, kQ8Hkv, kQ8D}, 0),
                 CaseRng::filled(act, {nb, page, kQ8Hkv, kQ8D}, 0), r.ints(slots, {T})};
    c.outputs = {1, 2};
    c.bytes = 4.0 * T * kQ8Hkv * kQ8D * dtype_size(act);
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      KvWriteArgs a{heads_view(t[0], kQ8Hq * kQ8D, kQ8Hkv, kQ8D), heads_view(t[0], (kQ8Hq + kQ8Hkv) * kQ8D, kQ8Hkv, kQ8D),
                    t[1], t[2], t[3]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// Qwen3-8B's gate_up at decode with SiLU-and-mul as the epilogue: the whole [24576, 4096] W once.
std::vector<OpCase> matmul_silu_mul_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  CaseRng r(23);
  OpCase c;
  c.op = Op::MATMUL_SILU_MUL;
  c.name = "M=1 I=12288 K=4096 w=[24576, 4096]";
  c.tensors = {CaseRng::filled(act, {1, 12288}, 0), r.tensor(act, {1, 4096}), r.tensor(act, {24576, 4096})};
  c.outputs = {0};
  c.bytes = (24576.0 * 4096 + 4096 + 12288) * dtype_size(act);
  c.flops = 2.0 * 24576 * 4096;
  c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
    MatmulSiluMulArgs a{t[0], t[1], t[2]};
    sink(a.desc(), &a);
  };
  v.push_back(std::move(c));
  return v;
}

// A sub-layer's last projection with the residual add and the next RMSNorm: Qwen3-8B's o_proj
// and down_proj at the throughput workload's decode batches. Against MATMUL's cases of the same
// shapes plus ADD_RMS_NORM's, what the fused op saves.
std::vector<OpCase> matmul_add_rms_norm_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  for (int m : {16, 32, 64, 128, 160, 192, 224, 256}) {
    for (int k : {4096, 12288}) {
      CaseRng r(uint64_t(m * 31 + k));
      OpCase c;
      c.op = Op::MATMUL_ADD_RMS_NORM;
      c.name = fmt::format("M={} N={} K={}", m, kQ8Hidden, k);
      c.tensors = {r.tensor(act, {m, k}), r.tensor(act, {kQ8Hidden, k}, -0.02, 0.02),
                   r.tensor(act, {m, kQ8Hidden}), r.tensor(act, {kQ8Hidden}), CaseRng::filled(act, {m, kQ8Hidden}, kNaN)};
      c.outputs = {2, 4};
      c.flops = 2.0 * m * kQ8Hidden * k;
      c.bytes = (double(kQ8Hidden) * k + double(m) * k + 3.0 * m * kQ8Hidden + kQ8Hidden) * dtype_size(act);
      c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
        const MatmulAddRmsNormArgs a{
            .x = t[0], .w = t[1], .bias = Tensor(), .residual = t[2], .norm_weight = t[3], .h = t[4]};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  return v;
}

// The attention block's preparation fused (Qwen3-8B: q/k norm, NeoX over 128 dims, K/V into a
// paged cache): what one launch replaces RMS_NORM x2 + ROPE + KV_WRITE with.
std::vector<OpCase> qk_norm_rope_kv_write_perf(DType act) {
  std::vector<OpCase> v;
  // The last: a 16384-token prefill step of the throughput workload (--kv-dtype fp8).
  const std::pair<int, DType> shapes[] = {{1, act}, {2048, act}, {16384, DType::F8E4M3}};
  for (const auto& [T, cache] : shapes) {
    CaseRng r(uint64_t(T) + 19);
    OpCase c;
    c.op = Op::QK_NORM_ROPE_KV_WRITE;
    const int page = 16, nb = (T + page - 1) / page;
    c.name = fmt::format("T={} q/k/v views of [T, {}] qk-norm neox page={} cache={}", T, kQ8Qkv, page, dtype_name(cache));
    std::vector<int32_t> ids(static_cast<size_t>(T));
    for (int i = 0; i < T; ++i) ids[size_t(i)] = i;
    c.tensors = {r.tensor(act, {T, kQ8Qkv}), r.tensor(act, {kQ8D}), r.tensor(act, {kQ8D}), r.ints(ids, {T}),
                 r.tensor(DType::F32, {T, kQ8D}), CaseRng::filled(cache, {nb, page, kQ8Hkv, kQ8D}, 0),
                 CaseRng::filled(cache, {nb, page, kQ8Hkv, kQ8D}, 0), r.ints(ids, {T})};
    c.outputs = {0, 5, 6};
    // q and k read and written, v read, k and v written to the cache, one cos/sin row per token.
    c.bytes = (2.0 * (kQ8Hq + kQ8Hkv) + kQ8Hkv) * T * kQ8D * dtype_size(act) +
              2.0 * kQ8Hkv * T * kQ8D * dtype_size(cache) + double(T) * kQ8D * 4;
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      QkNormRopeKvWriteArgs a;
      a.q = heads_view(t[0], 0, kQ8Hq, kQ8D);
      a.k = heads_view(t[0], kQ8Hq * kQ8D, kQ8Hkv, kQ8D);
      a.v = heads_view(t[0], (kQ8Hq + kQ8Hkv) * kQ8D, kQ8Hkv, kQ8D);
      a.q_norm = t[1];
      a.k_norm = t[2];
      a.positions = t[3];
      a.cos_sin = t[4];
      a.rot_dim = kQ8D;
      a.k_cache = t[5];
      a.v_cache = t[6];
      a.slot_mapping = t[7];
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_perf_cases() {
  register_perf_case_generator(Op::ATTN_DECODE, attn_decode_perf);
  register_perf_case_generator(Op::ATTN_PREFILL, attn_prefill_perf);
  register_perf_case_generator(Op::MLA_ATTENTION, mla_perf);
  register_perf_case_generator(Op::MATMUL, matmul_perf);
  register_perf_case_generator(Op::MATMUL_FP8_BLOCK, matmul_fp8_perf);
  register_perf_case_generator(Op::MOE_GEMM, moe_gemm_perf);
  register_perf_case_generator(Op::ADD_RMS_NORM, add_rms_norm_perf);
  register_perf_case_generator(Op::SILU_MUL, silu_mul_perf);
  register_perf_case_generator(Op::RMS_NORM, rms_norm_perf);
  register_perf_case_generator(Op::ROPE, rope_perf);
  register_perf_case_generator(Op::KV_WRITE, kv_write_perf);
  register_perf_case_generator(Op::QK_NORM_ROPE_KV_WRITE, qk_norm_rope_kv_write_perf);
  register_perf_case_generator(Op::MATMUL_SILU_MUL, matmul_silu_mul_perf);
  register_perf_case_generator(Op::MATMUL_ADD_RMS_NORM, matmul_add_rms_norm_perf);
}

}  // namespace portllm::conformance
