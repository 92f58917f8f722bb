// The graph-break planner (Planner.h): islands, regions and the variables
// crossing each break, from plain statement facts.
#include "Planner.h"

#include <algorithm>

namespace cxxgraph::planner {

namespace {

std::string quote(const std::string& name) { return "'" + name + "'"; }

// Variables declared before statement p and read in [from, to), in
// declaration order; constants are declared again after a break instead.
std::vector<VarId> live(const Facts& f, size_t p, size_t from, size_t to) {
  std::vector<VarId> out;
  std::set<VarId> seen;
  for (size_t i = from; i < to; ++i)
    for (const Read& r : f.stmts[i].reads) {
      const Var& v = f.vars[r.var];
      if (v.declared_in < static_cast<long>(p) && !v.constant && seen.insert(r.var).second) out.push_back(r.var);
    }
  std::sort(out.begin(), out.end());
  return out;
}

// Every variable read from statement p on and declared before it must be
// able to cross the break at p.
std::optional<Problem> check_crossing(const Facts& f, size_t p) {
  for (size_t i = p; i < f.stmts.size(); ++i)
    for (const Read& r : f.stmts[i].reads) {
      const Var& v = f.vars[r.var];
      if (v.declared_in >= static_cast<long>(p) || v.constant || v.cannot_cross.empty()) continue;
      return Problem{r.at, quote(v.name) + " is used after a graph break but cannot cross it: it is " + v.cannot_cross +
                               "; only tensors, lists of tensors, host scalars and tuples or pairs of those held by "
                               "value can"};
    }
  return std::nullopt;
}

}  // namespace

std::string describe(Nesting n) {
  switch (n) {
    case Nesting::none: return "";
    case Nesting::if_stmt: return "'if' statement";
    case Nesting::for_loop: return "'for' loop";
    case Nesting::while_loop: return "'while' loop";
    case Nesting::do_loop: return "'do' loop";
    case Nesting::switch_stmt: return "'switch' statement";
    case Nesting::try_block: return "'try' block";
    case Nesting::block: return "block";
  }
  return "";
}

std::optional<size_t> island_of(const Facts& f, std::optional<Offset> at, size_t lo, size_t hi) {
  if (!at) return std::nullopt;
  for (size_t i = lo; i < hi && i < f.stmts.size(); ++i) {
    const Stmt& s = f.stmts[i];
    if (*at < s.begin || s.end < *at) continue;
    if (s.null) return std::nullopt;
    return i;
  }
  return std::nullopt;
}

Layout layout(const Facts& f, const std::set<size_t>& islands) {
  const size_t n = f.stmts.size();
  Layout l;
  // Islands next to each other run as one eager stretch; the regions lie
  // between the stretches.
  for (size_t i : islands) {
    if (!l.stretches.empty() && l.stretches.back().second == i) l.stretches.back().second = i + 1;
    else l.stretches.push_back({i, i + 1});
  }
  std::vector<std::pair<size_t, size_t>> spans;
  size_t b = 0;
  for (const auto& [from, to] : l.stretches) {
    spans.push_back({b, from});
    b = to;
  }
  spans.push_back({b, n});

  l.params.resize(spans.size());
  for (size_t j = 1; j < spans.size(); ++j) {
    const size_t p = l.stretches[j - 1].first;
    l.params[j] = live(f, p, p, n);
  }
  for (size_t j = 0; j < spans.size(); ++j) {
    RegionPlan r;
    r.index = j;
    r.from = spans[j].first;
    r.to = spans[j].second;
    r.last = j + 1 == spans.size();
    if (r.from < r.to) {
      for (VarId v : live(f, r.from, r.from, r.to))
        if (f.vars[v].cannot_cross.empty()) r.inputs.push_back(v);
      if (!r.last) {
        // What it reads or declares and the code after the next break needs.
        std::set<VarId> touched;
        for (size_t i = r.from; i < r.to; ++i)
          for (const Read& rd : f.stmts[i].reads) touched.insert(rd.var);
        for (VarId v = 0; v < f.vars.size(); ++v)
          if (f.vars[v].declared_in >= static_cast<long>(r.from) && f.vars[v].declared_in < static_cast<long>(r.to))
            touched.insert(v);
        for (VarId v : l.params[j + 1])
          if (touched.count(v)) r.outputs.push_back(v);
      }
    }
    l.regions.push_back(std::move(r));
  }
  return l;
}

std::optional<Problem> check_crossings(const Facts& f, const Layout& l) {
  for (const auto& [from, to] : l.stretches)
    if (auto p = check_crossing(f, from)) return p;
  for (const RegionPlan& r : l.regions)
    if (r.from < r.to)
      if (auto p = check_crossing(f, r.from)) return p;
  return std::nullopt;
}

Redeclared redeclared(const Facts& f, const Layout& l, size_t j) {
  Redeclared out;
  const size_t p = l.stretches.at(j - 1).first;
  const std::vector<VarId>& params = l.params.at(j);
  std::set<VarId> need;
  for (size_t i = p; i < l.regions.at(j).to; ++i)
    for (const Read& r : f.stmts[i].reads)
      if (f.vars[r.var].declared_in < static_cast<long>(p) && f.vars[r.var].constant) need.insert(r.var);
  auto constant = [&](const Declared& d) { return d.kind == Declared::variable && f.vars[*d.var].constant; };
  for (size_t i = p; i-- > 0;) {
    const Stmt& s = f.stmts[i];
    if (!s.declaration) continue;
    const Declared* var = nullptr;
    const Declared* type = nullptr;
    const Declared* needed = nullptr;
    for (const Declared& d : s.declares) {
      if (d.kind == Declared::type_name) type = &d;
      else var = &d;
      if (d.kind == Declared::variable && need.count(*d.var)) needed = &d;
    }
    const bool names_only = !var;  // cheap to declare again, needed or not
    if (var && type && !constant(*var)) {
      out.problem = Problem{type->loc, "this declaration declares " +
                                           (type->name.empty() ? std::string("a type") : quote(type->name)) +
                                           " together with the variable " + quote(var->name) +
                                           ", which a graph break after it cannot split; declare them separately"};
      return out;
    }
    if (!needed && !names_only) continue;
    if (needed)
      for (const Declared& d : s.declares)
        if (d.kind != Declared::type_name && !constant(d)) {
          out.problem = Problem{needed->loc, quote(needed->name) +
                                                 " is a constant used after a graph break, declared together with " +
                                                 quote(d.name) +
                                                 ", which is not one; declare it on its own to let the pieces after "
                                                 "the break declare it again"};
          return out;
        }
    // What it reads must be there too: constants (declared again in turn)
    // and the variables live into the continuation.
    for (const Read& r : s.reads) {
      const Var& v = f.vars[r.var];
      if (v.declared_in >= static_cast<long>(i) || v.declared_in < 0) continue;
      if (v.constant) {
        need.insert(r.var);
      } else if (std::find(params.begin(), params.end(), r.var) == params.end()) {
        out.problem = Problem{r.at, (needed ? "the constant " + quote(needed->name) : std::string("this declaration")) +
                                        " reads " + quote(v.name) +
                                        ", which a graph break after it does not keep, so the code after the break "
                                        "cannot declare it again"};
        return out;
      }
    }
    out.stmts.push_back(i);
  }
  std::reverse(out.stmts.begin(), out.stmts.end());
  return out;
}

std::string Plan::where(size_t k) const {
  bool before = false, after = false;
  for (size_t j = 0; j < has_graph.size(); ++j)
    if (has_graph[j]) (j <= k ? before : after) = true;
  return before && after ? "between two static regions" : before ? "after a static region" : "before a static region";
}

Plan plan(const Facts& f, size_t first_island, const LowerRegion& lower) {
  Plan p;
  p.islands.insert(first_island);
  while (true) {
    p.layout = layout(f, p.islands);
    p.has_graph.assign(p.layout.regions.size(), false);
    bool retry = false;
    for (const RegionPlan& r : p.layout.regions) {
      if (r.from == r.to) continue;
      if (!r.last && r.outputs.empty()) continue;  // nothing to compute for later: runs as written
      Lowering got = lower(r);
      if (got.kind == Lowering::graph) {
        p.has_graph[r.index] = true;
      } else if (got.kind == Lowering::failed) {
        std::optional<size_t> i = island_of(f, got.failed_at, r.from, r.to);
        if (!i) {
          p.failed = true;
          p.problem = check_crossings(f, p.layout);  // the clearer reason, when there is one
          return p;
        }
        p.islands.insert(*i);
        retry = true;
        break;
      }
    }
    if (retry) continue;
    if ((p.problem = check_crossings(f, p.layout))) p.failed = true;
    return p;
  }
}

}  // namespace cxxgraph::planner
