// The C++ subset of issue 5: tuples and structured bindings, optional
// tensors, shapes as host ints, switch, do-while, integer / and % — what
// lowers, and what is diagnosed (and where).
#include <graph/graph.h>

#include <tuple>
#include <utility>

using namespace graph;

std::tuple<Tensor, Tensor> two(Tensor x) { return {x + 1, x * 2}; }
std::pair<Tensor, int> with_count(Tensor x, int n) { return {x * n, n + 1}; }

[[graph::static]] Tensor binds(Tensor x) {  // lowers
  auto [a, b] = two(x);
  return a * b;
}

[[graph::static]] Tensor binds_by_const_ref(Tensor x) {  // lowers
  const auto& [a, b] = two(x);
  return a - b;
}

[[graph::static]] Tensor binds_by_ref_to_local(Tensor x) {  // lowers
  std::pair<Tensor, Tensor> p{x, x};
  auto& [a, b] = p;
  a = a * 3;  // writes p.first
  return p.first + b;
}

[[graph::static]] Tensor tie_with_ignore(Tensor x) {  // lowers
  Tensor a;
  std::tie(a, std::ignore) = two(x);
  return a;
}

[[graph::static]] Tensor get_of_call(Tensor x) {  // lowers
  return std::get<1>(two(x));
}

[[graph::static]] Tensor pair_members(Tensor x, int n) {  // lowers
  auto p = with_count(x, n);
  p.second += 2;
  return p.first * p.second;
}

[[graph::static]] Tensor tuple_in_loop(Tensor x, int n) {  // lowers
  std::tuple<Tensor, int> t{x, 0};
  for (int i = 0; i < n; ++i) t = std::make_tuple(std::get<0>(t) * 2, std::get<1>(t) + i);
  return std::get<0>(t) + std::get<1>(t);
}

[[graph::static]] Tensor default_pair(Tensor x) {  // lowers
  std::pair<Tensor, int> p;
  p.second = 3;
  return x * p.second;
}

[[graph::static]] std::tuple<Tensor, Tensor> returns_call(Tensor x) {  // lowers
  return two(x);
}

[[graph::static]] std::tuple<Tensor, int> returns_variable(Tensor x) {  // lowers
  std::tuple<Tensor, int> t = std::make_tuple(x, 2);
  return t;
}

[[graph::static]] Tensor tuple_copy(Tensor x) {  // lowers
  auto t = two(x);
  auto u = t;
  return std::get<0>(u);
}

[[graph::static]] Tensor get_by_type(Tensor x) {  // lowers: get_by_type.region0
  std::tuple<Tensor, int> t{x, 1};
  return std::get<Tensor>(t);  // expect@10: 'std::get' is lowered with an index ('std::get<0>(t)'), not a type
}

[[graph::static]] Tensor tuple_dropped(Tensor x) {  // lowers
  two(x);
  return x;
}

[[graph::static]] Tensor tuple_converts(Tensor x) {  // lowers: tuple_converts.region1
  std::tuple<Tensor, double> t = std::make_tuple(x, 1);  // expect@34: element 1 of this tuple is a int, not a float; the graph does not convert it
  return std::get<0>(t);
}

[[graph::static]] Tensor tuple_of_strings(Tensor x) {
  std::pair<Tensor, const char*> p{x, "a"};  // expect@39: string literals cannot be lowered
  return p.first;
}

[[graph::static]] Tensor binds_struct(Tensor x) {  // lowers: binds_struct.region1
  struct S {
    Tensor a, b;
  };
  auto [a, b] = S{x, x};  // expect@8: structured bindings of 'S' cannot be lowered; only of 'std::tuple' and 'std::pair'
  return a + b;
}

[[graph::static]] Tensor mutable_ref(Tensor x) {
  Tensor& r = x;  // expect@11: non-const reference variables cannot be lowered; use a value
  return r;
}

[[graph::static]] Tensor const_ref_alias(Tensor x) {  // lowers
  const Tensor& r = x;
  x = x + 1;
  return r;  // the new x
}

// Optional tensors and shapes.
[[graph::static]] Tensor optional_bias(Tensor x, Tensor b) {  // lowers
  return b.defined() ? x + b : x;
}

[[graph::static]] Tensor optional_linear(Tensor x, Tensor w, Tensor b) {  // lowers
  return linear(x, w, b);
}

// `Tensor b;` assigned on one path only is an undefined tensor on the other:
// fine as an optional operand or under `.defined()`, diagnosed elsewhere.
[[graph::static]] Tensor bias_on_one_path(Tensor x, Tensor w, bool use) {  // lowers
  Tensor b;
  if (use) b = w.sum(1);
  Tensor y = linear(x, w, b);
  return b.defined() ? y : -y;
}

