// Graph breaks: a statement directly in the body that cannot be lowered runs
// eagerly between static regions (<function>.region<k>.graph each); nested
// in a statement, or when a break is impossible, the whole function runs
// eagerly, as before, with a note saying why no break was possible.
#include <graph/graph.h>

#include <cstdio>
#include <string>

using namespace graph;

void log_tensor(const Tensor& t);
std::string describe(const Tensor& t);

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

// Nested in an `if`: no break, the whole function runs eagerly.
[[graph::static]] Tensor nested(Tensor x, bool verbose) {  // expect@26: note: 'nested' will run eagerly
  Tensor y = x * 2;
  if (verbose) std::printf("y\n");  // expect@16: the call to 'printf' cannot be lowered: it is not a graph op
  return y;
}

// A break is possible at the first statement, not at the nested one.
[[graph::static]] Tensor break_then_nested(Tensor x, bool verbose) {
  std::puts("a");  // expect@3: the call to 'puts' cannot be lowered: it is not a graph op
  Tensor y = x * 2;
  if (verbose) std::puts("b");  // expect@16: note: no graph break is possible around it: the call to 'puts' cannot be lowered
  return y;
}

// What the island declares cannot cross into the next region.
[[graph::static]] Tensor string_crosses(Tensor x) {
  std::string s = describe(x);  // expect@15: 's' has type 'std::string', which a static graph cannot hold
  Tensor y = x * 2;
  return y * static_cast<float>(s.size());  // expect@33: note: no graph break is possible around it: 's' is used after a graph break but cannot cross it: it is of type 'std::string'
}

// A region before a break cannot return: the rest would have to be skipped.
[[graph::static]] Tensor return_before_break(Tensor x, bool early) {
  if (early) return x;  // expect@14: note: no graph break is possible around it: this 'return' comes before a graph break
  log_tensor(x);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op
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
  log_tensor(y);  // expect@3: the call to 'log_tensor' cannot be lowered: it is not a graph op // expect@3: note: no graph break is possible around it: the body has a preprocessor directive between its statements
#endif
  return y;
}
