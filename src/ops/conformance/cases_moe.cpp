// MoE op cases: routers over 8..1024 experts with top-k 1..32 and 1..512 tokens (softmax;
// grouped softmax / biased sigmoid with 1..8 groups; logits with exact ties and NaN logits), permutation with
// dense and aligned segments, grouped GEMMs with empty experts, odd sizes and fp8 block / per-tensor scales
// (prefill-sized, decode-sized: 1..64 rows, the GPU's grouped GEMV, and uneven experts under each
// tile height of the GPU's tensor-core kernel) and in gather mode (rows = top-k assignments; plain
// and with the SwiGLU epilogue), the weighted combine with and without shared-expert input, and
// the fused down projection + combine (MOE_DOWN_COMBINE, from gate|up rows or activated ones;
// plus its perf cases). Sizes stay small enough that the
// scalar reference runs the whole sweep in seconds.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/conformance/cases.h"
#include "ops/op_args_moe.h"

namespace portllm::conformance {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// k distinct experts per token (what a router produces).
std::vector<int32_t> random_topk(CaseRng& r, int T, int E, int k) {
  std::vector<int32_t> ids;
  std::vector<int32_t> perm(static_cast<size_t>(E));
  for (int t = 0; t < T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int j = 0; j < k; ++j) std::swap(perm[size_t(j)], perm[size_t(r.integer(j, E - 1))]);
    ids.insert(ids.end(), perm.begin(), perm.begin() + k);
  }
  return ids;
}

struct RouteShape {
  int T, E, k;
  bool renorm;
  float scale;
  int groups, topk_groups;
  MoeScoring scoring;
  MoeGroupScore gs;
  bool bias;
  bool ties = false;  // logits on a grid of 9 values: many exact ties (ties -> lower id)
  bool nan = false;   // token 0's logits all NaN, token 1's expert 1 NaN (NaN ranks last)
};

OpCase route_case(const RouteShape& s, Op op) {
  CaseRng r(uint64_t(s.T * 131 + s.E * 7 + s.k + s.groups * 1000 + int(s.scoring) * 17));
  OpCase c;
  c.op = op;
  c.name = fmt::format("T={} E={} k={} renorm={} scale={} groups={}/{} {} {}{}{}{}", s.T, s.E, s.k, s.renorm, s.scale,
                       s.topk_groups, s.groups, s.scoring == MoeScoring::Sigmoid ? "sigmoid" : "softmax",
                       s.gs == MoeGroupScore::Top2Sum ? "top2sum" : "max", s.bias ? " bias" : "",
                       s.ties ? " ties" : "", s.nan ? " nan" : "");
  c.tensors = {CaseRng::filled(DType::I32, {s.T, s.k}, -1), CaseRng::filled(DType::F32, {s.T, s.k}, kNaN),
               r.tensor(DType::F32, {s.T, s.E}, -4, 4), s.bias ? r.tensor(DType::F32, {s.E}, -0.5, 0.5) : Tensor()};
  if (s.ties) {
    float* l = c.tensors[2].ptr<float>();
    for (int64_t i = 0; i < int64_t(s.T) * s.E; ++i) l[i] = std::round(l[i]) * 0.5f;
  }
  if (s.nan) {
    float* l = c.tensors[2].ptr<float>();
    for (int e = 0; e < s.E; ++e) l[e] = float(kNaN);
    if (s.T > 1) l[s.E + 1] = float(kNaN);
  }
  c.outputs = {0, 1};
  c.tol = 1e-6;  // expert choice must match exactly; weights are computed in double by both
  c.invoke = [s, op](const std::vector<Tensor>& t, const ArgsSink& sink) {
    MoeRouteArgs a;
    a.topk_ids = t[0];
    a.topk_weights = t[1];
    a.logits = t[2];
    a.bias = t[3];
    a.top_k = s.k;
    a.renormalize = s.renorm;
    a.scale = s.scale;
    a.scoring = s.scoring;
    a.group_score = s.gs;
    a.n_group = s.groups;
    a.topk_group = s.topk_groups;
    sink(a.desc(op), &a);
  };
  return c;
}

