// plan_memory: value lifetimes, in-place updates and a reused arena (the
// model and the placement heuristic are documented in memory_plan.h).
//
// Five steps over the flattened program:
//  1. number positions (node starts, block returns, If/Loop ends);
//  2. live ranges: every use, extended to the end of each enclosing Loop the
//     value was defined outside of;
//  3. storage: external, dynamic, view (or copy) and arena candidates, then
//     escapes (graph outputs, list elements), then views extend their base;
//  4. in place: elementwise nodes take the slot of a dying input;
//  5. placement: greedy by size, best fit.
#include "graph/ir/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "graph/ir/verifier.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// numel * element size of a tensor type, or -1 when the dtype or a dim is not
// static.
int64_t static_bytes(const Type& t) {
  if (!t.dtype || !t.dims) return -1;
  int64_t numel = 1;
  for (const Dim& d : *t.dims) {
    if (!d.is_static()) return -1;
    numel *= d.size;
  }
  return numel * static_cast<int64_t>(element_size(*t.dtype));
}

bool is_view(const Node* n) {
  const OpInfo* info = n->table_op();
  return info && info->kind == OpKind::View;
}

// Views whose result is contiguous when their input is.
bool keeps_contiguity(const Node* n) {
  return n->is(OpId::reshape) || n->is(OpId::flatten) || n->is(OpId::squeeze) || n->is(OpId::unsqueeze);
}

// Views that must copy when their input's strides do not allow a view.
bool may_copy(const Node* n) { return n->is(OpId::reshape) || n->is(OpId::flatten); }

// One elementwise loop over the output: may write over an input it has read.
bool is_elementwise(const Node* n) {
  if (n->is(OpId::FusionGroup)) return true;
  const OpInfo* info = n->table_op();
  return info && info->kind == OpKind::Elementwise;
}

// If and Loop own blocks the planner walks; a FusionGroup is one kernel.
bool has_control_blocks(const Node* n) { return n->is(OpId::If) || n->is(OpId::Loop); }

class Planner {
 public:
  explicit Planner(const Graph& g) : g_(g) {}

  MemoryPlan run() {
    number(g_.top());
    for (const auto& in : g_.inputs()) def_[in.get()] = 0;
    std::vector<const Node*> loops;
    uses(g_.top(), loops);
    plan_.num_positions = pos_;
    for (const auto& in : g_.inputs()) add(in.get(), Storage::External, "graph input");
    classify(g_.top());
    escapes();
    extend_bases();
    walk(g_.top(), [&](const Node* n) {
      const Node* parent = n->owner()->owner();
      if (parent && parent->is(OpId::FusionGroup)) return;  // registers, not buffers
      if (is_elementwise(n)) in_place(n);
    });
    place();
    return std::move(plan_);
  }

 private:
  // ---- 1. positions --------------------------------------------------------

  void number(const Block* b) {
    for (const auto& n : b->nodes()) {
      const Node* node = n.get();
      plan_.node_start[node] = pos_++;
      for (Value* o : node->outputs()) def_[o] = plan_.node_start[node];
      if (!has_control_blocks(node)) continue;
      for (const auto& inner : node->blocks()) {
        for (const auto& p : inner->params()) def_[p.get()] = plan_.node_start[node];
        number(inner.get());
      }
      plan_.node_end[node] = pos_++;
      // If outputs are written at the end of the branch taken (from the
      // then-return on); Loop outputs are copied out at the end.
      int out_def = node->is(OpId::If) ? return_pos_.at(node->block(0)) : plan_.node_end[node];
      for (Value* o : node->outputs()) def_[o] = out_def;
    }
    return_pos_[b] = pos_++;
  }

  // ---- 2. live ranges ------------------------------------------------------

  void use(const Value* v, int at, const std::vector<const Node*>& loops) {
    int& last = last_.try_emplace(v, def_.at(v)).first->second;
    last = std::max(last, at);
    for (const Node* loop : loops)
      if (def_.at(v) < plan_.node_start.at(loop)) last = std::max(last, plan_.node_end.at(loop));
  }

