// The Clang glue of cxxgraph: registers [[graph::static]], finds the tagged
// functions after parsing, lowers each (Lower.h), and writes
//   - the source copy with a one-line dispatch prologue in each lowered body
//     (option copy=PATH; starts with #line 1 "<original>");
//   - the generated CPU kernels and their registrars (option kernels=PATH);
//   - <fn>.graph (as lowered) and <fn>.opt.graph (after the passes) for
//     people to read (option graph-dir=DIR).
// Without options the plugin only registers the attribute. Nothing may throw
// into Clang's frames: every entry point catches and reports.
//
// Options reach the plugin as -fplugin-arg-cxxgraph-<key>=<value>.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "Lower.h"
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/DiagnosticSema.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Rewrite/Core/Rewriter.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "graph/codegen/cpp.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace cxxgraph {

using namespace clang;

namespace {

constexpr const char* kTag = "graph.static";

// ---- the attribute ------------------------------------------------------
// The handler runs before the body is parsed, so it only tags the function.
struct StaticAttrInfo : public ParsedAttrInfo {
  StaticAttrInfo() {
    static constexpr Spelling kSpellings[] = {{ParsedAttr::AS_CXX11, "graph::static"}};
    Spellings = kSpellings;
  }

  bool diagAppertainsToDecl(Sema& s, const ParsedAttr& attr, const Decl* d) const override {
    if (isa<FunctionDecl>(d)) return true;
    s.Diag(attr.getLoc(), diag::warn_attribute_wrong_decl_type_str)
        << attr << attr.isRegularKeywordAttribute() << "functions";
    return false;
  }

  AttrHandling handleDeclAttribute(Sema& s, Decl* d, const ParsedAttr& attr) const override {
    d->addAttr(AnnotateAttr::Create(s.Context, kTag, nullptr, 0, attr.getRange()));
    return AttributeApplied;
  }
};

ParsedAttrInfoRegistry::Add<StaticAttrInfo> kAttr("graph_static", "[[graph::static]]: compile to a static graph");

// ---- options ------------------------------------------------------------
struct Options {
  std::string copy;       // rewritten source
  std::string kernels;    // generated .graph.cpp
  std::string graph_dir;  // .graph files
  bool active() const { return !copy.empty() || !kernels.empty(); }
};

// ---- diagnostics --------------------------------------------------------
// One place for the message style: lowercase, names quoted, no period; the
// flag is named in the text because plugin diagnostics cannot join a
// warning group in Clang 19. -Wno-graph-fallback and -Werror=graph-fallback
// given to the generator are honoured here.
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
    eager_note_ = engine_.getCustomDiagID(DiagnosticsEngine::Note, "'%0' will run eagerly");
    error_ = engine_.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: %0");
    internal_ = engine_.getCustomDiagID(DiagnosticsEngine::Warning,
                                        "cxxgraph internal error compiling '%0' (it will run eagerly): %1");
  }

  void fallback(SourceLocation at, const std::string& why, const FunctionDecl* fd) {
    engine_.Report(at, fallback_) << why;
    engine_.Report(fd->getLocation(), eager_note_) << fd->getNameAsString();
  }
  void error(SourceLocation at, const std::string& what) { engine_.Report(at, error_) << what; }
  void internal(const FunctionDecl* fd, const std::string& what) {
    engine_.Report(fd->getLocation(), internal_) << fd->getNameAsString() << what;
  }

 private:
  DiagnosticsEngine& engine_;
  unsigned fallback_, eager_note_, error_, internal_;
};

// ---- the consumer -------------------------------------------------------
class Collector : public RecursiveASTVisitor<Collector> {
 public:
  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (fd->doesThisDeclarationHaveABody() && fd->hasAttr<AnnotateAttr>())
      for (const auto* a : fd->specific_attrs<AnnotateAttr>())
        if (a->getAnnotation() == kTag) {
          found.push_back(fd);
          break;
        }
    return true;
  }
  bool shouldVisitTemplateInstantiations() const { return true; }
  std::vector<FunctionDecl*> found;
};

uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool write_file(const std::string& path, const std::string& text, std::string& err) {
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    err = "cannot write '" + path + "': " + ec.message();
    return false;
  }
  os << text;
  return true;
}

class Consumer : public ASTConsumer {
 public:
  Consumer(CompilerInstance& ci, Options opts) : ci_(ci), opts_(std::move(opts)), diags_(ci) {}

  void HandleTranslationUnit(ASTContext& ctx) override {
    if (!opts_.active() || ci_.getDiagnostics().hasErrorOccurred()) return;
    try {
      generate(ctx);
    } catch (const std::exception& e) {
      diags_.error({}, std::string("internal error: ") + e.what());
    } catch (...) {
      diags_.error({}, "internal error");
    }
  }

