// Lambdas: defined and called inside annotated functions, capturing tensors,
// and the attribute put on a lambda itself.
#include <graph/graph.h>

using namespace graph;

[[graph::static]] Tensor lambda_local(Tensor x) {
  auto f = [](Tensor t) { return relu(t); };  // expect@12: lambdas cannot be lowered yet
  return f(x);
}

[[graph::static]] Tensor lambda_capture_ref(Tensor x, Tensor y) {
  auto add_y = [&](Tensor t) { return t + y; };  // expect@16: lambdas cannot be lowered yet
  return add_y(x);
}

[[graph::static]] Tensor lambda_capture_copy(Tensor x) {
  Tensor y = x * 2;
  auto g = [y](Tensor t) { return t - y; };  // expect@12: lambdas cannot be lowered yet; it runs eagerly after a static region
  return g(x);  // expect@10: calls to lambdas cannot be lowered yet; it runs eagerly after a static region // lowers: lambda_capture_copy.region0
}

[[graph::static]] Tensor lambda_immediate(Tensor x) {  // lowers: lambda_immediate.region1
  Tensor y = [&] { return x * x; }();  // expect@14: calls to lambdas cannot be lowered yet; it runs eagerly before a static region
  return y;
}

// The lambda and its call run as one eager stretch; acc crosses both ways.
[[graph::static]] Tensor lambda_mutating(Tensor x) {  // lowers: lambda_mutating.region0
  Tensor acc = x;
  auto bump = [&acc] { acc = acc + 1; };  // expect@15: lambdas cannot be lowered yet; it runs eagerly between two static regions
  bump();  // expect@3: calls to lambdas cannot be lowered yet; it runs eagerly between two static regions
  return acc;  // lowers: lambda_mutating.region1
}

[[graph::static]] Tensor lambda_unused(Tensor x) {  // lowers: lambda_unused.region1
  auto unused = [] { return 1; };  // expect@17: lambdas cannot be lowered yet; it runs eagerly before a static region
  return x;
}

[[graph::static]] Tensor generic_lambda(Tensor x) {
  auto twice = [](auto v) { return v + v; };  // expect@16: lambdas cannot be lowered yet
  return twice(x);
}

// The attribute on a lambda's call operator (C++23 syntax, an extension in C++20).
Tensor lambda_annotated(Tensor x) {
  auto f = [] [[graph::static]] (Tensor t) -> Tensor { return relu(t); };  // expect@15: an attribute specifier sequence in this position is a C++23 extension // expect@12: 'graph::static' on a lambda is not supported yet
  return f(x);
}

// A lambda inside a template instantiated twice.
template <class T>
Tensor lambda_in_template(Tensor x, T k) {
  auto f = [] [[graph::static]] (Tensor t) -> Tensor { return t; };  // expect@15: an attribute specifier sequence in this position is a C++23 extension // expect@12: 'graph::static' on a lambda is not supported yet
  return f(x) * k;
}
Tensor use_lambda_in_template(Tensor x) { return lambda_in_template(x, 1) + lambda_in_template(x, 2.0); }

[[graph::static]] Tensor after_lambdas(Tensor x) {  // lowers
  return tanh(x);
}

[[graph::static]] Tensor annotated_lambda_inside(Tensor x) {
  auto f = [] [[graph::static]] (Tensor t) -> Tensor { return t; };  // expect@15: an attribute specifier sequence in this position is a C++23 extension // expect@12: lambdas cannot be lowered yet // expect@12: 'graph::static' on a lambda is not supported yet
  return f(x);
}
