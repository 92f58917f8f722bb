#pragma once
// Finding the graphs a build generated.
//
// cxxgraph_static_graphs() writes, per target and source, into
//   <build>/<dir>/cxxgraph/<target>/<stem>/<fn>.graph      (as lowered)
//   <build>/<dir>/cxxgraph/<target>/<stem>/<fn>.opt.graph  (after the passes)
// A graph is named "<target>/<stem>/<fn>"; lookups accept that, any suffix of
// it at a '/' ("rnn_rnn/rnn_step", "rnn_step"), "<target>/<fn>", or the path
// of a .graph file.
#include <filesystem>
#include <string>
#include <vector>

namespace graph::inspect {

struct GraphFiles {
  std::string target;                 // example_rnn
  std::string stem;                   // rnn_rnn (the source, path separators as '_')
  std::string function;               // rnn_step
  std::filesystem::path lowered;      // <fn>.graph
  std::filesystem::path optimized;    // <fn>.opt.graph (empty when absent)
  std::filesystem::path generated_dir;  // <build>/.../cxxgraph/<target>

  std::string qualified_name() const { return target + "/" + stem + "/" + function; }
};

// Every graph under `build_dir`, sorted by qualified name, leaving out the
// build trees nested in it (directories below it with their own
// CMakeCache.txt). Throws graph::Error when `build_dir` is not a directory.
std::vector<GraphFiles> find_graphs(const std::filesystem::path& build_dir);

// The one graph `name` designates among `graphs` (see above), or the .graph
// file `name` itself. Throws graph::Error naming the candidates when none or
// several match.
GraphFiles resolve(const std::vector<GraphFiles>& graphs, const std::string& name);

// The whole file as a string; graph::Error when it cannot be read.
std::string read_text(const std::filesystem::path& path);

}  // namespace graph::inspect