[[graph::static]] Tensor bias_read_as_value(Tensor x, Tensor w, bool use) {
  Tensor b;
  if (use) b = w.sum(1);  // expect@12: note: 'b' is assigned in this branch // expect@3: note: but not when the condition is false
  return linear(x, w, b) + b;  // expect@28: 'b' is used here but is not assigned on every path through the 'if'
}

[[graph::static]] Tensor shape_ints(Tensor x) {  // lowers
  int64_t rows = x.size(0);
  int64_t cols = x.numel() / rows;
  if (x.dim() != 2) return x;
  return x.reshape({cols, rows}) * x.sizes()[1];
}

[[graph::static]] Tensor runtime_slice(Tensor x, int k) {  // lowers
  return x.slice(0, k, x.size(0));
}

[[graph::static]] Tensor runtime_dim(Tensor x, int d) {  // lowers
  return x.sum(d);  // sum{dim="@1"}(x, d)
}

[[graph::static]] Tensor sizes_vector(Tensor x) {  // lowers
  auto s = x.sizes();  // tensor_sizes(x): an i64 tensor; s.size() is its numel
  return x * static_cast<int64_t>(s.size());
}

[[graph::static]] Tensor size_as_int(Tensor x) {  // lowers: size_as_int.region1
  int n = x.size(0);  // expect@11: the conversion from 'int64_t' to 'int' may change the value and cannot be lowered; it runs eagerly before a static region
  return x * n;
}

// Statements.
[[graph::static]] Tensor switch_default_first(Tensor x, int k) {  // lowers
  switch (k) {
    default:
      x = x * 3;
      break;
    case 1:
      x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor switch_returns(Tensor x, int k) {  // lowers
  switch (k) {
    case 0:
      return x;
    case 1:
      return -x;
  }
  return x * 2;
}

[[graph::static]] Tensor switch_with_init(Tensor x, int k) {  // lowers
  switch (int j = k * 2; j) {
    case 2:
      x = x + j;
      break;
  }
  return x;
}

[[graph::static]] Tensor switch_continue(Tensor x, int n) {  // lowers: switch_continue.region1
  for (int i = 0; i < n; ++i) {
    switch (i) {
      case 0:
        continue;  // expect@9: a 'continue' inside a 'switch' cannot be lowered yet
    }
    x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor duffs_device(Tensor x, int k) {  // lowers: duffs_device.region1
  switch (k) {
    case 0:
      if (k == 0) {
        case 1:  // expect@9: this 'case' label is inside a nested statement, which cannot be lowered
          x = x + 1;
      }
  }
  return x;
}

[[graph::static]] Tensor switch_on_float(Tensor x, double v) {  // lowers
  switch (static_cast<int>(v)) {  // a truncating float_to_int
    case 1:
      x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor switch_case_range(Tensor x, int k) {  // lowers: switch_case_range.region1
  switch (k) {
    case 1 ... 3:  // expect@5: case ranges cannot be lowered
      x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor do_while_break(Tensor x, int n) {  // lowers
  int i = 0;
  do {
    if (i >= n) break;
    x = x + i;
    ++i;
  } while (true);
  return x;
}

[[graph::static]] Tensor int_div_mod(Tensor x, int a, int b) {  // lowers
  int q = a / b, r = a % b;
  return x * (q * b + r);
}

[[graph::static]] Tensor float_divide_assign(Tensor x, double a) {  // lowers
  double r = a;
  r /= 2;
  return x * r;
}

// List members as attributes: a `Shape` member is read at each call (an i64
// tensor input), as is a std::vector<int64_t> one; unreachable objects are
// diagnosed.
struct Shaped {
  Tensor forward_shape(Tensor x);
  Tensor forward_vector(Tensor x);
  Tensor forward_local(Tensor x);
  Shape view_shape{-1, 2};
  std::vector<int64_t> dims{1, 0};
  double eps = 1e-5;
};

[[graph::static]] Tensor Shaped::forward_shape(Tensor x) {  // lowers
  return layer_norm(x.reshape(view_shape), {2}, Tensor(), Tensor(), eps);
}

[[graph::static]] Tensor Shaped::forward_vector(Tensor x) {  // lowers
  return x.permute(dims);  // a std::vector<int64_t> member, read at each call
}

[[graph::static]] Tensor Shaped::forward_local(Tensor x) {
  Shaped other;  // expect@10: 'other' has type 'Shaped', which a static graph cannot hold
  return x.reshape(other.view_shape);
}
