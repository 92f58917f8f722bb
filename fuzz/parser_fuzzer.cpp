// libFuzzer target for the IR text format (ir/src/parser.cpp, printer.cpp,
// verifier.cpp). Any input must either parse or throw graph::Error: a crash,
// a sanitizer report, another exception type, a hang or a huge allocation is
// a bug. On success the text format's contract is checked:
//   print(parse(print(g))) == print(g)   (the printer and parser are inverses)
// and the verifier, which must accept or reject any parsed graph without
// crashing, must say the same about the original and the re-parsed graph.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "fuzz_parser: %s\n--- first:\n%s\n--- second:\n%s\n", what, a.c_str(), b.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::unique_ptr<graph::ir::Graph>> graphs;
  try {
    graphs = graph::ir::parse_all(text);
  } catch (const graph::Error&) {
    return 0;  // malformed input, reported as it should be
  }
  for (const auto& g : graphs) {
    const std::string printed = graph::ir::print(*g);
    std::unique_ptr<graph::ir::Graph> again;
    try {
      again = graph::ir::parse(printed);
    } catch (const graph::Error& e) {
      fail("the printed text does not parse", printed, e.what());
    }
    const std::string reprinted = graph::ir::print(*again);
    if (reprinted != printed) fail("print(parse(print(g))) != print(g)", printed, reprinted);
    std::string first, second;
    for (const auto& e : graph::ir::verify(*g)) first += e + "\n";
    for (const auto& e : graph::ir::verify(*again)) second += e + "\n";
    if (first != second) fail("the verifier judges the re-parsed graph differently", first, second);
  }
  return 0;
}
