// Templates: diagnosed once, at the template, however often it is
// instantiated; the pattern's body is never rewritten. An explicit
// specialization is an ordinary function with its own body: it lowers.
#include <graph/graph.h>

using namespace graph;

template <class T>
[[graph::static]] Tensor never_instantiated(Tensor x, T k) {  // expect@26: function templates are not supported yet
  return x * k;
}

template <class T>
[[graph::static]] Tensor once(Tensor x, T k) {  // expect@26: function templates are not supported yet
  return x * k;
}

template <class T>
[[graph::static]] Tensor twice(Tensor x, T k) {  // expect@26: function templates are not supported yet
  return x + k;
}

template <int N>
[[graph::static]] Tensor non_type(Tensor x) {  // expect@26: function templates are not supported yet
  return x * N;
}

template <class T>
[[graph::static]] Tensor explicit_spec(Tensor x, T k) {  // expect@26: function templates are not supported yet
  return x - k;
}

template <>
[[graph::static]] Tensor explicit_spec<int>(Tensor x, int k) {  // lowers: explicit_spec
  return x + k;
}

// An explicit instantiation: nothing new to diagnose.
template Tensor once<double>(Tensor, double);

template <class... Ts>
[[graph::static]] Tensor pack(Tensor x, Ts... ks) {  // expect@26: function templates are not supported yet
  return (x + ... + ks);
}

struct Holder {
  template <class T>
  [[graph::static]] Tensor member_template(Tensor x, T k) {  // expect@28: function templates are not supported yet
    return x * k;
  }
};

template <class T>
struct Box {
  [[graph::static]] Tensor in_class_template(Tensor x) {  // expect@28: functions inside templates are not supported yet
    return x;
  }
  template <class U>
  [[graph::static]] static Tensor static_member_template(Tensor x, U u) {  // expect@35: function templates are not supported yet
    return x * u;
  }
};

template <class T>
struct FriendBox {
  [[graph::static]] friend Tensor hidden_friend(FriendBox, Tensor x) {  // expect@35: functions inside templates are not supported yet
    return relu(x);
  }
};

[[graph::static]] auto abbreviated(Tensor x, auto k) {  // expect@24: function templates are not supported yet
  return x * k;
}

// Ordinary callers instantiate some of them.
Tensor use_templates(Tensor x) {
  Holder h;
  Box<int> b;
  Box<float> b2;
  return once(x, 2) + twice(x, 1) + twice(x, 2.0f) + non_type<3>(x) + explicit_spec(x, 1) +
         explicit_spec(x, 1.0) + pack(x, 1, 2.0f) + pack(x) + h.member_template(x, 2) +
         b.in_class_template(x) + b2.in_class_template(x) + Box<int>::static_member_template(x, 1) +
         hidden_friend(FriendBox<int>{}, x) + abbreviated(x, 2) + abbreviated(x, 2.0);
}
