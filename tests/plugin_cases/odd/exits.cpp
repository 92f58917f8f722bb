// Early exits, compound assignment, lists and several results: `return`
// inside if/loops, `break`, `continue` (lowered with flags, never unrolled),
// `h += x` on tensors, range-for over a std::vector<Tensor> parameter, lists
// built with push_back, std::tuple/std::pair/std::vector results, and the
// check that a variable read after a branch is assigned on every path.
#include <graph/graph.h>

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

using namespace graph;

[[graph::static]] Tensor early_return(Tensor x, bool flag) {  // lowers
  if (flag) return x;
  return -x;
}

[[graph::static]] Tensor return_in_both_branches(Tensor x, int n) {  // lowers
  if (n > 0) {
    return relu(x);
  } else {
    return tanh(x);
  }
}

[[graph::static]] Tensor return_in_loop(Tensor x, int n) {  // lowers
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    h = h * 2;
    if (h.sum() > 10) return h - 1;
  }
  return h;
}

[[graph::static]] Tensor return_in_nested_loops(Tensor x, int n) {  // lowers
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    int j = 0;
    while (j < n) {
      h += 1;
      if (j == i && i == 2) return h;
      j += 1;
    }
  }
  return h * 3;
}

[[graph::static]] Tensor break_and_continue(Tensor x, int n) {  // lowers
  Tensor h = x;
  int i = 0;
  for (i = 0; i < n; ++i) {
    if (i % 2 == 1) continue;
    h -= x;
  }
  return h + i;
}

[[graph::static]] Tensor continue_keeps_increment(Tensor x, int n) {  // lowers
  Tensor h = x;
  int i = 0;
  for (i = 0; i < n; ++i) {
    if (i == 1) continue;
    h = h + i;
  }
  return h + i;  // i == n: the increment ran on the 'continue' path too
}

[[graph::static]] Tensor break_keeps_counter(Tensor x, int n) {  // lowers
  int i = 0;
  for (i = 0; i < n; ++i)
    if (x.sum() * i > 5) break;
  return x * i;  // the counter where the loop broke, not one more
}

[[graph::static]] Tensor while_break(Tensor x) {  // lowers
  Tensor h = x;
  while (true) {
    h = h * 0.5;
    if (h.sum() < 1) break;
  }
  return h;
}

[[graph::static]] Tensor compound_tensor_ops(Tensor x, Tensor y) {  // lowers
  Tensor h = x;
  h += y;
  h -= 1;
  h *= y;
  h /= 2.0;
  return h;
}

[[graph::static]] Tensor sum_list(const std::vector<Tensor>& xs, Tensor init) {  // lowers
  Tensor acc = init;
  for (const Tensor& t : xs) acc += t;
  return acc;
}

[[graph::static]] Tensor range_for_break(std::vector<Tensor> xs, Tensor init) {  // lowers
  Tensor acc = init;
  for (Tensor t : xs) {
    if (t.sum() < 0) break;
    acc = acc + t;
  }
  return acc;
}

[[graph::static]] Tensor range_for_ref_write(std::vector<Tensor> xs) {  // lowers: range_for_ref_write.region1
  for (Tensor& t : xs) t = t + 1;  // expect@16: the loop variable 't' is a non-const reference
  return xs[0];
}

[[graph::static]] Tensor range_for_ints(Tensor x) {  // lowers: range_for_ints.region1
  for (int k : {1, 2, 3}) x = x * k;  // expect@3: range-based 'for' loops over 'std::initializer_list<int>' cannot be lowered
  return x;
}

[[graph::static]] Tensor list_index(const std::vector<Tensor>& xs) {  // lowers
  int n = xs.size();
  return xs[0] + xs[n - 1] * n;
}

[[graph::static]] std::vector<Tensor> list_result(const std::vector<Tensor>& xs) {  // lowers
  std::vector<Tensor> out;
  for (const Tensor& t : xs) out.push_back(relu(t));
  out.push_back(xs[0]);
  return out;
}

[[graph::static]] std::vector<Tensor> braced_list_result(Tensor x) {  // lowers
  return {x, -x, x * 2};
}

[[graph::static]] Tensor cat_of_list(const std::vector<Tensor>& xs) {  // lowers
  return cat(xs, 1) + stack({xs[0], xs[0]}, 0).sum(0);
}

[[graph::static]] std::tuple<Tensor, Tensor, int> tuple_result(Tensor x, int n) {  // lowers
  if (n > 2) return {x, -x, n};
  return std::make_tuple(x * 2, x, n + 1);
}

[[graph::static]] std::pair<Tensor, double> pair_result(Tensor x, double s) {  // lowers
  return {x * s, s * 2};
}

[[graph::static]] int scalar_result(Tensor x, int n) {  // lowers
  return std::max(n, 3) + std::min(n, 1);
}

[[graph::static]] std::tuple<Tensor, Tensor> tuple_from_variable(Tensor x) {  // lowers
  std::tuple<Tensor, Tensor> t{x, x};
  return t;
}

[[graph::static]] const Tensor& reference_result(const Tensor& x) {  // expect@25: the result must be a 'graph::Tensor' returned by value
  return x;
}

[[graph::static]] Tensor assigned_on_one_path(Tensor x, bool flag) {
  Tensor y;
  if (flag) {  // expect@13: note: 'y' is assigned in this branch // expect@3: note: but not when the condition is false
    y = relu(x);
  }
  return y;  // expect@10: 'y' is used here but is not assigned on every path through the 'if'
}

[[graph::static]] Tensor assigned_in_else_only(Tensor x, int n) {
  Tensor y;
  if (n > 0) {  // expect@14: note: but not in this branch
    x = x + 1;
  } else {  // expect@10: note: 'y' is assigned in this branch
    y = x;
  }
  return x + y;  // expect@14: 'y' is used here but is not assigned on every path
}

[[graph::static]] Tensor assigned_on_every_path(Tensor x, int n) {  // lowers
  Tensor y;
  if (n > 0) {
    y = x;
  } else if (n < -3) {
    y = -x;
  } else {
    return x * 0;
  }
  return y;
}

[[graph::static]] Tensor no_return_on_one_path(Tensor x, int n) {
  if (n > 0) return x;
}  // expect@1: non-void function does not return a value in all control paths // expect@1: the function must end with 'return <tensor>;' on every path

[[graph::static]] Tensor dead_code_after_return(Tensor x) {  // lowers
  return x;
  x = x + 1;
}
