// The Clang glue of cxxgraph: registers [[graph::static]], finds the tagged
// functions after parsing, lowers each (Lower.h), and writes
//   - the source copy with a one-line dispatch prologue in each lowered body
//     (option copy=PATH; starts with #line 1 "<original>");
//   - the generated CPU kernels and their registrars (option kernels=PATH);
//   - the generated CUDA kernels of the fusion groups, their launchers and
//     registrars (option cuda=PATH; given when the build has CUDA);
//   - <fn>.graph (as lowered) and <fn>.opt.graph (after the passes) for
//     people to read (option graph-dir=DIR).
// Without options the plugin only registers the attribute. Nothing may throw
// into Clang's frames: every entry point catches and reports.
//
// Options reach the plugin as -fplugin-arg-cxxgraph-<key>=<value>.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Lower.h"
#include "Rewrite.h"
#include "Split.h"
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/DiagnosticSema.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Lex/Lexer.h"
#include "clang/Rewrite/Core/Rewriter.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "graph/codegen/cpp.h"
#include "graph/codegen/grad.h"
#include "graph/ir/passes.h"
#include "graph/ir/pipeline.h"
#include "graph/ir/verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace cxxgraph {

using namespace clang;

namespace {

constexpr const char* kTag = "graph.static";

// ---- the attribute ------------------------------------------------------
// The handler runs before the body is parsed, so it only tags the function.
// Misplaced attributes get Clang's own diagnostics, naming the attribute in
// full ('static' alone would read like the keyword). These run inside Sema:
// nothing may throw out of them.
constexpr const char* kAttrName = "'graph::static'";

struct StaticAttrInfo : public ParsedAttrInfo {
  StaticAttrInfo() {
    static constexpr Spelling kSpellings[] = {{ParsedAttr::AS_CXX11, "graph::static"}};
    Spellings = kSpellings;
  }

  bool diagAppertainsToDecl(Sema& s, const ParsedAttr& attr, const Decl* d) const override {
    if (isa<FunctionDecl>(d)) return true;
    wrong_subject(s, attr);
    return false;
  }

  // Without this, Clang rejects the attribute on a statement with an error.
  bool diagAppertainsToStmt(Sema& s, const ParsedAttr& attr, const Stmt*) const override {
    wrong_subject(s, attr);
    return false;
  }

  AttrHandling handleDeclAttribute(Sema& s, Decl* d, const ParsedAttr& attr) const override {
    try {
      if (has_argument_list(s, attr)) {
        s.Diag(attr.getLoc(), diag::err_attribute_wrong_number_arguments) << kAttrName << 0;
        return AttributeNotApplied;
      }
      d->addAttr(AnnotateAttr::Create(s.Context, kTag, nullptr, 0, attr.getRange()));
      return AttributeApplied;
    } catch (...) {
      return AttributeNotApplied;
    }
  }

 private:
  // Clang skips the argument list of a plugin attribute without parsing it
  // (getNumArgs() is 0 even for `(1)`): look at the token after the name.
  static bool has_argument_list(Sema& s, const ParsedAttr& attr) {
    if (attr.getNumArgs() > 0) return true;
    SourceLocation name = attr.getRange().getEnd();
    if (name.isInvalid()) return false;
    const SourceManager& sm = s.getSourceManager();
    std::optional<Token> next = Lexer::findNextToken(sm.getSpellingLoc(name), sm, s.getLangOpts());
    return next && next->is(tok::l_paren);
  }

