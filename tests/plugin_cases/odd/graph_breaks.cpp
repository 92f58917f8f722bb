// Graph breaks: a statement directly in the body that cannot be lowered runs
// eagerly between static regions (<function>.region<k>.graph each); nested
// in an `if`, a loop, a `switch` or a block, that whole top-level statement
// runs eagerly. When a break is impossible, the whole function runs
// eagerly, with a note saying why no break was possible.
#include <graph/graph.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <utility>

using namespace graph;

void log_tensor(const Tensor& t);
std::string describe(const Tensor& t);
std::pair<Tensor, double> pair_of(const Tensor& t);

[[graph::static]] Tensor between(Tensor x) {  // lowers: between.region0
  Tensor y = relu(x) + 1;
  std::printf("y\n");  // expect@3: the call to 'printf' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  return y * x;  // lowers: between.region1
}

[[graph::static]] Tensor two_breaks(Tensor x, int n) {  // lowers: two_breaks.region0
  Tensor a = x * n;
  log_tensor(a);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  n = n + 1;  // lowers: two_breaks.region1
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  return a * n;  // lowers: two_breaks.region2
}

[[graph::static]] Tensor break_first(Tensor x) {  // lowers: break_first.region1
  std::puts("first");  // expect@3: the call to 'puts' cannot be lowered: it is not a graph op; it runs eagerly before a static region
  return x + 1;
}

[[graph::static]] Tensor return_in_break(Tensor x) {  // lowers: return_in_break.region0
  Tensor y = exp(x);
  return y * static_cast<float>(describe(y).size());  // expect@33: the conversion from 'size_type' to 'float' cannot be lowered yet; it runs eagerly after a static region
}

// Two breaks in a row run as one eager stretch: no region between them.
[[graph::static]] Tensor adjacent_breaks(Tensor x) {  // lowers: adjacent_breaks.region0
  Tensor y = x * 2;
  log_tensor(y);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  return x - y;  // lowers: adjacent_breaks.region1
}

// So a variable no region can hold may pass between adjacent eager statements.
[[graph::static]] Tensor sizes_then_print(Tensor x) {  // lowers: sizes_then_print.region0
  Tensor y = relu(x);
  std::vector<double> s = {1.5, 2.5};  // expect@23: 's' has type 'std::vector<double>', which a static graph cannot hold; it runs eagerly between two static regions
  std::printf("%f\n", s[0]);  // expect@3: the call to 'printf' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  return y * 2;  // lowers: sizes_then_print.region1
}

// An island that declares a scalar the next region reads.
[[graph::static]] Tensor island_declares(Tensor x) {  // lowers: island_declares.region0
  Tensor y = x + 1;
  int k = static_cast<int>(describe(y).size());  // expect@28: the conversion from 'size_type' to 'int' cannot be lowered yet; it runs eagerly between two static regions
  y = y * 2;  // lowers: island_declares.region1
  return y * k;
}

// Nested in an `if`: the whole `if` runs eagerly between two regions.
[[graph::static]] Tensor nested(Tensor x, bool verbose) {  // lowers: nested.region0
  Tensor y = x * 2;
  if (verbose) std::printf("y\n");  // expect@16: the call to 'printf' cannot be lowered: it is not a graph op; the 'if' statement at line 70 that contains it runs eagerly between two static regions // expect@3: note: this 'if' statement runs eagerly as a whole
  return y;  // lowers: nested.region1
}

// A break at the first statement, and one around the nested statement.
[[graph::static]] Tensor break_then_nested(Tensor x, bool verbose) {  // lowers: break_then_nested.region1
  std::puts("a");  // expect@3: the call to 'puts' cannot be lowered: it is not a graph op; it runs eagerly before a static region
  Tensor y = x * 2;
  if (verbose) std::puts("b");  // expect@16: the call to 'puts' cannot be lowered: it is not a graph op; the 'if' statement at line 78 that contains it runs eagerly between two static regions
  return y;  // lowers: break_then_nested.region2
}

// A loop: the island assigns a tensor the next region reads, and may return.
[[graph::static]] Tensor loop_island(Tensor x, int n) {  // lowers: loop_island.region0
  Tensor y = relu(x);
  for (int i = 0; i < n; ++i) {  // expect@3: note: this 'for' loop runs eagerly as a whole, between two static regions
    y = y + 1;
    log_tensor(y);  // expect@5: the call to 'log_tensor' cannot be lowered: it is not a graph op; the 'for' loop at line 85 that contains it runs eagerly between two static regions
    if (i == 3) return y;
  }
  return y * x;  // lowers: loop_island.region1
}

// A `while`, a `switch` and a block, each the island around what it holds.
[[graph::static]] Tensor switch_island(Tensor x, int k) {  // lowers: switch_island.region0
  Tensor y = x + 1;
  switch (k) {
    case 0:
      log_tensor(y);  // expect@7: it is not a graph op; the 'switch' statement at line 96 that contains it runs eagerly between two static regions
      break;
    default:
      y = y * k;
  }
  {
    while (y.sum().item<float>() > 100) { log_tensor(y); y = y / 2; }  // expect@43: the call to 'log_tensor' cannot be lowered: it is not a graph op; the block at line 103 that contains it runs eagerly between two static regions
  }
  return y - x;  // lowers: switch_island.region1
}