  void uses(const Block* b, std::vector<const Node*>& loops) {
    for (const auto& n : b->nodes()) {
      for (const Value* v : n->inputs()) use(v, plan_.node_start.at(n.get()), loops);
      if (!has_control_blocks(n.get())) continue;
      if (n->is(OpId::Loop)) {
        loops.push_back(n.get());
        for (const auto& p : n->block(0)->params()) use(p.get(), plan_.node_end.at(n.get()), loops);
      }
      for (const auto& inner : n->blocks()) uses(inner.get(), loops);
      if (n->is(OpId::Loop)) loops.pop_back();
    }
    for (const Value* r : b->returns()) use(r, return_pos_.at(b), loops);
  }

  // ---- 3. storage ----------------------------------------------------------

  ValuePlan& add(const Value* v, Storage s, std::string note) {
    plan_.index[v] = plan_.values.size();
    ValuePlan& p = plan_.values.emplace_back();
    p.value = v;
    p.storage = s;
    p.base = v;
    p.first = def_.at(v);
    auto it = last_.find(v);
    p.last = it == last_.end() ? p.first : it->second;
    p.note = std::move(note);
    return p;
  }

  ValuePlan& at(const Value* v) { return plan_.values[plan_.index.at(v)]; }

  // A value with its own buffer of the type's size: Arena, or Dynamic when
  // the size is not static.
  void own_buffer(const Value* v, std::string note = {}) {
    int64_t bytes = static_bytes(v->type());
    if (bytes < 0) {
      add(v, Storage::Dynamic, v->type().dtype ? "shape not static" : "dtype unknown");
      return;
    }
    ValuePlan& p = add(v, Storage::Arena, std::move(note));
    p.bytes = bytes;
    p.size = align_up(bytes);
  }

  void classify(const Block* b) {
    for (const auto& n : b->nodes()) {
      const Node* node = n.get();
      if (node->is(OpId::Loop))
        for (const auto& p : node->block(0)->params())
          if (p->type().is_tensor()) own_buffer(p.get(), "loop-carried");
      if (has_control_blocks(node))
        for (const auto& inner : node->blocks()) classify(inner.get());
      if (node->is(OpId::list_append)) list_elements_.push_back(node->input(1));
      for (const Value* o : node->outputs())
        if (o->type().is_tensor()) classify_output(node, o);
    }
  }

  void classify_output(const Node* n, const Value* o) {
    if (n->is(OpId::undefined)) return void(add(o, Storage::External, "undefined"));
    if (n->is(OpId::list_get)) return void(add(o, Storage::External, "list element"));
    if (n->is(OpId::call)) return void(add(o, Storage::Dynamic, "call result"));
    if (!is_view(n)) {
      own_buffer(o, n->is(OpId::If) ? "branch result" : n->is(OpId::Loop) ? "loop result" : "");
      contiguous_.insert(o);
      return;
    }
    const Value* in = n->input(0);
    const ValuePlan& src = at(in);
    const bool external = at(src.base).storage == Storage::External;
    if (may_copy(n) && !external && !contiguous_.count(in)) {
      own_buffer(o, "copy: " + n->op() + " of a strided view");
      contiguous_.insert(o);
      return;
    }
    const Value* base = src.base;
    ValuePlan& p = add(o, Storage::View, {});
    p.alias_of = in;
    p.base = base;
    if (keeps_contiguity(n) && (contiguous_.count(in) || external)) contiguous_.insert(o);
  }

  // Graph outputs (and the bases of views returned) escape to the caller; a
  // tensor appended to a list outlives the slot's reuse (a Loop saving one
  // value per iteration): both leave the arena.
  void escapes() {
    for (const Value* r : g_.outputs()) {
      if (!r->type().is_tensor()) continue;
      ValuePlan& base = at(at(r).base);
      if (base.storage != Storage::Arena) continue;
      base.storage = Storage::Output;
      base.note = base.value == r ? "graph output" : "viewed by a graph output";
    }
    for (const Value* v : list_elements_) {
      ValuePlan& base = at(at(v).base);
      if (base.storage != Storage::Arena) continue;
      base.storage = Storage::Dynamic;
      base.note = "kept in a list";
    }
    for (const ValuePlan& p : plan_.values)
      if (p.storage == Storage::Output) plan_.output_bytes += p.size;
  }

  // A buffer lives while any view of it does.
  void extend_bases() {
    for (const ValuePlan& p : plan_.values) {
      if (p.storage != Storage::View) continue;
      ValuePlan& base = at(p.base);
      base.last = std::max(base.last, p.last);
    }
  }

