// graph-run: runs a saved graph (graph::save, docs/saved-graph-format.md) on
// inputs from the command line, without the C++ source it came from.
//
//   graph-run MODEL --input x=x.tensor --input n=3 --output out.tensor --print
//
// Each free input (one no saved parameter binds) is given once as NAME=VALUE:
// a tensor input reads VALUE as a tensor file (the nn::save format; the file's
// only tensor, or the one named NAME), a scalar input parses it as an int,
// float or bool. Outputs go to one tensor file (output0, output1, ...; scalars
// as 0-d tensors) and/or to stdout. Helper modes write and show tensor files
// and pack a .graph file plus parameters into a saved graph. Exit codes: 0
// success, 1 a bad file or a failing run, 2 bad arguments (cli.h: -h/--help,
// --version, one-line usage errors).
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "graph/error.h"
#include "graph/nn.h"
#include "graph/saved_graph.h"

namespace {

using namespace graph;

constexpr const char* kUsage = R"(usage:
  graph-run -h|--help|--version
  graph-run MODEL [--input NAME=VALUE]... [--output FILE] [--print] [--threads N]
      runs the saved graph MODEL. Every free input is given once: a tensor
      input's VALUE is a tensor file (its only tensor, or the one named NAME);
      an int, float or bool input's VALUE is the number (true/false for bool).
      --output writes the outputs to a tensor file as output0, output1, ...
      (scalars as 0-d tensors, a list's elements as outputK.0, outputK.1, ...);
      --print prints them. Without either, --print is implied. --threads N
      runs the interpreter on N threads (0, the default: GRAPH_NUM_THREADS,
      else every core).
  graph-run --info MODEL
      prints the graph's inputs (free or bound by a parameter), the
      parameters and the IR text.
  graph-run --make-tensor FILE DTYPE SHAPE [VALUE...]
      writes a tensor file holding one tensor named "tensor". DTYPE is
      f32 f64 f16 bf16 i32 i64 or i1; SHAPE is comma-separated sizes ("2,3";
      "" or "[]" for a 0-d tensor); the VALUEs, row-major, are numel() numbers
      or one number for every element. Example:
        graph-run --make-tensor x.tensor f32 1,3 0.5 -1 2
  graph-run --show FILE
      prints every tensor of a tensor file.
  graph-run --pack OUT IN.graph [PARAMS]
      saves the graph of IN.graph (IR text, e.g. a plugin's <fn>.graph) with
      the tensors of the tensor file PARAMS (nn::save) as its parameters,
      each bound to the graph input of the same name.
exit status: 0 success, 1 a bad file or a failing run, 2 bad arguments
)";

// A command-line mistake: exit status 2 with the usage hint.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t parse_int(const std::string& s, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) throw UsageError(what + ": '" + s + "' is not an integer");
  return v;
}

double parse_float(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') throw UsageError(what + ": '" + s + "' is not a number");
  return v;
}

bool parse_bool(const std::string& s, const std::string& what) {
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  throw UsageError(what + ": '" + s + "' is not a bool (true, false, 1 or 0)");
}

DType parse_dtype(const std::string& s) {
  for (DType t : kAllDTypes)
    if (dtype_token(t) == s) return t;
  throw UsageError("unknown dtype '" + s + "' (f32 f64 f16 bf16 i32 i64 i1)");
}

Shape parse_shape(std::string s) {
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  Shape out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    const int64_t n = parse_int(part, "shape");
    if (n < 0) throw UsageError("shape: negative size " + part);
    out.push_back(n);
  }
  return out;
}

// ---- --make-tensor and --show ------------------------------------------------

int make_tensor(const std::vector<std::string>& args) {
  if (args.size() < 3) throw UsageError("--make-tensor needs FILE DTYPE SHAPE [VALUE...]");
  const DType dtype = parse_dtype(args[1]);
  const Shape shape = parse_shape(args[2]);
  const std::vector<std::string> values(args.begin() + 3, args.end());
  const int64_t n = empty(shape, kBool).numel();
  if (static_cast<int64_t>(values.size()) != n && values.size() != 1)
    throw UsageError("--make-tensor: shape " + shape_str(shape) + " needs " + std::to_string(n) +
                     " values (or one for all), got " + std::to_string(values.size()));
  // Integers are parsed as int64 so large values stay exact; the rest as double.
  const bool integral = dtype == kInt32 || dtype == kInt64;
  Tensor t = empty(shape, integral ? kInt64 : kFloat64);
  for (int64_t i = 0; i < n; ++i) {
    const std::string& v = values[values.size() == 1 ? 0 : i];
    const std::string what = "value " + std::to_string(i);
    if (integral) t.data_ptr<int64_t>()[i] = parse_int(v, what);
    else if (dtype == kBool) t.data_ptr<double>()[i] = parse_bool(v, what);
    else t.data_ptr<double>()[i] = parse_float(v, what);
  }
  nn::save_tensors({{"tensor", t.to(dtype)}}, args[0]);
  return 0;
}

void print_value(const std::string& name, const IValue& v) {
  if (const auto* t = std::get_if<Tensor>(&v)) {
    std::cout << name << " = " << t->to_string() << "\n";
  } else if (const auto* list = std::get_if<TensorList>(&v)) {
    for (size_t i = 0; i < list->size(); ++i) print_value(name + "." + std::to_string(i), (*list)[i]);
  } else {
    std::cout << name << " = " << detail::describe(v) << "\n";
  }
}

int show(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("--show needs one FILE");
  for (auto& [name, t] : nn::load_tensors(args[0])) print_value(name, t);
  return 0;
}

// ---- --pack and --info -----------------------------------------------------------

