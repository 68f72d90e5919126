#include "model/linear.h"

#include <cstring>

#include "core/error.h"
#include "ops/ops.h"

namespace portllm {

void Linear::forward(OpContext& ctx, const Tensor& y, const Tensor& x) const {
  if (parts.empty()) return ops::matmul(ctx, y, x, weight, bias, scale, block_n, block_k);
  int64_t col = 0;
  for (const Linear& p : parts) {
    p.forward(ctx, y.slice(1, col, p.out), x);
    col += p.out;
  }
}

Tensor Linear::forward(OpContext& ctx, const Tensor& x) const {
  Tensor y = ctx.act({x.size(0), out});
  forward(ctx, y, x);
  return y;
}

Linear Linear::load(WeightLoader& w, const std::string& prefix, int64_t in, int64_t out, bool bias,
                    ShardSpec shard) {
  Linear l;
  l.in = in;
  l.out = out;
  if (w.is_fp8_linear(prefix)) {
    const auto& q = w.config().quant;
    l.weight = w.load(prefix + ".weight", {out, in}, shard, DType::F8E4M3);
    if (w.has(prefix + ".weight_scale_inv") && (q.block_n > 0 || !w.is_dummy())) {
      const int bn = q.block_n > 0 ? q.block_n : 128, bk = q.block_k > 0 ? q.block_k : 128;
      l.block_n = bn;
      l.block_k = bk;
      l.scale = w.load(prefix + ".weight_scale_inv", {(out + bn - 1) / bn, (in + bk - 1) / bk}, {}, DType::F32);
    } else {
      // Per-tensor scale: stored as a scalar [] or as [1] depending on the exporter.
      const std::string sn = prefix + ".weight_scale";
      l.scale = w.load(sn, w.stored_shape(sn, {}), {}, DType::F32).reshape({1});
    }
  } else {
    l.weight = w.load(prefix + ".weight", {out, in}, shard);
  }
  if (bias) l.bias = w.load(prefix + ".bias", {out}, shard.dim == 0 ? shard : ShardSpec{});
  if (shard.world > 1 && shard.dim == 0) l.out = out / shard.world;
  if (shard.world > 1 && shard.dim == 1) l.in = in / shard.world;
  return l;
}

Linear Linear::load_merged(WeightLoader& w, const std::vector<std::string>& prefixes, int64_t in,
                           const std::vector<int64_t>& outs, bool bias) {
  PL_CHECK(prefixes.size() == outs.size() && !prefixes.empty(), "load_merged needs one size per layer");
  std::vector<Linear> parts;
  int64_t total = 0;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    parts.push_back(load(w, prefixes[i], in, outs[i], bias));
    total += outs[i];
  }
  if (parts.size() == 1) return parts[0];
  const Linear& p0 = parts[0];
  // FP8 block scales concatenate only when every part's rows align with the block size; else
  // the parts run as separate GEMMs into one output.
  if (p0.scale.defined()) {
    bool aligned = p0.block_n > 0;
    for (auto& p : parts) aligned &= p.block_n > 0 && p.out % p.block_n == 0;
    if (!aligned) {
      Linear m;
      m.in = in;
      m.out = total;
      m.parts = std::move(parts);
      return m;
    }
  }
  Device& dev = w.device();
  auto concat = [&](auto member, std::vector<int64_t> shape0) {
    std::vector<Tensor> ts;
    int64_t rows = 0;
    for (auto& p : parts) {
      ts.push_back(p.*member);
      rows += (p.*member).size(0);
    }
    shape0[0] = rows;
    Tensor out = dev.empty(ts[0].dtype, shape0);
    size_t off = 0;
    for (auto& t : ts) {
      Tensor dst = Tensor::view_of(static_cast<char*>(out.data) + off, t.dtype, t.shape_vec(), out.device, out.device_index);
      dev.copy(dst, t);
      off += t.nbytes();
    }
    return out;
  };
  Linear m;
  m.in = in;
  m.out = total;
  m.block_n = p0.block_n;
  m.block_k = p0.block_k;
  m.weight = concat(&Linear::weight, p0.weight.shape_vec());
  if (bias) m.bias = concat(&Linear::bias, p0.bias.shape_vec());
  if (p0.scale.defined()) m.scale = concat(&Linear::scale, p0.scale.shape_vec());
  dev.synchronize();
  return m;
}

}  // namespace portllm
