#include "backend/device.h"

#include <cstdlib>
#include <cstring>

#include <fmt/ranges.h>

#include "core/error.h"

namespace portllm {

std::shared_ptr<void> Device::allocate_host(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) PL_THROW("{}: out of host memory allocating {} bytes", name(), bytes);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

std::string Device::name() const {
  if (kind() == DeviceKind::CPU) return "cpu";
  return std::string(device_kind_name(kind())) + ":" + std::to_string(index());
}

Tensor Device::empty(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (auto d : shape) {
    PL_CHECK(d >= 0 && (d == 0 || n <= (int64_t(1) << 62) / d), "tensor shape [{}] is negative or overflows",
             fmt::join(shape, ", "));
    n *= d;
  }
  size_t bytes = size_t(n) * dtype_size(dtype);
  auto mem = allocate_bytes(bytes ? bytes : 1);
  void* p = mem.get();
  return Tensor::view_of(p, dtype, std::move(shape), kind(), index(), std::move(mem));
}

Tensor Device::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t = empty(dtype, std::move(shape));
  memset(t.data, 0, t.nbytes());
  return t;
}

Tensor Device::upload(const Tensor& host) {
  PL_CHECK(host.on_host() && host.is_contiguous(), "upload needs a contiguous host tensor");
  Tensor t = empty(host.dtype, host.shape_vec());
  copy_to_device(t.data, host.data, host.nbytes());
  return t;
}

Tensor Device::download(const Tensor& dev) {
  PL_CHECK(dev.is_contiguous(), "download needs a contiguous tensor");
  auto buf = std::shared_ptr<void>(::operator new(dev.nbytes() ? dev.nbytes() : 1),
                                   [](void* p) { ::operator delete(p); });
  Tensor t = Tensor::view_of(buf.get(), dev.dtype, dev.shape_vec(), DeviceKind::CPU, 0, buf);
  copy_to_host(t.data, dev.data, dev.nbytes());
  synchronize();
  return t;
}

void Device::copy(const Tensor& dst, const Tensor& src) {
  PL_CHECK(dst.nbytes() == src.nbytes() && dst.is_contiguous() && src.is_contiguous(),
           "copy {} <- {}", dst.shape_str(), src.shape_str());
  if (dst.on_host() && src.on_host()) std::memcpy(dst.data, src.data, src.nbytes());
  else if (src.on_host()) copy_to_device(dst.data, src.data, src.nbytes());
  else if (dst.on_host()) copy_to_host(dst.data, src.data, src.nbytes());
  else copy_on_device(dst.data, src.data, src.nbytes());
}

}  // namespace portllm
