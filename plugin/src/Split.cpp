// Graph breaks, Clang side (Split.h): the facts, the regions' lowering, the
// prologue. The planning itself is planner/Planner.cpp.
//
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
#include "Split.h"

#include <algorithm>
#include <map>

#include "Planner.h"
#include "Rewrite.h"
#include "graph/codegen/call_contract.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"

namespace cxxgraph {

using namespace clang;

namespace {

planner::Loc raw(SourceLocation l) { return l.getRawEncoding(); }
SourceLocation loc(planner::Loc l) { return SourceLocation::getFromRawEncoding(l); }

// The statements are copied as text, region by region, into the prologue
// after the `{`: a preprocessor directive in the body (#if ... #endif, a
// #define the statements use) could end up split or too late. And the
// islands and regions become separate lambdas: a jump between them would
// not compile.
void check_splittable(SourceManager& sm, const CompoundStmt* body, unsigned first_offset, unsigned end_offset,
                      const Unsupported& first) {
  SourceLocation lbrace = sm.getExpansionLoc(body->getLBracLoc());
  const unsigned from =
      sm.isInMainFile(lbrace) && sm.getFileOffset(lbrace) < first_offset ? sm.getFileOffset(lbrace) : first_offset;
  llvm::StringRef text = sm.getBufferData(sm.getMainFileID()).substr(from, end_offset - from);
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef l : lines)
    if (l.ltrim().starts_with("#"))
      throw Unsupported{first.loc,
                        "the body has a preprocessor directive among its statements, which a graph break "
                        "cannot split",
                        {}, false};

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

planner::Nesting nesting(const Stmt* st) {
  using planner::Nesting;
  while (const auto* a = dyn_cast<AttributedStmt>(st)) st = a->getSubStmt();
  if (isa<IfStmt>(st)) return Nesting::if_stmt;
  if (isa<ForStmt, CXXForRangeStmt>(st)) return Nesting::for_loop;
  if (isa<WhileStmt>(st)) return Nesting::while_loop;
  if (isa<DoStmt>(st)) return Nesting::do_loop;
  if (isa<SwitchStmt>(st)) return Nesting::switch_stmt;
  if (isa<CXXTryStmt>(st)) return Nesting::try_block;
  if (isa<CompoundStmt>(st)) return Nesting::block;
  return Nesting::none;
}

// Whether `st` returns from the function (a lambda's `return` does not).
bool returns(const Stmt* st) {
  struct Returns : RecursiveASTVisitor<Returns> {
    bool found = false;
    bool TraverseLambdaExpr(LambdaExpr*) { return true; }
    bool VisitReturnStmt(ReturnStmt*) {
      found = true;
      return false;
    }
  } r;
  r.TraverseStmt(const_cast<Stmt*>(st));
  return r.found;
}

// The planner's facts about a body's top-level statements, and the
// declarations behind its variable ids.
class Extractor {
 public:
  Extractor(ASTContext& ctx, const FunctionDecl* fd) : ctx_(ctx) {
    for (const ParmVarDecl* p : fd->parameters())
      if (!p->getName().empty()) add(p, -1);
  }

  planner::Facts facts;
  std::vector<const ValueDecl*> decls;  // by VarId

  void statement(const Stmt* st, size_t i, unsigned begin, unsigned end) {
    planner::Stmt s;
    s.begin = begin;
    s.end = end;
    s.nesting = nesting(st);
    s.null = isa<NullStmt>(st);
    s.returns = returns(st);
    if (const auto* ds = dyn_cast<DeclStmt>(st)) {
      s.declaration = true;
      for (const Decl* d : ds->decls()) declare(d, i, s);
    }
    facts.stmts.push_back(std::move(s));
  }

  // Once every statement declared its variables: what each one reads.
  void reads(const std::vector<const Stmt*>& stmts) {
    struct Refs : RecursiveASTVisitor<Refs> {
      std::vector<std::pair<const ValueDecl*, SourceLocation>> found;
      bool VisitDeclRefExpr(DeclRefExpr* e) {
        found.push_back({e->getDecl(), e->getLocation()});
        return true;
      }
    };
    for (size_t i = 0; i < stmts.size(); ++i) {
      Refs r;
      r.TraverseStmt(const_cast<Stmt*>(stmts[i]));
      for (const auto& [d, at] : r.found)
        if (auto it = ids_.find(d); it != ids_.end()) facts.stmts[i].reads.push_back({it->second, raw(at)});
    }
  }

