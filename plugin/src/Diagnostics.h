#pragma once
// Plugin diagnostics through Clang's engine: the -Wgraph-fallback warning of
// a function or statement that runs eagerly, its notes, and errors.
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "Lower.h"
#include "clang/AST/DeclCXX.h"
#include "clang/Frontend/CompilerInstance.h"

namespace cxxgraph {

using namespace clang;

// ---- diagnostics --------------------------------------------------------
// The one place for the message style: lowercase, names quoted (quote() in
// Lower.h), no trailing period; styled() enforces the first and the last for
// every message reported here. The flag is named in the text because plugin
// diagnostics cannot join a warning group in Clang 19. -Wno-graph-fallback
// and -Werror=graph-fallback given to the generator are honoured here. The
// same message at the same place is reported once.
inline std::string styled(std::string m) {
  while (!m.empty() && (m.back() == '.' || std::isspace(static_cast<unsigned char>(m.back())))) m.pop_back();
  if (m.size() > 1 && std::isupper(static_cast<unsigned char>(m[0])) &&
      !std::isupper(static_cast<unsigned char>(m[1])))
    m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return m;
}

class Diagnostics {
 public:
  explicit Diagnostics(CompilerInstance& ci) : engine_(ci.getDiagnostics()) {
    DiagnosticsEngine::Level level = DiagnosticsEngine::Warning;
    for (const std::string& w : ci.getDiagnosticOpts().Warnings) {
      if (w == "no-graph-fallback") level = DiagnosticsEngine::Ignored;
      if (w == "graph-fallback" && level == DiagnosticsEngine::Ignored) level = DiagnosticsEngine::Warning;
      if (w == "error=graph-fallback") level = DiagnosticsEngine::Error;
      if (w == "no-error=graph-fallback" && level == DiagnosticsEngine::Error) level = DiagnosticsEngine::Warning;
    }
    fallback_ = engine_.getCustomDiagID(level, "%0 [-Wgraph-fallback]");
    eager_note_ = engine_.getCustomDiagID(DiagnosticsEngine::Note, "%0 will run eagerly");
    note_ = engine_.getCustomDiagID(DiagnosticsEngine::Note, "%0");
    error_ = engine_.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: %0");
    internal_ = engine_.getCustomDiagID(DiagnosticsEngine::Warning,
                                        "cxxgraph internal error compiling %0 (it will run eagerly): %1");
  }

  void fallback(SourceLocation at, const std::string& why, const FunctionDecl* fd,
                const std::vector<std::pair<SourceLocation, std::string>>& notes = {}) {
    if (!seen_.insert({at.getRawEncoding(), why}).second) return;
    engine_.Report(at, fallback_) << styled(why);
    for (const auto& [where, what] : notes)
      if (where.isValid()) engine_.Report(where, note_) << styled(what);
    engine_.Report(fd->getLocation(), eager_note_) << display(fd);
  }
  // A statement that runs eagerly between static regions (a graph break);
  // `what` names what runs eagerly ("it", or the statement containing it).
  void graph_break(SourceLocation at, const std::string& why, const std::string& what, const std::string& where,
                   const std::vector<std::pair<SourceLocation, std::string>>& notes) {
    if (!seen_.insert({at.getRawEncoding(), why}).second) return;
    engine_.Report(at, fallback_) << styled(why) + "; " + what + " runs eagerly " + where;
    for (const auto& [loc, what] : notes)
      if (loc.isValid()) engine_.Report(loc, note_) << styled(what);
  }
  // An extra dtype variant (option dtypes=) that cannot be compiled.
  void variant(SourceLocation at, const std::string& why) { engine_.Report(at, fallback_) << styled(why); }
  void error(SourceLocation at, const std::string& what) { engine_.Report(at, error_) << styled(what); }
  void internal(const FunctionDecl* fd, const std::string& what) {
    engine_.Report(fd->getLocation(), internal_) << display(fd) << styled(what);
  }

 private:
  static std::string display(const FunctionDecl* fd) {
    if (const auto* m = dyn_cast<CXXMethodDecl>(fd); m && m->getParent()->isLambda()) return "this lambda";
    return quote(fd->getNameAsString());
  }

  DiagnosticsEngine& engine_;
  unsigned fallback_, eager_note_, note_, error_, internal_;
  std::set<std::pair<unsigned, std::string>> seen_;
};

}  // namespace cxxgraph