  // ---- 4. in place ---------------------------------------------------------

  // Whether output `o` of `n` may take the slot of input `in` (see the header).
  bool can_take(const Node* n, const ValuePlan& o, const Value* in) {
    if (!in->type().is_tensor() || taken_.count(in)) return false;
    const ValuePlan& src = at(in);
    if (src.storage != Storage::Arena && src.storage != Storage::InPlace) return false;
    if (src.bytes != o.bytes || src.value->type().dtype != o.value->type().dtype) return false;
    if (src.last != plan_.node_start.at(n)) return false;
    for (const Value* other : n->inputs())
      if (other != in && other->type().is_tensor() && at(other).base == in) return false;
    return true;
  }

  void in_place(const Node* n) {
    for (const Value* out : n->outputs()) {
      if (!out->type().is_tensor()) continue;
      ValuePlan& o = at(out);
      if (o.storage != Storage::Arena) continue;
      for (const Value* in : n->inputs()) {
        if (!can_take(n, o, in)) continue;
        taken_.insert(in);
        o.storage = Storage::InPlace;
        o.inplace_of = in;
        o.note = "in place of %" + in->name();
        slot_[out] = slot_root(in);
        break;
      }
    }
  }

  // The Arena value whose slot `v` (Arena or InPlace) occupies.
  const Value* slot_root(const Value* v) const {
    auto it = slot_.find(v);
    return it == slot_.end() ? v : it->second;
  }

  // ---- 5. placement --------------------------------------------------------

  struct Slot {
    const Value* root;
    int first, last;
    int64_t size;
    int64_t offset = -1;
  };

  void place() {
    std::vector<Slot> slots;
    std::unordered_map<const Value*, size_t> slot_index;
    for (const ValuePlan& p : plan_.values) {
      if (p.storage == Storage::Arena) {
        slot_index[p.value] = slots.size();
        slots.push_back({p.value, p.first, p.last, p.size});
      } else if (p.storage == Storage::InPlace) {
        Slot& s = slots[slot_index.at(slot_root(p.value))];
        s.last = std::max(s.last, p.last);
      }
    }
    std::vector<size_t> order(slots.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (slots[a].size != slots[b].size) return slots[a].size > slots[b].size;
      return slots[a].first < slots[b].first;
    });
    std::vector<const Slot*> placed;
    for (size_t i : order) {
      best_fit(slots[i], placed);
      placed.push_back(&slots[i]);
      plan_.arena_bytes = std::max(plan_.arena_bytes, slots[i].offset + slots[i].size);
    }
    for (ValuePlan& p : plan_.values) {
      if (p.storage == Storage::Arena || p.storage == Storage::InPlace) {
        p.offset = slots[slot_index.at(slot_root(p.value))].offset;
        plan_.total_bytes += p.size;
        ++(p.storage == Storage::Arena ? plan_.num_buffers : plan_.num_inplace);
      } else if (p.storage == Storage::View) {
        p.offset = at(p.base).offset;
      } else if (p.storage == Storage::Dynamic) {
        plan_.dynamic.push_back(p.value);
      }
    }
    for (int pos = 0; pos < pos_; ++pos) {
      int64_t live = 0;
      for (const Slot& s : slots)
        if (s.first <= pos && pos <= s.last) live += s.size;
      plan_.live_peak_bytes = std::max(plan_.live_peak_bytes, live);
    }
  }

  // The lowest-waste gap below, between or above the placed slots whose live
  // ranges overlap `s`.
  static void best_fit(Slot& s, const std::vector<const Slot*>& placed) {
    std::vector<const Slot*> overlapping;
    for (const Slot* p : placed)
      if (p->first <= s.last && s.first <= p->last) overlapping.push_back(p);
    std::sort(overlapping.begin(), overlapping.end(),
              [](const Slot* a, const Slot* b) { return a->offset < b->offset; });
    int64_t end = 0, best = -1, best_gap = std::numeric_limits<int64_t>::max();
    for (const Slot* p : overlapping) {
      int64_t gap = p->offset - end;
      if (gap >= s.size && gap < best_gap) best = end, best_gap = gap;
      end = std::max(end, p->offset + p->size);
    }
    s.offset = best >= 0 ? best : end;
  }

  const Graph& g_;
  MemoryPlan plan_;
  int pos_ = 0;
  std::unordered_map<const Value*, int> def_, last_;
  std::unordered_map<const Block*, int> return_pos_;
  std::unordered_set<const Value*> contiguous_, taken_;
  std::unordered_map<const Value*, const Value*> slot_;  // InPlace value -> slot root
  std::vector<const Value*> list_elements_;
};

