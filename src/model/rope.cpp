#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"

namespace portllm {

double yarn_get_mscale(double scale, double mscale) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

namespace {
// The yarn correction range: dims that rotate fewer than beta_slow / more than beta_fast times
// over the original context are interpolated / extrapolated, with a linear ramp between.
double correction_dim(double rotations, int dim, double base, double max_pos) {
  return (dim * std::log(max_pos / (rotations * 2 * M_PI))) / (2 * std::log(base));
}
}  // namespace

RopeFrequencies rope_frequencies(const RopeConfig& r, int rot_dim) {
  PL_CHECK(rot_dim > 0 && rot_dim % 2 == 0, "rotary dim {} must be even", rot_dim);
  RopeFrequencies out;
  const int half = rot_dim / 2;
  out.inv_freq.resize(size_t(half));
  for (int i = 0; i < half; ++i) out.inv_freq[size_t(i)] = 1.0 / std::pow(r.theta, double(2 * i) / rot_dim);

  if (r.type == "linear") {
    for (auto& f : out.inv_freq) f /= r.factor;
  } else if (r.type == "llama3") {
    const double old_len = double(r.original_max_position_embeddings);
    const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
    for (auto& f : out.inv_freq) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f /= r.factor;
      } else {
        const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = (1 - smooth) * f / r.factor + smooth * f;
      }
    }
  } else if (r.type == "yarn") {
    const double max_pos = double(r.original_max_position_embeddings);
    double low = correction_dim(r.beta_fast, rot_dim, r.theta, max_pos);
    double high = correction_dim(r.beta_slow, rot_dim, r.theta, max_pos);
    if (r.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(rot_dim - 1));
    if (low == high) high += 0.001;
    for (int i = 0; i < half; ++i) {
      const double extrap = out.inv_freq[size_t(i)], interp = extrap / r.factor;
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double extrap_weight = 1.0 - ramp;
      out.inv_freq[size_t(i)] = interp * (1 - extrap_weight) + extrap * extrap_weight;
    }
    if (r.attention_factor) out.attention_factor = *r.attention_factor;
    else if (r.mscale && r.mscale_all_dim && *r.mscale && *r.mscale_all_dim)
      out.attention_factor = yarn_get_mscale(r.factor, *r.mscale) / yarn_get_mscale(r.factor, *r.mscale_all_dim);
    else
      out.attention_factor = yarn_get_mscale(r.factor, 1.0);
  }
  // "default", "mrope" (text positions: all sections equal) and "dynamic" (below the original
  // length it equals default) use the plain frequencies.
  return out;
}

Tensor rope_cos_sin_table(const RopeConfig& r, int rot_dim, int64_t max_pos) {
  const RopeFrequencies f = rope_frequencies(r, rot_dim);
  const int half = rot_dim / 2;
  auto buf = std::shared_ptr<float[]>(new float[size_t(max_pos * rot_dim)]);
  float* p = buf.get();
  for (int64_t pos = 0; pos < max_pos; ++pos)
    for (int i = 0; i < half; ++i) {
      // Same float32 arithmetic order as transformers: freqs = pos * inv_freq in f32.
      const float angle = float(pos) * float(f.inv_freq[size_t(i)]);
      p[pos * rot_dim + i] = float(std::cos(double(angle)) * f.attention_factor);
      p[pos * rot_dim + half + i] = float(std::sin(double(angle)) * f.attention_factor);
    }
  return Tensor::view_of(p, DType::F32, {max_pos, rot_dim}, DeviceKind::CPU, 0,
                         std::shared_ptr<void>(buf, buf.get()));
}

}  // namespace portllm