  static void wrong_subject(Sema& s, const ParsedAttr& attr) {
    try {
      s.Diag(attr.getLoc(), diag::warn_attribute_wrong_decl_type_str)
          << kAttrName << attr.isRegularKeywordAttribute() << "functions";
    } catch (...) {
    }
  }
};

ParsedAttrInfoRegistry::Add<StaticAttrInfo> kAttr("graph_static", "[[graph::static]]: compile to a static graph");

// ---- options ------------------------------------------------------------
struct Options {
  std::string copy;       // rewritten source
  std::string kernels;    // generated .graph.cpp
  std::string cuda;       // generated .graph.cu
  std::string graph_dir;  // .graph files
  bool active() const { return !copy.empty() || !kernels.empty() || !cuda.empty(); }
};

// ---- diagnostics --------------------------------------------------------
// The one place for the message style: lowercase, names quoted (quote() in
// Lower.h), no trailing period; styled() enforces the first and the last for
// every message reported here. The flag is named in the text because plugin
// diagnostics cannot join a warning group in Clang 19. -Wno-graph-fallback
// and -Werror=graph-fallback given to the generator are honoured here. The
// same message at the same place is reported once.
std::string styled(std::string m) {
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

// ---- the consumer -------------------------------------------------------
bool tagged(const Decl* d) {
  if (d->hasAttr<AnnotateAttr>())
    for (const auto* a : d->specific_attrs<AnnotateAttr>())
      if (a->getAnnotation() == kTag) return true;
  return false;
}

// The annotated definitions, each once: a template's pattern but none of its
// instantiations (they share its source; the pattern gets the diagnostic),
// and lambdas, whose call operators the visitor does not reach as decls.
class Collector : public RecursiveASTVisitor<Collector> {
 public:
  bool VisitFunctionDecl(FunctionDecl* fd) {
    if (fd->doesThisDeclarationHaveABody() && !fd->isTemplateInstantiation() && tagged(fd)) found.push_back(fd);
    return true;
  }
  bool VisitLambdaExpr(LambdaExpr* e) {
    if (CXXMethodDecl* op = e->getCallOperator(); op && tagged(op)) found.push_back(op);
    return true;
  }
  std::vector<FunctionDecl*> found;
};

// A failed write is reported, never left to raw_fd_ostream's destructor
// (which would end Clang with report_fatal_error).
bool write_file(const std::string& path, const std::string& text, std::string& err) {
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    err = "cannot write " + quote(path) + ": " + ec.message();
    return false;
  }
  os << text;
  os.close();
  if (os.has_error()) {
    err = "cannot write " + quote(path) + ": " + os.error().message();
    os.clear_error();
    return false;
  }
  return true;
}


class Consumer : public ASTConsumer {
 public:
  Consumer(CompilerInstance& ci, Options opts) : ci_(ci), opts_(std::move(opts)), diags_(ci) {}

  // After Clang's own errors the AST may be incomplete: write nothing (the
  // compile fails anyway, and no stale output may look current).
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
  // What one lowered function contributes to the outputs.
  struct Compiled {
    std::unique_ptr<graph::ir::Graph> optimized;
    std::unique_ptr<graph::codegen::GradientUnit> gradient;  // for calls that require grad
    graph::codegen::GraphUnit unit;
    SourceLocation lbrace;
    std::string prologue;
    std::string stem, lowered_text;  // <stem>.graph holds lowered_text
  };

