// graph::save / load: a graph and its parameters in one file
// (docs/saved-graph-format.md), and run_saved, which binds the parameters
// and runs the interpreter. The loader trusts nothing: every length is checked
// against the bytes left before anything is allocated, the IR text is parsed
// and verified, and every parameter is checked against its input's type.
#include "graph/saved_graph.h"

#include <cstring>

#include "graph/error.h"
#include "graph/ir/verifier.h"
#include "tensor_io.h"

namespace graph {

namespace {

constexpr char kMagic[8] = {'C', 'X', 'G', 'S', 'A', 'V', 'E', 'D'};
constexpr char kTensorFileMagic[8] = {'C', 'X', 'G', 'R', 'A', 'P', 'H', '\0'};  // nn::save
// The parser is linear, but a bound keeps a hostile length from costing a
// long parse (or the verifier's work on a huge graph).
constexpr uint64_t kMaxIrTextBytes = uint64_t(64) << 20;

const ir::Value* find_input(const ir::Graph& g, const std::string& name) {
  for (const auto& v : g.inputs())
    if (v->name() == name) return v.get();
  return nullptr;
}

std::string input_list(const ir::Graph& g) {
  std::string s;
  for (const auto& v : g.inputs()) s += (s.empty() ? "%" : ", %") + v->name();
  return s.empty() ? "none" : s;
}

// Why `t` cannot be the value of input `v`, or "" when it can. `symbols`
// holds the size each symbolic dim took in the parameters checked so far.
std::string mismatch(const ir::Value& v, const std::string& name, const Tensor& t,
                     std::map<std::string, int64_t>& symbols) {
  const ir::Type& ty = v.type();
  const std::string tensor = std::string(dtype_token(t.dtype())) + shape_str(t.sizes());
  const std::string input = "input %" + v.name() + " : " + ty.str();
  if (!ty.is_tensor()) return "parameter '" + name + "' is a tensor but " + input + " is not";
  if (ty.dtype && *ty.dtype != t.dtype()) return "parameter '" + name + "' is " + tensor + " but " + input;
  if (!ty.dims) return "";
  if (static_cast<int64_t>(ty.dims->size()) != t.dim())
    return "parameter '" + name + "' is " + tensor + " but " + input + " (rank " +
           std::to_string(ty.dims->size()) + ")";
  for (size_t d = 0; d < ty.dims->size(); ++d) {
    const ir::Dim& dim = (*ty.dims)[d];
    const int64_t size = t.sizes()[d];
    if (dim.is_static() && dim.size != size)
      return "parameter '" + name + "' is " + tensor + " but " + input + " (dim " + std::to_string(d) + ")";
    if (dim.symbol.empty()) continue;
    auto [it, fresh] = symbols.emplace(dim.symbol, size);
    if (!fresh && it->second != size)
      return "parameter '" + name + "' is " + tensor + " but " + input + ": " + dim.symbol + " is " +
             std::to_string(it->second) + " in an earlier parameter";
  }
  return "";
}

// The graph exactly as load() will see it: printed, parsed back, verified.
std::unique_ptr<ir::Graph> canonical(const ir::Graph& g, std::string& text) {
  text = ir::print(g);
  if (text.size() > kMaxIrTextBytes) throw Error("save: the graph's IR text is larger than 64 MiB");
  std::unique_ptr<ir::Graph> copy;
  try {
    copy = ir::parse(text);
    ir::verify_or_throw(*copy);
  } catch (const Error& e) {
    throw Error(std::string("save: graph '") + g.name() + "' is invalid: " + e.what());
  }
  return copy;
}

SavedGraph read_saved(std::string_view bytes, const std::string& where) {
  detail::ByteReader r(bytes, where);
  if (r.left() >= sizeof(kMagic) && std::memcmp(bytes.data(), kTensorFileMagic, sizeof(kMagic)) == 0)
    r.fail("this is a tensor file (nn::save), not a saved graph");
  if (r.left() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    r.fail("not a saved graph (bad magic; expected \"CXGSAVED\")");
  r.take(sizeof(kMagic), "the magic");
  const uint32_t version = r.uint<uint32_t>("the format version");
  if (version > kSavedGraphVersion)
    throw Error(where + "saved graph version " + std::to_string(version) +
                " is newer than this build supports (" + std::to_string(kSavedGraphVersion) + ")");
  if (version == 0) r.fail("invalid format version 0");

  const uint64_t text_len = r.uint<uint64_t>("the IR text length");
  if (text_len > kMaxIrTextBytes) r.fail("IR text length " + std::to_string(text_len) + " exceeds 64 MiB");
  const size_t text_at = r.pos();
  const std::string text(r.take(text_len, "the IR text"), text_len);
  SavedGraph out;
  try {
    out.graph = ir::parse(text);
  } catch (const Error& e) {
    throw Error(where + "invalid IR text (starting at byte " + std::to_string(text_at) + "): " + e.what());
  }
  try {
    ir::verify_or_throw(*out.graph);
  } catch (const Error& e) {
    throw Error(where + "graph '" + out.graph->name() + "' does not verify: " + e.what());
  }

  const uint64_t count = r.uint<uint64_t>("the parameter count");
  // Each parameter binds a distinct input: a bound before reading any.
  if (count > out.graph->inputs().size())
    r.fail("parameter count " + std::to_string(count) + " exceeds the graph's " +
           std::to_string(out.graph->inputs().size()) + " inputs");
  std::map<std::string, int64_t> symbols;
  for (uint64_t k = 0; k < count; ++k) {
    auto [name, t] = detail::read_tensor_record(r, "parameter", k);
    const ir::Value* input = find_input(*out.graph, name);
    if (!input)
      r.fail("parameter '" + name + "' names no input of graph '" + out.graph->name() + "' (inputs: " +
             input_list(*out.graph) + ")");
    if (out.params.count(name)) r.fail("duplicate parameter '" + name + "'");
    if (std::string why = mismatch(*input, name, t, symbols); !why.empty()) r.fail(why);
    out.params.emplace(std::move(name), std::move(t));
  }
  if (r.left() != 0) r.fail(std::to_string(r.left()) + " unexpected bytes after the last parameter");
  return out;
}

}  // namespace

std::vector<const ir::Value*> SavedGraph::free_inputs() const {
  std::vector<const ir::Value*> out;
  for (const auto& v : graph->inputs())
    if (!params.count(v->name())) out.push_back(v.get());
  return out;
}

std::string save_to_string(const ir::Graph& g, const std::map<std::string, Tensor>& params) {
  std::string text;
  std::unique_ptr<ir::Graph> copy = canonical(g, text);
  std::map<std::string, int64_t> symbols;
  for (const auto& [name, t] : params) {
    const ir::Value* input = find_input(*copy, name);
    if (!input)
      throw Error("save: parameter '" + name + "' names no input of graph '" + copy->name() + "' (inputs: " +
                  input_list(*copy) + ")");
    if (!t.defined()) throw Error("save: parameter '" + name + "' is undefined");
    if (std::string why = mismatch(*input, name, t, symbols); !why.empty()) throw Error("save: " + why);
  }
  detail::ByteWriter w;
  w.bytes(kMagic, sizeof(kMagic));
  w.uint<uint32_t>(kSavedGraphVersion);
  w.uint<uint64_t>(text.size());
  w.bytes(text.data(), text.size());
  w.uint<uint64_t>(params.size());
  for (const auto& [name, t] : params) detail::write_tensor_record(w, name, t, "save");
  return std::move(w.data());
}

SavedGraph load_from_string(std::string_view bytes) { return read_saved(bytes, "saved graph: "); }

void save(const std::string& path, const ir::Graph& g, const std::map<std::string, Tensor>& params) {
  detail::write_file(path, save_to_string(g, params), "save");
}

SavedGraph load(const std::string& path) {
  const std::string bytes = detail::read_file(path, "load");
  return read_saved(bytes, "saved graph '" + path + "': ");
}

std::vector<IValue> run_saved(const SavedGraph& saved, std::vector<IValue> free_inputs, const RunOptions& options) {
  const std::vector<const ir::Value*> free = saved.free_inputs();
  if (free_inputs.size() != free.size()) {
    std::string names;
    for (const ir::Value* v : free) names += (names.empty() ? "%" : ", %") + v->name();
    throw Error("run_saved: graph '" + saved.graph->name() + "' takes " + std::to_string(free.size()) +
                " free inputs (" + (names.empty() ? "none" : names) + "), got " +
                std::to_string(free_inputs.size()));
  }
  std::vector<IValue> inputs;
  inputs.reserve(saved.graph->inputs().size());
  size_t next = 0;
  for (const auto& v : saved.graph->inputs()) {
    auto it = saved.params.find(v->name());
    if (it != saved.params.end())
      inputs.emplace_back(it->second);
    else
      inputs.push_back(std::move(free_inputs[next++]));
  }
  return run(*saved.graph, std::move(inputs), options);
}

}  // namespace graph