int pack(const std::vector<std::string>& args) {
  if (args.size() != 2 && args.size() != 3) throw UsageError("--pack needs OUT IN.graph [PARAMS]");
  std::ifstream in(args[1]);
  if (!in) throw Error("cannot read '" + args[1] + "'");
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<ir::Graph> g;
  try {
    g = ir::parse(text.str());
  } catch (const Error& e) {
    throw Error(args[1] + ":" + e.what());
  }
  std::map<std::string, Tensor> params;
  if (args.size() == 3)
    for (auto& [name, t] : nn::load_tensors(args[2])) params.emplace(name, t);
  save(args[0], *g, params);
  return 0;
}

int info(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("--info needs one MODEL");
  const SavedGraph m = load(args[0]);
  std::cout << "graph " << m.graph->name() << "\ninputs:\n";
  for (const auto& v : m.graph->inputs()) {
    auto it = m.params.find(v->name());
    std::cout << "  %" << v->name() << " : " << v->type().str();
    if (it != m.params.end())
      std::cout << "  (parameter " << dtype_token(it->second.dtype()) << shape_str(it->second.sizes()) << ")";
    std::cout << "\n";
  }
  std::cout << "outputs: " << m.graph->outputs().size() << "\n\n" << ir::print(*m.graph);
  return 0;
}

// ---- running ---------------------------------------------------------------------

IValue input_value(const ir::Value& input, const std::string& text) {
  const std::string what = "input '" + input.name() + "'";
  switch (input.type().kind) {
    case ir::Type::Kind::Int: return parse_int(text, what);
    case ir::Type::Kind::Float: return parse_float(text, what);
    case ir::Type::Kind::Bool: return parse_bool(text, what);
    case ir::Type::Kind::List: throw UsageError(what + ": list inputs cannot be given on the command line");
    case ir::Type::Kind::Tensor: break;
  }
  const nn::NamedTensors file = nn::load_tensors(text);
  if (file.size() == 1) return file[0].second;
  std::string names;
  for (auto& [name, t] : file) {
    if (name == input.name()) return t;
    names += (names.empty() ? "'" : ", '") + name + "'";
  }
  throw Error(what + ": '" + text + "' holds " + std::to_string(file.size()) + " tensors (" +
              (names.empty() ? "none" : names) + "), none named '" + input.name() + "'");
}

void collect_outputs(const std::string& name, const IValue& v, nn::NamedTensors& out) {
  if (const auto* t = std::get_if<Tensor>(&v)) out.emplace_back(name, *t);
  else if (const auto* i = std::get_if<int64_t>(&v)) out.emplace_back(name, full({}, *i, kInt64));
  else if (const auto* d = std::get_if<double>(&v)) out.emplace_back(name, full({}, *d, kFloat64));
  else if (const auto* b = std::get_if<bool>(&v)) out.emplace_back(name, full({}, *b, kBool));
  else if (const auto* list = std::get_if<TensorList>(&v))
    for (size_t i = 0; i < list->size(); ++i) out.emplace_back(name + "." + std::to_string(i), (*list)[i]);
}

int run_model(const std::vector<std::string>& args) {
  std::string model, output;
  bool print = false;
  RunOptions options;
  std::map<std::string, std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--input" && has_value) {
      const std::string& kv = args[++i];
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--input expects NAME=VALUE, got '" + kv + "'");
      if (!given.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
        throw UsageError("input '" + kv.substr(0, eq) + "' is given twice");
    } else if (a == "--output" && has_value) {
      output = args[++i];
    } else if (a == "--threads" && has_value) {
      const int64_t n = parse_int(args[++i], "--threads");
      if (n < 0 || n > 1024) throw UsageError("--threads: " + std::to_string(n) + " is not in 0..1024");
      options.threads = static_cast<int>(n);
    } else if (a == "--print") {
      print = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown or incomplete option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      throw UsageError("unexpected argument '" + a + "' (inputs are given as --input NAME=VALUE)");
    }
  }
  if (model.empty()) throw UsageError("no MODEL given");

  const SavedGraph m = load(model);
  std::vector<IValue> inputs;
  for (const ir::Value* v : m.free_inputs()) {
    auto it = given.find(v->name());
    if (it == given.end())
      throw UsageError("missing --input " + v->name() + "=... (a " + v->type().str() + ")");
    inputs.push_back(input_value(*v, it->second));
    given.erase(it);
  }
  if (!given.empty()) {
    const std::string name = given.begin()->first;
    throw UsageError("input '" + name + "': " +
                     (m.params.count(name) ? "bound by a saved parameter" : "the graph has no such input"));
  }

  const std::vector<IValue> outputs = run_saved(m, std::move(inputs), options);
  nn::NamedTensors named;
  for (size_t i = 0; i < outputs.size(); ++i) collect_outputs("output" + std::to_string(i), outputs[i], named);
  if (!output.empty()) nn::save_tensors(named, output);
  if (print || output.empty())
    for (size_t i = 0; i < outputs.size(); ++i) print_value("output" + std::to_string(i), outputs[i]);
  return 0;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("no arguments");
  const std::string& mode = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (mode == "--make-tensor") return make_tensor(rest);
  if (mode == "--show") return show(rest);
  if (mode == "--pack") return pack(rest);
  if (mode == "--info") return info(rest);
  return run_model(args);
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto answered = graph::cli::answer_help_or_version(argc, argv, "graph-run", kUsage)) return *answered;
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    return graph::cli::usage_error("graph-run", e.what());
  } catch (const std::exception& e) {  // graph::Error, and bad_alloc on a huge input file
    std::cerr << "graph-run: " << e.what() << "\n";
    return 1;
  }
}
