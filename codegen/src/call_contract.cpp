// The call contract's two texts (call_contract.h): the signature table of
// the generated source, and the prologue of the rewritten user source.
#include "graph/codegen/call_contract.h"

#include "emitter.h"
#include "graph/error.h"
#include "graph/ir/ir.h"

namespace graph::codegen {

namespace {

const char* kind_expr(ir::InputKind k) {
  switch (k) {
    case ir::InputKind::Tensor: return "::graph::ir::InputKind::Tensor";
    case ir::InputKind::AnyTensor: return "::graph::ir::InputKind::AnyTensor";
    case ir::InputKind::TensorList: return "::graph::ir::InputKind::TensorList";
    case ir::InputKind::Int: return "::graph::ir::InputKind::Int";
    case ir::InputKind::Float: return "::graph::ir::InputKind::Float";
    case ir::InputKind::Bool: return "::graph::ir::InputKind::Bool";
  }
  return "?";
}

void check_args(const Call& c, const ir::Signature& sig) {
  if (c.args.size() != sig.inputs.size())
    throw Error("codegen: the call of '" + c.mangled_name + "' passes " + std::to_string(c.args.size()) +
                " arguments, its graph has " + std::to_string(sig.inputs.size()) + " inputs");
}

std::string arg_list(const Call& c) {
  std::string s;
  for (const std::string& a : c.args) s += ", " + a;
  return s;
}

}  // namespace

std::string signature_table(const ir::Signature& sig, const std::string& var, const std::string& graph_name) {
  if (sig.inputs.empty()) return "constexpr const ::graph::detail::InputGuard* " + var + " = nullptr;\n";
  std::string sizes, rows;
  for (size_t k = 0; k < sig.inputs.size(); ++k) {
    const ir::InputSpec& in = sig.inputs[k];
    if (in.kind == ir::InputKind::Tensor && !in.dtype)
      throw Error("codegen: graph '" + graph_name + "' input '" + in.name + "' has no dtype (run infer_types)");
    // Only the sizes the graph was specialized on are written, else nullptr.
    std::string sizes_var = "nullptr";
    bool any_static = false;
    for (int64_t s : in.sizes) any_static = any_static || s >= 0;
    if (any_static) {
      sizes_var = var + "_sizes" + std::to_string(k);
      sizes += "constexpr int64_t " + sizes_var + "[] = {";
      for (size_t d = 0; d < in.sizes.size(); ++d) sizes += (d ? ", " : "") + std::to_string(in.sizes[d]);
      sizes += "};\n";
    }
    rows += "    {" + ir::quote(in.name) + ", " + kind_expr(in.kind) + ", " + detail::dtype_expr(in.dtype.value_or(DType::Float32)) +
            ", " + (in.may_be_undefined ? "true" : "false") + ", " + std::to_string(in.rank) + ", " + sizes_var +
            "},\n";
  }
  return sizes + "constexpr ::graph::detail::InputGuard " + var + "[] = {\n" + rows + "};\n";
}

std::string prologue(const Call& c, const ir::Signature& sig, const std::string& eager_call) {
  check_args(c, sig);
  return " static ::graph::detail::StaticFunction _graph_sf(\"" + c.mangled_name + "\", \"" + c.body_hash +
         "\"); if (" + c.result_type + " _graph_r{}; _graph_sf.run(_graph_r, " + eager_call + arg_list(c) +
         ")) return _graph_r;";
}

std::string split_open(const std::string& mangled_name, const std::string& body_hash, const std::string& result_type,
                       const std::string& eager_call, const std::vector<size_t>& regions) {
  // The variables crossing a break are parameters of the lambdas, of the
  // same names as the function's parameters they may hide: no -Wshadow.
  std::string p = " _Pragma(\"GCC diagnostic push\") _Pragma(\"GCC diagnostic ignored \\\"-Wshadow\\\"\")"
                  " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-local-typedefs\\\"\")"
                  " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-variable\\\"\")"
                  " static ::graph::detail::StaticFunction _graph_sf(\"" +
                  mangled_name + "\", \"" + body_hash + "\"); if (" + result_type +
                  " _graph_r{}; _graph_sf.run_split(_graph_r, " + eager_call + ", [&]() -> " + result_type + " {";
  for (size_t j : regions)
    p += " static ::graph::detail::StaticFunction _graph_sf" + std::to_string(j) + "(\"" + mangled_name + ".region" +
         std::to_string(j) + "\", \"" + body_hash + "\");";
  return p;
}

std::string region_call(size_t j, const Call& c, const ir::Signature& sig, const std::string& then) {
  check_args(c, sig);
  const std::string sf = "_graph_sf" + std::to_string(j);
  if (then.empty())
    return " { " + c.result_type + " _graph_o{}; if (" + sf + ".run(_graph_o, nullptr" + arg_list(c) +
           ")) return _graph_o; }";
  return " { " + c.result_type + " _graph_o; if (" + sf + ".run(_graph_o, nullptr" + arg_list(c) + ")) return " +
         then + "; }";
}

std::string split_close(unsigned line, unsigned column, const std::string& origin) {
  return " })) return _graph_r; _Pragma(\"GCC diagnostic pop\")\n#line " + std::to_string(line) + " \"" + origin +
         "\"\n" + std::string(column, ' ');
}

}  // namespace graph::codegen
