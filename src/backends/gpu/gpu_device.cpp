#include "backends/gpu/gpu_device.h"

#include <cstdlib>
#include <string_view>

#include "backends/gpu/caps_profiles.h"
#include "backends/gpu/gpu_check.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/gpu_runtime.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
struct GpuEvent final : Event {
  gpuEvent_t e = nullptr;
  GpuEvent() { PL_GPU_CHECK(gpuEventCreate(&e)); }
  ~GpuEvent() override { (void)gpuEventDestroy(e); }
  void record(Stream& s) override { PL_GPU_CHECK(gpuEventRecord(e, native_stream(s))); }
  void wait(Stream& s) override { PL_GPU_CHECK(gpuStreamWaitEvent(native_stream(s), e, 0)); }
  void synchronize() override { PL_GPU_CHECK(gpuEventSynchronize(e)); }
  float elapsed_ms(const Event& since) const override {
    float ms = 0;
    PL_GPU_CHECK(gpuEventElapsedTime(&ms, static_cast<const GpuEvent&>(since).e, e));
    return ms;
  }
};

struct GpuGraph final : Graph {
  gpuGraphExec_t exec = nullptr;
  ~GpuGraph() override { (void)gpuGraphExecDestroy(exec); }
  void replay(Stream& s) override { PL_GPU_CHECK(gpuGraphLaunch(exec, native_stream(s))); }
};

}  // namespace

void GpuStream::synchronize() { PL_GPU_CHECK(gpuStreamSynchronize(s_)); }

int device_count() {
  int n = 0;
  if (gpuGetDeviceCount(&n) != gpuSuccess) {
    (void)gpuGetLastError();  // no driver / no device: not an error for a CPU-only run
    return 0;
  }
  return n;
}

GpuDevice::GpuDevice(int index) : index_(index) {
  PL_GPU_CHECK(gpuSetDevice(index));
  gpuDeviceProp p{};
  PL_GPU_CHECK(gpuGetDeviceProperties(&p, index));
  int optin = 0, coop = 0;
  (void)gpuDeviceGetAttribute(&optin, gpuDevAttrMaxSharedMemoryPerBlockOptin, index);
  (void)gpuDeviceGetAttribute(&coop, gpuDevAttrCooperativeLaunch, index);
  const GpuDeviceProps props{p.name, p.warpSize, p.multiProcessorCount, p.sharedMemPerBlock,
                             size_t(optin > 0 ? optin : 0), coop != 0, p.totalGlobalMem};
  // Capabilities come from the vendor's profile table (caps_profiles.h), vendor first (rule 3).
#if defined(PORTLLM_GPU_MUSA) && defined(PORTLLM_MUSA_EMULATE)
  // MUSA emulated on an NVIDIA GPU: the profile PORTLLM_MUSA_ARCH names (default MP22).
  const int arch = musa_arch_from_env(22);
  caps_ = gpu_caps_from_profile(GpuVendor::MTHREADS, arch, props, musa_graphs_from_env());
  caps_.name = fmt::format("{} (emulating {} MP{}, nominal warp size {})", p.name, musa_arch_board(arch), arch,
                           nominal_warp_size(GpuVendor::MTHREADS, arch));
#elif defined(PORTLLM_GPU_MUSA)
  caps_ = gpu_caps_from_profile(GpuVendor::MTHREADS, p.major * 10 + p.minor, props, musa_graphs_from_env());
#else
  caps_ = gpu_caps_from_profile(GpuVendor::NVIDIA, p.major * 10 + p.minor, props);
#endif
  // PORTLLM_PDL=0 turns programmatic dependent launch off (A/B measurements, or a driver that
  // rejects it in graphs).
  if (const char* v = std::getenv("PORTLLM_PDL"); v && std::string_view(v) == "0") caps_.programmatic_launch = false;
  // PORTLLM_CLUSTERS=0 likewise takes the thread-block-cluster kernels out of the choice.
  if (const char* v = std::getenv("PORTLLM_CLUSTERS"); v && std::string_view(v) == "0") caps_.max_cluster_blocks = 0;
  PL_CHECK(caps_.warp_size == kWarpSize,
           "{} reports warp size {} but the GPU kernels were built for {}", caps_.name, caps_.warp_size, kWarpSize);
  alloc_ = std::make_shared<CachingAllocator>(index);
  gpuStream_t s = nullptr, a = nullptr, u = nullptr;
  PL_GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  main_ = std::make_unique<GpuStream>(*this, s);
  if (gpuStreamCreateWithFlags(&a, gpuStreamNonBlocking) == gpuSuccess) {
    aux_ = std::make_unique<GpuStream>(*this, a);
    caps_.aux_stream = true;
  }
  if (gpuStreamCreateWithFlags(&u, gpuStreamNonBlocking) == gpuSuccess) upload_ = std::make_unique<GpuStream>(*this, u);
  PL_GPUBLAS_CHECK(gpublasCreate(&blas_));
}