std::vector<OpCase> route_softmax_cases(DType act) {
  if (act != DType::F32) return {};  // router logits are f32 on every backend
  std::vector<OpCase> v;
  const auto S = MoeScoring::Softmax;
  const auto M = MoeGroupScore::Max;
  for (RouteShape s : {RouteShape{1, 8, 1, false, 1.f, 1, 1, S, M, false}, {7, 8, 2, true, 1.f, 1, 1, S, M, false},
                       {64, 64, 6, false, 1.f, 1, 1, S, M, false}, {512, 128, 8, true, 1.f, 1, 1, S, M, false},
                       {33, 256, 8, true, 2.5f, 1, 1, S, M, false}, {5, 60, 4, false, 16.f, 1, 1, S, M, false},
                       {9, 128, 8, true, 1.f, 1, 1, S, M, false, true}, {4, 1024, 32, false, 1.f, 1, 1, S, M, false},
                       {3, 128, 8, true, 1.f, 1, 1, S, M, false, false, true}})
    v.push_back(route_case(s, Op::MOE_ROUTE_SOFTMAX));
  return v;
}

std::vector<OpCase> route_grouped_cases(DType act) {
  if (act != DType::F32) return {};
  std::vector<OpCase> v;
  const auto Sg = MoeScoring::Sigmoid, Sm = MoeScoring::Softmax;
  const auto T2 = MoeGroupScore::Top2Sum, Mx = MoeGroupScore::Max;
  for (RouteShape s : {RouteShape{5, 16, 4, true, 2.5f, 4, 2, Sg, T2, true}, {64, 256, 8, true, 2.5f, 8, 4, Sg, T2, true},
                       {512, 64, 8, true, 1.f, 1, 1, Sg, T2, true}, {17, 64, 6, false, 1.f, 8, 3, Sm, Mx, false},
                       {3, 8, 2, false, 1.f, 2, 1, Sm, Mx, false}, {9, 160, 6, false, 16.f, 8, 3, Sm, Mx, false},
                       {1, 8, 1, true, 1.f, 8, 1, Sg, T2, true}, {31, 32, 8, true, 1.f, 4, 4, Sg, T2, false},
                       {20, 384, 8, true, 2.827f, 1, 1, Sg, T2, true}, {6, 64, 6, false, 1.f, 1, 1, Sg, T2, true, true},
                       {3, 256, 8, true, 2.5f, 8, 4, Sg, T2, true, false, true}})
    v.push_back(route_case(s, Op::MOE_ROUTE_GROUPED));
  return v;
}

