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
          if (u.breakable) {
            try {
              sp = split(ctx, fd, u, file_names);
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
          cs = std::move(sp->regions);
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

  // The whole definition as written (a name from a macro argument included).
  static std::string body_hash(ASTContext& ctx, FunctionDecl* fd) {
    SourceManager& sm = ctx.getSourceManager();
    CharSourceRange range = sm.getExpansionRange(fd->getSourceRange());
    return hex(fnv1a(Lexer::getSourceText(range, sm, ctx.getLangOpts())));
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

  // ---- graph breaks -------------------------------------------------------
  // A function whose body has statements that cannot be lowered directly in
  // its top-level braces runs as static regions (each its own graph, named
  // "<mangled>.region<k>") around those statements, which run eagerly (the
  // islands). The prologue becomes, on its own lines (#line keeps every
  // statement's line and column):
  //
  //   static StaticFunction _graph_sf(...); if (R _graph_r{}; _graph_sf.run_split(_graph_r, eager, [&]() -> R {
  //     static StaticFunction _graph_sf0(...), ...;
  //     auto _graph_k1 = [&](<live variables>) -> R { <island 1> <region 1> return _graph_k2(...); };
  //     <region 0> return _graph_k1(...);
  //   })) return _graph_r;
  //
  // where a region is "{ if (its graph ran) return _graph_k<next>(<its outputs>); }" followed by its
  // statements as written (its eager fallback). Each island's statement is
  // emitted as written with the variables live across it as locals of the
  // same names, so it may read, assign and declare them, and `return`.
  struct Break {
    Unsupported why;
    std::string what;   // "it", or "the 'if' statement at line 12 that contains it"
    std::string where;  // "between two static regions", ...
  };
  struct Split {
    std::vector<Compiled> regions;
    std::vector<Break> breaks;
    SourceLocation lbrace;
    std::string prologue;
  };

  // Throws Unsupported when a break is impossible; nullopt when the statement
  // at `first` is not one (nested in a compound statement, not in the body).
  std::optional<Split> split(ASTContext& ctx, FunctionDecl* fd, const Unsupported& first,
                             std::map<std::string, int>& file_names) {
    SourceManager& sm = ctx.getSourceManager();
    const auto* body = dyn_cast_or_null<CompoundStmt>(fd->getBody());
    if (!body || body->body_empty()) return std::nullopt;
    const std::vector<const Stmt*> stmts(body->body_begin(), body->body_end());
    const size_t n = stmts.size();
    std::vector<unsigned> offsets;  // where each statement starts in the main file, then the `}`
    for (const Stmt* st : stmts) {
      SourceLocation at = sm.getExpansionLoc(st->getBeginLoc());
      if (!sm.isInMainFile(at)) return std::nullopt;
      offsets.push_back(sm.getFileOffset(at));
    }
    SourceLocation rbrace = sm.getExpansionLoc(body->getRBracLoc());
    if (!sm.isInMainFile(rbrace)) return std::nullopt;
    offsets.push_back(sm.getFileOffset(rbrace));
    for (size_t i = 0; i < n; ++i)
      if (offsets[i] >= offsets[i + 1]) return std::nullopt;
    // The statements are copied as text, region by region, into the
    // prologue after the `{`: a preprocessor directive in the body (#if ...
    // #endif, a #define the statements use) could end up split or too late.
    {
      SourceLocation lbrace = sm.getExpansionLoc(body->getLBracLoc());
      const unsigned from = sm.isInMainFile(lbrace) && sm.getFileOffset(lbrace) < offsets[0] ? sm.getFileOffset(lbrace)
                                                                                             : offsets[0];
      llvm::StringRef text = sm.getBufferData(sm.getMainFileID()).substr(from, offsets[n] - from);
      llvm::SmallVector<llvm::StringRef> lines;
      text.split(lines, '\n');
      for (llvm::StringRef l : lines)
        if (l.ltrim().starts_with("#"))
          throw Unsupported{first.loc,
                            "the body has a preprocessor directive among its statements, which a graph break "
                            "cannot split",
                            {}, false};
    }

    // The islands and regions become separate lambdas: a jump between them
    // would not compile.
    {
      struct Jumps : RecursiveASTVisitor<Jumps> {
        SourceLocation at;
        bool VisitGotoStmt(GotoStmt* g) { return note(g->getBeginLoc()); }
        bool VisitIndirectGotoStmt(IndirectGotoStmt* g) { return note(g->getBeginLoc()); }
        bool VisitLabelStmt(LabelStmt* l) { return note(l->getBeginLoc()); }
        bool note(SourceLocation l) {
          if (at.isInvalid()) at = l;
          return true;
        }
      } jumps;
      jumps.TraverseStmt(const_cast<CompoundStmt*>(body));
      if (jumps.at.isValid())
        throw Unsupported{jumps.at, "the function uses 'goto' or labels, which a graph break cannot split", {}, false};
    }

    // The top-level statement in [lo, hi) that `u` is about: the statement
    // itself, or the `if`, loop, `switch` or block it is nested in (which
    // then runs eagerly as a whole).
    auto island_of = [&](const Unsupported& u, size_t lo, size_t hi) -> std::optional<size_t> {
      if (!u.breakable || u.loc.isInvalid()) return std::nullopt;
      SourceLocation at = sm.getExpansionLoc(u.loc);
      for (size_t i = lo; i < hi; ++i) {
        SourceLocation b = sm.getExpansionLoc(stmts[i]->getBeginLoc());
        SourceLocation e = sm.getExpansionLoc(stmts[i]->getEndLoc());
        if (sm.isBeforeInTranslationUnit(at, b) || sm.isBeforeInTranslationUnit(e, at)) continue;
        if (isa<NullStmt>(stmts[i])) return std::nullopt;
        return i;
      }
      return std::nullopt;
    };
    // What a nested island is called in the warning, or "" for a simple statement.
    auto compound_kind = [](const Stmt* st) -> std::string {
      while (const auto* a = dyn_cast<AttributedStmt>(st)) st = a->getSubStmt();
      if (isa<IfStmt>(st)) return "'if' statement";
      if (isa<ForStmt, CXXForRangeStmt>(st)) return "'for' loop";
      if (isa<WhileStmt>(st)) return "'while' loop";
      if (isa<DoStmt>(st)) return "'do' loop";
      if (isa<SwitchStmt>(st)) return "'switch' statement";
      if (isa<CXXTryStmt>(st)) return "'try' block";
      if (isa<CompoundStmt>(st)) return "block";
      return "";
    };

    // Variables of the function: parameters first (position -1), then the
    // ones each top-level statement declares. And what each statement reads.
    std::map<const ValueDecl*, std::pair<long, size_t>> declared;  // statement (-1: parameter), order
    size_t order = 0;
    for (const ParmVarDecl* p : fd->parameters())
      if (!p->getName().empty()) declared[p] = {-1, order++};
    for (size_t i = 0; i < n; ++i)
      if (const auto* ds = dyn_cast<DeclStmt>(stmts[i]))
        for (const Decl* d : ds->decls()) {
          if (const auto* dd = dyn_cast<DecompositionDecl>(d)) {
            for (const BindingDecl* b : dd->bindings()) declared[b] = {static_cast<long>(i), order++};
          } else if (const auto* v = dyn_cast<VarDecl>(d)) {
            declared[v] = {static_cast<long>(i), order++};
          }
        }
    struct Refs : RecursiveASTVisitor<Refs> {
      std::vector<std::pair<const ValueDecl*, SourceLocation>> found;
      bool VisitDeclRefExpr(DeclRefExpr* e) {
        found.push_back({e->getDecl(), e->getLocation()});
        return true;
      }
    };
    std::vector<std::vector<std::pair<const ValueDecl*, SourceLocation>>> refs(n);
    for (size_t i = 0; i < n; ++i) {
      Refs r;
      r.TraverseStmt(const_cast<Stmt*>(stmts[i]));
      for (const auto& x : r.found)
        if (declared.count(x.first)) refs[i].push_back(x);
    }
    auto by_order = [&](const ValueDecl* a, const ValueDecl* b) { return declared[a].second < declared[b].second; };
    // Constants (constexpr locals, const ones usable in constant expressions,
    // `static const` ones with a constant initializer) do not cross a break:
    // each piece after it declares them again, as written, so they stay
    // constants there (a template argument, a static_assert, an array bound).
    auto is_constant = [&](const ValueDecl* d) {
      const auto* v = dyn_cast<VarDecl>(d);
      if (!v || isa<ParmVarDecl, DecompositionDecl>(v) || v->getType()->isReferenceType() || !v->getInit())
        return false;
      if (v->isUsableInConstantExpressions(ctx)) return true;
      return v->isStaticLocal() && v->getType().isConstQualified() &&
             v->getInit()->isConstantInitializer(ctx, false);
    };
    // Variables declared before statement p and read in [from, to), in order.
    auto live = [&](size_t p, size_t from, size_t to) {
      std::vector<const ValueDecl*> out;
      std::set<const ValueDecl*> seen;
      for (size_t i = from; i < to; ++i)
        for (const auto& [d, at] : refs[i])
          if (declared[d].first < static_cast<long>(p) && !is_constant(d) && seen.insert(d).second) out.push_back(d);
      std::sort(out.begin(), out.end(), by_order);
      return out;
    };
    // Every variable crossing the break at p must be a tensor, a list of
    // tensors or a host scalar, or a std::tuple/std::pair of those, held by
    // value (a structured binding of a tuple by value, too).
    auto cannot_cross = [&](const ValueDecl* d) -> std::string {
      if (const auto* b = dyn_cast<BindingDecl>(d)) {
        if (!break_type(b->getType(), ctx.getPrintingPolicy()))
          return "a structured binding of type " + quote(b->getType().getAsString());
        const auto* dd = dyn_cast_or_null<DecompositionDecl>(b->getDecomposedDecl());
        if (!dd) return "a structured binding";
        if (dd->getType()->isReferenceType()) {
          // `const auto& [a, b] = f(x);` holds a temporary, like a value;
          // `auto& [a, b] = t;` names t's elements, which cannot be split off.
          const Expr* init = dd->getInit();
          if (const auto* c = dyn_cast_or_null<ExprWithCleanups>(init)) init = c->getSubExpr();
          if (!isa_and_nonnull<MaterializeTemporaryExpr>(init))
            return "a structured binding that refers to the elements of another variable";
        }
        return "";
      }
      const auto* v = dyn_cast<VarDecl>(d);
      if (!v) return "not a variable";
      if (!break_type(v->getType(), ctx.getPrintingPolicy())) return "of type " + quote(v->getType().getAsString());
      if (!isa<ParmVarDecl>(v) && (!v->hasLocalStorage() || v->getType()->isReferenceType()))
        return v->getType()->isReferenceType() ? "a reference" : "not an automatic variable";
      return "";
    };
    auto check_crossing = [&](size_t p) {
      for (size_t i = p; i < n; ++i)
        for (const auto& [d, at] : refs[i]) {
          if (declared[d].first >= static_cast<long>(p) || is_constant(d)) continue;
          std::string why = cannot_cross(d);
          if (!why.empty())
            throw Unsupported{at,
                              quote(d->getName()) + " is used after a graph break but cannot cross it: it is " + why +
                                  "; only tensors, lists of tensors, host scalars and tuples or pairs of those held by value can",
                              {}, false};
        }
    };

    const std::string mangled = ASTNameGenerator(ctx).getName(fd);
    const std::string hash = body_hash(ctx, fd);
    std::set<size_t> islands;
    std::map<size_t, Unsupported> reasons;
    if (auto i = island_of(first, 0, n)) {
      islands.insert(*i);
      reasons.emplace(*i, first);
    } else {
      return std::nullopt;
    }
    while (true) {
      // Islands next to each other run as one eager stretch [begin, end);
      // the regions lie between them.
      std::vector<std::pair<size_t, size_t>> stretches, spans;
      for (size_t i : islands) {
        if (!stretches.empty() && stretches.back().second == i) stretches.back().second = i + 1;
        else stretches.push_back({i, i + 1});
      }
      size_t b = 0;
      for (const auto& [from, to] : stretches) {
        spans.push_back({b, from});
        b = to;
      }
      spans.push_back({b, n});
      // Checked once the islands are known: a statement reading a variable
      // an island declared and no region can hold becomes an island itself.
      auto check_all = [&] {
        for (const auto& [from, to] : stretches) check_crossing(from);
        for (const auto& [from, to] : spans)
          if (from < to) check_crossing(from);
      };

      // Variables live into eager stretch j - 1 (before region j): declared
      // before it, read from it on.
      std::vector<std::vector<const ValueDecl*>> params(spans.size());
      for (size_t j = 1; j < spans.size(); ++j) params[j] = live(stretches[j - 1].first, stretches[j - 1].first, n);

      std::vector<std::optional<Lowered>> lowered(spans.size());
      std::vector<std::vector<const ValueDecl*>> outputs(spans.size());
      bool retry = false;
      for (size_t j = 0; j < spans.size() && !retry; ++j) {
        auto [from, to] = spans[j];
        if (from == to) continue;
        const bool last = j + 1 == spans.size();
        Region r;
        r.index = j;
        r.begin = body->body_begin() + from;
        r.end = body->body_begin() + to;
        r.last = last;
        r.boundary = to < n ? stmts[to]->getBeginLoc() : body->getRBracLoc();
        for (const ValueDecl* d : live(from, from, to))
          if (cannot_cross(d).empty()) r.inputs.push_back(d);
        if (!last) {
          std::set<const ValueDecl*> touched;
          for (size_t i = from; i < to; ++i)
            for (const auto& [d, at] : refs[i]) touched.insert(d);
          for (const auto& [d, pos] : declared)
            if (pos.first >= static_cast<long>(from) && pos.first < static_cast<long>(to)) touched.insert(d);
          for (const ValueDecl* d : params[j + 1])
            if (touched.count(d)) outputs[j].push_back(d);
          if (outputs[j].empty()) continue;  // nothing to compute for later: runs as written
          for (const ValueDecl* d : outputs[j]) r.outputs.push_back(d);
        }
        try {
          lowered[j] = lower_region(ctx, fd, r);
          // Nothing to compute (only `Tensor y;` declared): runs as written.
          if (!last && lowered[j]->result_type == "::std::tuple<>") lowered[j].reset();
        } catch (const Unsupported& u) {
          std::optional<size_t> i = island_of(u, from, to);
          if (!i) {
            check_all();  // the clearer reason, when there is one
            throw;
          }
          islands.insert(*i);
          reasons.emplace(*i, u);
          retry = true;
        }
      }
      if (retry) continue;
      check_all();

      // Every region lowered: compile them, then write the prologue.
      Split sp;
      sp.lbrace = body->getLBracLoc();
      std::vector<int> graph_of(spans.size(), -1);
      for (size_t j = 0; j < spans.size(); ++j) {
        if (!lowered[j]) continue;
        Compiled c = finish(ctx, fd, *lowered[j], mangled + ".region" + std::to_string(j), hash);
        graph_of[j] = static_cast<int>(sp.regions.size());
        sp.regions.push_back(std::move(c));
      }
      if (sp.regions.empty()) return std::nullopt;  // no static region: the function runs eagerly
      for (size_t j = 0; j < spans.size(); ++j)
        if (graph_of[j] >= 0) sp.regions[graph_of[j]].stem = stem(identifier(fd->getNameAsString()) + ".region" +
                                                                     std::to_string(j), file_names);

      for (size_t k = 0; k < stretches.size(); ++k) {
        bool before = false, after = false;
        for (size_t j = 0; j < spans.size(); ++j)
          if (graph_of[j] >= 0) (j <= k ? before : after) = true;
        for (size_t i = stretches[k].first; i < stretches[k].second; ++i) {
          Break b{reasons.at(i), "it", before && after ? "between two static regions"
                                       : before       ? "after a static region"
                                                      : "before a static region"};
          // Nested in an `if`, a loop, a `switch` or a block: all of it runs eagerly.
          SourceLocation at = sm.getExpansionLoc(stmts[i]->getBeginLoc());
          if (std::string kind = compound_kind(stmts[i]); !kind.empty() && sm.getExpansionLoc(b.why.loc) != at) {
            b.what = "the " + kind + " at line " + std::to_string(sm.getExpansionLineNumber(at)) +
                     " that contains it";
            b.why.notes.push_back({at, "this " + kind + " runs eagerly as a whole, " + b.where});
          }
          sp.breaks.push_back(std::move(b));
        }
      }

      const std::string origin = main_file_path(sm);
      const llvm::StringRef buffer = sm.getBufferData(sm.getMainFileID());
      // Statements [from, to) as written, on their own lines and columns.
      auto text = [&](size_t from, size_t to) -> std::string {
        if (from == to) return "";
        SourceLocation at = sm.getExpansionLoc(stmts[from]->getBeginLoc());
        return "\n#line " + std::to_string(sm.getExpansionLineNumber(at)) + " \"" + origin + "\"\n" +
               std::string(sm.getExpansionColumnNumber(at) - 1, ' ') +
               buffer.substr(offsets[from], offsets[to] - offsets[from]).str() + "\n";
      };
      std::string result_type = lowered.back() ? lowered.back()->result_type
                                               : fd->getReturnType().getCanonicalType().getAsString(
                                                     ctx.getPrintingPolicy());
      auto names = [&](const std::vector<const ValueDecl*>& vs) {
        std::string s;
        for (const ValueDecl* d : vs) s += (s.empty() ? "" : ", ") + d->getNameAsString();
        return s;
      };
      // Region j's code: its graph, else its statements, then the next island.
      auto region = [&](size_t j) {
        auto [from, to] = spans[j];
        const bool last = j + 1 == spans.size();
        const std::string next = "_graph_k" + std::to_string(j + 1);
        std::string s;
        if (graph_of[j] >= 0) {
          const std::string sf = "_graph_sf" + std::to_string(j);
          std::string args;
          for (const std::string& a : lowered[j]->call_args) args += ", " + a;
          if (last) {
            s += " { " + result_type + " _graph_o{}; if (" + sf + ".run(_graph_o, nullptr" + args +
                 ")) return _graph_o; }";
          } else {
            std::string call;
            for (const ValueDecl* d : params[j + 1]) {
              auto it = std::find(outputs[j].begin(), outputs[j].end(), d);
              call += (call.empty() ? "" : ", ") +
                      (it == outputs[j].end() ? d->getNameAsString()
                                              : lowered[j]->outputs.at(it - outputs[j].begin()));
            }
            s += " { " + lowered[j]->result_type + " _graph_o; if (" + sf + ".run(_graph_o, nullptr" + args +
                 ")) return " + next + "(" + call + "); }";
          }
        }
        s += text(from, to);
        if (!last) s += " return " + next + "(" + names(params[j + 1]) + ");";
        return s;
      };

      // The declarations of the constants that island j - 1 and region j
      // read (and those their initializers read), and of the local types,
      // aliases and using-directives before them, as written, for the lambda
      // _graph_k<j> to declare again.
      auto constants = [&](size_t j) {
        const size_t p = stretches[j - 1].first;
        std::set<const ValueDecl*> need;
        for (size_t i = p; i < spans[j].second; ++i)
          for (const auto& [d, at] : refs[i])
            if (declared[d].first < static_cast<long>(p) && is_constant(d)) need.insert(d);
        std::vector<size_t> decls;
        for (size_t i = p; i-- > 0;) {
          const auto* ds = dyn_cast<DeclStmt>(stmts[i]);
          if (!ds) continue;
          const VarDecl* var = nullptr;
          const NamedDecl* type = nullptr;
          for (const Decl* d : ds->decls()) {
            if (const auto* v = dyn_cast<VarDecl>(d)) var = v;
            else if (isa<TypeDecl, UsingDecl, UsingDirectiveDecl, UsingEnumDecl, NamespaceAliasDecl>(d))
              type = cast<NamedDecl>(d);
          }
          const bool names_only = !var;  // cheap to declare again, needed or not
          if (var && type && !is_constant(var))
            throw Unsupported{type->getLocation(),
                              "this declaration declares " +
                                  (type->getNameAsString().empty() ? std::string("a type")
                                                                   : quote(type->getNameAsString())) +
                                  " together with the variable " +
                                  quote(var->getName()) + ", which a graph break after it cannot split; declare "
                                  "them separately",
                              {}, false};
          const ValueDecl* needed = nullptr;
          for (const Decl* d : ds->decls())
            if (const auto* v = dyn_cast<ValueDecl>(d); v && need.count(v)) needed = v;
          if (!needed && !names_only) continue;
          if (needed)
            for (const Decl* d : ds->decls())
              if (const auto* v = dyn_cast<VarDecl>(d); v && !is_constant(v))
                throw Unsupported{needed->getLocation(),
                                  quote(needed->getName()) + " is a constant used after a graph break, declared "
                                  "together with " + quote(v->getName()) + ", which is not one; declare it on its own "
                                  "to let the pieces after the break declare it again",
                                  {}, false};
          // What it reads must be there too: constants (declared again in
          // turn) and the variables live into _graph_k<j>.
          for (const auto& [d, at] : refs[i]) {
            if (declared[d].first >= static_cast<long>(i) || declared[d].first < 0) continue;
            if (is_constant(d)) {
              need.insert(d);
            } else if (std::find(params[j].begin(), params[j].end(), d) == params[j].end()) {
              throw Unsupported{at,
                                (needed ? "the constant " + quote(needed->getName()) : std::string("this declaration")) +
                                    " reads " + quote(d->getName()) + ", which a graph break after it does not keep, "
                                    "so the code after the break cannot declare it again",
                                {}, false};
            }
          }
          decls.push_back(i);
        }
        std::string s;
        for (auto it = decls.rbegin(); it != decls.rend(); ++it) s += text(*it, *it + 1);
        return s;
      };

      std::string& p = sp.prologue;
      // The variables crossing a break are parameters of the lambdas, of the
      // same names as the function's parameters they may hide: no -Wshadow.
      p = " _Pragma(\"GCC diagnostic push\") _Pragma(\"GCC diagnostic ignored \\\"-Wshadow\\\"\")"
          " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-local-typedefs\\\"\")"
          " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-variable\\\"\")"
          " static ::graph::detail::StaticFunction _graph_sf(\"" + mangled + "\", \"" + hash + "\"); if (" +
          result_type + " _graph_r{}; _graph_sf.run_split(_graph_r, " + eager_call(fd, result_type) + ", [&]() -> " +
          result_type + " {";
      for (size_t j = 0; j < spans.size(); ++j)
        if (graph_of[j] >= 0)
          p += " static ::graph::detail::StaticFunction _graph_sf" + std::to_string(j) + "(\"" + mangled +
               ".region" + std::to_string(j) + "\", \"" + hash + "\");";
      for (size_t j = spans.size() - 1; j >= 1; --j) {
        std::string ps;
        for (const ValueDecl* d : params[j])
          ps += (ps.empty() ? "" : ", ") + *break_type(d->getType(), ctx.getPrintingPolicy()) + " " + d->getNameAsString();
        p += " auto _graph_k" + std::to_string(j) + " = [&](" + ps + ") -> " + result_type + " {" +
             constants(j) + text(stretches[j - 1].first, stretches[j - 1].second) + region(j) + " };";
      }
      p += region(0) + " })) return _graph_r; _Pragma(\"GCC diagnostic pop\")\n#line " +
           std::to_string(sm.getExpansionLineNumber(sp.lbrace)) + " \"" + origin + "\"\n" +
           std::string(sm.getExpansionColumnNumber(sp.lbrace), ' ');
      return sp;
    }
  }

  // For GRAPH_CHECK, a lambda calling the function again with its own
  // parameters (the prologue lets that call run the body); nullptr where it
  // cannot be named (lambdas, friends defined in a class, which ordinary
  // lookup does not find, unnamed parameters) or called before the body ends
  // (a deduced return type).
  static std::string eager_call(const FunctionDecl* fd, const std::string& result_type) {
    if (fd->getFriendObjectKind() != Decl::FOK_None || fd->getDeclaredReturnType()->getContainedDeducedType())
      return "nullptr";
    std::string callee;
    if (const auto* m = dyn_cast<CXXMethodDecl>(fd)) {
      if (m->getParent()->isLambda()) return "nullptr";
      // Qualified, so a virtual forward calls this body, not an override.
      callee = (m->isInstance() ? "this->" : "") + m->getParent()->getNameAsString() + "::" + fd->getNameAsString();
    } else {
      callee = fd->getNameAsString();
    }
    std::string args;
    for (const ParmVarDecl* p : fd->parameters()) {
      if (p->getName().empty()) return "nullptr";
      args += (args.empty() ? "" : ", ") + p->getNameAsString();
    }
    return "[&]() -> " + result_type + " { return " + callee + "(" + args + "); }";
  }

  static std::string main_file_path(const SourceManager& sm) {
    if (OptionalFileEntryRef main = sm.getFileEntryRefForID(sm.getMainFileID())) {
      std::string real = main->getFileEntry().tryGetRealPathName().str();
      if (!real.empty()) return std::filesystem::absolute(real).string();
      return main->getName().str();
    }
    return sm.getBufferOrFake(sm.getMainFileID()).getBufferIdentifier().str();  // e.g. <stdin>
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
