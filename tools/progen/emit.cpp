// C++ text of a generated function (with the shrinker's edits applied) and
// of its entry in the harness's case table.
#include <map>
#include <stdexcept>

#include "gen.h"

namespace progen {

namespace {

struct Emitter {
  std::map<int, std::string> edits;
  std::set<std::string> undefined;  // declarations dropped without a replacement
  std::string out;

  void check(const std::set<std::string>& reads, int id) {
    for (const std::string& r : reads)
      if (undefined.count(r))
        throw std::runtime_error("edit leaves " + r + " undefined (statement " + std::to_string(id) + ")");
  }

  void line(int indent, const std::string& text) { out += std::string(indent * 2, ' ') + text + "\n"; }

  void block(const std::vector<Stmt>& body, int indent) {
    for (const Stmt& s : body) stmt(s, indent);
  }

  void stmt(const Stmt& s, int indent) {
    auto e = edits.find(s.id);
    const std::string what = e == edits.end() ? "" : e->second;
    if (what == "drop") {
      if (s.keep) throw std::runtime_error("statement " + std::to_string(s.id) + " is kept");
      if (!s.defines.empty() && !s.fallback.empty()) {
        check({s.fallback}, s.id);
        line(indent, "Tensor " + s.defines + " = " + s.fallback + ";");
      } else if (!s.defines.empty()) {
        undefined.insert(s.defines);
      }
      return;
    }
    if (what == "then" || what == "else") {
      if (s.kind != Stmt::If) throw std::runtime_error("edit " + what + " of a statement that is no if");
      line(indent, "{");
      block(what == "then" ? s.body : s.orelse, indent + 1);
      line(indent, "}");
      return;
    }
    check(s.reads, s.id);
    switch (s.kind) {
      case Stmt::Simple: line(indent, s.text); return;
      case Stmt::If:
        line(indent, s.text + " {");
        block(s.body, indent + 1);
        if (!s.orelse.empty()) {
          line(indent, "} else {");
          block(s.orelse, indent + 1);
        }
        line(indent, "}");
        return;
      case Stmt::Loop:
        if (!s.prefix.empty()) line(indent, s.prefix);
        line(indent, s.text + " {");
        block(s.body, indent + 1);
        line(indent, "}");
        return;
    }
  }
};

void collect_ids(const std::vector<Stmt>& body, std::vector<std::pair<int, Stmt::Kind>>* ids) {
  for (const Stmt& s : body) {
    if (!s.keep) ids->push_back({s.id, s.kind});
    collect_ids(s.body, ids);
    collect_ids(s.orelse, ids);
  }
}

std::string return_type(const Function& f) {
  if (f.out_shapes.size() == 1) return "Tensor";
  std::string t = "std::tuple<";
  for (size_t k = 0; k < f.out_shapes.size(); ++k) t += k ? ", Tensor" : "Tensor";
  return t + ">";
}

}  // namespace

std::string emit_function(const Function& f, const std::vector<Edit>& edits) {
  Emitter e;
  for (const Edit& ed : edits) e.edits[ed.id] = ed.what;
  std::string params;
  for (const Input& in : f.inputs) params += "const Tensor& " + in.name + ", ";
  e.line(0, "[[graph::static]] " + return_type(f) + " " + f.name + "(" + params + "int n, double s) {");
  e.line(1, "(void)n;");
  e.line(1, "(void)s;");
  e.block(f.body, 1);
  e.line(0, "}");
  return e.out;
}

std::string emit_case(const Function& f, const std::string& label) {
  std::string inputs, hosts, args;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    const Input& in = f.inputs[i];
    inputs += "{\"" + in.name + "\", " + dims_str(in.shape) + ", " + (in.type == VType::Int ? "true" : "false") +
              ", " + std::to_string(in.int_hi) + "}, ";
    args += "in[" + std::to_string(i) + "], ";
  }
  for (const auto& [n, s] : f.host_variants) hosts += "{" + std::to_string(n) + ", " + std::to_string(s) + "}, ";
  char tol[32];
  std::snprintf(tol, sizeof tol, "%g", f.tol);
  return "  {\"" + label + f.name + "\", {" + inputs + "}, {" + hosts + "}, " + tol + ", " +
         (f.grad_runs_eagerly ? "true" : "false") + ", \"" + f.known + "\"" +
         ", [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(" + f.name + "(" + args +
         "n, s)); }},\n";
}

std::vector<std::pair<int, Stmt::Kind>> statement_ids(const Function& f) {
  std::vector<std::pair<int, Stmt::Kind>> ids;
  collect_ids(f.body, &ids);
  return ids;
}

}  // namespace progen