 private:
  void declare(const Decl* d, size_t i, planner::Stmt& s) {
    using planner::Declared;
    if (const auto* dd = dyn_cast<DecompositionDecl>(d)) {
      for (const BindingDecl* b : dd->bindings()) add(b, static_cast<long>(i));
      s.declares.push_back({Declared::structured, std::nullopt, dd->getNameAsString(), raw(dd->getLocation())});
    } else if (const auto* v = dyn_cast<VarDecl>(d)) {
      s.declares.push_back({Declared::variable, add(v, static_cast<long>(i)), v->getName().str(), raw(v->getLocation())});
    } else if (isa<TypeDecl, UsingDecl, UsingDirectiveDecl, UsingEnumDecl, NamespaceAliasDecl>(d)) {
      const auto* n = cast<NamedDecl>(d);
      s.declares.push_back({Declared::type_name, std::nullopt, n->getNameAsString(), raw(n->getLocation())});
    }
  }

  planner::VarId add(const ValueDecl* d, long in) {
    planner::VarId id = facts.vars.size();
    ids_[d] = id;
    decls.push_back(d);
    facts.vars.push_back({d->getName().str(), raw(d->getLocation()), in, constant(d), cannot_cross(d)});
    return id;
  }

  // Constants (constexpr locals, const ones usable in constant expressions,
  // `static const` ones with a constant initializer) do not cross a break:
  // each piece after it declares them again, as written, so they stay
  // constants there (a template argument, a static_assert, an array bound).
  bool constant(const ValueDecl* d) const {
    const auto* v = dyn_cast<VarDecl>(d);
    if (!v || isa<ParmVarDecl, DecompositionDecl>(v) || v->getType()->isReferenceType() || !v->getInit())
      return false;
    if (v->isUsableInConstantExpressions(ctx_)) return true;
    return v->isStaticLocal() && v->getType().isConstQualified() && v->getInit()->isConstantInitializer(ctx_, false);
  }

  // Every variable crossing a break must be a tensor, a list of tensors or
  // a host scalar, or a std::tuple/std::pair of those, held by value (a
  // structured binding of a tuple by value, too); "" when it can.
  std::string cannot_cross(const ValueDecl* d) const {
    if (const auto* b = dyn_cast<BindingDecl>(d)) {
      if (!break_type(b->getType(), ctx_.getPrintingPolicy()))
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
    if (!break_type(v->getType(), ctx_.getPrintingPolicy())) return "of type " + quote(v->getType().getAsString());
    if (!isa<ParmVarDecl>(v) && (!v->hasLocalStorage() || v->getType()->isReferenceType()))
      return v->getType()->isReferenceType() ? "a reference" : "not an automatic variable";
    return "";
  }

  ASTContext& ctx_;
  std::map<const ValueDecl*, planner::VarId> ids_;
};

// Writes the prologue of a planned split (see the top of this file).
class PrologueWriter {
 public:
  PrologueWriter(ASTContext& ctx, const FunctionDecl* fd, const std::vector<const Stmt*>& stmts,
                 const std::vector<unsigned>& offsets, const Extractor& ex, const planner::Plan& plan,
                 const std::map<size_t, Lowered>& lowered)
      : ctx_(ctx), sm_(ctx.getSourceManager()), fd_(fd), stmts_(stmts), offsets_(offsets), ex_(ex), plan_(plan),
        l_(plan.layout), lowered_(lowered), origin_(main_file_path(sm_)),
        buffer_(sm_.getBufferData(sm_.getMainFileID())) {
    const size_t last = l_.regions.size() - 1;
    result_type_ = plan.has_graph[last] ? lowered.at(last).result_type
                                        : fd->getReturnType().getCanonicalType().getAsString(ctx.getPrintingPolicy());
  }

