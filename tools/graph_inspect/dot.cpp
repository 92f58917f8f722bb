#include "dot.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <sys/wait.h>

#include "graph/error.h"
#include "report.h"

namespace graph::inspect {

namespace {

// A DOT string literal; "\n" stays a DOT line break.
std::string dot_quote(const std::string& s) {
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

std::string attr_text(const ir::AttrValue& v) {
  struct {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream s;
      s << d;
      return s.str();
    }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
  } visit;
  return std::visit(visit, v);
}

class DotWriter {
 public:
  std::string run(const ir::Graph& g, const std::string& title) {
    out_ << "digraph " << dot_quote(g.name()) << " {\n"
         << "  label=" << dot_quote(title) << "; labelloc=t; fontname=\"Helvetica\"; compound=true;\n"
         << "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n"
         << "  edge [color=\"#555555\", arrowsize=0.7, fontname=\"Helvetica\", fontsize=9];\n";
    for (const auto& in : g.inputs()) {
      const std::string id = fresh("in");
      out_ << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#e3f0ff\", label="
           << dot_quote("%" + in->name() + " : " + in->type().str()) << "];\n";
      source_[in.get()] = id;
    }
    block(*g.top(), "  ");
    const std::string ret = fresh("return");
    out_ << "  " << ret << " [shape=ellipse, style=filled, fillcolor=\"#e3f0ff\", label=\"return\"];\n";
    edges_to(g.outputs(), ret);
    out_ << edges_.str() << "}\n";
    return out_.str();
  }

 private:
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(next_id_++); }

  // Edges go after every cluster: Graphviz puts a node into the first
  // subgraph that mentions it, edges included.
  void edge(const std::string& from, const std::string& to, const std::string& attrs = "") {
    edges_ << "  " << from << " -> " << to << (attrs.empty() ? "" : " [" + attrs + "]") << ";\n";
  }

  void edges_to(const std::vector<ir::Value*>& values, const std::string& dst) {
    for (const auto* v : values)
      if (auto it = source_.find(v); it != source_.end()) edge(it->second, dst);
  }

  void block(const ir::Block& b, const std::string& indent) {
    for (const auto& n : b.nodes()) node(*n, indent);
  }

  void node(const ir::Node& n, const std::string& indent) {
    if (n.is(OpId::FusionGroup)) return fusion_group(n, indent);
    if (n.is(OpId::If)) return if_node(n, indent);
    if (n.is(OpId::Loop)) return loop_node(n, indent);
    const std::string id = fresh("n");
    std::string label = n.op();
    for (const auto& [key, value] : n.attrs())
      if (key.rfind("mem_", 0) != 0) label += "\n" + key + "=" + attr_text(value);
    for (const auto* v : n.outputs()) label += "\n%" + v->name() + " : " + v->type().str();
    if (n.loc().valid()) label += "\n" + short_loc(n.loc());
    out_ << indent << id << " [label=" << dot_quote(label) << "];\n";
    edges_to(n.inputs(), id);
    for (const auto* v : n.outputs()) source_[v] = id;
  }

  // The members drawn inside a filled cluster; the group's block parameters
  // are its inputs and its outputs are the members' returned values, so
  // edges run straight to and from the member ops.
  void fusion_group(const ir::Node& n, const std::string& indent) {
    const ir::Block& body = *n.block(0);
    const std::string kind = n.has_attr("kind") ? n.s("kind") : "elementwise";
    out_ << indent << "subgraph " << fresh("cluster_fusion") << " {\n"
         << indent << "  label=" << dot_quote("FusionGroup (" + kind + "): one loop") << ";\n"
         << indent << "  style=\"filled,rounded\"; fillcolor=\"#fff3c4\"; color=\"#d4a017\";\n";
    for (size_t i = 0; i < body.params().size() && i < n.inputs().size(); ++i)
      if (auto it = source_.find(n.input(i)); it != source_.end()) source_[body.param(i)] = it->second;
    block(body, indent + "  ");
    out_ << indent << "}\n";
    for (size_t i = 0; i < n.num_outputs() && i < body.returns().size(); ++i)
      if (auto it = source_.find(body.returns()[i]); it != source_.end()) source_[n.output(i)] = it->second;
  }

  // "-> (%a, %b)" closing a block, fed by the values it returns.
  std::string block_return(const ir::Block& b, const std::string& indent) {
    std::string label = "->";
    for (const auto* v : b.returns()) label += " %" + v->name();
    const std::string id = fresh("ret");
    out_ << indent << id << " [shape=plain, label=" << dot_quote(label) << "];\n";
    edges_to(b.returns(), id);
    return id;
  }