 private:
  void generate(ASTContext& ctx) {
    SourceManager& sm = ctx.getSourceManager();
    Rewriter rewriter(sm, ctx.getLangOpts());
    Collector collector;
    collector.TraverseDecl(ctx.getTranslationUnitDecl());
    ASTNameGenerator names(ctx);

    std::vector<std::unique_ptr<graph::ir::Graph>> optimized;
    std::vector<graph::codegen::GraphUnit> units;
    std::map<std::string, int> file_names;
    for (FunctionDecl* fd : collector.found) {
      const Stmt* body = fd->getBody();
      SourceLocation lbrace = cast<CompoundStmt>(body)->getLBracLoc();
      if (!sm.isInMainFile(sm.getExpansionLoc(fd->getLocation()))) {
        diags_.fallback(fd->getLocation(), "annotated functions defined in headers cannot be rewritten yet", fd);
        continue;
      }
      if (lbrace.isMacroID() || !Rewriter::isRewritable(lbrace)) {
        diags_.fallback(lbrace, "the body of an annotated function cannot come from a macro", fd);
        continue;
      }
      Lowered lowered;
      std::unique_ptr<graph::ir::Graph> opt;
      std::string text;
      try {
        lowered = lower_function(ctx, fd);
        // The graph as lowered, then a verified, optimized copy for codegen.
        text = graph::ir::print(*lowered.graph);
        graph::ir::verify_or_throw(*lowered.graph);
        opt = graph::ir::parse(text);
        graph::ir::infer_types(*opt);
        graph::ir::fuse_elementwise(*opt);
        graph::ir::verify_or_throw(*opt);
      } catch (const Unsupported& u) {
        diags_.fallback(u.loc.isValid() ? u.loc : fd->getLocation(), u.message, fd);
        continue;
      } catch (const std::exception& e) {
        // A bug of ours must not break the user's build: the body runs eagerly.
        diags_.internal(fd, e.what());
        continue;
      }

      std::string stem = fd->getNameAsString();
      if (int n = file_names[stem]++) stem += "." + std::to_string(n);
      if (!opts_.graph_dir.empty()) {
        std::string err;
        if (!write_file(opts_.graph_dir + "/" + stem + ".graph", text, err) ||
            !write_file(opts_.graph_dir + "/" + stem + ".opt.graph", graph::ir::print(*opt), err))
          return diags_.error({}, err);
      }

      CharSourceRange range = CharSourceRange::getTokenRange(fd->getSourceRange());
      std::string hash = hex(fnv1a(Lexer::getSourceText(range, sm, ctx.getLangOpts())));
      std::string mangled = names.getName(fd);
      PresumedLoc where = sm.getPresumedLoc(fd->getLocation());
      std::string source = std::filesystem::path(where.getFilename()).filename().string() + ":" +
                           std::to_string(where.getLine());
      graph::codegen::GraphUnit unit{opt.get(), mangled, hash, source};
      try {
        graph::codegen::generate_cpu_source({unit}, "");  // fails here, not for the whole file
      } catch (const std::exception& e) {
        diags_.internal(fd, e.what());
        continue;
      }

      std::string prologue = " static ::graph::detail::StaticFunction _graph_sf(\"" + mangled + "\", \"" + hash +
                             "\"); if (::graph::Tensor _graph_r; _graph_sf.run(_graph_r";
      for (const std::string& a : lowered.call_args) prologue += ", " + a;
      prologue += ")) return _graph_r;";
      rewriter.InsertTextAfterToken(lbrace, prologue);

      units.push_back(unit);
      optimized.push_back(std::move(opt));
    }

    const FileEntry* main = sm.getFileEntryForID(sm.getMainFileID());
    std::string origin = main ? std::filesystem::absolute(main->tryGetRealPathName().str()).string() : "";
    if (origin.empty()) origin = sm.getFileEntryRefForID(sm.getMainFileID())->getName().str();
    std::string err;
    if (!opts_.copy.empty()) {
      // The include gives the prologue its declarations; #line keeps every
      // line number and __FILE__ on the original.
      std::string copy = "#include <graph/static.h>\n#line 1 \"" + origin + "\"\n";
      if (const RewriteBuffer* buf = rewriter.getRewriteBufferFor(sm.getMainFileID()))
        copy += std::string(buf->begin(), buf->end());
      else
        copy += sm.getBufferData(sm.getMainFileID()).str();
      if (!write_file(opts_.copy, copy, err)) return diags_.error({}, err);
    }
    if (!opts_.kernels.empty() &&
        !write_file(opts_.kernels, graph::codegen::generate_cpu_source(units, origin), err))
      return diags_.error({}, err);
  }

  CompilerInstance& ci_;
  Options opts_;
  Diagnostics diags_;
};

class Action : public PluginASTAction {
 protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, llvm::StringRef) override {
    return std::make_unique<Consumer>(ci, opts_);
  }

  bool ParseArgs(const CompilerInstance& ci, const std::vector<std::string>& args) override {
    DiagnosticsEngine& d = ci.getDiagnostics();
    for (const std::string& a : args) {
      auto eq = a.find('=');
      std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
      if (key == "copy") opts_.copy = value;
      else if (key == "kernels") opts_.kernels = value;
      else if (key == "graph-dir") opts_.graph_dir = value;
      else if (key == "help") {
        llvm::errs() << "cxxgraph plugin options (-fplugin-arg-cxxgraph-KEY=VALUE):\n"
                        "  copy=PATH       write the source with dispatch prologues to PATH\n"
                        "  kernels=PATH    write the generated CPU kernels to PATH\n"
                        "  graph-dir=DIR   write <function>.graph and <function>.opt.graph to DIR\n";
      } else {
        d.Report(d.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: unknown plugin option '%0'")) << a;
        return false;
      }
    }
    return true;
  }

  ActionType getActionType() override { return AddBeforeMainAction; }

 private:
  Options opts_;
};

FrontendPluginRegistry::Add<Action> kAction("cxxgraph", "lower [[graph::static]] functions to static graphs");

}  // namespace
}  // namespace cxxgraph
