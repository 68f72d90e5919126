// What MLA_ATTENTION's two GPU kernels (mla_attention.cu, portable; mla_attention_mma.cu, NVIDIA
// tensor cores) both take from the op's args.
#pragma once
#include <cstdint>

#include "ops/op_args_moe.h"

namespace portllm::gpu {

// Raw pointers, element strides and sizes of the op's views; each kernel's parameter struct
// derives from it and adds its own planning.
struct MlaViews {
  const void* q_lat;
  const void* q_pe;
  void* out;
  const void* cache;
  const int32_t* block_tables;
  const int32_t* seq_lens;
  const int32_t* qsl;
  int64_t ql_s0, ql_s1, qp_s0, qp_s1, o_s0, o_s1, c_s0, c_s1, bt_s0;
  int H, Dc, Dr, page;
};

inline void fill_mla_views(MlaViews& p, const MlaAttentionArgs& a) {
  p.q_lat = a.q_latent.data;
  p.q_pe = a.q_pe.data;
  p.out = a.out.data;
  p.cache = a.latent_cache.data;
  p.block_tables = a.block_tables.ptr<int32_t>();
  p.seq_lens = a.seq_lens.ptr<int32_t>();
  p.qsl = a.query_start_loc.ptr<int32_t>();
  p.ql_s0 = a.q_latent.strides[0];
  p.ql_s1 = a.q_latent.strides[1];
  p.qp_s0 = a.q_pe.strides[0];
  p.qp_s1 = a.q_pe.strides[1];
  p.o_s0 = a.out.strides[0];
  p.o_s1 = a.out.strides[1];
  p.c_s0 = a.latent_cache.strides[0];
  p.c_s1 = a.latent_cache.strides[1];
  p.bt_s0 = a.block_tables.strides[0];
  p.H = int(a.q_latent.size(1));
  p.Dc = int(a.q_latent.size(2));
  p.Dr = int(a.q_pe.size(2));
  p.page = int(a.latent_cache.size(1));
}

}  // namespace portllm::gpu
