// graph-inspect: what the plugin generated for a build, for people to read.
//
//   graph-inspect --build build list
//   graph-inspect --build build show rnn_step
//   graph-inspect --build build render example_rnn/rnn_step -o rnn_step.svg
//   graph-inspect ops [--markdown]
//
// Reads the .graph / .opt.graph files cxxgraph_static_graphs() writes next
// to the generated sources (catalog.h); never runs a graph. Exit codes: 0
// success, 1 an error (unknown graph, unreadable build, failing dot), 2 bad
// arguments (cli.h: -h/--help, --version, one-line usage errors).
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "catalog.h"
#include "cli.h"
#include "dot.h"
#include "graph/error.h"
#include "graph/ir/ir.h"
#include "report.h"

namespace {

using namespace graph::inspect;
namespace ir = graph::ir;

constexpr const char* kUsage = R"(usage: graph-inspect [--build DIR] COMMAND ...
       graph-inspect -h|--help|--version
  --build DIR   the build directory to look in (default: the current directory);
                every <DIR>/**/cxxgraph/<target>/<source>/<fn>.graph is a graph
commands:
  list
      every graph the build generated: its name (<target>/<source>/<function>),
      where its C++ came from, its node and fusion group counts
  show GRAPH [--lowered] [--optimized] [--fusion] [--memory] [--source-map]
             [--input NAME=TYPE]...
      the sections asked for (all without any): the IR as lowered from the C++
      and after the passes, the fusion groups, the memory plan and which C++
      line each node came from. Graphs are generated shape-generic, so the
      memory plan places only what has static shapes: --input X=f32[3, 5]
      gives input X that type first and re-infers the rest.
  render GRAPH -o FILE [--format dot|svg|png|pdf] [--lowered]
      draws the optimized graph (the lowered one with --lowered) with
      Graphviz: fusion groups as filled clusters, If and Loop blocks as nested
      clusters. The format defaults to FILE's extension.
  ops [--markdown]
      every op and IR primitive of the op table: its kind, inputs -> outputs
      (* for a list) and traits (pure, random, reads-host, expensive,
      backward-of=OP, ...); with --markdown, the table of docs/ops.md (the
      user-facing ops: kind, result dtype, autograd, static, CUDA)
GRAPH is <target>/<source>/<function>, any '/'-suffix of it (rnn_step),
<target>/<function>, or the path of a .graph file.
exit status: 0 success, 1 an error, 2 bad arguments
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string build_dir = ".";
  std::string command, graph, output, format;
  std::vector<std::string> sections;
  bool markdown = false;
  std::map<std::string, std::string> input_types;
};

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--build") a.build_dir = value();
    else if (arg == "-o" || arg == "--output") a.output = value();
    else if (arg == "--format") a.format = value();
    else if (arg == "--markdown") a.markdown = true;
    else if (arg == "--input") {
      const std::string v = value();
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--input wants NAME=TYPE, not '" + v + "'");
      a.input_types[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (arg == "--lowered" || arg == "--optimized" || arg == "--fusion" || arg == "--memory" ||
               arg == "--source-map")
      a.sections.push_back(arg.substr(2));
    else if (arg.size() > 1 && arg[0] == '-') throw UsageError("unknown option '" + arg + "'");
    else positional.push_back(arg);
  }
  if (positional.empty()) throw UsageError("no command");
  a.command = positional[0];
  const size_t wanted = a.command == "list" || a.command == "ops" ? 1 : 2;
  if (a.command != "list" && a.command != "ops" && a.command != "show" && a.command != "render")
    throw UsageError("unknown command '" + a.command + "'");
  if (positional.size() != wanted)
    throw UsageError(a.command + (wanted == 1 ? " takes no graph" : " needs exactly one GRAPH"));
  if (wanted == 2) a.graph = positional[1];
  if (a.command == "render" && a.output.empty()) throw UsageError("render needs -o FILE");
  if (a.markdown && a.command != "ops") throw UsageError("--markdown is an option of ops");
  return a;
}

std::unique_ptr<ir::Graph> load(const std::filesystem::path& path) {
  try {
    return ir::parse(read_text(path));
  } catch (const graph::Error& e) {
    throw graph::Error("graph-inspect: " + path.string() + ": " + e.what());
  }
}

// The optimized graph when the build wrote one, else the lowered graph.
std::filesystem::path best(const GraphFiles& g) { return g.optimized.empty() ? g.lowered : g.optimized; }