  void generate(ASTContext& ctx) {
    SourceManager& sm = ctx.getSourceManager();
    Rewriter rewriter(sm, ctx.getLangOpts());
    Collector collector;
    collector.TraverseDecl(ctx.getTranslationUnitDecl());

    std::vector<std::unique_ptr<graph::ir::Graph>> optimized;
    std::vector<std::unique_ptr<graph::codegen::GradientUnit>> gradients;
    std::vector<graph::codegen::GraphUnit> units;
    std::vector<std::pair<std::string, std::string>> graph_files;  // path, text
    std::map<std::string, int> file_names;
    for (FunctionDecl* fd : collector.found) {
      // Whatever goes wrong for one function leaves it eager, never the file.
      std::vector<Compiled> cs;
      std::string prologue;
      SourceLocation lbrace;
      try {
        try {
          cs.push_back(compile(ctx, fd, file_names));
          prologue = cs.back().prologue;
          lbrace = cs.back().lbrace;
        } catch (const Unsupported& u) {
          // A statement directly in the body: maybe a graph break.
          std::optional<Split> sp;
          std::optional<Unsupported> no_break;
          std::vector<Compiled> regions;
          if (u.breakable) {
            try {
              sp = split(ctx, fd, u, [&](size_t, Lowered& lowered, const std::string& name) {
                regions.push_back(finish(ctx, fd, lowered, name, body_hash(ctx, fd)));
              });
            } catch (const Unsupported& why) {
              no_break = why;
            }
          }
          if (!sp) {
            std::vector<std::pair<SourceLocation, std::string>> notes = u.notes;
            if (no_break && (no_break->message != u.message || no_break->loc != u.loc))
              notes.push_back({no_break->loc.isValid() ? no_break->loc : u.loc,
                               "no graph break is possible around it: " + no_break->message});
            diags_.fallback(u.loc.isValid() ? u.loc : fd->getLocation(), u.message, fd, notes);
            continue;
          }
          for (const Break& b : sp->breaks) diags_.graph_break(b.why.loc, b.why.message, b.what, b.where, b.why.notes);
          // Named only now, when nothing can fail any more.
          for (size_t k = 0; k < regions.size(); ++k)
            regions[k].stem = stem(identifier(fd->getNameAsString()) + ".region" + std::to_string(sp->regions[k]),
                                   file_names);
          cs = std::move(regions);
          prologue = sp->prologue;
          lbrace = sp->lbrace;
        }
      } catch (const Unsupported& u) {
        diags_.fallback(u.loc.isValid() ? u.loc : fd->getLocation(), u.message, fd, u.notes);
      } catch (const std::exception& e) {
        diags_.internal(fd, e.what());
      } catch (...) {
        diags_.internal(fd, "unknown exception");
      }
      if (cs.empty()) continue;
      rewriter.InsertTextAfterToken(lbrace, prologue);
      for (Compiled& c : cs) {
        if (!opts_.graph_dir.empty()) {
          graph_files.push_back({opts_.graph_dir + "/" + c.stem + ".graph", c.lowered_text});
          graph_files.push_back({opts_.graph_dir + "/" + c.stem + ".opt.graph", graph::ir::print(*c.optimized)});
        }
        units.push_back(c.unit);
        optimized.push_back(std::move(c.optimized));
        gradients.push_back(std::move(c.gradient));
      }
    }

    // -Werror=graph-fallback made a fallback an error: like any error, it
    // leaves no outputs that could look current.
    if (ci_.getDiagnostics().hasErrorOccurred()) return;
    std::string origin = main_file_path(sm);
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
    if (!opts_.cuda.empty() && !write_file(opts_.cuda, graph::codegen::generate_cuda_source(units, origin), err))
      return diags_.error({}, err);
    for (const auto& [path, text] : graph_files)
      if (!write_file(path, text, err)) return diags_.error({}, err);
  }

  // The clang location of an IR node's SourceLoc, or `fallback`.
  static SourceLocation location(SourceManager& sm, const graph::ir::SourceLoc& at, SourceLocation fallback) {
    if (!at.valid()) return fallback;
    auto file = sm.getFileManager().getOptionalFileRef(at.file);
    if (!file) return fallback;
    SourceLocation loc = sm.translateFileLineCol(*file, static_cast<unsigned>(at.line), static_cast<unsigned>(at.col));
    return loc.isValid() ? loc : fallback;
  }

  // The checks before lowering: where the prologue can go.
  static void check_rewritable(SourceManager& sm, FunctionDecl* fd) {
    if (!sm.isInMainFile(sm.getExpansionLoc(fd->getLocation())))
      throw Unsupported{fd->getLocation(), "annotated functions defined in headers cannot be rewritten yet", {}, false};
    // The prologue goes after the body's `{`, which must be in the file.
    const auto* body = dyn_cast_or_null<CompoundStmt>(fd->getBody());
    if (body && !Rewriter::isRewritable(body->getLBracLoc()))
      throw Unsupported{body->getLBracLoc(), "the body of an annotated function cannot come from a macro", {}, false};
  }

  // Checks, optimizes and test-generates one lowered graph, registered as
  // (mangled, hash); the .graph files' stem is left to the caller.
  Compiled finish(ASTContext& ctx, FunctionDecl* fd, Lowered& lowered, const std::string& mangled,
                  const std::string& hash) {
    SourceManager& sm = ctx.getSourceManager();
    // The graph as lowered, then a verified, optimized copy for codegen.
    Compiled c;
    std::string text = graph::ir::print(*lowered.graph);
    graph::ir::verify_or_throw(*lowered.graph);
    c.optimized = graph::ir::parse(text);
    // Verified once at the end: after every pass it costs more than all the
    // passes together on long functions (the pass tests verify each step).
    try {
      graph::ir::run_pipeline(*c.optimized, graph::ir::default_pipeline());
    } catch (const graph::ir::GraphError& e) {
      // A shape or dtype that can never work: the user's error, at its line.
      throw Unsupported{location(sm, e.loc, fd->getLocation()), "this graph can never run: " + e.message, {}, false};
    }
    graph::ir::verify_or_throw(*c.optimized);

    PresumedLoc where = sm.getPresumedLoc(fd->getLocation());
    std::string source = where.isValid() ? std::filesystem::path(where.getFilename()).filename().string() + ":" +
                                               std::to_string(where.getLine())
                                         : "";
    // Autodiff refusing the graph is no fallback: only grad calls run eagerly.
    c.gradient = std::make_unique<graph::codegen::GradientUnit>(graph::codegen::make_gradient(*lowered.graph));
    c.unit = graph::codegen::GraphUnit{c.optimized.get(), mangled, hash, source, c.gradient.get()};
    graph::codegen::generate_cpu_source({c.unit}, "");  // fails here, not for the whole file
    if (!opts_.cuda.empty()) graph::codegen::generate_cuda_source({c.unit}, "");
    c.lowered_text = text;
    return c;
  }

