// Broadcasting geometry for the CPU loops.
#include "graph/cpu_loop.h"

#include <algorithm>
#include <string>

namespace graph::cpu {

namespace {

// "[2, 3] and [4]" or "[2], [3] and [4]".
std::string list_shapes(const Shape* shapes, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i) out += i + 1 == count ? " and " : ", ";
    out += shape_str(shapes[i]);
  }
  return out;
}


Shape broadcast(std::string_view op, const Shape* first, size_t count) {
  const Shape* last = first + count;
  size_t rank = 0;
  for (const Shape* s = first; s != last; ++s) rank = std::max(rank, s->size());
  // Align shapes at their last dim; a missing or size-1 dim takes the other
  // operands' size, and any two sizes other than 1 must agree.
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t& size = out[rank - 1 - i];
    for (const Shape* sp = first; sp != last; ++sp) {
      const Shape& s = *sp;
      if (i >= s.size()) continue;
      const int64_t n = s[s.size() - 1 - i];
      if (n == 1 || n == size) continue;
      if (size != 1) {
        throw Error(std::string(op) + ": shapes " + list_shapes(first, count) + " cannot be broadcast");
      }
      size = n;
    }
  }
  return out;
}

}  // namespace

Shape broadcast_shapes(std::string_view op, const std::vector<Shape>& shapes) {
  return broadcast(op, shapes.data(), shapes.size());
}

Shape broadcast_shapes(std::string_view op, std::initializer_list<Shape> shapes) {
  return broadcast(op, shapes.begin(), shapes.size());
}


Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  const Shape& sizes = t.sizes();
  auto fail = [&] {
    return Error("broadcast: shape " + shape_str(sizes) + " cannot be broadcast to " +
                 shape_str(shape));
  };
  if (sizes.size() > shape.size()) throw fail();
  const size_t lead = shape.size() - sizes.size();
  Shape strides(shape.size(), 0);  // leading dims `t` lacks read its data again
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == shape[lead + d]) {
      strides[lead + d] = t.strides()[d];
    } else if (sizes[d] != 1) {
      throw fail();
    }
  }
  return strides;
}

}  // namespace graph::cpu
