#pragma once
// The unique names values get when a graph is printed (printer.cpp) or
// cloned (clone.cpp): a value's own name when free, else a numbered one.
// Both name values in the same order, so clone(g) and parse(print(g)) agree
// name for name, and code generated from either is the same text.
#include <set>
#include <string>
#include <unordered_map>

#include "graph/ir/ir.h"

namespace graph::ir::detail {

class ValueNames {
 public:
  const std::string& operator()(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    const std::string& base = v->name();
    std::string n = base;
    if (n.empty() || used_.count(n)) {
      do {
        n = base.empty() ? std::to_string(next_++) : base + "." + std::to_string(next_++);
      } while (used_.count(n));
    }
    used_.insert(n);
    return names_[v] = n;
  }

 private:
  std::unordered_map<const Value*, std::string> names_;
  std::set<std::string> used_;
  int next_ = 0;
};

}  // namespace graph::ir::detail