  static std::string stem(const std::string& base, std::map<std::string, int>& file_names) {
    std::string s = base;
    if (int n = file_names[s]++) s += "." + std::to_string(n);
    return s;
  }

  // Lowers, checks, optimizes and test-generates one function; throws
  // Unsupported (user-facing), or anything else (our bug).
  Compiled compile(ASTContext& ctx, FunctionDecl* fd, std::map<std::string, int>& file_names) {
    check_rewritable(ctx.getSourceManager(), fd);
    Lowered lowered = lower_function(ctx, fd);  // checks the kind of function and its body first
    const auto* body = cast<CompoundStmt>(fd->getBody());
    std::string hash = body_hash(ctx, fd);
    std::string mangled = ASTNameGenerator(ctx).getName(fd);
    Compiled c = finish(ctx, fd, lowered, mangled, hash);

    // Only now, when nothing can fail any more, the name of its .graph files
    // (written with the other outputs, unless the file has errors).
    c.stem = stem(identifier(fd->getNameAsString()), file_names);

    c.lbrace = body->getLBracLoc();
    c.prologue = " static ::graph::detail::StaticFunction _graph_sf(\"" + mangled + "\", \"" + hash +
                 "\"); if (" + lowered.result_type + " _graph_r{}; _graph_sf.run(_graph_r, " +
                 eager_call(fd, lowered.result_type);
    for (const std::string& a : lowered.call_args) c.prologue += ", " + a;
    c.prologue += ")) return _graph_r;";
    return c;
  }

  CompilerInstance& ci_;
  Options opts_;
  Diagnostics diags_;
};

// The frontend's entry points: like the attribute's, nothing may throw out.
class Action : public PluginASTAction {
 protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, llvm::StringRef) override {
    try {
      return std::make_unique<Consumer>(ci, opts_);
    } catch (...) {
      DiagnosticsEngine& d = ci.getDiagnostics();
      d.Report(d.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: internal error creating the plugin"));
      return std::make_unique<ASTConsumer>();
    }
  }

  bool ParseArgs(const CompilerInstance& ci, const std::vector<std::string>& args) override {
    DiagnosticsEngine& d = ci.getDiagnostics();
    try {
      for (const std::string& a : args) {
        auto eq = a.find('=');
        std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
        if (key == "copy") opts_.copy = value;
        else if (key == "kernels") opts_.kernels = value;
        else if (key == "cuda") opts_.cuda = value;
        else if (key == "graph-dir") opts_.graph_dir = value;
        else if (key == "help") {
          llvm::errs() << "cxxgraph plugin options (-fplugin-arg-cxxgraph-KEY=VALUE):\n"
                          "  copy=PATH       write the source with dispatch prologues to PATH\n"
                          "  kernels=PATH    write the generated CPU kernels to PATH\n"
                          "  cuda=PATH       write the generated CUDA kernels (.graph.cu) to PATH\n"
                          "  graph-dir=DIR   write <function>.graph and <function>.opt.graph to DIR\n";
        } else {
          d.Report(d.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: unknown plugin option '%0'")) << a;
          return false;
        }
      }
      return true;
    } catch (...) {
      d.Report(d.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: internal error reading the plugin options"));
      return false;
    }
  }

  ActionType getActionType() override { return AddBeforeMainAction; }

 private:
  Options opts_;
};

FrontendPluginRegistry::Add<Action> kAction("cxxgraph", "lower [[graph::static]] functions to static graphs");

}  // namespace
}  // namespace cxxgraph
