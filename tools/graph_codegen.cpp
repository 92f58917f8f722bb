// graph-codegen: one .graph file in, one generated C++ source out.
//
//   graph-codegen <in.graph> <out.cpp> [--mangled NAME] [--hash H] [--print-ir] [--cuda OUT.cu]
//
// Parses every graph of the file (lowered IR, as the plugin writes it to
// <fn>.graph), compiles each through codegen::compile_unit, the path the
// plugin takes: ir::compile (compile.h: the passes, verified after each, and
// the gradient graphs; GRAPH_DUMP_AFTER shows the IR after each pass), then
// writes the CPU source that registers each graph with its gradient and its
// lowered IR (so calls in other dtypes run it specialized). This tool makes
// codegen testable and inspectable without Clang. --mangled names
// the first graph's registry key (default: the graph's name); --hash is the
// body hash for all of them (default "0"); --print-ir prints the optimized IR;
// --cuda also writes the CUDA kernels of the fusion groups (.graph.cu).
// Exit codes: 0 success, 1 an unreadable or invalid graph, 2 bad arguments
// (cli.h: -h/--help, --version, one-line usage errors).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "graph/codegen/cpp.h"
#include "graph/codegen/unit.h"
#include "graph/error.h"
#include "graph/ir/ir.h"

namespace {

constexpr const char* kUsage = R"(usage: graph-codegen IN.graph OUT.cpp [--mangled NAME] [--hash H] [--print-ir] [--cuda OUT.cu]
       graph-codegen -h|--help|--version
  Compiles every graph of IN.graph (lowered IR text, as the plugin writes it)
  as the plugin does (ir::compile: the passes and the gradient graphs) and
  writes the C++ source that implements and registers them, with their
  gradients and their lowered IR (calls in other dtypes run it specialized).
  GRAPH_DUMP_AFTER=all (or =pass,pass) prints the IR after those passes.
  --mangled NAME  the first graph's registry key (default: its name)
  --hash H        the body hash every graph is registered with (default: 0)
  --print-ir      print the optimized IR on stdout (not the gradient graphs)
  --cuda OUT.cu   also write the CUDA kernels of the fusion groups
exit status: 0 success, 1 an unreadable or invalid graph, 2 bad arguments
)";

// "model.cpp:12" from the first node that carries a location, else the
// .graph file itself.
std::string source_of(const graph::ir::Graph& g, const std::string& fallback) {
  std::string found;
  graph::ir::walk(g.top(), [&](const graph::ir::Node* n) {
    if (found.empty() && n->loc().valid()) found = n->loc().file + ":" + std::to_string(n->loc().line);
  });
  return found.empty() ? fallback : found;
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto answered = graph::cli::answer_help_or_version(argc, argv, "graph-codegen", kUsage)) return *answered;
  std::vector<std::string> positional;
  std::string mangled, hash = "0", cuda_path;
  bool print_ir = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool valued = a == "--mangled" || a == "--hash" || a == "--cuda";
    if (valued && i + 1 >= argc) return graph::cli::usage_error("graph-codegen", a + " needs a value");
    if (a == "--mangled") mangled = argv[++i];
    else if (a == "--hash") hash = argv[++i];
    else if (a == "--cuda") cuda_path = argv[++i];
    else if (a == "--print-ir") print_ir = true;
    else if (a.size() > 1 && a[0] == '-') return graph::cli::usage_error("graph-codegen", "unknown option '" + a + "'");
    else positional.push_back(a);
  }
  if (positional.size() != 2)
    return graph::cli::usage_error("graph-codegen", "wants IN.graph and OUT.cpp, got " +
                                                        std::to_string(positional.size()) + " arguments");
  const std::string& in_path = positional[0];
  const std::string& out_path = positional[1];

  std::ifstream in(in_path);
  if (!in) {
    std::cerr << "graph-codegen: cannot read " << in_path << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();

  try {
    const auto lowered = graph::ir::parse_all(text.str());
    std::vector<graph::codegen::CompiledUnit> compiled;
    std::vector<graph::codegen::GraphUnit> units;
    for (size_t i = 0; i < lowered.size(); ++i) {
      const graph::ir::Graph& g = *lowered[i];
      graph::codegen::UnitOptions o{i == 0 && !mangled.empty() ? mangled : g.name(), hash, source_of(g, in_path)};
      o.verify_each_pass = true;  // a tool for inspection: name the pass that broke a graph
      o.module = &lowered;        // call{callee=...} of another graph of the file
      compiled.push_back(graph::codegen::compile_unit(g, o));
      if (print_ir) std::cout << graph::ir::print(*compiled.back().optimized);
      units.push_back(compiled.back().unit);
    }
    const std::string source = graph::codegen::generate_cpu_source(units, in_path);
    std::ofstream out(out_path);
    out << source;
    if (!out) {
      std::cerr << "graph-codegen: cannot write " << out_path << "\n";
      return 1;
    }
    if (!cuda_path.empty()) {
      std::ofstream cu(cuda_path);
      cu << graph::codegen::generate_cuda_source(units, in_path);
      if (!cu) {
        std::cerr << "graph-codegen: cannot write " << cuda_path << "\n";
        return 1;
      }
    }
  } catch (const graph::Error& e) {
    std::cerr << in_path << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
