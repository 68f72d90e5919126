// portllm ops test | perf | support: the conformance suite, kernel timings and the per-op
// support table of a backend.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "backend/registry.h"
#include "backends/builtin.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "ops/conformance/runner.h"
#include "ops/registry.h"

namespace portllm::cli {

namespace {
using conformance::CaseResult;

std::vector<DType> parse_dtypes(const std::string& s) {
  std::vector<DType> v;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto d = dtype_from_name(part);
    if (!d || (*d != DType::F32 && *d != DType::F16 && *d != DType::BF16))
      PL_THROW("--dtypes: '{}' is not one of f32, f16, bf16", part);
    v.push_back(*d);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return v;
}

struct Options {
  std::string backend = "cpu";
  std::string op, pattern, dtypes = "f32,f16,bf16", format = "text";
  bool verbose = false, cold = false, repeat = false;
  int threads = 0;
};

std::shared_ptr<Device> device_for(const Options& o) {
  ModelOptions m;
  m.device = o.backend;
  m.threads = o.threads;
  return open_device(m);
}

// -p as a regex; a malformed one is an error naming the option, not std::regex_error's text.
std::regex compile_pattern(const std::string& p) {
  try {
    return std::regex(p.empty() ? ".*" : p);
  } catch (const std::regex_error& e) {
    PL_THROW("-p/--pattern '{}' is not a valid regular expression: {}", p, e.what());
  }
}

int run_test(const Options& o) {
  compile_pattern(o.pattern);
  auto dev = device_for(o);
  conformance::RunOptions ro;
  ro.op = o.op;
  ro.pattern = o.pattern;
  ro.dtypes = parse_dtypes(o.dtypes);
  ro.repeat = o.repeat;
  // Each failure (and with -v each result) is printed and flushed as it is decided; the tally
  // follows at the end.
  ro.on_result = [&](const CaseResult& r) {
    if (r.status == CaseResult::Status::Fail)
      std::printf("FAIL %-16s %-24s %s: %s\n", op_name(r.op), r.kernel.c_str(), r.case_name.c_str(), r.message.c_str());
    else if (o.verbose)
      std::printf("%-4s %-16s %-24s %s err=%.3g tol=%.3g\n", r.status == CaseResult::Status::Pass ? "ok" : "n/s",
                  op_name(r.op), r.kernel.c_str(), r.case_name.c_str(), r.error, r.tol);
    else
      return;
    std::fflush(stdout);
  };
  auto results = conformance::run_conformance(*dev, ro);
  struct Tally { int pass = 0, fail = 0, ns = 0; double worst = 0; };
  std::map<std::string, Tally> by_kernel;
  int pass = 0, fail = 0, ns = 0;
  for (auto& r : results) {
    Tally& t = by_kernel[std::string(op_name(r.op)) + " " + r.kernel];
    if (r.status == CaseResult::Status::Pass) { ++pass; ++t.pass; t.worst = std::max(t.worst, r.error); }
    else if (r.status == CaseResult::Status::Fail) { ++fail; ++t.fail; }
    else { ++ns; ++t.ns; }
  }
  std::printf("\n%-44s %6s %6s %6s %10s\n", "op kernel", "pass", "fail", "n/s", "worst err");
  for (auto& [k, t] : by_kernel) std::printf("%-44s %6d %6d %6d %10.3g\n", k.c_str(), t.pass, t.fail, t.ns, t.worst);
  std::printf("\nops test on %s: %d passed, %d failed, %d not supported\n", dev->name().c_str(), pass, fail, ns);
  if (results.empty()) PL_THROW("ops test: no kernel matched (backend {}, op '{}', pattern '{}')", o.backend, o.op, o.pattern);
  return fail == 0 ? 0 : 1;
}

// Seconds per call of `once`. Where the device has graphs, kCallsPerGraph calls are captured
// into one graph and replayed, timed with device events: small kernels are then measured
// without their launch cost (as decode graphs run them). Elsewhere, a host-timed loop.
double seconds_per_call_timed(Device& dev, const std::function<void()>& once) {
  constexpr int kCallsPerGraph = 10;
  once();  // warm up (first-touch allocations, attribute setup)
  dev.synchronize();
  std::unique_ptr<Graph> g = dev.capture(dev.stream(), [&] {
    for (int i = 0; i < kCallsPerGraph; ++i) once();
  });
  if (g) {
    g->replay(dev.stream());
    auto t0 = dev.create_event(), t1 = dev.create_event();
    for (int n = 1;; n *= 2) {  // double the replays until they take 50 ms (or 256 replays)
      t0->record(dev.stream());
      for (int i = 0; i < n; ++i) g->replay(dev.stream());
      t1->record(dev.stream());
      t1->synchronize();
      const double elapsed = t1->elapsed_ms(*t0) * 1e-3;
      if (elapsed >= 0.05 || n >= 256) return elapsed / (double(n) * kCallsPerGraph);
    }
  }
  int iters = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.2 && iters < 1000) {
    once();
    ++iters;
    if (iters % 5 == 0) dev.synchronize();
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  dev.synchronize();
  elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return elapsed / iters;
}

// With `cold`, each call follows a cache eviction (Device::evict_caches), as in a model step,
// where the weights and the other layers' KV rows have pushed an op's operands out of the L2:
// the time of (eviction + call) less that of the eviction alone. Without it, a perf case's
// repeated calls find what fits the cache there (a 4k-token KV cache of 16 MB does on the H200).
double seconds_per_call(Device& dev, bool cold, const std::function<void()>& once) {
  if (!cold) return seconds_per_call_timed(dev, once);
  auto evict = [&] { dev.evict_caches(dev.stream()); };
  const double both = seconds_per_call_timed(dev, [&] {
    evict();
    once();
  });
  return both - seconds_per_call_timed(dev, evict);
}

int run_perf(const Options& o) {
  if (!o.op.empty() && !op_from_name(o.op)) PL_THROW("ops perf: unknown op '{}'", o.op);
  const std::regex pattern = compile_pattern(o.pattern);
  auto dev = device_for(o);
  auto dtypes = parse_dtypes(o.dtypes);
  int timed = 0;
  std::printf("%-16s %-30s %-76s %10s %8s %8s\n", "op", "kernel", "case", "us/call", "GB/s", "TFLOP/s");
  for (int oi = 0; oi < int(Op::COUNT); ++oi) {
    const Op op = Op(oi);
    if (!o.op.empty() && op_from_name(o.op) != op) continue;
    auto* perf_gen = conformance::perf_case_generator(op);
    auto* gen = conformance::case_generator(op);
    if (!gen && !perf_gen) continue;
    for (DType dt : dtypes) {
      // The op's perf cases (model shapes) where it has them, else its largest conformance case
      // (the generators list it last or near it).
      std::vector<conformance::OpCase> cases = perf_gen ? (*perf_gen)(dt) : std::vector<conformance::OpCase>{};
      if (!perf_gen && gen) {
        auto all = (*gen)(dt);
        if (!all.empty()) cases.push_back(std::move(all.back()));
      }
      for (auto& c : cases) {
        const std::string case_name = c.name + " act=" + dtype_name(dt);
        auto wanted = [&](const KernelInfo* k) {
          return std::regex_search(k->name + " " + case_name, pattern);
        };
        const auto kernels = KernelRegistry::instance().kernels(op, dev->kind());
        if (std::none_of(kernels.begin(), kernels.end(), wanted)) continue;
        if (c.build) c.build(c);
        std::vector<Tensor> dev_t;
        for (auto& t : c.tensors) dev_t.push_back(t.defined() ? dev->upload(t) : t);
        c.tensors.clear();  // perf cases are large: keep one copy, on the device
        for (const KernelInfo* k : kernels) {
          if (!wanted(k)) continue;
          bool ok = true;
          c.invoke(dev_t, [&](const OpDesc& d, const void*) { ok = !k->supports || k->supports(d, dev->caps()); });
          if (!ok) continue;
          const double sec = seconds_per_call(*dev, o.cold, [&] {
            c.invoke(dev_t, [&](const OpDesc&, const void* a) { k->run(a, dev->stream()); });
          });
          auto rate = [&](double amount, double unit) {
            return amount > 0 ? fmt::format("{:8.1f}", amount / sec / unit) : fmt::format("{:>8}", "-");
          };
          std::printf("%-16s %-30s %-76s %10.1f %s %s\n", op_name(op), k->name.c_str(), case_name.c_str(), sec * 1e6, rate(c.bytes, 1e9).c_str(),
                      rate(c.flops, 1e12).c_str());
          std::fflush(stdout);
          ++timed;
        }
      }
    }
  }
  if (timed == 0) PL_THROW("ops perf: no kernel matched (backend {}, op '{}', pattern '{}')", dev->name(), o.op, o.pattern);
  return 0;
}

int run_support(const Options& o) {
  auto dev = device_for(o);
  const bool md = o.format == "md";
  const auto dtypes = parse_dtypes(o.dtypes);
  if (md) {
    std::printf("# Op support on %s (%s, vendor %s, arch %d)\n\n", dev->name().c_str(), dev->caps().name.c_str(),
                dev->caps().vendor.c_str(), dev->caps().arch);
    std::printf("Generated by `portllm ops support -b %s --format md`. Each cell names the kernel dispatch picks\n"
                "for that op's conformance cases in that activation dtype (`ref` = reference kernel only, `-` = none).\n\n",
                o.backend.c_str());
    std::printf("| op |");
    for (DType d : dtypes) std::printf(" %s |", dtype_name(d));
    std::printf("\n|---|");
    for (size_t i = 0; i < dtypes.size(); ++i) std::printf("---|");
    std::printf("\n");
  }
  Dispatcher disp(*dev);
  for (int oi = 0; oi < int(Op::COUNT); ++oi) {
    const Op op = Op(oi);
    auto* gen = conformance::case_generator(op);
    std::vector<std::string> cells;
    for (DType dt : dtypes) {
      std::set<std::string> names;
      bool any_case = false, missing = false;
      if (gen)
        for (auto& c : (*gen)(dt)) {
          any_case = true;
          c.invoke(c.tensors, [&](const OpDesc& d, const void*) {
            const KernelInfo* k = disp.try_select(d);
            if (!k) missing = true;
            else names.insert(k->is_reference() ? "ref" : k->name);
          });
        }
      std::string cell;
      for (auto& n : names) cell += (cell.empty() ? "" : ", ") + n;
      if (!any_case) cell = "n/a";
      else if (cell.empty()) cell = "-";
      else if (missing) cell += " (some shapes: -)";
      cells.push_back(cell);
    }
    if (md) {
      std::printf("| %s |", op_name(op));
      for (auto& c : cells) std::printf(" %s |", c.c_str());
      std::printf("\n");
    } else {
      std::printf("%-18s", op_name(op));
      for (size_t i = 0; i < cells.size(); ++i) std::printf(" %s=%s", dtype_name(dtypes[i]), cells[i].c_str());
      std::printf("\n");
    }
  }
  return 0;
}
}  // namespace

void add_ops_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* ops = app.add_subcommand("ops", "op conformance suite, kernel timings, support table");
  ops->require_subcommand(1);
  auto common = [&](CLI::App* c) {
    c->add_option("-b,--backend", o->backend, "backend to check: cpu, cuda, musa");
    c->add_option("-o,--op", o->op, "only this op (e.g. RMS_NORM)");
    c->add_option("--dtypes", o->dtypes, "activation dtypes to sweep (default f32,f16,bf16)");
    c->add_option("-t,--threads", o->threads, "CPU threads");
  };
  auto* test = ops->add_subcommand("test", "check every kernel of a backend against the reference kernels");
  common(test);
  test->add_option("-p,--pattern", o->pattern, "regex on '<kernel> <case>'");
  test->add_flag("-v,--verbose", o->verbose, "print every case");
  test->add_flag("--repeat", o->repeat,
                 "run each passing case twice on the same inputs and fail it unless the outputs are identical bit for bit");
  test->callback([o] {
    if (int rc = run_test(*o)) throw CLI::RuntimeError(rc);
  });
  auto* perf = ops->add_subcommand("perf", "time each kernel on model-sized perf cases (else its largest conformance case)");
  common(perf);
  perf->add_option("-p,--pattern", o->pattern, "regex on '<kernel> <case>'");
  perf->add_flag("--cold", o->cold, "evict the device caches before each call (operands come from memory, as in a model step)");
  perf->callback([o] { run_perf(*o); });
  auto* support = ops->add_subcommand("support", "which kernel serves each op and dtype on a backend");
  common(support);
  support->add_option("--format", o->format, "text | md");
  support->callback([o] { run_support(*o); });
}

}  // namespace portllm::cli
