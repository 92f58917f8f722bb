// graph-export: a graph as an ONNX model (graph::onnx::export_model,
// docs/onnx.md), from a saved graph (its parameters become initializers) or
// from IR text (a plugin's <fn>.opt.graph, a printed trace) plus an optional
// tensor file of parameters. Exit codes: 0 success, 1 a bad file or an op
// ONNX export refuses, 2 bad arguments (cli.h).
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "graph/error.h"
#include "graph/nn.h"
#include "graph/onnx_export.h"
#include "graph/saved_graph.h"

namespace {

using namespace graph;

constexpr const char* kUsage = R"(usage:
  graph-export -h|--help|--version
  graph-export IN -o OUT.onnx [--params FILE] [--set NAME=VALUE]... [--shape NAME=SIZES]...
      writes the graph of IN as an ONNX model (opset 17). IN is a saved
      graph (graph::save, graph-run --pack; its parameters become
      initializers) or IR text (a plugin's <fn>.opt.graph). --params binds
      the tensors of a tensor file (nn::save) to the graph inputs of the same
      names. --set gives a host-scalar input (int, float, true/false) its
      value; ONNX needs such values as constants. --shape gives a tensor
      input without one in the IR its sizes ("1,3,28,28"; -1 for a dynamic
      dim), which the export propagates. The other tensor inputs
      are the model's inputs; its outputs are output0, output1, ...
exit status: 0 success, 1 a bad file or an op the export refuses, 2 bad arguments
)";

constexpr const char* kTool = "graph-export";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::variant<int64_t, double, bool> parse_scalar(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  errno = 0;
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0' && errno != ERANGE) return int64_t{i};
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return d;
  throw UsageError("--set: '" + s + "' is not an int, a float or true/false");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int run(const std::vector<std::string>& args) {
  std::string in, out, params_file;
  onnx::ExportOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "-o" || a == "--output") out = value();
    else if (a == "--params") params_file = value();
    else if (a == "--set") {
      const std::string& kv = value();
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--set expects NAME=VALUE, got '" + kv + "'");
      options.scalars[kv.substr(0, eq)] = parse_scalar(kv.substr(eq + 1));
    } else if (a == "--shape") {
      const std::string& kv = value();
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--shape expects NAME=SIZES, got '" + kv + "'");
      std::vector<int64_t> sizes;
      std::stringstream ss(kv.substr(eq + 1));
      for (std::string part; std::getline(ss, part, ',');) {
        const auto v = parse_scalar(part);
        if (!std::holds_alternative<int64_t>(v)) throw UsageError("--shape: '" + part + "' is not a size");
        sizes.push_back(std::get<int64_t>(v));
      }
      options.input_shapes[kv.substr(0, eq)] = sizes;
    } else if (!a.empty() && a[0] == '-') throw UsageError("unknown option '" + a + "'");
    else if (in.empty()) in = a;
    else throw UsageError("one input graph expected, got '" + in + "' and '" + a + "'");
  }
  if (in.empty()) throw UsageError("no input graph");
  if (out.empty()) throw UsageError("no output file (-o OUT.onnx)");
  const std::string bytes = read_file(in);
  if (bytes.rfind("CXGSAVED", 0) == 0) {
    if (!params_file.empty()) throw UsageError("--params is for IR text; a saved graph holds its parameters");
    onnx::export_model(out, load_from_string(bytes), options);
    return 0;
  }
  std::unique_ptr<ir::Graph> g = ir::parse(bytes);
  std::map<std::string, Tensor> params;
  if (!params_file.empty())
    for (auto& [name, t] : nn::load_tensors(params_file)) params.emplace(name, t);
  onnx::export_model(out, *g, params, options);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto status = cli::answer_help_or_version(argc, argv, kTool, kUsage)) return *status;
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    return cli::usage_error(kTool, e.what());
  } catch (const std::exception& e) {
    std::cerr << kTool << ": " << e.what() << "\n";
    return 1;
  }
}
