// A tensor is a view: a data pointer, a dtype, a shape and element strides, on a device.
// Memory is kept alive by a type-erased owner (a device buffer, an mmap'd file, a vector), so
// views of weights, caches and workspaces all look the same to kernels.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace portllm {

enum class DeviceKind : uint8_t { CPU, CUDA, MUSA };
const char* device_kind_name(DeviceKind k);

struct Tensor {
  static constexpr int kMaxDims = 5;

  void* data = nullptr;
  DType dtype = DType::F32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};  // in elements
  DeviceKind device = DeviceKind::CPU;
  int device_index = 0;
  std::shared_ptr<void> owner;  // keeps the memory alive; may be null for borrowed memory

  Tensor() = default;
  // A contiguous tensor over existing memory.
  static Tensor view_of(void* data, DType dtype, std::vector<int64_t> shape,
                        DeviceKind device = DeviceKind::CPU, int device_index = 0,
                        std::shared_ptr<void> owner = nullptr);

  bool defined() const { return data != nullptr; }
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype); }
  int64_t size(int dim) const { return shape[dim < 0 ? dim + ndim : dim]; }
  int64_t stride(int dim) const { return strides[dim < 0 ? dim + ndim : dim]; }
  bool is_contiguous() const;
  bool on_host() const { return device == DeviceKind::CPU; }
  std::vector<int64_t> shape_vec() const { return {shape.begin(), shape.begin() + ndim}; }
  std::string shape_str() const;  // "[2, 3, 4]"

  template <class T>
  T* ptr() const { return static_cast<T*>(data); }

  // Views (no copies). reshape requires a contiguous tensor.
  Tensor reshape(std::vector<int64_t> new_shape) const;
  Tensor slice(int dim, int64_t start, int64_t length) const;  // along one dim
  Tensor select(int dim, int64_t index) const;                  // drops the dim
  Tensor row(int64_t i) const { return select(0, i); }

  // Rows = all dims but the last, flattened in order. Offset (elements) of row r, so row-wise
  // kernels accept [R, D] and strided [T, H, D] views alike.
  int64_t num_rows() const { return ndim == 0 ? 1 : numel() / shape[ndim - 1]; }
  int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = ndim - 2; d >= 0; --d) {
      off += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return off;
  }
};

}  // namespace portllm