GpuDevice::~GpuDevice() {
  // Errors are ignored: at process exit the runtime may be gone already.
  if (blas_) (void)gpublasDestroy(blas_);
  if (main_) (void)gpuStreamDestroy(main_->get());
  if (aux_) (void)gpuStreamDestroy(aux_->get());
  if (upload_) (void)gpuStreamDestroy(upload_->get());
}

void GpuDevice::make_current() const { PL_GPU_CHECK(gpuSetDevice(index_)); }

gpuStream_t GpuDevice::native(Stream* s) const { return s ? native_stream(*s) : main_->get(); }

std::shared_ptr<void> GpuDevice::allocate_host(size_t bytes) {
  make_current();
  void* p = nullptr;
  PL_GPU_CHECK(gpuMallocHost(&p, bytes ? bytes : 1));
  return std::shared_ptr<void>(p, [](void* q) { (void)gpuFreeHost(q); });
}

void GpuDevice::copy_to_device(void* dst, const void* src, size_t n, Stream* s) {
  if (n) PL_GPU_CHECK(gpuMemcpyAsync(dst, src, n, gpuMemcpyHostToDevice, native(s)));
}
void GpuDevice::copy_to_host(void* dst, const void* src, size_t n, Stream* s) {
  if (n) PL_GPU_CHECK(gpuMemcpyAsync(dst, src, n, gpuMemcpyDeviceToHost, native(s)));
}
void GpuDevice::copy_on_device(void* dst, const void* src, size_t n, Stream* s) {
  if (n) PL_GPU_CHECK(gpuMemcpyAsync(dst, src, n, gpuMemcpyDeviceToDevice, native(s)));
}
void GpuDevice::memset(void* dst, int value, size_t n, Stream* s) {
  if (n) PL_GPU_CHECK(gpuMemsetAsync(dst, value, n, native(s)));
}

// 256 MiB: several times the last-level cache of the GPUs we build for (50 MB on the H200), so a
// read through it leaves none of the earlier work's lines.
void GpuDevice::evict_caches(Stream& s) {
  constexpr size_t kEvictBytes = size_t(256) << 20;
  if (!evict_buf_) {
    evict_buf_ = alloc_->allocate(kEvictBytes);
    memset(evict_buf_.get(), 0, kEvictBytes, &s);  // defined reads (compute-sanitizer initcheck)
  }
  launch_l2_flush(evict_buf_.get(), kEvictBytes, native(&s));
}

std::unique_ptr<Event> GpuDevice::create_event() { return std::make_unique<GpuEvent>(); }

std::unique_ptr<Graph> GpuDevice::capture(Stream& s, const std::function<void()>& fn) {
  if (!caps_.graphs) return nullptr;
  const gpuStream_t st = native_stream(s);
  // Relaxed mode: a cache miss in the allocator may call gpuMalloc while capturing.
  PL_GPU_CHECK(gpuStreamBeginCapture(st, gpuStreamCaptureModeRelaxed));
  alloc_->set_graph_capture(true);
  gpuGraph_t graph = nullptr;
  try {
    fn();
  } catch (...) {
    alloc_->set_graph_capture(false);
    (void)gpuStreamEndCapture(st, &graph);
    if (graph) (void)gpuGraphDestroy(graph);
    (void)gpuGetLastError();
    throw;
  }
  alloc_->set_graph_capture(false);
  PL_GPU_CHECK(gpuStreamEndCapture(st, &graph));
  auto g = std::make_unique<GpuGraph>();
  const gpuError_t e = gpuGraphInstantiate(&g->exec, graph);
  (void)gpuGraphDestroy(graph);
  PL_GPU_CHECK(e);
  return g;
}

void GpuDevice::synchronize() {
  main_->synchronize();
  if (aux_) aux_->synchronize();
}

gpublasHandle_t GpuDevice::blas(gpuStream_t s) {
  PL_GPUBLAS_CHECK(gpublasSetStream(blas_, s));
  return blas_;
}

// --- gpu_runtime.h ---
gpuStream_t native_stream(Stream& s) { return static_cast<gpuStream_t>(s.native()); }

std::shared_ptr<void> scratch(Stream& s, size_t bytes) {
  auto* gs = dynamic_cast<GpuStream*>(&s);
  PL_CHECK(gs, "GPU kernel called with a non-GPU stream");
  return gs->device().allocate_bytes(bytes);
}

const DeviceCaps& caps_of(Stream& s) {
  auto* gs = dynamic_cast<GpuStream*>(&s);
  PL_CHECK(gs, "GPU kernel called with a non-GPU stream");
  return gs->device().caps();
}

void check_launch(const char* what) {
  gpuError_t e = gpuGetLastError();
  if (e != gpuSuccess) PL_THROW("GPU kernel {}: {}", what, gpuGetErrorString(e));
}

void fail(const char* what) { PL_THROW("GPU kernel: {}", what); }

void run_kernel(const char* name, const void* args, Stream& s) {
  const KernelInfo* k = KernelRegistry::instance().find(name);
  if (!k) PL_THROW("GPU kernel {} is not registered", name);
  k->run(args, s);
}

}  // namespace portllm::gpu