  // The prologue's text around the statements is codegen's (call_contract.h).
  std::string write(const std::string& mangled, const std::string& hash, SourceLocation lbrace) {
    std::vector<size_t> graphs;
    for (size_t j = 0; j < l_.regions.size(); ++j)
      if (plan_.has_graph[j]) graphs.push_back(j);
    std::string p = graph::codegen::split_open(mangled, hash, result_type_, eager_call(fd_, result_type_), graphs);
    for (size_t j = l_.regions.size() - 1; j >= 1; --j) {
      std::string ps;
      for (planner::VarId v : l_.params[j]) {
        const ValueDecl* d = ex_.decls[v];
        ps += (ps.empty() ? "" : ", ") + *break_type(d->getType(), ctx_.getPrintingPolicy()) + " " +
              d->getNameAsString();
      }
      p += " auto _graph_k" + std::to_string(j) + " = [&](" + ps + ") -> " + result_type_ + " {" + constants(j) +
           text(l_.stretches[j - 1].first, l_.stretches[j - 1].second) + region(j, mangled) + " };";
    }
    return p + region(0, mangled) +
           graph::codegen::split_close(sm_.getExpansionLineNumber(lbrace), sm_.getExpansionColumnNumber(lbrace),
                                       origin_);
  }

 private:
  // Statements [from, to) as written, on their own lines and columns.
  std::string text(size_t from, size_t to) const {
    if (from == to) return "";
    SourceLocation at = sm_.getExpansionLoc(stmts_[from]->getBeginLoc());
    return "\n#line " + std::to_string(sm_.getExpansionLineNumber(at)) + " \"" + origin_ + "\"\n" +
           std::string(sm_.getExpansionColumnNumber(at) - 1, ' ') +
           buffer_.substr(offsets_[from], offsets_[to] - offsets_[from]).str() + "\n";
  }

  std::string names(const std::vector<planner::VarId>& vs) const {
    std::string s;
    for (planner::VarId v : vs) s += (s.empty() ? "" : ", ") + ex_.decls[v]->getNameAsString();
    return s;
  }

  // Region j's code: its graph, else its statements, then the next island.
  std::string region(size_t j, const std::string& mangled) const {
    const planner::RegionPlan& r = l_.regions[j];
    const std::string next = "_graph_k" + std::to_string(j + 1);
    std::string s;
    if (plan_.has_graph[j]) {
      const Lowered& low = lowered_.at(j);
      // The lowered graph's inputs are the optimized one's: the same signature.
      const graph::ir::Signature sig = graph::ir::signature(*low.graph);
      const std::string name = mangled + ".region" + std::to_string(j);
      if (r.last) {
        s += graph::codegen::region_call(j, {name, "", result_type_, low.call_args}, sig, "");
      } else {
        std::string call;
        for (planner::VarId v : l_.params[j + 1]) {
          auto it = std::find(r.outputs.begin(), r.outputs.end(), v);
          call += (call.empty() ? "" : ", ") +
                  (it == r.outputs.end() ? ex_.decls[v]->getNameAsString() : low.outputs.at(it - r.outputs.begin()));
        }
        s += graph::codegen::region_call(j, {name, "", low.result_type, low.call_args}, sig, next + "(" + call + ")");
      }
    }
    s += text(r.from, r.to);
    if (!r.last) s += " return " + next + "(" + names(l_.params[j + 1]) + ");";
    return s;
  }

  // The declarations continuation j declares again, as written.
  std::string constants(size_t j) const {
    planner::Redeclared re = planner::redeclared(ex_.facts, l_, j);
    if (re.problem) throw Unsupported{loc(re.problem->at), re.problem->message, {}, false};
    std::string s;
    for (size_t i : re.stmts) s += text(i, i + 1);
    return s;
  }

