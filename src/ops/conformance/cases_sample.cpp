// Cases for SAMPLE. Ids must match the reference exactly, so every case is checked here, in
// double precision, for decisions that float rounding could flip (a rel within 1e-4 of min_p, a
// top-p prefix mass within 1e-4 of its threshold, a draw within 1e-4 of a CDF step); such a row
// gets another RNG position or a nudged top-p / min-p until it has a margin. Logits sit on a
// 1/8 grid, so equal values (ties at the top-k / top-p cuts) are common and exact.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/conformance/cases.h"
#include "ops/op_args_sample.h"
#include "ops/sample_math.h"
#include "ops/sample_row.h"

namespace portllm::conformance {

namespace {

using sampling::uniform_at;

// Float rounding (expf vs exp, fixed-point sums) moves a relative probability by ~1e-7 and a
// prefix mass by ~1e-7 of the total; cases keep 20x that (and 1e-4 of min_p) away from a flip.
constexpr double kMarginP = 2e-6, kMarginW = 2e-6;

struct RowSpec {
  SampleRowParams p;
  std::vector<int32_t> adj;  // (id, kind, payload) triples
};

// The smallest relative distance of a min-p decision (to min_p) and of a top-p prefix or a CDF
// step (to the mass total) from flipping, for one row.
std::pair<double, double> margins(std::vector<float> l, const RowSpec& s) {
  const double inf = std::numeric_limits<double>::infinity();
  const SampleRowParams& p = s.p;
  if (p.flags & kSampleSkipRow) return {inf, inf};
  sampling::apply_adjustments(l, p, s.adj);
  if (p.temperature < sampling::kSamplingEps) return {inf, inf};
  float mx = -std::numeric_limits<float>::infinity();
  for (float x : l) mx = std::max(mx, x);
  if (!std::isfinite(mx)) return {inf, inf};
  const float inv_t = 1.0f / p.temperature;
  auto rel = [&](int32_t i) { return std::exp(double((l[size_t(i)] - mx) * inv_t)); };
  std::vector<int32_t> rank;
  for (int32_t i = 0; i < int32_t(l.size()); ++i)
    if (std::isfinite(l[size_t(i)])) rank.push_back(i);
  std::sort(rank.begin(), rank.end(), [&](int32_t a, int32_t b) {
    return l[size_t(a)] != l[size_t(b)] ? l[size_t(a)] > l[size_t(b)] : a < b;
  });
  double mf = inf, mw = inf;
  if (p.min_p > 0) {
    for (int32_t i : rank) mf = std::min(mf, std::abs(rel(i) - p.min_p) / p.min_p * (kMarginP / 1e-4));
    std::erase_if(rank, [&](int32_t i) { return !(rel(i) >= double(p.min_p)); });
  }
  if (p.top_k > 0 && size_t(p.top_k) < rank.size()) rank.resize(size_t(p.top_k));
  if (p.top_p < 1.f && !rank.empty()) {
    double total = 0;
    for (int32_t i : rank) total += rel(i);
    const double thr = double(p.top_p) * total;
    double cum = 0;
    size_t keep = 0;
    while (keep < rank.size() && (keep == 0 || cum < thr)) {
      cum += rel(rank[keep++]);
      mf = std::min(mf, std::abs(cum - thr) / total);
    }
    rank.resize(keep);
  }
  if (rank.empty()) return {mf, mw};
  std::sort(rank.begin(), rank.end());
  double total = 0;
  for (int32_t i : rank) total += rel(i);
  const double target = uniform_at(p.seed(), p.counter()) * total;
  double cum = 0;
  for (int32_t i : rank) {
    cum += rel(i);
    mw = std::min(mw, std::abs(cum - target) / total);
  }
  return {mf, mw};
}

// Logits: integers / 8 in [lo, hi] (so ties are frequent when the range is small).
std::vector<float> grid_row(CaseRng& r, int64_t V, int lo, int hi) {
  std::vector<float> l(static_cast<size_t>(V));
  for (auto& x : l) x = float(r.integer(lo, hi)) / 8.f;
  return l;
}

int32_t float_payload(float f) { return int32_t(sampling::float_bits(f)); }

// Builds one case from rows of logits and row specs, fixing rows without margin.
OpCase make_case(const std::string& name, std::vector<std::vector<float>> rows, std::vector<RowSpec> specs) {
  const int64_t B = int64_t(rows.size()), V = int64_t(rows[0].size());
  for (int64_t r = 0; r < B; ++r) {
    RowSpec& s = specs[size_t(r)];
    for (int attempt = 0; attempt < 200; ++attempt) {
      auto [mf, mw] = margins(rows[size_t(r)], s);
      if (mf > kMarginP && mw > kMarginW) break;
      if (mf <= kMarginP) {
        if (s.p.top_p < 1.f) s.p.top_p = std::max(0.01f, s.p.top_p - 0.0037f);
        if (s.p.min_p > 0.f) s.p.min_p *= 1.013f;
      }
      s.p.set_counter(s.p.counter() + 1);
    }
  }
  CaseRng ints(1);
  OpCase c;
  c.op = Op::SAMPLE;
  c.name = name + fmt::format(" B={} V={}", B, V);
  Tensor logits = CaseRng::filled(DType::F32, {B, V}, 0);
  for (int64_t r = 0; r < B; ++r) std::copy(rows[size_t(r)].begin(), rows[size_t(r)].end(), logits.ptr<float>() + r * V);
  std::vector<int32_t> params, offsets{0}, adj;
  for (auto& s : specs) {
    const int32_t* w = reinterpret_cast<const int32_t*>(&s.p);
    params.insert(params.end(), w, w + kSampleParamWords);
    adj.insert(adj.end(), s.adj.begin(), s.adj.end());
    offsets.push_back(int32_t(adj.size() / kSampleAdjWords));
  }
  c.tensors = {CaseRng::filled(DType::I32, {B}, -7), logits, ints.ints(params, {B, kSampleParamWords})};
  if (!adj.empty()) {
    c.tensors.push_back(ints.ints(offsets, {B + 1}));
    c.tensors.push_back(ints.ints(adj, {int64_t(adj.size() / kSampleAdjWords), kSampleAdjWords}));
  } else {
    c.tensors.push_back(Tensor{});
    c.tensors.push_back(Tensor{});
  }
  c.outputs = {0, 1};  // the ids, and the logits adjusted in place
  c.tol = 0;
  c.invoke = [](const std::vector<Tensor>& t, const ArgsSink& sink) {
    SampleArgs a{t[0], t[1], t[2], t[3], t[4]};
    sink(a.desc(), &a);
  };
  return c;
}

RowSpec spec(float t, int top_k = 0, float top_p = 1.f, float min_p = 0.f, uint64_t seed = 1, uint64_t counter = 0) {
  RowSpec s;
  s.p.temperature = t;
  s.p.top_k = top_k;
  s.p.top_p = top_p;
  s.p.min_p = min_p;
  s.p.set_seed(seed);
  s.p.set_counter(counter);
  return s;
}

std::vector<OpCase> sample_cases(DType act) {
  std::vector<OpCase> v;
  if (act != DType::F32) return v;  // the LM head writes f32 logits
  const int64_t sizes[] = {13, 1000, 32003, 151936};
  for (int64_t V : sizes) {
    CaseRng r(uint64_t(V) * 7 + 1);
    const int spread = V < 100 ? 40 : 160;  // +-5 or +-20 on the 1/8 grid
    auto rows = [&](int B, int lo, int hi) {
      std::vector<std::vector<float>> out;
      for (int b = 0; b < B; ++b) out.push_back(grid_row(r, V, lo, hi));
      return out;
    };
    // Greedy, with duplicated maxima (first index wins).
    {
      auto L = rows(4, -spread, spread);
      L[1][size_t(V / 2)] = 100.f;
      L[1][size_t(V - 1)] = 100.f;
      L[2][0] = 50.f;
      L[2][size_t(V - 1)] = 50.f;
      std::fill(L[3].begin(), L[3].end(), -1.5f);
      v.push_back(make_case("greedy", L, {spec(0), spec(0), spec(0), spec(1e-6f)}));
    }
    // Temperature only, several temperatures, seeds and RNG positions.
    {
      std::vector<RowSpec> s;
      for (int b = 0; b < 6; ++b) s.push_back(spec(b % 3 == 0 ? 0.5f : b % 3 == 1 ? 1.f : 1.7f, 0, 1.f, 0.f, 1000 + b, uint64_t(b) * 977));
      v.push_back(make_case("temperature", rows(6, -spread, spread), s));
    }
    // Each filter alone.
    {
      std::vector<RowSpec> s;
      for (int k : {1, 2, 5, 50, int(V) - 1, int(V) + 5}) s.push_back(spec(1.f, k, 1.f, 0.f, uint64_t(k) * 31 + 7, 3));
      v.push_back(make_case("top_k", rows(int(s.size()), -spread, spread), s));
    }
    {
      std::vector<RowSpec> s;
      for (float p : {0.05f, 0.3f, 0.9f, 0.999f}) s.push_back(spec(0.8f, 0, p, 0.f, uint64_t(p * 1000), 11));
      v.push_back(make_case("top_p", rows(int(s.size()), -spread, spread), s));
    }
    {
      std::vector<RowSpec> s;
      for (float m : {0.01f, 0.05f, 0.3f, 0.9f, 1.5f}) s.push_back(spec(1.f, 0, 1.f, m, uint64_t(m * 1000) + 5, 2));
      v.push_back(make_case("min_p", rows(int(s.size()), -spread, spread), s));
    }
    // Combined, as clients send them.
    {
      std::vector<RowSpec> s{spec(0.7f, 40, 0.9f, 0.02f, 42, 0), spec(1.f, 50, 0.95f, 0.f, 43, 5),
                             spec(0.6f, 20, 0.8f, 0.f, 44, 9), spec(1.3f, 0, 0.95f, 0.05f, 45, 1),
                             spec(0.9f, 1000, 0.5f, 0.f, 46, 2)};
      v.push_back(make_case("combined", rows(int(s.size()), -spread, spread), s));
    }
    // Ties: few distinct values, so the top-k and top-p cuts fall inside groups of equal logits.
    {
      std::vector<RowSpec> s{spec(1.f, 3, 1.f, 0.f, 7, 0), spec(1.f, 0, 0.5f, 0.f, 8, 0),
                             spec(1.f, 17, 0.7f, 0.f, 9, 1), spec(2.f, 0, 0.2f, 0.f, 10, 4),
                             spec(1.f, int(V / 3), 1.f, 0.f, 11, 6)};
      v.push_back(make_case("ties", rows(int(s.size()), -4, 4), s));
    }
    // Penalties, logit bias, the min_tokens mask, a skipped row and a fully masked row.
    {
      auto L = rows(6, -spread, spread);
      std::vector<RowSpec> s{spec(0), spec(1.f, 0, 0.9f, 0.f, 77, 3), spec(0.8f, 30, 1.f, 0.f, 78, 1),
                             spec(0.5f), spec(1.f), spec(1.f, 5, 0.9f)};
      CaseRng ar(uint64_t(V) + 99);
      for (int b = 0; b < 3; ++b) {
        auto& a = s[size_t(b)];
        a.p.repetition_penalty = b == 0 ? 2.f : 1.5f;
        a.p.presence_penalty = 0.5f;
        a.p.frequency_penalty = b == 2 ? 1.f : 0.25f;
        std::vector<int32_t> used;
        auto fresh = [&] {
          for (;;) {
            const int32_t id = int32_t(ar.integer(0, V - 1));
            if (std::find(used.begin(), used.end(), id) == used.end()) {
              used.push_back(id);
              return id;
            }
          }
        };
        const int n = int(std::min<int64_t>(V / 2, 40));
        // The row's top token gets penalized, so penalties change the greedy choice.
        const int32_t top = int32_t(std::max_element(L[size_t(b)].begin(), L[size_t(b)].end()) - L[size_t(b)].begin());
        used.push_back(top);
        a.adj.insert(a.adj.end(), {top, kAdjRepetition, 0, top, kAdjCount, 3});
        for (int i = 0; i < n; ++i) {
          const int32_t id = fresh();
          a.adj.insert(a.adj.end(), {id, int32_t(i % 2 ? kAdjRepetition : kAdjCount), int32_t(1 + i % 4)});
          if (i % 2 == 1 && i % 3 == 0) a.adj.insert(a.adj.end(), {id, kAdjCount, 2});
        }
        for (int i = 0; i < 5; ++i) a.adj.insert(a.adj.end(), {fresh(), kAdjBias, float_payload(i % 2 ? 2.5f : -1.25f)});
        a.adj.insert(a.adj.end(), {fresh(), kAdjMask, 0});
        a.adj.insert(a.adj.end(), {int32_t(V + 3), kAdjBias, float_payload(1.f)});  // out of range: ignored
        a.adj.insert(a.adj.end(), {-1, kAdjMask, 0});
      }
      // Row 3: the bias makes an otherwise low token the greedy choice... at temperature 0.5.
      s[3].adj = {int32_t(V / 3), kAdjBias, float_payload(64.f), 0, kAdjMask, 0, 0, kAdjMask, 0};
      s[4].p.flags = kSampleSkipRow;
      // Row 5: every token masked -> argmax (0).
      for (int64_t i = 0; i < V; ++i) s[5].adj.insert(s[5].adj.end(), {int32_t(i), kAdjMask, 0});
      v.push_back(make_case("adjust", L, s));
    }
    // Rows with -inf entries and a row whose only finite value is one token.
    {
      auto L = rows(3, -spread, spread);
      const float ninf = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < V; i += 3) L[0][size_t(i)] = ninf;
      std::fill(L[1].begin(), L[1].end(), ninf);
      L[1][size_t(V - 1)] = 0.25f;
      for (int64_t i = 1; i < V; i += 2) L[2][size_t(i)] = ninf;
      v.push_back(make_case("neg_inf", L, {spec(1.f, 0, 0.9f, 0.f, 5, 5), spec(1.f, 3), spec(0.7f, 100, 1.f, 0.1f, 6, 1)}));
    }
    // The same without filters (GPU kernels split such rows over slices): -inf entries, one
    // finite value at the end of the row, no finite value at all (the argmax, id 0).
    {
      auto L = rows(3, -spread, spread);
      const float ninf = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < V; i += 3) L[0][size_t(i)] = ninf;
      std::fill(L[1].begin(), L[1].end(), ninf);
      L[1][size_t(V - 1)] = 0.25f;
      std::fill(L[2].begin(), L[2].end(), ninf);
      v.push_back(make_case("neg_inf plain", L, {spec(1.f, 0, 1.f, 0.f, 7, 2), spec(0.8f, 0, 1.f, 0.f, 8, 3), spec(1.f)}));
    }
  }
  return v;
}

