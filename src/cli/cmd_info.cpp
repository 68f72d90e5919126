// portllm info: the backends and devices this build has, their capabilities and memory, the
// architectures it loads; with --model, the model's config summary and cache sizes.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"

#include "backend/registry.h"
#include "backends/builtin.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "ops/registry.h"
#include "runtime/kv_cache.h"

namespace portllm::cli {

namespace {
void print_device(Device& d) {
  const DeviceCaps& c = d.caps();
  const MemoryStats m = d.memory_stats();
  std::printf("device %s: %s (vendor %s, arch %d, warp %d, units %d)\n", d.name().c_str(), c.name.c_str(),
              c.vendor.c_str(), c.arch, c.warp_size, c.num_compute_units);
  std::printf("  caps: bf16_matmul=%d bf16_blas=%d fp8=%d flash_attention=%d graphs=%d coop_launch=%d pdl=%d clusters=%d aux_stream=%d avx2=%d page_size=%d\n",
              c.bf16_matmul, c.bf16_blas, c.fp8, c.flash_attention, c.graphs, c.cooperative_launch, c.programmatic_launch,
              c.max_cluster_blocks, c.aux_stream, c.avx2, c.preferred_page_size);
  std::printf("  memory: total %.2f GiB, free %.2f GiB, allocated %.2f MiB\n", m.total / 1073741824.0,
              m.free / 1073741824.0, m.allocated / 1048576.0);
}
// Host memory bandwidth: threaded copies of a buffer far larger than the caches, counting bytes
// read plus bytes written (the denominator of the CPU decode roofline).
double measure_host_bandwidth_gbs() {
  const size_t n = size_t(256) << 20;  // 256 MiB each way
  std::vector<char> a(n, 1), b(n, 2);
  auto& pool = ThreadPool::global();
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(int64_t(n), [&](int64_t s, int64_t e, int) { std::memcpy(b.data() + s, a.data() + s, size_t(e - s)); }, 1 << 20);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * double(n) / sec / 1e9);
  }
  return best;
}
}  // namespace

void add_info_command(CLI::App& app) {
  auto o = std::make_shared<ModelOptions>();
  auto bandwidth = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("info", "backends, devices, capabilities and supported architectures");
  add_model_options(cmd, *o);
  cmd->add_flag("--bandwidth", *bandwidth, "measure host memory bandwidth (read + write, all threads)");
  cmd->callback([o, bandwidth] {
    if (o->threads > 0) ThreadPool::set_global_threads(o->threads);
    register_builtin_backends();
    if (*bandwidth)
      std::printf("host memory bandwidth: %.1f GB/s (memcpy, read + write, %d threads)\n", measure_host_bandwidth_gbs(),
                  ThreadPool::global().num_threads());
    auto& reg = BackendRegistry::instance();
    for (auto& name : reg.names()) {
      const BackendInfo* b = reg.find(name);
      const int n = b->device_count ? b->device_count() : 1;
      std::printf("backend %s: %d device(s), %zu kernels\n", name.c_str(), n, [&] {
        size_t k = 0;
        for (auto* ki : KernelRegistry::instance().all())
          k += std::string(device_kind_name(ki->device)) == name;
        return k;
      }());
      for (int i = 0; i < n; ++i) print_device(*reg.device(name + ":" + std::to_string(i)));
    }
    std::printf("architectures:");
    for (auto& a : registered_archs()) std::printf(" %s", a.c_str());
    std::printf("\n");
    if (!o->model_dir.empty()) {
      ModelConfig cfg = load_config(o->model_dir, o->num_layers);
      std::printf("model %s: %s, hidden %lld, layers %lld, heads %lld/%lld, head_dim %lld, vocab %lld, dtype %s\n",
                  o->model_dir.c_str(), cfg.architecture.c_str(), (long long)cfg.hidden_size, (long long)cfg.num_layers,
                  (long long)cfg.num_heads, (long long)cfg.num_kv_heads, (long long)cfg.head_dim, (long long)cfg.vocab_size,
                  dtype_name(cfg.dtype));
    }
  });
}

}  // namespace portllm::cli