  ASTContext& ctx_;
  SourceManager& sm_;
  const FunctionDecl* fd_;
  const std::vector<const Stmt*>& stmts_;
  const std::vector<unsigned>& offsets_;
  const Extractor& ex_;
  const planner::Plan& plan_;
  const planner::Layout& l_;
  const std::map<size_t, Lowered>& lowered_;
  const std::string origin_;
  const llvm::StringRef buffer_;
  std::string result_type_;
};

// The warnings of the islands: what runs eagerly, and where.
std::vector<Break> breaks(SourceManager& sm, const std::vector<const Stmt*>& stmts, const planner::Plan& plan,
                          const std::map<size_t, Unsupported>& reasons) {
  std::vector<Break> out;
  for (size_t k = 0; k < plan.layout.stretches.size(); ++k)
    for (size_t i = plan.layout.stretches[k].first; i < plan.layout.stretches[k].second; ++i) {
      Break b{reasons.at(i), "it", plan.where(k)};
      // Nested in an `if`, a loop, a `switch` or a block: all of it runs eagerly.
      SourceLocation at = sm.getExpansionLoc(stmts[i]->getBeginLoc());
      if (std::string kind = planner::describe(nesting(stmts[i])); !kind.empty() && sm.getExpansionLoc(b.why.loc) != at) {
        b.what = "the " + kind + " at line " + std::to_string(sm.getExpansionLineNumber(at)) + " that contains it";
        b.why.notes.push_back({at, "this " + kind + " runs eagerly as a whole, " + b.where});
      }
      out.push_back(std::move(b));
    }
  return out;
}

}  // namespace

std::optional<Split> split(ASTContext& ctx, const FunctionDecl* fd, const Unsupported& first,
                           const CompileRegion& compile) {
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
  check_splittable(sm, body, offsets[0], offsets[n], first);

  // A location as an offset in the main file, where it can be compared.
  auto offset = [&](const Unsupported& u) -> std::optional<planner::Offset> {
    if (!u.breakable || u.loc.isInvalid()) return std::nullopt;
    SourceLocation at = sm.getExpansionLoc(u.loc);
    if (!sm.isInMainFile(at)) return std::nullopt;
    return sm.getFileOffset(at);
  };
  Extractor ex(ctx, fd);
  for (size_t i = 0; i < n; ++i) {
    SourceLocation e = sm.getExpansionLoc(stmts[i]->getEndLoc());
    ex.statement(stmts[i], i, offsets[i], sm.isInMainFile(e) ? sm.getFileOffset(e) : offsets[i + 1] - 1);
  }
  ex.reads(stmts);

  std::optional<size_t> first_island = planner::island_of(ex.facts, offset(first), 0, n);
  if (!first_island) return std::nullopt;
  std::map<size_t, Unsupported> reasons{{*first_island, first}};
  std::map<size_t, Lowered> lowered;
  std::optional<Unsupported> failure;
  planner::Plan plan = planner::plan(ex.facts, *first_island, [&](const planner::RegionPlan& rp) {
    Region r;
    r.index = rp.index;
    r.begin = body->body_begin() + rp.from;
    r.end = body->body_begin() + rp.to;
    r.last = rp.last;
    r.boundary = rp.to < n ? stmts[rp.to]->getBeginLoc() : body->getRBracLoc();
    for (planner::VarId v : rp.inputs) r.inputs.push_back(ex.decls[v]);
    for (planner::VarId v : rp.outputs) r.outputs.push_back(ex.decls[v]);
    lowered.erase(rp.index);
    try {
      Lowered low = lower_region(ctx, fd, r);
      // Nothing to compute (only `Tensor y;` declared): runs as written.
      if (!rp.last && low.result_type == "::std::tuple<>") return planner::Lowering{planner::Lowering::as_written, {}};
      lowered.emplace(rp.index, std::move(low));
      return planner::Lowering{planner::Lowering::graph, {}};
    } catch (const Unsupported& u) {
      std::optional<planner::Offset> at = offset(u);
      if (std::optional<size_t> i = planner::island_of(ex.facts, at, rp.from, rp.to)) reasons.emplace(*i, u);
      failure = u;
      return planner::Lowering{planner::Lowering::failed, at};
    }
  });
  if (plan.failed) {
    if (plan.problem) throw Unsupported{loc(plan.problem->at), plan.problem->message, {}, false};
    throw *failure;
  }

  // Every region lowered: compile them, then write the prologue.
  const std::string mangled = ASTNameGenerator(ctx).getName(fd);
  Split sp;
  sp.lbrace = body->getLBracLoc();
  for (size_t j = 0; j < plan.layout.regions.size(); ++j)
    if (plan.has_graph[j]) {
      compile(j, lowered.at(j), mangled + ".region" + std::to_string(j));
      sp.regions.push_back(j);
    }
  if (sp.regions.empty()) return std::nullopt;  // no static region: the function runs eagerly
  sp.breaks = breaks(sm, stmts, plan, reasons);
  sp.prologue = PrologueWriter(ctx, fd, stmts, offsets, ex, plan, lowered).write(mangled, body_hash(ctx, fd), sp.lbrace);
  return sp;
}

}  // namespace cxxgraph