// "rnn.cpp:10-15": the lines a graph's nodes came from, in the file most of
// them came from; other files (inlined callees) are named after a '+'.
std::string line_range(const ir::Graph& g) {
  std::map<std::string, std::pair<int, int>> lines;  // file -> (first, last)
  std::map<std::string, int> count;
  ir::walk(g.top(), [&](const ir::Node* n) {
    if (!n->loc().valid()) return;
    const std::string file = std::filesystem::path(n->loc().file).filename().string();
    auto [it, fresh] = lines.try_emplace(file, n->loc().line, n->loc().line);
    it->second = {std::min(it->second.first, n->loc().line), std::max(it->second.second, n->loc().line)};
    ++count[file];
  });
  if (lines.empty()) return "?";
  const auto main = std::max_element(count.begin(), count.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto [lo, hi] = lines[main->first];
  std::string text = main->first + ":" + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
  for (const auto& [file, n] : count)
    if (file != main->first) text += " + " + file;
  return text;
}

void list(const std::vector<GraphFiles>& graphs) {
  if (graphs.empty()) {
    std::cout << "no generated graphs (no target of this build uses cxxgraph_static_graphs, or it is not built "
                 "yet)\n";
    return;
  }
  size_t width = 5;
  for (const auto& g : graphs) width = std::max(width, g.qualified_name().size());
  std::cout << std::string("graph") + std::string(width - 3, ' ') << "nodes  fusion groups  C++\n";
  for (const auto& g : graphs) {
    const auto graph = load(best(g));
    int nodes = 0, groups = 0;
    ir::walk(graph->top(), [&](const ir::Node* n) { ++nodes, groups += n->is(graph::OpId::FusionGroup); });
    std::string name = g.qualified_name();
    name.resize(width + 2, ' ');
    std::string count = std::to_string(nodes);
    count.resize(7, ' ');
    std::string fused = std::to_string(groups);
    fused.resize(15, ' ');
    std::cout << name << count << fused << line_range(*graph) << "\n";
  }
}

void section(const std::string& title, const std::string& body) {
  std::cout << "== " << title << " ==\n" << body << (body.empty() || body.back() == '\n' ? "" : "\n") << "\n";
}

void show(const GraphFiles& files, const Args& a) {
  auto wants = [&](const std::string& s) {
    return a.sections.empty() || std::find(a.sections.begin(), a.sections.end(), s) != a.sections.end();
  };
  if (!files.generated_dir.empty())
    std::cout << "generated C++: " << (files.generated_dir / (files.stem + ".graph.cpp")).string() << "\n\n";
  if (!files.lowered.empty() && wants("lowered"))
    section("IR as lowered from C++ (" + files.lowered.string() + ")", read_text(files.lowered));
  auto graph = load(best(files));
  if (!files.optimized.empty() && wants("optimized"))
    section("IR after the passes (" + files.optimized.string() + ")", ir::print(*graph));
  if (wants("fusion")) section("fusion groups", fusion_report(*graph));
  if (wants("memory")) {
    if (!a.input_types.empty()) specialize_inputs(*graph, a.input_types);
    section("memory plan", memory_report(*graph));
  }
  if (wants("source-map")) section("source map: C++ line -> IR nodes", source_map(*graph));
}

void render_graph(const GraphFiles& files, const Args& a) {
  const bool lowered = std::find(a.sections.begin(), a.sections.end(), "lowered") != a.sections.end();
  const auto path = lowered || files.optimized.empty() ? files.lowered : files.optimized;
  const auto graph = load(path);
  std::string format = a.format;
  if (format.empty()) {
    format = std::filesystem::path(a.output).extension().string();
    if (!format.empty()) format.erase(0, 1);
  }
  const std::string title = graph->name() + (lowered ? " (as lowered)" : " (optimized)") + "\n" + path.string();
  render(to_dot(*graph, title), format, a.output);
  std::cout << "wrote " << a.output << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto answered = graph::cli::answer_help_or_version(argc, argv, "graph-inspect", kUsage)) return *answered;
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    return graph::cli::usage_error("graph-inspect", e.what());
  }
  try {
    if (args.command == "ops") {  // the op table: no build needed
      std::cout << (args.markdown ? op_markdown() : op_listing());
      return 0;
    }
    const bool file_given = args.graph.size() > 6 && args.graph.ends_with(".graph");
    const auto graphs =
        file_given && std::filesystem::is_regular_file(args.graph) ? std::vector<GraphFiles>{} : find_graphs(args.build_dir);
    if (args.command == "list") list(graphs);
    else if (args.command == "show") show(resolve(graphs, args.graph), args);
    else render_graph(resolve(graphs, args.graph), args);
  } catch (const graph::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "graph-inspect: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
