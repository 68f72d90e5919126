#include "core/tensor.h"

#include <fmt/format.h>

#include "core/error.h"

namespace portllm {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::CPU: return "cpu";
    case DeviceKind::CUDA: return "cuda";
    case DeviceKind::MUSA: return "musa";
  }
  return "?";
}

Tensor Tensor::view_of(void* data, DType dtype, std::vector<int64_t> shape, DeviceKind device,
                       int device_index, std::shared_ptr<void> owner) {
  PL_CHECK(int(shape.size()) <= kMaxDims, "too many dims: {}", shape.size());
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = int(shape.size());
  int64_t s = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = s;
    s *= shape[i];
  }
  t.device = device;
  t.device_index = device_index;
  t.owner = std::move(owner);
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != s) return false;
    s *= shape[i];
  }
  return true;
}

std::string Tensor::shape_str() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor Tensor::reshape(std::vector<int64_t> new_shape) const {
  PL_CHECK(is_contiguous(), "reshape of a non-contiguous tensor {}", shape_str());
  int64_t n = 1, infer = -1;
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1) infer = int64_t(i);
    else n *= new_shape[i];
  }
  if (infer >= 0) new_shape[infer] = n == 0 ? 0 : numel() / n;
  Tensor t = view_of(data, dtype, new_shape, device, device_index, owner);
  PL_CHECK(t.numel() == numel(), "reshape {} -> {}", shape_str(), t.shape_str());
  return t;
}

Tensor Tensor::slice(int dim, int64_t start, int64_t length) const {
  if (dim < 0) dim += ndim;
  PL_CHECK(dim >= 0 && dim < ndim && start >= 0 && start + length <= shape[dim],
           "slice dim {} [{}, +{}) of {}", dim, start, length, shape_str());
  Tensor t = *this;
  t.data = static_cast<char*>(data) + start * strides[dim] * int64_t(dtype_size(dtype));
  t.shape[dim] = length;
  return t;
}

Tensor Tensor::select(int dim, int64_t index) const {
  if (dim < 0) dim += ndim;
  Tensor t = slice(dim, index, 1);
  for (int i = dim; i < ndim - 1; ++i) {
    t.shape[i] = t.shape[i + 1];
    t.strides[i] = t.strides[i + 1];
  }
  t.ndim = ndim - 1;
  return t;
}

}  // namespace portllm
