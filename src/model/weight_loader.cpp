#include "model/weight_loader.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>

#include "core/error.h"
#include "core/thread_pool.h"

namespace portllm {

namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}
}  // namespace

WeightLoader::WeightLoader(std::string dir, std::string format, const ModelConfig& cfg,
                           Device& device, uint64_t seed)
    : dir_(std::move(dir)), cfg_(&cfg), device_(&device), seed_(seed) {
  if (format == "dummy") dummy_ = true;
  else if (format == "auto" || format == "safetensors") ckpt_ = Checkpoint::open_dir(dir_);
  else PL_THROW("--load-format '{}': expected auto, safetensors or dummy", format);
}

bool WeightLoader::has(const std::string& name) const { return dummy_ || ckpt_->has(name); }

std::vector<int64_t> WeightLoader::stored_shape(const std::string& name, const std::vector<int64_t>& dummy_shape) const {
  if (dummy_ || !ckpt_->has(name)) return dummy_shape;
  return ckpt_->entry(name).shape;
}

bool WeightLoader::is_fp8_linear(const std::string& prefix) const {
  if (!dummy_) return ckpt_->has(prefix + ".weight") && ckpt_->entry(prefix + ".weight").dtype == DType::F8E4M3;
  if (cfg_->quant.method != "fp8") return false;
  // Entries name modules ("lm_head", "model.layers.0.mlp.gate", "mlp.gate"): match whole
  // dot-separated components, so "model.layers.1.mlp.gate" does not exclude layer 10 or gate_proj.
  const std::string dotted = "." + prefix + ".";
  for (auto& m : cfg_->quant.modules_to_not_convert)
    if (!m.empty() && dotted.find("." + m + ".") != std::string::npos) return false;
  return true;
}

DType WeightLoader::stored_dtype(const std::string& name) const {
  if (!dummy_) return ckpt_->entry(name).dtype;
  return cfg_->dtype;
}

Tensor WeightLoader::dummy_tensor(const std::string& name, const std::vector<int64_t>& shape, DType dtype) const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  const bool is_norm = shape.size() == 1 && name.find("norm") != std::string::npos;
  const bool is_scale = ends_with(name, "scale_inv") || ends_with(name, "weight_scale");
  const float fan_in = shape.empty() ? 1.f : float(shape.back());
  const uint64_t seed = seed_ ^ fnv1a(name);
  std::shared_ptr<void> buf(::operator new(std::max<size_t>(1, size_t(n) * dtype_size(dtype))),
                            [](void* p) { ::operator delete(p); });
  // Counter-based random numbers (splitmix64 of seed + index): the same tensor whatever the
  // thread count, and fast enough for multi-GB embeddings.
  ThreadPool::global().parallel_for(n, [&](int64_t b, int64_t e, int) {
    constexpr int64_t kChunk = 4096;
    float vals[kChunk];
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t m = std::min(kChunk, e - c);
      for (int64_t i = 0; i < m; ++i) {
        uint64_t z = seed + uint64_t(c + i) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const float u = float(z >> 40) * 0x1.0p-23f - 1.f;  // uniform in [-1, 1)
        if (is_scale) vals[i] = 1.f / (448.f * std::sqrt(fan_in)) * (1.f + 0.1f * u);
        else if (is_norm) vals[i] = 1.f + 0.05f * u;
        else if (dtype == DType::F8E4M3) vals[i] = 448.f * u;
        else vals[i] = u / std::sqrt(fan_in);
      }
      convert_from_f32(dtype, vals, static_cast<char*>(buf.get()) + c * int64_t(dtype_size(dtype)), size_t(m));
    }
  }, 1 << 16);
  return Tensor::view_of(buf.get(), dtype, shape, DeviceKind::CPU, 0, buf);
}

Tensor WeightLoader::load_host(const std::string& name, const std::vector<int64_t>& shape,
                               std::optional<DType> dummy_dtype) {
  if (dummy_) {
    DType dt = dummy_dtype.value_or(cfg_->dtype);
    return dummy_tensor(name, shape, dt);
  }
  if (!ckpt_->has(name)) PL_THROW("{}: missing tensor '{}' (expected shape {})", dir_, name, shape_str(shape));
  const SafetensorsEntry& e = ckpt_->entry(name);
  if (e.shape != shape)
    PL_THROW("{}: tensor '{}' has shape {} but the config implies {}", ckpt_->file_of(name), name,
             shape_str(e.shape), shape_str(shape));
  consumed_.insert(name);
  return ckpt_->tensor(name);
}

Tensor WeightLoader::to_device(const Tensor& host, ShardSpec shard) {
  Tensor part = host;
  if (shard.world > 1 && shard.dim >= 0) {
    const int64_t full = host.size(shard.dim);
    if (full % shard.world != 0)
      PL_THROW("tensor of shape {} cannot be split {} ways along dim {}", host.shape_str(), shard.world, shard.dim);
    part = host.slice(shard.dim, full / shard.world * shard.rank, full / shard.world);
  }
  if (device_->kind() == DeviceKind::CPU && part.is_contiguous()) return part;  // zero-copy
  Tensor out = device_->empty(part.dtype, part.shape_vec());
  if (part.is_contiguous()) {
    device_->copy(out, part);
  } else {
    // A dim-1 shard of a 2-D weight: gather the rows' slices into a contiguous host buffer.
    std::vector<uint8_t> tmp(part.nbytes());
    const size_t row_bytes = size_t(part.size(1)) * dtype_size(part.dtype);
    for (int64_t r = 0; r < part.size(0); ++r)
      std::memcpy(tmp.data() + r * row_bytes,
                  static_cast<const uint8_t*>(part.data) + r * part.strides[0] * dtype_size(part.dtype), row_bytes);
    device_->copy_to_device(out.data, tmp.data(), tmp.size());
    device_->synchronize();
  }
  return out;
}

Tensor WeightLoader::load(const std::string& name, const std::vector<int64_t>& shape, ShardSpec shard,
                          std::optional<DType> dummy_dtype) {
  return to_device(load_host(name, shape, dummy_dtype), shard);
}

std::optional<Tensor> WeightLoader::load_optional(const std::string& name, const std::vector<int64_t>& shape,
                                                  ShardSpec shard) {
  if (dummy_ || !ckpt_->has(name)) return std::nullopt;
  return load(name, shape, shard);
}

Tensor WeightLoader::derived(const std::string& key, const std::function<Tensor()>& make) {
  auto it = derived_.find(key);
  if (it != derived_.end()) return it->second;
  return derived_[key] = make();
}

void WeightLoader::finish() const {
  if (dummy_) return;
  for (const auto& name : ckpt_->names()) {
    if (consumed_.count(name)) continue;
    bool ignored = false;
    for (auto& p : ignored_) ignored |= name.rfind(p, 0) == 0;
    if (ends_with(name, "rotary_emb.inv_freq")) ignored = true;  // buffers some exporters save
    const std::string layers = "model.layers.";
    if (ignore_layers_from_ >= 0 && name.rfind(layers, 0) == 0 &&
        std::atoll(name.c_str() + layers.size()) >= ignore_layers_from_)
      ignored = true;
    if (!ignored) PL_THROW("{}: unexpected tensor '{}' (not used by {})", ckpt_->file_of(name), name, cfg_->architecture);
  }
}

}  // namespace portllm
