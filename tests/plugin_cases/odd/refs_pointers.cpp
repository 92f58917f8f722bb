// auto, references, pointers, new/delete.
#include <graph/graph.h>

using namespace graph;

Tensor G;
template <class T>
Tensor G_of;
struct Weights {
  static Tensor shared;
};
Tensor Weights::shared;

[[graph::static]] Tensor auto_local(Tensor x) {  // lowers
  auto y = x * 2;
  auto k = 3;
  auto f = 0.5f;
  return y * k + f;
}

[[graph::static]] auto auto_return(Tensor x) {  // lowers
  return relu(x);
}

[[graph::static]] auto trailing_return(Tensor x) -> Tensor {  // lowers
  return x;
}

[[graph::static]] decltype(auto) decltype_auto_value(Tensor x) {  // lowers: decltype_auto_value
  return x + 1;
}

[[graph::static]] decltype(auto) decltype_auto_ref(const Tensor& x) {  // expect@19: the result must be a 'graph::Tensor' returned by value, not 'const Tensor &'
  return (x);
}

[[graph::static]] Tensor auto_non_tensor(Tensor x) {  // lowers
  auto sizes = x.sizes();  // an int list: tensor_sizes(x), unused
  return x;
}

[[graph::static]] Tensor auto_init_list(Tensor x) {  // lowers: auto_init_list.region1
  auto l = {x, x};  // expect@8: 'l' has type 'std::initializer_list<Tensor>', which a static graph cannot hold; it runs eagerly before a static region
  return x;
}

[[graph::static]] Tensor const_ref_local(Tensor x) {  // lowers
  const Tensor& r = x;
  return r + 1;
}

[[graph::static]] Tensor const_ref_temporary(Tensor x) {  // lowers
  const Tensor& r = x * 2;
  return r;
}

// The reference and the assignment through it run as one eager stretch.
[[graph::static]] Tensor ref_alias_then_assign(Tensor x) {
  Tensor& r = x;  // expect@11: non-const reference variables cannot be lowered; use a value; it runs eagerly before a static region
  r = x + 1;  // expect@3: only local variables and parameters can be assigned; it runs eagerly before a static region
  return x;  // lowers: ref_alias_then_assign.region1
}

[[graph::static]] Tensor auto_ref(Tensor x) {
  auto& r = x;  // expect@9: non-const reference variables cannot be lowered; use a value
  return r;
}

[[graph::static]] Tensor forwarding_ref(Tensor x) {
  auto&& r = x * 2;  // expect@10: non-const reference variables cannot be lowered; use a value
  return r;
}

[[graph::static]] Tensor nonconst_ref_param(Tensor& out, Tensor x) {  // expect@53: parameter 'out' is a non-const reference; the graph cannot write to it
  out = x;
  return x;
}

[[graph::static]] Tensor rvalue_ref_param(Tensor&& x) {  // expect@52: parameter 'x' is a non-const reference; the graph cannot write to it
  return x;
}

[[graph::static]] Tensor const_ref_param(const Tensor& x, const int& n) {  // lowers
  return x * n;
}

[[graph::static]] const Tensor& returns_ref(const Tensor& x) {  // expect@25: the result must be a 'graph::Tensor' returned by value, not 'const Tensor &'
  return x;
}

[[graph::static]] Tensor& returns_global_ref(Tensor x) {  // expect@19: the result must be a 'graph::Tensor' returned by value, not 'Tensor &'
  return G;
}

[[graph::static]] Tensor pointer_local(Tensor x) {
  Tensor* p = &x;  // expect@11: 'p' has type 'Tensor *', which a static graph cannot hold
  return *p;
}

[[graph::static]] Tensor pointer_member_call(Tensor x) {
  const Tensor* p = &x;  // expect@17: 'p' has type 'const Tensor *', which a static graph cannot hold
  return p->sum();
}

[[graph::static]] Tensor address_of(Tensor x) {
  return (&x)->t();  // expect@11: the operator '&' cannot be lowered: pointers are not supported
}

[[graph::static]] Tensor new_delete(Tensor x) {
  Tensor* p = new Tensor(x);  // expect@11: 'p' has type 'Tensor *', which a static graph cannot hold; it runs eagerly before a static region
  delete p;  // expect@3: 'delete' cannot be lowered; it runs eagerly before a static region
  return x;  // lowers: new_delete.region1
}

[[graph::static]] Tensor new_expression(Tensor x) {
  return *new Tensor(x);  // expect@10: the operator '*' cannot be lowered: pointers are not supported
}

[[graph::static]] Tensor global_assign_after_read(Tensor x) {  // lowers: global_assign_after_read.region0
  Tensor y = G;  // lowers: global_assign_after_read.region1
  G = y + x;  // expect@3: the global 'G' cannot be assigned in a static graph: the graph only reads globals; it runs eagerly between two static regions
  return y;
}

[[graph::static]] Tensor variable_template(Tensor x) {
  return x + G_of<float>;  // expect@14: variable templates cannot be read in a static graph yet
}

[[graph::static]] Tensor static_member_global(Tensor x) {  // lowers
  return x * Weights::shared;
}

[[graph::static]] Tensor global_compound(Tensor x) {  // lowers: global_compound.region1
  G = G;  // expect@3: the global 'G' cannot be assigned
  return x;
}

[[graph::static]] Tensor array_local(Tensor x) {
  Tensor a[2] = {x, x};  // expect@10: 'a' has type 'Tensor[2]', which a static graph cannot hold
  return a[0];
}