// Decode-step shapes over Qwen3's 151936-entry vocabulary: one greedy row (bench latency), one
// row and 256 rows at temperature 0.6 (the throughput workload), 64 rows with top-k and top-p, and
// 64 with top-p alone (what OpenAI clients send: the cut is a rank prefix over the whole row).
// The cost is one read of the logits; the GB/s column then says how many reads a call is worth.
std::vector<OpCase> sample_perf(DType act) {
  if (act != DType::BF16) return {};  // the logits are f32 whatever the activations: timed once, in the bf16 sweep
  constexpr int64_t V = 151936;
  CaseRng r(5);
  auto rows = [&](int B) {
    std::vector<std::vector<float>> out;
    for (int b = 0; b < B; ++b) out.push_back(grid_row(r, V, -160, 160));
    return out;
  };
  auto same = [](int B, RowSpec s) {
    std::vector<RowSpec> v;
    for (int b = 0; b < B; ++b) {
      v.push_back(s);
      v.back().p.set_counter(uint64_t(b));
    }
    return v;
  };
  std::vector<OpCase> v;
  v.push_back(make_case("greedy", rows(1), same(1, spec(0))));
  v.push_back(make_case("temperature 0.6", rows(1), same(1, spec(0.6f))));
  v.push_back(make_case("temperature 0.6", rows(256), same(256, spec(0.6f))));
  v.push_back(make_case("top_k 50 top_p 0.9", rows(64), same(64, spec(0.8f, 50, 0.9f))));
  v.push_back(make_case("top_p 0.9", rows(64), same(64, spec(0.8f, 0, 0.9f))));
  for (OpCase& c : v) c.bytes = double(c.tensors[1].numel()) * 4;
  return v;
}

}  // namespace

void register_sample_cases() {
  register_case_generator(Op::SAMPLE, sample_cases);
  register_perf_case_generator(Op::SAMPLE, sample_perf);
}

}  // namespace portllm::conformance
