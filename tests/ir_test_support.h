#pragma once
// What ir_test.cpp and ir_verify_test.cpp share: error helpers, lookups, and
// the valid IR texts both halves start from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"

namespace graph::ir::ir_test {

// ---------------------------------------------------------------------------
// Helpers

// The message of the graph::Error parse(text) throws, or "<no error>".
inline std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "<no error>";
}

inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// True when one message carries both the note tag ("[scoping]") and the
// quoted op name ("'add'").
inline bool has_error(const std::vector<std::string>& errors, const std::string& tag, const std::string& op) {
  return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
    return e.find(tag) != std::string::npos && e.find("'" + op + "'") != std::string::npos;
  });
}

#define EXPECT_VERIFY_ERROR(graph, tag, op)                                          \
  do {                                                                               \
    auto errors_ = verify(graph);                                                    \
    EXPECT_FALSE(errors_.empty()) << "expected a " << tag << " error for '" << op << "'"; \
    EXPECT_TRUE(has_error(errors_, tag, op)) << join(errors_);                       \
  } while (0)

// The first node of `b` (pre-order, nested blocks included) running `op`.
inline Node* find_node(const Block* b, const std::string& op) {
  Node* found = nullptr;
  walk(b, [&](const Node* n) {
    if (!found && n->op() == op) found = const_cast<Node*>(n);
  });
  return found;
}

// The value named `name` anywhere in g (parameters or node outputs).
inline Value* find_value(const Graph& g, const std::string& name) {
  for (const auto& p : g.inputs())
    if (p->name() == name) return p.get();
  Value* found = nullptr;
  walk(g.top(), [&](const Node* n) {
    for (Value* v : n->outputs())
      if (!found && v->name() == name) found = v;
    for (const auto& b : n->blocks())
      for (const auto& p : b->params())
        if (!found && p->name() == name) found = p.get();
  });
  return found;
}

inline Type f32(std::vector<Dim> dims) { return Type::tensor(DType::Float32, std::move(dims)); }

// ---------------------------------------------------------------------------
// 1. Round trips: print(parse(text)) == text, and once more.

inline const std::string kStraight = R"(graph straight(%x : f32[N, 4], %y : f32[N, 4]) {
  %a : f32[N, 4] = add(%x, %y) @"model.cpp":12:5
  %s : f32[N] = sum{dim=1, keepdim=false}(%a)
  %c : float = constant{value=0.1}()
  %k : int = constant{value=-3}()
  %m : f32[N, 4] = mul(%a, %c)
  %r : f32[N, 4] = relu{note="say \"hi\"\nback\\slash", on=true, scale=1e-20, tag=""}(%m) @"dir/some file.cpp":7:21
  return (%s, %r, %k)
}
)";

inline const std::string kTypes =
    R"(graph types(%a : Tensor, %b : f32[N, 4], %c : i64[?], %d : i1[], %e : int, %f : float, %g : bool, %h : Tensor[B, ?, 3], %i : i64) {
  %0 : i1[] = logical_not(%d)
  %1 : float = add(%f, %f)
  %2 : bool = lt(%e, %e)
  %3 : f32[4, N] = t(%b)
  %4 : f32[N, N] = matmul(%b, %3)
  %5 : float = constant{value=-inf}()
  %6 : float = constant{value=nan}()
  %7 : float = constant{value=3.0}()
  %8 : float = constant{value=1e-20}()
  %9 : float = constant{value=0.1}()
  %10 : float = constant{value=inf}()
  %11 : float = constant{value=-0.0}()
  %12 : float = constant{value=1e+300}()
  %13 : float = constant{value=-2.5e-07}()
  %14 : int = constant{value=-9223372036854775808}()
  %15 : bool = constant{value=false}()
  return (%4, %c, %a, %1, %2, %0, %5, %6, %7, %8, %9, %g, %h, %10, %11, %12, %13, %14, %15, %i)
}
)";

inline const std::string kIf = R"(graph branch(%c : bool, %x : f32[N]) {
  %y : f32[N], %k : int = If(%c)
    block() {
      %a : f32[N] = relu(%x)
      %one : int = constant{value=1}()
      -> (%a, %one)
    }
    block() {
      %b : f32[N] = neg(%x)
      %two : int = constant{value=2}()
      -> (%b, %two)
    }
  %z : f32[N] = add(%y, %x)
  return (%z, %k)
}
)";

inline const std::string kLoop = R"(graph loop(%n : int, %h0 : f32[B, 8]) {
  %go : bool = constant{value=true}()
  %zero : int = constant{value=0}()
  %i.2 : int, %h.2 : f32[B, 8] = Loop(%n, %go, %zero, %h0)
    block(%iter : int, %i : int, %h : f32[B, 8]) {
      %one : int = constant{value=1}()
      %i.n : int = add(%i, %one)
      %small : bool = lt(%i, %iter)
      %h.n : f32[B, 8] = If(%small)
        block() {
          %r : f32[B, 8] = tanh(%h)
          -> (%r)
        }
        block() {
          -> (%h)
        }
      %cond : bool = lt(%i.n, %n)
      -> (%cond, %i.n, %h.n)
    }
  return (%i.2, %h.2)
}
)";

// A node with no outputs and an empty graph signature also print back.
inline const std::string kEmpty = R"(graph empty() {
  return ()
}
)";

inline const std::string* const kValidTexts[] = {&kStraight, &kTypes, &kIf, &kLoop, &kEmpty};

inline void expect_round_trip(const std::string& text) {
  std::unique_ptr<Graph> g;
  ASSERT_NO_THROW(g = parse(text)) << parse_error(text);
  std::string printed = print(*g);
  EXPECT_EQ(printed, text);
  auto again = parse(printed);
  EXPECT_EQ(print(*again), printed);
}

}  // namespace graph::ir::ir_test
