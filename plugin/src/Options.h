#pragma once
// The plugin's options (-fplugin-arg-cxxgraph-KEY=VALUE): every option, its
// parsing and its -help line in one place.
#include <string>
#include <string_view>
#include <vector>

#include "graph/dtype.h"
#include "llvm/Support/raw_ostream.h"

namespace cxxgraph {

struct Options {
  std::string copy;       // rewritten source
  std::string kernels;    // generated .graph.cpp
  std::string loops;      // its fused loops' own unit (.loops.cpp); "": in .graph.cpp
  std::string cuda;       // generated .graph.cu
  std::string graph_dir;  // .graph files
  // Extra dtype variants of each graph: compiled again with these as the
  // dtype of the tensor inputs the build would make float32.
  std::vector<graph::DType> dtypes;
  bool active() const { return !copy.empty() || !kernels.empty() || !cuda.empty(); }

  static constexpr const char* kHelp =
      "cxxgraph plugin options (-fplugin-arg-cxxgraph-KEY=VALUE):\n"
      "  copy=PATH       write the source with dispatch prologues to PATH\n"
      "  kernels=PATH    write the generated CPU kernels to PATH\n"
      "  loops=PATH      write their fused loops to PATH, a unit of their own (with kernels=)\n"
      "  cuda=PATH       write the generated CUDA kernels (.graph.cu) to PATH\n"
      "  graph-dir=DIR   write <function>.graph and <function>.opt.graph to DIR\n"
      "  dtypes=LIST     also compile each graph for these dtypes of its float32 tensor inputs\n"
      "                  (comma-separated: float64, float16, bfloat16, int32, int64 or f64, ...)\n";

  // Takes KEY=VALUE (or `help`); false for an unknown key or a bad value.
  bool set(const std::string& arg) {
    auto eq = arg.find('=');
    std::string key = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "copy") copy = value;
    else if (key == "kernels") kernels = value;
    else if (key == "loops") loops = value;
    else if (key == "cuda") cuda = value;
    else if (key == "graph-dir") graph_dir = value;
    else if (key == "dtypes") return set_dtypes(value);
    else if (key == "help") llvm::errs() << kHelp;
    else return false;
    return true;
  }

 private:
  bool set_dtypes(std::string_view list) {
    dtypes.clear();
    while (!list.empty()) {
      const size_t comma = list.find(',');
      std::string_view name = list.substr(0, comma);
      list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
      graph::DType d;
      if (!graph::dtype_from_name(name, d) || d == graph::DType::Float32 || d == graph::DType::Bool) return false;
      dtypes.push_back(d);
    }
    return true;
  }
};

}  // namespace cxxgraph