// Tuples, pairs and structured bindings cross a break like the values they hold.
[[graph::static]] Tensor tuple_crosses(Tensor x) {  // lowers: tuple_crosses.region0
  std::tuple<Tensor, int> t{x * 2, 3};
  auto [a, k] = std::make_pair(relu(x), 2);
  log_tensor(a);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  std::pair<Tensor, double> p = pair_of(a);  // expect@33: the call to 'pair_of' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  return std::get<0>(t) * std::get<1>(t) + a * k + p.first * p.second;  // lowers: tuple_crosses.region1
}

// Constants stay constants after a break (each piece declares them again).
[[graph::static]] Tensor constant_crosses(Tensor x) {  // lowers: constant_crosses.region0
  constexpr int kIndex = 1;
  static const int kScale = 3;
  const int kTwice = kScale * 2;
  std::tuple<Tensor, Tensor> t{x, x * 2};
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly between two static regions
  static_assert(kIndex == 1 && kTwice == 6);
  return std::get<kIndex>(t) * kScale + std::get<kTwice - 6>(t);  // lowers: constant_crosses.region1
}

// A constant declared with a variable that is not one cannot be declared again.
[[graph::static]] Tensor constant_with_variable(Tensor x) {
  const long kOne = 1, n = x.dim();  // expect@14: note: no graph break is possible around it: 'kOne' is a constant used after a graph break, declared together with 'n', which is not one
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op
  return x * kOne * n;
}

// Bindings that name another variable's elements cannot cross.
[[graph::static]] Tensor binding_by_reference(Tensor x) {
  std::tuple<Tensor, int> t{x, 2};
  auto& [a, k] = t;
  log_tensor(a);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op // expect@14: note: no graph break is possible around it: 'a' is used after a graph break but cannot cross it: it is a structured binding that refers to the elements of another variable
  return a * k;
}

// A jump cannot cross from one piece to another.
[[graph::static]] Tensor nested_with_goto(Tensor x, bool verbose) {
  Tensor y = x * 2;
  if (verbose) std::puts("b");  // expect@16: the call to 'puts' cannot be lowered: it is not a graph op
  if (y.dim() == 0) goto done;  // expect@21: note: no graph break is possible around it: the function uses 'goto' or labels, which a graph break cannot split
  y = y + 1;
done:
  return y;
}

// What the island declares cannot cross into the next region.
[[graph::static]] Tensor string_crosses(Tensor x) {
  std::string s = describe(x);  // expect@15: 's' has type 'std::string', which a static graph cannot hold
  Tensor y = x * 2;
  return y * static_cast<float>(s.size());  // expect@33: note: no graph break is possible around it: 's' is used after a graph break but cannot cross it: it is of type 'std::string'
}

// A region before a break cannot return: the statement holding the `return`
// runs eagerly too.
[[graph::static]] Tensor return_before_break(Tensor x, bool early) {  // lowers: return_before_break.region1
  if (early) return x;  // expect@14: this 'return' comes before a graph break, which a static region cannot end with; the 'if' statement at line 164 that contains it runs eagerly before a static region
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op; it runs eagerly before a static region
  return x + 1;
}

// A reference declared before the break and used after it.
[[graph::static]] Tensor reference_crosses(Tensor x) {
  const Tensor& r = x;
  log_tensor(r);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op // expect@14: note: no graph break is possible around it: 'r' is used after a graph break but cannot cross it: it is a reference
  return r * 2;
}

// The statements are copied region by region: a preprocessor directive
// between them could be split, so there is no break.
[[graph::static]] Tensor directive_between(Tensor x) {
  Tensor y = x * 2;
#ifndef CXXGRAPH_NEVER_DEFINED
  log_tensor(y);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op // expect@3: note: no graph break is possible around it: the body has a preprocessor directive among its statements
#endif
  return y;
}

// A directive before the first statement: the prologue goes before it.
[[graph::static]] Tensor define_in_body(Tensor x) {
#define CXXGRAPH_LOG(v) log_tensor(v)
  Tensor y = x * 2;
  if (y.dim() > 0) CXXGRAPH_LOG(y);  // expect@20: the call to 'log_tensor' cannot be lowered: it is not a graph op // expect@20: note: no graph break is possible around it: the body has a preprocessor directive among its statements
  return y;
}

// Bindings of a temporary by const reference cross like values; a tensor
// declared before the island and assigned in it crosses undefined.
[[graph::static]] Tensor const_binding_and_late_tensor(Tensor x, bool c) {  // lowers: const_binding_and_late_tensor.region0
  const auto& [a, k] = std::make_pair(x * 2, 3);
  Tensor y;
  if (c) {  // expect@3: note: this 'if' statement runs eagerly as a whole, between two static regions
    log_tensor(a);  // expect@5: the call to 'log_tensor' cannot be lowered: it is not a graph op; the 'if' statement at line 199 that contains it runs eagerly between two static regions
    y = a * k;
  } else {
    y = x;
  }
  return y + a;  // lowers: const_binding_and_late_tensor.region1
}

// A local alias is declared again after a break: what it reads must be kept.
[[graph::static]] Tensor alias_reads_local(Tensor x) {
  Tensor y = x * 2;
  using T = decltype(y);  // expect@22: note: no graph break is possible around it: this declaration reads 'y', which a graph break after it does not keep
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op
  T z = x + 1;
  return z;
}
