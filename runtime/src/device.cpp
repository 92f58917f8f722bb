// Device placement shared by every build (device.h).
#include "device.h"

#include <string>

#include "graph/memory.h"
#include "storage.h"

namespace graph::detail {

Tensor empty_on(Device d, const Shape& sizes, DType dtype) {
  if (d == Device::CPU) return empty(sizes, dtype);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(n), element_size(dtype), &bytes))
    throw Error("empty: shape " + shape_str(sizes) + " is too large");
  return Tensor(std::make_shared<Storage>(bytes, d), 0, sizes, contiguous_strides(sizes), dtype);
}

Device common_device(std::string_view op, const Tensor& a, const Tensor& b) {
  const Device da = a.device(), db = b.device();
  if (da == db) return da;
  if (da == Device::CPU && a.dim() == 0) return db;
  if (db == Device::CPU && b.dim() == 0) return da;
  throw Error(std::string(op) + ": expected tensors on one device, got " + std::string(device_name(da)) + " " +
              shape_str(a.sizes()) + " and " + std::string(device_name(db)) + " " + shape_str(b.sizes()) +
              "; move one with .to(kCUDA) or .to(kCPU)");
}

}  // namespace graph::detail
