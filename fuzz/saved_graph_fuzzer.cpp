// libFuzzer target for the saved-graph loader (runtime/src/saved_graph.cpp,
// and through it the tensor records of serialize.cpp, the IR parser and the
// verifier). Any input must either load or throw graph::Error: a crash, a
// sanitizer report, another exception type (std::bad_alloc included), a hang
// or a huge allocation is a bug. A loaded graph is never run (a Loop may
// legally run for 2^63 iterations); instead the format's contract is checked:
// saving what was loaded and loading it again gives the same graph and the
// same parameters, and saving that gives the same bytes (the format is
// canonical once written by save).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "graph/error.h"
#include "graph/saved_graph.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_saved_graph: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool same_bytes(const graph::Tensor& a, const graph::Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const size_t n = static_cast<size_t>(a.numel()) * graph::element_size(a.dtype());
  return n == 0 || std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), n) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graph::SavedGraph first;
  try {
    first = graph::load_from_string(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const graph::Error&) {
    return 0;  // malformed input, reported as it should be
  }
  std::string saved, again;
  graph::SavedGraph second;
  try {
    saved = graph::save_to_string(*first.graph, first.params);
    second = graph::load_from_string(saved);
    again = graph::save_to_string(*second.graph, second.params);
  } catch (const graph::Error& e) {
    fail("a loaded graph does not save and load again", e.what());
  }
  if (again != saved) fail("save(load(save(g))) != save(g)", graph::ir::print(*first.graph));
  if (graph::ir::print(*second.graph) != graph::ir::print(*first.graph))
    fail("the graph changed in a save/load round trip", graph::ir::print(*first.graph));
  if (second.params.size() != first.params.size()) fail("parameters lost in a round trip", "");
  for (const auto& [name, t] : first.params) {
    auto it = second.params.find(name);
    if (it == second.params.end() || !same_bytes(t, it->second)) fail("parameter changed in a round trip", name);
  }
  return 0;
}