  std::string outputs_node(const ir::Node& n, const std::string& indent) {
    std::string label;
    for (const auto* v : n.outputs()) label += (label.empty() ? "%" : "\n%") + v->name() + " : " + v->type().str();
    const std::string id = fresh("out");
    out_ << indent << id << " [shape=invhouse, label=" << dot_quote(label.empty() ? "(no outputs)" : label)
         << "];\n";
    for (const auto* v : n.outputs()) source_[v] = id;
    return id;
  }

  void if_node(const ir::Node& n, const std::string& indent) {
    out_ << indent << "subgraph " << fresh("cluster_if") << " {\n"
         << indent << "  label=" << dot_quote("If at " + short_loc(n.loc())) << "; color=\"#4a6fa5\";\n";
    const std::string head = fresh("if");
    out_ << indent << "  " << head << " [shape=diamond, label=" << dot_quote("If %" + n.input(0)->name()) << "];\n";
    edges_to({n.input(0)}, head);
    std::vector<std::string> returns;
    for (size_t i = 0; i < n.blocks().size(); ++i) {
      const char* name = i == 0 ? "then" : "else";
      out_ << indent << "  subgraph " << fresh("cluster_block") << " {\n"
           << indent << "    label=" << dot_quote(name) << "; style=dashed;\n";
      block(*n.block(i), indent + "    ");
      returns.push_back(block_return(*n.block(i), indent + "    "));
      out_ << indent << "  }\n";
      edge(head, returns.back(), std::string("style=dotted, label=") + (i == 0 ? "true" : "false"));
    }
    const std::string join = outputs_node(n, indent + "  ");
    for (const auto& r : returns) edge(r, join);
    out_ << indent << "}\n";
  }

  void loop_node(const ir::Node& n, const std::string& indent) {
    const ir::Block& body = *n.block(0);
    out_ << indent << "subgraph " << fresh("cluster_loop") << " {\n"
         << indent << "  label=" << dot_quote("Loop at " + short_loc(n.loc())) << "; color=\"#3c8d3c\";\n";
    const std::string head = fresh("loop");
    out_ << indent << "  " << head << " [shape=hexagon, label=\"Loop\\n(max trips, condition, carried...)\"];\n";
    edges_to(n.inputs(), head);
    out_ << indent << "  subgraph " << fresh("cluster_body") << " {\n"
         << indent << "    label=\"body\"; style=dashed;\n";
    std::string params = "block(";
    for (size_t i = 0; i < body.params().size(); ++i) params += (i ? ", %" : "%") + body.param(i)->name();
    const std::string entry = fresh("params");
    out_ << indent << "    " << entry << " [shape=plain, label=" << dot_quote(params + ")") << "];\n";
    for (const auto& p : body.params()) source_[p.get()] = entry;
    edge(head, entry, "style=dotted");
    block(body, indent + "    ");
    const std::string ret = block_return(body, indent + "    ");
    edge(ret, entry, "style=dashed, constraint=false, label=\"next iteration\"");
    out_ << indent << "  }\n";
    const std::string outs = outputs_node(n, indent + "  ");
    edge(ret, outs);
    out_ << indent << "}\n";
  }

  std::ostringstream out_, edges_;
  std::unordered_map<const ir::Value*, std::string> source_;  // value -> the DOT node drawing it
  int next_id_ = 0;
};

// `s` quoted for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string to_dot(const ir::Graph& g, const std::string& title) { return DotWriter().run(g, title); }

void render(const std::string& dot_text, const std::string& format, const std::filesystem::path& out) {
  if (format == "dot") {
    std::ofstream file(out, std::ios::binary);
    if (!(file << dot_text)) throw Error("graph-inspect: cannot write '" + out.string() + "'");
    return;
  }
  if (format.empty() || format.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos)
    throw Error("graph-inspect: '" + format + "' is not an output format (dot, svg, png, pdf)");
  const std::string command = "dot -T" + format + " -o " + shell_quote(out.string());
  FILE* pipe = popen(command.c_str(), "w");
  if (!pipe) throw Error("graph-inspect: cannot run Graphviz's 'dot'");
  std::fwrite(dot_text.data(), 1, dot_text.size(), pipe);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const bool missing = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    throw Error(missing ? "graph-inspect: Graphviz's 'dot' is not installed (apt-get install graphviz); "
                          "--format dot writes the DOT text instead"
                        : "graph-inspect: 'dot -T" + format + "' failed writing '" + out.string() + "'");
  }
}

}  // namespace graph::inspect
