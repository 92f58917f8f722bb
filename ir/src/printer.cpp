// The IR text printer. The grammar (parser.cpp reads exactly this):
//
//   graph NAME(%a : TYPE, ...) {
//     %x : TYPE, ... = OP{attr=VALUE, ...}(%in, ...) @"file":line:col
//       block(%p : TYPE, ...) {
//         ...
//         -> (%v, ...)
//       }
//     return (%v, ...)
//   }
//
// Attributes print in key order; floats in their shortest exact form with a
// '.' or exponent so they read back as floats; names are kept when unique.
#include <charconv>
#include <cmath>
#include <sstream>

#include "graph/ir/ir.h"
#include "value_names.h"

namespace graph::ir {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + '"';
}

namespace {

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

class Printer {
 public:
  std::string run(const Graph& g) {
    out_ << "graph " << g.name() << '(';
    params(g.top());
    out_ << ") {\n";
    body(g.top(), 1);
    out_ << "  return (";
    values(g.top()->returns());
    out_ << ")\n}\n";
    return out_.str();
  }

 private:
  const std::string& name(const Value* v) { return names_(v); }

  void indent(int level) { out_ << std::string(2 * level, ' '); }

  void params(const Block* b) {
    for (size_t i = 0; i < b->params().size(); ++i) {
      if (i) out_ << ", ";
      const Value* p = b->param(i);
      out_ << '%' << name(p) << " : " << p->type().str();
    }
  }

  void values(const std::vector<Value*>& vs) {
    for (size_t i = 0; i < vs.size(); ++i) {
      if (i) out_ << ", ";
      out_ << '%' << name(vs[i]);
    }
  }

  void attr(const AttrValue& a) {
    if (auto* i = std::get_if<int64_t>(&a)) out_ << *i;
    else if (auto* d = std::get_if<double>(&a)) out_ << format_double(*d);
    else if (auto* b = std::get_if<bool>(&a)) out_ << (*b ? "true" : "false");
    else if (auto* s = std::get_if<std::string>(&a)) out_ << quote(*s);
    else {
      const auto& v = std::get<std::vector<int64_t>>(a);
      out_ << '[';
      for (size_t i = 0; i < v.size(); ++i) out_ << (i ? ", " : "") << v[i];
      out_ << ']';
    }
  }

  void node(const Node* n, int level) {
    indent(level);
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      if (i) out_ << ", ";
      out_ << '%' << name(n->output(i)) << " : " << n->output(i)->type().str();
    }
    if (n->num_outputs()) out_ << " = ";
    out_ << n->op();
    if (!n->attrs().empty()) {
      out_ << '{';
      bool first = true;
      for (const auto& [k, v] : n->attrs()) {
        if (!first) out_ << ", ";
        first = false;
        out_ << k << '=';
        attr(v);
      }
      out_ << '}';
    }
    out_ << '(';
    values(n->inputs());
    out_ << ')';
    if (n->loc().valid())
      out_ << " @" << quote(n->loc().file) << ':' << n->loc().line << ':' << n->loc().col;
    out_ << '\n';
    for (const auto& b : n->blocks()) {
      indent(level + 1);
      out_ << "block(";
      params(b.get());
      out_ << ") {\n";
      body(b.get(), level + 2);
      indent(level + 2);
      out_ << "-> (";
      values(b->returns());
      out_ << ")\n";
      indent(level + 1);
      out_ << "}\n";
    }
  }

  void body(const Block* b, int level) {
    for (const auto& n : b->nodes()) node(n.get(), level);
  }

  std::ostringstream out_;
  detail::ValueNames names_;
};

}  // namespace

std::string print(const Graph& g) { return Printer().run(g); }

}  // namespace graph::ir
