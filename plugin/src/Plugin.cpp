// The Clang glue of cxxgraph: the plugin action and its options, and the
// consumer that finds the functions tagged [[graph::static]] (Attribute.cpp)
// after parsing, lowers each (lower/Lower.h), and writes
//   - the source copy with a one-line dispatch prologue in each lowered body
//     (option copy=PATH; starts with #line 1 "<original>");
//   - the generated CPU kernels and their registrars (option kernels=PATH),
//     with their fused loops in a unit of their own (option loops=PATH);
//   - the generated CUDA kernels of the fusion groups, their launchers and
//     registrars (option cuda=PATH; given when the build has CUDA);
//   - <fn>.graph (as lowered) and <fn>.opt.graph (after the passes) for
//     people to read (option graph-dir=DIR).
// Without options the plugin only registers the attribute. Nothing may throw
// into Clang's frames: every entry point catches and reports.
//
// Options reach the plugin as -fplugin-arg-cxxgraph-<key>=<value>.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Attribute.h"
#include "Diagnostics.h"
#include "Lower.h"
#include "Options.h"
#include "Rewrite.h"
#include "Split.h"
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Rewrite/Core/Rewriter.h"
#include "graph/codegen/call_contract.h"
#include "graph/codegen/cpp.h"
#include "graph/codegen/grad.h"
#include "graph/codegen/unit.h"
#include "graph/ir/passes.h"
#include "graph/ir/compile.h"
#include "graph/ir/verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace cxxgraph {

using namespace clang;

namespace {

// ---- the consumer -------------------------------------------------------

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

// The namespace of what a loops file exports: named after the file's path,
// so that it is unique among the generated sources linked into one program.
std::string loops_namespace(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) abs = path;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : abs.lexically_normal().string()) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("cxxgraph_loops_") + hex;
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
    graph::codegen::GraphUnit unit;  // unit.signature: what the prologue passes
    SourceLocation lbrace;
    std::string prologue;
    std::string stem, lowered_text;  // <stem>.graph holds lowered_text
    std::vector<Compiled> variants;  // the same graph for the dtypes= option's dtypes
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
        for (Compiled& v : c.variants) {
          if (!opts_.graph_dir.empty())
            graph_files.push_back({opts_.graph_dir + "/" + c.stem + "." + v.stem + ".opt.graph",
                                   graph::ir::print(*v.optimized)});
          units.push_back(v.unit);
          optimized.push_back(std::move(v.optimized));
          gradients.push_back(std::move(v.gradient));
        }
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
    if (!opts_.kernels.empty() && opts_.loops.empty() &&
        !write_file(opts_.kernels, graph::codegen::generate_cpu_source(units, origin), err))
      return diags_.error({}, err);
    if (!opts_.kernels.empty() && !opts_.loops.empty()) {
      const graph::codegen::CpuSources cpu =
          graph::codegen::generate_cpu_sources(units, origin, loops_namespace(opts_.loops));
      if (!write_file(opts_.kernels, cpu.functions, err) || !write_file(opts_.loops, cpu.loops, err))
        return diags_.error({}, err);
    }
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
    PresumedLoc where = sm.getPresumedLoc(fd->getLocation());
    std::string source = where.isValid() ? std::filesystem::path(where.getFilename()).filename().string() + ":" +
                                               std::to_string(where.getLine())
                                         : "";
    // The graph as lowered, then (codegen::compile_unit, ir::compile) a
    // verified, optimized copy and its gradient graphs for codegen.
    Compiled c;
    graph::codegen::CompiledUnit compiled;
    try {
      compiled = graph::codegen::compile_unit(*lowered.graph, {mangled, hash, source});
    } catch (const graph::ir::GraphError& e) {
      // A shape or dtype that can never work: the user's error, at its line.
      throw Unsupported{location(sm, e.loc, fd->getLocation()), "this graph can never run: " + e.message, {}, false};
    }
    c.optimized = std::move(compiled.optimized);
    c.gradient = std::move(compiled.gradient);
    c.unit = std::move(compiled.unit);
    graph::codegen::generate_cpu_source({c.unit}, "");  // fails here, not for the whole file
    if (!opts_.cuda.empty()) graph::codegen::generate_cuda_source({c.unit}, "");
    c.lowered_text = c.unit.lowered_ir;
    for (graph::DType d : opts_.dtypes)
      if (std::optional<Compiled> v = variant(fd, *lowered.graph, c.unit, d)) c.variants.push_back(std::move(*v));
    return c;
  }

  // The graph compiled again with `d` for its float32 tensor inputs (option
  // dtypes=), registered as (mangled, hash:<dtype>): the runtime runs it for
  // calls in that dtype. One that cannot be made is a -Wgraph-fallback
  // warning; those calls are then specialized at run time.
  std::optional<Compiled> variant(const FunctionDecl* fd, const graph::ir::Graph& lowered,
                                  const graph::codegen::GraphUnit& main, graph::DType d) {
    const std::string token(graph::dtype_token(d));
    Compiled v;
    try {
      graph::codegen::CompiledUnit compiled =
          graph::codegen::compile_unit(lowered, {main.mangled_name, main.body_hash, main.source, d});
      v.optimized = std::move(compiled.optimized);
      v.gradient = std::move(compiled.gradient);
      v.unit = std::move(compiled.unit);
      graph::codegen::generate_cpu_source({v.unit}, "");
      if (!opts_.cuda.empty()) graph::codegen::generate_cuda_source({v.unit}, "");
    } catch (const std::exception& e) {
      diags_.variant(fd->getLocation(), "no " + token + " variant of " + quote(fd->getNameAsString()) +
                                            " can be compiled (" + e.what() + "); its calls with " + token +
                                            " tensors will run the graph specialized at run time, on the interpreter");
      return std::nullopt;
    }
    v.stem = token;
    return v;
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
    c.prologue = graph::codegen::prologue({mangled, hash, lowered.result_type, lowered.call_args}, c.unit.signature,
                                          eager_call(fd, lowered.result_type));
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
      for (const std::string& a : args)
        if (!opts_.set(a)) {
          d.Report(d.getCustomDiagID(DiagnosticsEngine::Error, "cxxgraph: unknown plugin option or value '%0'")) << a;
          return false;
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