std::string human_bytes(int64_t n) {
  char buf[32];
  if (n >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / double(1 << 20));
  else if (n >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  return buf;
}

}  // namespace

std::string_view storage_name(Storage s) {
  switch (s) {
    case Storage::Arena: return "arena";
    case Storage::InPlace: return "inplace";
    case Storage::View: return "view";
    case Storage::Output: return "output";
    case Storage::Dynamic: return "dynamic";
    case Storage::External: return "external";
  }
  return "?";
}

const ValuePlan* MemoryPlan::find(const Value* v) const {
  auto it = index.find(v);
  return it == index.end() ? nullptr : &values[it->second];
}

const ValuePlan* MemoryPlan::find(std::string_view name) const {
  for (const ValuePlan& p : values)
    if (p.value->name() == name) return &p;
  return nullptr;
}

MemoryPlan plan_memory(const Graph& g) {
  verify_or_throw(g);
  return Planner(g).run();
}

std::string describe(const MemoryPlan& plan, const Graph& g) {
  std::string out = "memory plan of graph '" + g.name() + "': arena " + human_bytes(plan.arena_bytes) +
                    " (" + std::to_string(plan.arena_bytes) + " B), intermediates without reuse " +
                    human_bytes(plan.total_bytes) + " (" + std::to_string(plan.total_bytes) + " B)";
  if (plan.total_bytes > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, ", ratio %.3f", double(plan.arena_bytes) / double(plan.total_bytes));
    out += ratio;
  }
  out += "\n  " + std::to_string(plan.num_buffers) + " buffers, " + std::to_string(plan.num_inplace) +
         " in place, live peak " + human_bytes(plan.live_peak_bytes) + ", outputs " +
         human_bytes(plan.output_bytes) + " (per call), " + std::to_string(plan.dynamic.size()) + " dynamic\n";
  char row[256];
  std::snprintf(row, sizeof row, "  %-16s %-8s %10s %10s  %-11s %s\n", "value", "storage", "offset", "size", "live",
                "note");
  out += row;
  for (const ValuePlan& p : plan.values) {
    std::string offset = p.offset >= 0 ? std::to_string(p.offset) : "-";
    std::string size = p.size > 0 ? std::to_string(p.size) : "-";
    std::string live = "[" + std::to_string(p.first) + ", " + std::to_string(p.last) + "]";
    std::string note = p.storage == Storage::View ? "view of %" + p.alias_of->name() : p.note;
    std::snprintf(row, sizeof row, "  %-16s %-8s %10s %10s  %-11s %s", ("%" + p.value->name()).c_str(),
                  std::string(storage_name(p.storage)).c_str(), offset.c_str(), size.c_str(), live.c_str(),
                  note.c_str());
    out += row;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  return out;
}

void annotate_memory_plan(Graph& g, const MemoryPlan& plan) {
  walk(g.top(), [&](const Node* cn) {
    Node* n = const_cast<Node*>(cn);  // walk visits g's own nodes; g is not const here
    std::vector<int64_t> offsets, sizes, inplace;
    bool any_arena = false, any_inplace = false;
    for (const Value* o : n->outputs()) {
      const ValuePlan* p = plan.find(o);
      const bool in_arena = p && (p->storage == Storage::Arena || p->storage == Storage::InPlace);
      any_arena = any_arena || in_arena;
      offsets.push_back(in_arena ? p->offset : -1);
      sizes.push_back(in_arena ? p->size : 0);
      int64_t from = -1;
      if (p && p->storage == Storage::InPlace) {
        any_inplace = true;
        const auto& ins = n->inputs();
        from = std::find(ins.begin(), ins.end(), p->inplace_of) - ins.begin();
      }
      inplace.push_back(from);
    }
    if (!any_arena) return;
    n->attrs()["mem_offset"] = offsets;
    n->attrs()["mem_size"] = sizes;
    if (any_inplace) n->attrs()["inplace"] = inplace;
  });
}

}  // namespace graph::ir
