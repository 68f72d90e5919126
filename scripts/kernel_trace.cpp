// Kernel timeline of any CUDA program, graph replays included: a CUPTI activity tracer loaded
// through the driver's injection hook (CUDA_INJECTION64_PATH), for machines without Nsight
// Systems (gpu-check.sh's `trace` stage builds it there, against that machine's CUPTI).
//
// Why: with programmatic dependent launch, a kernel of a decode graph starts while its
// predecessor drains, so durations overlap and ncu (one kernel at a time, no graph) cannot say
// what each kernel adds to a step. The activity records give each kernel's start and end as it
// ran inside the replayed graph; the end-to-end increments are what it adds
// (scripts/kernel_trace_summary.py).
//
// Build: g++ -std=c++17 -shared -fPIC -O2 -I<cupti include> -DKREC=CUpti_ActivityKernelN
//          [-DMREC=CUpti_ActivityMemcpyN] scripts/kernel_trace.cpp -o libktrace.so -L<cupti lib> -lcupti
// Use:   CUDA_INJECTION64_PATH=$PWD/libktrace.so KTRACE_OUT=trace.csv <program>
// Output: one CSV row per kernel: start_ns,end_ns,stream,grid_x,grid_y,grid_z,block_x,name (mangled);
// built with -DMREC=CUpti_ActivityMemcpyN, also one per memory copy: start_ns,end_ns,stream,bytes,
// 0,0,0,memcpy_HtoD (DtoH, DtoD, other): the copies between a step's kernels (inputs, sampled ids)
// are part of what separates them.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#ifndef KREC
#define KREC CUpti_ActivityKernel9
#endif

namespace {
FILE* g_out = nullptr;
std::mutex g_mu;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t(16) << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
#ifdef MREC
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {  // start,end,stream,bytes,0,0,0,memcpy_<kind>
      const auto* m = reinterpret_cast<const MREC*>(rec);
      const char* kind = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? "HtoD"
                         : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? "DtoH"
                         : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ? "DtoD"
                                                                          : "other";
      if (g_out)
        std::fprintf(g_out, "%llu,%llu,%u,%llu,0,0,0,memcpy_%s\n", (unsigned long long)m->start,
                     (unsigned long long)m->end, m->streamId, (unsigned long long)m->bytes, kind);
      continue;
    }
#endif
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const KREC*>(rec);
    if (g_out)
      std::fprintf(g_out, "%llu,%llu,%u,%d,%d,%d,%d,%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
                   k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX, k->name ? k->name : "?");
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped) std::fprintf(stderr, "kernel_trace: %zu records dropped\n", dropped);
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_out) std::fclose(g_out);
  g_out = nullptr;
}
}  // namespace

extern "C" int InitializeInjection(void) {
  const char* path = std::getenv("KTRACE_OUT");
  g_out = std::fopen(path ? path : "kernel_trace.csv", "w");
  if (!g_out) return 0;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_trace: CUPTI activity setup failed\n");
    return 0;
  }
#ifdef MREC
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS)
    std::fprintf(stderr, "kernel_trace: no memcpy records\n");
#endif
  std::atexit(finish);
  return 1;
}
