#include "catalog.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "graph/error.h"

namespace graph::inspect {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kOptSuffix = ".opt.graph";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The graphs of one <build>/.../cxxgraph/<target> directory.
void add_target(const fs::path& target_dir, std::vector<GraphFiles>& out) {
  for (const auto& stem_dir : fs::directory_iterator(target_dir)) {
    if (!stem_dir.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(stem_dir.path())) {
      const std::string name = file.path().filename().string();
      if (!ends_with(name, ".graph") || ends_with(name, kOptSuffix)) continue;
      GraphFiles g;
      g.target = target_dir.filename().string();
      g.stem = stem_dir.path().filename().string();
      g.function = name.substr(0, name.size() - 6);
      g.lowered = file.path();
      const fs::path opt = stem_dir.path() / (g.function + std::string(kOptSuffix));
      if (fs::exists(opt)) g.optimized = opt;
      g.generated_dir = target_dir;
      out.push_back(std::move(g));
    }
  }
}

// "a/b/c" matches "c", "b/c", "a/b/c" and "a/c".
bool matches(const GraphFiles& g, const std::string& name) {
  const std::string full = g.qualified_name();
  if (name == full || name == g.target + "/" + g.function) return true;
  return ends_with(full, "/" + name);
}

}  // namespace

std::vector<GraphFiles> find_graphs(const fs::path& build_dir) {
  std::error_code ec;
  if (!fs::is_directory(build_dir, ec))
    throw Error("graph-inspect: build directory '" + build_dir.string() + "' does not exist");
  std::vector<GraphFiles> out;
  auto it = fs::recursive_directory_iterator(build_dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory()) continue;
    // Another build tree inside this one (a scratch project a test configured
    // and built there): its graphs are that build's, not this one's.
    std::error_code no_cache;
    if (fs::exists(it->path() / "CMakeCache.txt", no_cache)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() != "cxxgraph") continue;
    for (const auto& target_dir : fs::directory_iterator(it->path()))
      if (target_dir.is_directory()) add_target(target_dir.path(), out);
    it.disable_recursion_pending();
  }
  std::sort(out.begin(), out.end(),
            [](const GraphFiles& a, const GraphFiles& b) { return a.qualified_name() < b.qualified_name(); });
  return out;
}

GraphFiles resolve(const std::vector<GraphFiles>& graphs, const std::string& name) {
  if (ends_with(name, ".graph") && fs::is_regular_file(name)) {
    // A file given directly: its optimized sibling, if any, goes with it.
    GraphFiles g;
    const fs::path p(name);
    g.function = p.filename().string().substr(0, p.filename().string().size() - 6);
    if (ends_with(name, kOptSuffix)) {
      g.function = p.filename().string().substr(0, p.filename().string().size() - kOptSuffix.size());
      g.optimized = p;
    } else {
      g.lowered = p;
      const fs::path opt = p.parent_path() / (g.function + std::string(kOptSuffix));
      if (fs::exists(opt)) g.optimized = opt;
    }
    return g;
  }
  std::vector<const GraphFiles*> found;
  for (const auto& g : graphs)
    if (matches(g, name)) found.push_back(&g);
  if (found.size() == 1) return *found.front();
  std::string msg = found.empty() ? "graph-inspect: no graph named '" + name + "'"
                                  : "graph-inspect: '" + name + "' names " + std::to_string(found.size()) +
                                        " graphs; give one of";
  if (found.empty()) {
    msg += graphs.empty() ? " (this build generated none)" : "; the build has:";
    for (const auto& g : graphs) msg += "\n  " + g.qualified_name();
  } else {
    for (const auto* g : found) msg += "\n  " + g->qualified_name();
  }
  throw Error(msg);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("graph-inspect: cannot read '" + path.string() + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace graph::inspect