std::vector<OpCase> permute_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, E, k, H, align] : {std::tuple{1, 8, 1, 16, 1}, {7, 8, 2, 13, 1}, {64, 64, 6, 32, 1}, {512, 128, 8, 8, 1},
                                   {33, 256, 8, 5, 1}, {13, 16, 4, 24, 4}, {100, 32, 2, 16, 16},
                                   {1, 256, 8, 64, 64}, {300, 64, 8, 40, 8}}) {
    CaseRng r(uint64_t(T * 7 + E + k * 3 + H + align));
    const int R = T * k + E * (align - 1);
    OpCase c;
    c.op = Op::MOE_PERMUTE;
    c.name = fmt::format("T={} E={} k={} H={} align={}", T, E, k, H, align);
    c.tensors = {CaseRng::filled(act, {R, H}, kNaN), CaseRng::filled(DType::I32, {R}, -7),
                 CaseRng::filled(DType::I32, {T, k}, -7), CaseRng::filled(DType::I32, {E + 1}, -7),
                 r.tensor(act, {T, H}), r.ints(random_topk(r, T, E, k), {T, k})};
    c.outputs = {0, 1, 2, 3};
    c.tol = 0;  // a pure data movement
    const int num_e = E, al = align;
    c.invoke = [num_e, al](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MoePermuteArgs a{t[0], t[1], t[2], t[3], t[4], t[5], num_e, al};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// block 0 = per-tensor (fp8); tail = rows past expert_offsets[E] (never written, stay NaN);
// wmax = range of the fp8 weights (a small one makes many zero / subnormal e4m3 bytes).
// counts: the rows of each expert (E = its size, R = its sum + tail) instead of random segments.
struct GemmShape {
  int E, R, N, K;
  DType wt;
  int block;
  int tail = 0;
  double wmax = 448;
  std::vector<int> counts = {};
};

const DType F8 = DType::F8E4M3, BF = DType::BF16, HF = DType::F16, FP = DType::F32;

// Decode sizes (R <= 64 rows, a few per expert): the GPU's grouped GEMV (moe_gemv.cu) takes these.
// Its branches: tile heights 1/2/4/8 (R = 1, 2, 3-4, >= 5), the 16-byte path (aligned rows,
// K % V == 0 with V = 8 bf16/f16, 4 f32, 16 fp8, fp8 block_k % 16 == 0) and the element-wise one
// (other K), N-slices of 32 columns (fp8 16) with idle warps and missing rows, x staged in
// several K chunks (K > 8192 / rows in a tile), experts split into several tiles (> 8 rows),
// fp8 words with zero / subnormal bytes (the exact decoder), block scales changing inside a warp's
// sweep (block 48), tails of unused rows, R above the GEMV's limit (falls back).
const GemmShape kDecodeShapes[] = {
    {128, 8, 96, 128, BF, 0},        // Qwen3-MoE at batch 1 in miniature: 8 rows, 128 experts
    {128, 1, 64, 256, BF, 0},        // one row
    {64, 2, 42, 24, HF, 0},          // two rows; N = 42: a slice with one warp's rows cut short
    {16, 3, 13, 7, BF, 0},           // K % 8 != 0: element-wise path
    {32, 4, 50, 100, HF, 0},         // K % 8 != 0, four rows
    {128, 8, 96, 128, HF, 0},        // the same in f16
    {256, 64, 72, 64, BF, 0, 5},     // 59 rows over 192 experts, 5 unused rows
    {4, 40, 24, 40, BF, 0},          // ~10 rows per expert: several 8-row tiles per expert
    {6, 30, 40, 2600, BF, 0},        // 8-row tiles stage x in 3 chunks of K
    {8, 5, 16, 8200, HF, 0},         // 1-row tiles stage x in 2 chunks (8192 + 8)
    {32, 12, 33, 36, FP, 0},         // f32 weights (V = 4)
    {32, 12, 33, 37, FP, 0},         // f32, element-wise
    {20, 23, 70, 136, BF, 0, 2},     // K % 16 != 0 but % 8 == 0: vectors for bf16
    {128, 8, 256, 384, F8, 128},     // DeepSeek-style fp8 128x128 blocks, 8 rows
    {64, 16, 200, 256, F8, 128},     // partial scale blocks along N
    {8, 6, 136, 200, F8, 128},       // K % 16 != 0: element-wise fp8
    {16, 4, 64, 96, F8, 0},          // per-tensor scale, vectors
    {16, 7, 30, 50, F8, 0},          // per-tensor scale, element-wise
    {8, 9, 100, 160, F8, 48},        // 48x48 blocks: the scale changes inside a lane's sweep
    {32, 10, 64, 128, F8, 128, 0, 0.05},  // many zero / subnormal e4m3 bytes
    {4, 24, 48, 2912, F8, 128, 3},   // fp8, x in chunks (3-row tiles: edges inside scale blocks); tail
    {256, 1, 128, 256, F8, 128},     // fp8, one row
    {2, 62, 40, 64, F8, 128},        // ~31 rows per expert: 4-row fp8 tiles, many per expert
    {64, 64, 128, 128, BF, 0},       // the last R the GEMV takes with few experts
    {8, 65, 32, 64, BF, 0},          // R = 65 > 64 and > 4 rows per expert: falls back
};

// Tensor-core sizes (moe_gemm_mma.cu: 32-, 64- or 128-row tiles picked from R / E, 128 columns,
// K steps of 64 or 32): experts of 0, 1, 63, 65 and 200 rows (empty experts, one-row tiles, tiles
// cut one row short or one row over) under each tile height (trailing empty experts set R / E),
// N and K off the tile (N = 200; K = 136, fp8 272), fp8 blocks of 128 and 48 (48: the scale
// changes inside a K step and across a tile's rows), a tail of unused rows, and a prefill-sized
// case (256 rows per expert).
std::vector<GemmShape> mma_shapes() {
  const std::vector<int> uneven = {0, 1, 63, 65, 200};
  std::vector<int> small = uneven, medium = uneven, large = uneven;
  small.resize(15, 0);   // 329 rows / 15 experts: 32-row tiles
  medium.push_back(0);   // / 6: 64-row tiles
  large.push_back(300);  // 879 rows / 7: 128-row tiles
  large.push_back(250);
  std::vector<GemmShape> v;
  for (const auto& c : {small, medium, large}) {
    v.push_back({0, 0, 200, 136, BF, 0, 0, 448, c});
    v.push_back({0, 0, 200, 136, HF, 0, 0, 448, c});
    v.push_back({0, 0, 200, 272, F8, 128, 0, 448, c});
  }
  v.push_back({0, 0, 136, 272, F8, 48, 3, 448, medium});
  v.push_back({0, 0, 131, 96, BF, 0, 5, 448, large});  // odd N: the last column is stored alone
  v.push_back({4, 1024, 160, 256, BF, 0});
  v.push_back({4, 1024, 160, 256, F8, 128});
  // The fp8 tensor-core kernel (moe_gemm_w8a8_mma.cu: 16- or 64-row tiles, 128-wide k steps,
  // K % 128 == 0): N = 192 ends inside a column tile; the 16-row tile (~5 rows per expert), the
  // 64-row tile at ~55 and ~125 rows per expert, the latter with a tail of unused rows.
  std::vector<int> w8a8_small = {0, 1, 15, 17, 40};
  w8a8_small.resize(15, 0);  // 73 rows / 15 experts: 16-row tiles
  v.push_back({0, 0, 192, 384, F8, 128, 0, 448, w8a8_small});
  v.push_back({0, 0, 192, 384, F8, 128, 0, 448, medium});
  v.push_back({0, 0, 192, 384, F8, 128, 5, 448, large});
  return v;
}

std::vector<OpCase> gather_gemm_cases(DType act);  // below

std::vector<OpCase> gemm_cases(DType act) {
  std::vector<OpCase> v;
  std::vector<GemmShape> shapes = {{8, 20, 48, 64, DType::F32, 0},   {8, 20, 48, 64, DType::BF16, 0},
                                   {64, 40, 32, 24, DType::BF16, 0}, {256, 300, 16, 32, DType::BF16, 0},
                                   {4, 64, 96, 128, DType::F16, 0},  {3, 3, 13, 7, DType::BF16, 0},
                                   {16, 512, 8, 16, DType::BF16, 0}, {4, 30, 256, 256, F8, 128},
                                   {3, 9, 200, 130, F8, 128},        {8, 5, 64, 96, F8, 0},
                                   // many rows per expert (64-row tiles), a tail of unused rows
                                   {8, 700, 96, 160, DType::BF16, 0, 5}, {4, 300, 256, 256, F8, 128, 0},
                                   {2, 200, 72, 40, DType::F32, 0, 3},   {6, 33, 136, 200, F8, 128, 7}};
  shapes.insert(shapes.end(), std::begin(kDecodeShapes), std::end(kDecodeShapes));
  for (const GemmShape& m : mma_shapes()) shapes.push_back(m);
  for (GemmShape s : shapes) {
    if (!s.counts.empty()) {
      s.E = int(s.counts.size());
      s.R = s.tail;
      for (int n : s.counts) s.R += n;
    }
    if (act != DType::F32 && s.wt != act && s.wt != F8) continue;
    CaseRng r(uint64_t(s.E * 31 + s.R * 7 + s.N + s.K + int(s.wt)));
    // Random segment sizes summing to R, with some experts empty.
    std::vector<int32_t> off(static_cast<size_t>(s.E + 1), 0);
    std::vector<int> cnt(static_cast<size_t>(s.E), 0);
    if (!s.counts.empty()) cnt = s.counts;
    else
      for (int i = 0; i < s.R - s.tail; ++i) cnt[size_t(r.integer(0, std::max(0, s.E - 1 - (s.E > 4 ? s.E / 4 : 0))))]++;
    for (int e = 0; e < s.E; ++e) off[size_t(e + 1)] = off[size_t(e)] + cnt[size_t(e)];
    const bool fp8 = s.wt == F8;
    const int bn = fp8 ? (s.block ? s.block : s.N) : 0, bk = fp8 ? (s.block ? s.block : s.K) : 0;
    OpCase c;
    c.op = Op::MOE_GEMM;
    c.name = fmt::format("E={} R={} N={} K={} w={}{}{}{}{}", s.E, s.R, s.N, s.K, dtype_name(s.wt),
                         fp8 ? (s.block ? fmt::format(" block{}", s.block) : std::string(" per-tensor")) : "",
                         s.tail ? fmt::format(" tail={}", s.tail) : std::string(),
                         fp8 && s.wmax != 448 ? fmt::format(" wmax={}", s.wmax) : std::string(),
                         s.counts.empty() ? "" : " uneven");
    Tensor x = r.tensor(act, {s.R, s.K});
    const ExpertWeights ew = expert_weights(r, s.wt, s.E, s.N, s.K, bn, bk, s.wmax);
    c.tensors = {CaseRng::filled(act, {s.R, s.N}, kNaN), x, ew.w, ew.scale, r.ints(off, {s.E + 1})};
    c.outputs = {0};
    c.tol = std::max(default_tolerance(act), default_tolerance(s.wt == DType::F32 || fp8 ? act : s.wt));
    if (fp8) c.tol = 2e-2;  // as MATMUL_FP8_BLOCK: kernels may quantize activations
    c.invoke = [bn, bk](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MoeGemmArgs a{t[0], t[1], t[2], t[3], t[4], bn, bk, Tensor()};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  for (auto& c : gather_gemm_cases(act)) v.push_back(std::move(c));
  return v;
}

// Gather mode (MoeGemmArgs::topk_ids): rows are the T*k assignments of random distinct top-k
// experts per token, x holds the T token rows. Covers the GPU GEMV's gather lookup: tile heights
// 1/2/4/8 (n = 1, 2, 3-4, >= 5), experts with more than 8 rows (several tiles), scans over more
// than 256 experts, ids staged in shared memory and, past 8192 - E assignments, read from global
// memory; the vector and element-wise weight paths, x in K chunks, f32 / fp8 weights. swiglu:
// the SwiGLU epilogue (out [T*k, N/2]): gate and up rows in different fp8 scale blocks, the last
// column slice part empty, every tile height, Qwen3-30B-A3B's gate_up at one token.
struct GatherShape {
  int T, E, k, N, K;
  DType wt;
  int block;
  bool swiglu = false;
};

std::vector<OpCase> gather_gemm_cases(DType act) {
  std::vector<OpCase> v;
  const GatherShape shapes[] = {
      {1, 128, 8, 96, 128, BF, 0},     // Qwen3-MoE at batch 1 in miniature
      {1, 8, 1, 64, 256, BF, 0},       // one row
      {1, 16, 2, 42, 24, HF, 0},       // two rows, a slice with missing W rows
      {4, 16, 3, 13, 7, BF, 0},        // K % 8 != 0: element-wise
      {8, 128, 8, 64, 128, BF, 0},     // 64 assignments: 8-row tiles
      {20, 4, 2, 48, 64, HF, 0},       // ~10 rows per expert: two tiles each
      {5, 6, 2, 40, 2600, BF, 0},      // x staged in K chunks
      {3, 384, 8, 32, 64, BF, 0},      // the tile scan over two rounds of 256 experts
      {525, 4096, 8, 8, 16, BF, 0},    // 4200 assignments + 4096 experts > 8192: ids from global memory
      {3, 32, 4, 33, 36, FP, 0},       // f32 weights
      {2, 32, 4, 256, 384, F8, 128},   // fp8 128x128 blocks
      {3, 8, 2, 136, 200, F8, 128},    // fp8, K % 16 != 0: element-wise
      {2, 16, 2, 64, 96, F8, 0},       // fp8 per-tensor scale
      {4, 8, 2, 100, 160, F8, 48},     // fp8 48x48 blocks
      {1, 128, 8, 96, 128, BF, 0, true},     // SwiGLU: Qwen3-MoE at batch 1 in miniature
      {1, 16, 8, 1536, 2048, BF, 0, true},   // ... at Qwen3-30B-A3B's sizes (16 of its 128 experts)
      {2, 16, 2, 42, 24, HF, 0, true},       // two rows, 21 columns: the second slice part empty
      {4, 16, 3, 26, 7, BF, 0, true},        // K % 8 != 0: element-wise
      {8, 128, 8, 80, 128, BF, 0, true},     // 8-row tiles
      {5, 6, 2, 64, 2600, BF, 0, true},      // x in K chunks
      {3, 32, 4, 66, 36, FP, 0, true},       // f32 weights
      {2, 32, 4, 400, 384, F8, 128, true},   // fp8 blocks: up rows start inside block 1
      {3, 8, 2, 136, 200, F8, 128, true},    // fp8 element-wise
      {2, 16, 2, 96, 96, F8, 0, true},       // fp8 per-tensor scale
  };
  for (const GatherShape& s : shapes) {
    if (act != DType::F32 && s.wt != act && s.wt != F8) continue;
    CaseRng r(uint64_t(s.T * 131 + s.E * 17 + s.k * 7 + s.N + s.K + int(s.wt)));
    const bool fp8 = s.wt == F8;
    const int bn = fp8 ? (s.block ? s.block : s.N) : 0, bk = fp8 ? (s.block ? s.block : s.K) : 0;
    OpCase c;
    c.op = Op::MOE_GEMM;
    c.name = fmt::format("gather T={} E={} k={} N={} K={} w={}{}{}", s.T, s.E, s.k, s.N, s.K, dtype_name(s.wt),
                         fp8 ? (s.block ? fmt::format(" block{}", s.block) : std::string(" per-tensor")) : "",
                         s.swiglu ? " swiglu" : "");
    Tensor x = r.tensor(act, {s.T, s.K});
    const ExpertWeights ew = expert_weights(r, s.wt, s.E, s.N, s.K, bn, bk);
    c.tensors = {CaseRng::filled(act, {s.T * s.k, s.swiglu ? s.N / 2 : s.N}, kNaN), x, ew.w, ew.scale,
                 r.ints(random_topk(r, s.T, s.E, s.k), {s.T, s.k})};
    c.outputs = {0};
    c.tol = std::max(default_tolerance(act), default_tolerance(s.wt == DType::F32 || fp8 ? act : s.wt));
    if (fp8) c.tol = 2e-2;
    const bool swiglu = s.swiglu;
    c.invoke = [bn, bk, swiglu](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MoeGemmArgs a{t[0], t[1], t[2], t[3], Tensor(), bn, bk, t[4], swiglu};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}

// MOE_DOWN_COMBINE: T tokens with k random distinct experts each, gate|up rows per assignment.
// wmax: range of fp8 weights (small: many zero / subnormal bytes). alias: out is the shared
// tensor itself (the model passes it so). strided: gate_up is a view with an odd row stride (no
// 16-byte loads of it, while W keeps them). activated: gate_up is h [T*k, I] (MOE_GEMM's SwiGLU
// epilogue wrote it).
struct DownShape {
  int T, E, k, H, I;
  DType wt;
  int block;
  bool shared;
  bool alias = false;
  bool strided = false;
  double wmax = 448;
  bool activated = false;
};

OpCase down_combine_case(DType act, const DownShape& s) {
  CaseRng r(uint64_t(s.T * 977 + s.E * 31 + s.k * 13 + s.H * 3 + s.I + int(s.wt) + s.shared + 2 * s.alias +
                     4 * s.activated));
  const bool fp8 = s.wt == F8;
  const int bn = fp8 ? (s.block ? s.block : s.H) : 0, bk = fp8 ? (s.block ? s.block : s.I) : 0;
  OpCase c;
  c.op = Op::MOE_DOWN_COMBINE;
  c.name = fmt::format("T={} E={} k={} H={} I={} w={}{}{}{}{}{}{}", s.T, s.E, s.k, s.H, s.I, dtype_name(s.wt),
                       fp8 ? (s.block ? fmt::format(" block{}", s.block) : std::string(" per-tensor")) : "",
                       fp8 && s.wmax != 448 ? fmt::format(" wmax={}", s.wmax) : std::string(),
                       s.shared ? " shared" : "", s.alias ? " (out = shared)" : "", s.strided ? " strided" : "",
                       s.activated ? " activated" : "");
  const int64_t cols = (s.activated ? 1 : 2) * int64_t(s.I), gu_cols = cols + (s.strided ? 1 : 0);
  Tensor shared = s.shared ? r.tensor(act, {s.T, s.H}) : Tensor();
  Tensor gate_up = r.tensor(act, {int64_t(s.T) * s.k, gu_cols}, -3, 3);
  const ExpertWeights ew = expert_weights(r, s.wt, s.E, s.H, s.I, bn, bk, s.wmax);
  c.tensors = {s.alias ? shared : CaseRng::filled(act, {s.T, s.H}, kNaN), gate_up, ew.w, ew.scale,
               r.ints(random_topk(r, s.T, s.E, s.k), {s.T, s.k}),
               r.tensor(DType::F32, {s.T, s.k}, 0, 1),
               s.alias ? Tensor() : shared};
  c.outputs = {0};
  c.tol = std::max(default_tolerance(act), default_tolerance(s.wt == DType::F32 || fp8 ? act : s.wt));
  if (fp8) c.tol = 2e-2;
  const bool alias = s.alias, activated = s.activated;
  c.invoke = [bn, bk, alias, activated, cols](const std::vector<Tensor>& t, const ArgsSink& sink) {
    MoeDownCombineArgs a{t[0], t[1].slice(1, 0, cols), t[2], t[3], bn, bk, t[4], t[5], alias ? t[0] : t[6], activated};
    sink(a.desc(), &a);
  };
  return c;
}

// The GPU kernel's branches: the vector and element-wise weight paths (I % V), 16-byte and scalar
// staging of gate|up (I % 8, the strided view), K chunks (k * I > 8192: 2 x 560, 2 x 704),
// output slices cut short (H % 8 != 0), every top-k from 1 to 8, fp8 blocks of 128 (partial along
// H and I) and 48 and per-tensor scales, zero / subnormal fp8 bytes, f32 activations with bf16
// weights, shared-expert input separate and aliased with out. The GPU kernel takes T <= 4 and
// float weights (fp8 only under PORTLLM_MOE_FUSED=fp8): the other cases are NOT_SUPPORTED there
// (the op sequence serves them) unless that is set.
std::vector<OpCase> down_combine_cases(DType act) {
  std::vector<OpCase> v;
  const DownShape shapes[] = {
      {1, 128, 8, 96, 128, BF, 0, false},          // Qwen3-MoE at batch 1 in miniature
      {1, 64, 6, 72, 176, BF, 0, true},            // DeepSeek-V2-style shared expert
      {1, 64, 6, 72, 176, BF, 0, true, true},      // ... aliased with out
      {4, 128, 8, 44, 96, BF, 0, false},           // 4 tokens, the last slice half empty
      {8, 128, 8, 44, 96, BF, 0, false},           // 8 tokens (past the GPU kernel's default limit)
      {3, 16, 2, 13, 7, BF, 0, true},              // I % 8 != 0: element-wise loads and staging
      {2, 8, 4, 24, 100, HF, 0, false},            // I % 8 == 4 (f16)
      {2, 16, 8, 32, 1100, BF, 0, false},          // 8 x 1100 > 8192: two K chunks of 560
      {1, 8, 6, 40, 1408, BF, 0, true},            // V2-Lite's I: two chunks of 704
      {4, 8, 1, 16, 64, BF, 0, false},             // top-1
      {3, 8, 3, 40, 64, BF, 0, false, false, true},  // strided gate_up: scalar staging, vector W
      {2, 12, 3, 24, 12, BF, 0, false},            // f32 act: bf16 W element-wise, f32 staging vectors
      {3, 12, 3, 20, 36, FP, 0, true},             // f32 weights
      {1, 16, 8, 256, 384, F8, 128, true},         // DeepSeek-style fp8 128x128 blocks + shared
      {3, 8, 2, 136, 200, F8, 128, false},         // fp8, partial blocks, I % 16 != 0: element-wise
      {2, 8, 4, 64, 96, F8, 0, false},             // fp8 per-tensor scale
      {2, 8, 3, 100, 160, F8, 48, true},           // fp8 48x48 blocks
      {1, 16, 4, 64, 128, F8, 128, false, false, false, 0.05},  // zero / subnormal e4m3 bytes
      {2, 8, 2, 256, 256, F8, 128, true, true},    // deepseekv3fp8-tiny's experts, out = shared
      {12, 8, 2, 16, 32, BF, 0, false},            // past the GPU kernel's batch limit
      // One token at Qwen3-30B-A3B's H and I (16 of its 128 experts; all 256 column slices), f16
      // with a shared expert at a larger H, and a strided gate_up at one token (element-wise staging).
      {1, 16, 8, 2048, 768, BF, 0, false},
      {1, 16, 8, 1000, 512, HF, 0, true},
      {1, 16, 4, 40, 64, BF, 0, false, false, true},
      // Activated input (h from MOE_GEMM's SwiGLU epilogue): the vector and element-wise staging,
      // K chunks, a strided view, fp8 blocks, f32 weights, out = shared, Qwen3-30B-A3B's sizes.
      {1, 128, 8, 96, 128, BF, 0, false, false, false, 448, true},
      {1, 16, 8, 2048, 768, BF, 0, false, false, false, 448, true},
      {3, 16, 2, 13, 7, BF, 0, true, false, false, 448, true},
      {2, 16, 8, 32, 1100, BF, 0, false, false, false, 448, true},
      {3, 8, 3, 40, 64, BF, 0, false, false, true, 448, true},
      {1, 64, 6, 72, 176, BF, 0, true, true, false, 448, true},
      {3, 12, 3, 20, 36, FP, 0, true, false, false, 448, true},
      {1, 16, 8, 256, 384, F8, 128, true, false, false, 448, true},
      {2, 8, 3, 100, 160, F8, 48, true, false, false, 448, true},
  };
  for (const DownShape& s : shapes) {
    if (act != DType::F32 && s.wt != act && s.wt != F8) continue;
    v.push_back(down_combine_case(act, s));
  }
  return v;
}

// Perf cases: Qwen3-30B-A3B's down projection (128 experts, top 8, H 2048, I 768) at 1 and 4
// tokens (and at 1 from activated rows, the SwiGLU-epilogue path), DeepSeek-V2-Lite's (64 experts, top 6, H 2048, I 1408, shared expert) at 1 token in
// bf16 and block-fp8 (the GPU kernel times fp8 only under PORTLLM_MOE_FUSED=fp8). What the fused
// kernel replaces at batch 1: SILU_MUL, MOE_GEMM down (`ops perf -o MOE_GEMM`, "tokens=1 ...
// N=2048 K=768") and MOE_COMBINE. Least bytes: the weights (and scales) of the distinct experts
// chosen, gate|up (or h) read once, out (and shared).
std::vector<OpCase> down_combine_perf(DType act) {
  if (act == DType::F32) return {};
  std::vector<OpCase> v;
  struct S { const char* what; int E, k, H, I; DType wt; bool shared; std::vector<int> tokens; bool activated = false; };
  const S shapes[] = {{"Qwen3-30B-A3B", 128, 8, 2048, 768, act, false, {1, 4}},
                      {"Qwen3-30B-A3B", 128, 8, 2048, 768, act, false, {1}, true},
                      {"DeepSeek-V2-Lite", 64, 6, 2048, 1408, act, true, {1}},
                      {"DeepSeek-V2-Lite", 64, 6, 2048, 1408, F8, true, {1}}};
  for (const S& s : shapes) {
    CaseRng r(uint64_t(s.E * 7 + s.I + int(s.wt)));
    const bool fp8 = s.wt == F8;
    const int bl = 128, SN = (s.H + bl - 1) / bl, SK = (s.I + bl - 1) / bl;
    const auto [w, scale] = expert_weights(r, s.wt, s.E, s.H, s.I, bl, bl);
    for (int T : s.tokens) {
      const std::vector<int32_t> ids = random_topk(r, T, s.E, s.k);
      std::vector<bool> used(size_t(s.E), false);
      for (int32_t e : ids) used[size_t(e)] = true;
      const double n_used = double(std::count(used.begin(), used.end(), true));
      OpCase c;
      c.op = Op::MOE_DOWN_COMBINE;
      c.name = fmt::format("{} down tokens={} experts used={}/{} H={} I={} w={}{}{}", s.what, T, int(n_used), s.E, s.H,
                           s.I, fp8 ? "f8_e4m3 block128" : dtype_name(act), s.shared ? " shared" : "",
                           s.activated ? " activated" : "");
      const int gu_cols = (s.activated ? 1 : 2) * s.I;
      c.tensors = {CaseRng::filled(act, {T, s.H}, kNaN), r.tensor(act, {T * s.k, gu_cols}, -3, 3), w, scale,
                   r.ints(ids, {T, s.k}), r.tensor(DType::F32, {T, s.k}, 0, 1),
                   s.shared ? r.tensor(act, {T, s.H}) : Tensor()};
      c.outputs = {0};
      const double as = double(dtype_size(act));
      c.bytes = n_used * s.H * s.I * double(dtype_size(s.wt)) + (fp8 ? n_used * SN * SK * 4 : 0.0) +
                double(T) * s.k * gu_cols * as + double(T) * s.H * as * (s.shared ? 2 : 1);
      c.flops = 2.0 * T * s.k * s.H * s.I;
      const int blk = fp8 ? bl : 0;
      const bool activated = s.activated;
      c.invoke = [blk, activated](const std::vector<Tensor>& t, const ArgsSink& sink) {
        MoeDownCombineArgs a{t[0], t[1], t[2], t[3], blk, blk, t[4], t[5], t[6], activated};
        sink(a.desc(), &a);
      };
      v.push_back(std::move(c));
    }
  }
  return v;
}

std::vector<OpCase> combine_cases(DType act) {
  std::vector<OpCase> v;
  for (auto [T, k, H, shared] : {std::tuple{1, 1, 16, false}, {7, 2, 13, true}, {64, 8, 32, false}, {512, 8, 16, true},
                                 {5, 6, 2048, true}}) {
    CaseRng r(uint64_t(T * 5 + k * 11 + H + shared));
    const int R = T * k + 3;  // a few rows nobody reads (alignment padding)
    std::vector<int32_t> rows(static_cast<size_t>(R));
    std::iota(rows.begin(), rows.end(), 0);
    for (int i = R - 1; i > 0; --i) std::swap(rows[size_t(i)], rows[size_t(r.integer(0, i))]);
    rows.resize(size_t(T * k));
    OpCase c;
    c.op = Op::MOE_COMBINE;
    c.name = fmt::format("T={} k={} H={}{}", T, k, H, shared ? " shared" : "");
    c.tensors = {CaseRng::filled(act, {T, H}, kNaN), r.tensor(act, {R, H}), r.ints(rows, {T, k}),
                 r.tensor(DType::F32, {T, k}, 0, 1), shared ? r.tensor(act, {T, H}) : Tensor()};
    c.outputs = {0};
    c.tol = default_tolerance(act);
    c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
      MoeCombineArgs a{t[0], t[1], t[2], t[3], t[4]};
      sink(a.desc(), &a);
    };
    v.push_back(std::move(c));
  }
  return v;
}
}  // namespace

void register_moe_cases() {
  register_case_generator(Op::MOE_ROUTE_SOFTMAX, route_softmax_cases);
  register_case_generator(Op::MOE_ROUTE_GROUPED, route_grouped_cases);
  register_case_generator(Op::MOE_PERMUTE, permute_cases);
  register_case_generator(Op::MOE_GEMM, gemm_cases);
  register_case_generator(Op::MOE_COMBINE, combine_cases);
  register_case_generator(Op::MOE_DOWN_COMBINE, down_combine_cases);
  register_perf_case_generator(Op::MOE_DOWN_COMBINE, down_combine_perf);
}

}  // namespace portllm::conformance
