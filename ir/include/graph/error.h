#pragma once
// graph::Error: the one exception type users see. Messages name the op and the
// operands' shapes (and, for static graphs, the source line the node came from).
#include <stdexcept>
#include <string>

namespace graph {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace graph
