// Code that lowers, but where a careless lowering would go wrong: shadowing,
// variables declared inside loops, loops without init or increment, tensor
// loop conditions, assignment chains, comma statements.
#include <graph/graph.h>

using namespace graph;

Tensor W;
constexpr float kGlobalScale = 0.25f;
const int kGlobalCount = 3;
inline constexpr double kInlineShift = 1.5;
enum { kEnumValue = 7 };
enum class Level { kA = 2 };

[[graph::static]] Tensor shadowed_in_block(Tensor x) {  // lowers
  Tensor y = x + 1;
  {
    Tensor y = x * 10;
    x = y;
  }
  return x + y;
}

[[graph::static]] Tensor shadowed_param_in_branch(Tensor x, bool c) {  // lowers
  if (c) {
    Tensor x = W;
    x = x + 1;
  } else {
    x = x - 1;
  }
  return x;
}

[[graph::static]] Tensor shadowed_in_loop(Tensor x, int n) {  // lowers
  int i = 100;
  for (int i = 0; i < n; ++i) {
    Tensor x2 = x;
    x = x2 + i;
  }
  return x * i;
}

[[graph::static]] Tensor declared_in_loop(Tensor x, int n) {  // lowers
  Tensor acc = x;
  for (int i = 0; i < n; ++i) {
    Tensor step = acc * 0.5f;
    int twice = i * 2;
    acc = step + twice;
  }
  return acc;
}

[[graph::static]] Tensor for_without_init(Tensor x, int n) {  // lowers
  int i = 0;
  for (; i < n;) {
    x = x + 1;
    i = i + 1;
  }
  return x;
}

[[graph::static]] Tensor for_comma_increment(Tensor x, int n) {  // lowers
  int j = 0;
  for (int i = 0; i < n; ++i, j += 2) x = x + j;
  return x;
}

[[graph::static]] Tensor while_tensor_condition(Tensor x) {  // lowers
  while (x.sum() > 1.0f) x = x * 0.5f;
  return x;
}

[[graph::static]] Tensor while_tensor_value(Tensor x, Tensor flag) {  // lowers
  while (flag) {
    x = x + 1;
    flag = x.sum() < 10;
  }
  return x;
}

[[graph::static]] Tensor assignment_chain(Tensor x) {  // lowers
  Tensor a, b, c;
  a = b = c = x * 2;
  int i = 0, j = 0;
  i = j = 3;
  return a + b + c + i + j;
}

[[graph::static]] Tensor comma_statement(Tensor x) {  // lowers
  Tensor a = x, b = x;
  a = a + 1, b = b * 2;
  return a - b;
}

[[graph::static]] Tensor nested_loops(Tensor x, int n) {  // lowers
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (j > 2) x = x + j;
  return x;
}

[[graph::static]] Tensor global_in_branch_twice(Tensor x, bool c) {  // lowers
  if (c) x = x + W;
  else x = x - W;
  return x * W;
}

[[graph::static]] Tensor ternary_tensor(Tensor x, int n) {  // lowers
  Tensor y = n > 0 ? (n > 5 ? x * 2 : x) : -x;
  return y;
}

[[graph::static]] Tensor compound_scalars(Tensor x, int n, double s) {  // lowers
  int k = n;
  k += 2;
  k -= 1;
  k *= 3;
  --k;
  s *= 2;
  s /= 4;
  s += k;
  return x * s;
}

[[graph::static]] Tensor constant_fold(Tensor x) {  // lowers
  constexpr int kDims = 4;
  const double kScale = 1.0 / kDims;
  return x * kScale + kDims;
}

[[graph::static]] Tensor sum_dims(Tensor x) {  // lowers
  return x.sum(0, true) + x.mean(1) + sum(x, -1);
}

[[graph::static]] Tensor parenthesized(Tensor x) {  // lowers
  Tensor y = ((((x))));
  (y) = (y + 1);
  return (y);
}

[[graph::static]] Tensor uninitialized_then_both(Tensor x, bool c) {  // lowers
  Tensor y;
  if (c) y = x;
  else y = -x;
  return y;
}

[[graph::static]] Tensor empty_statements(Tensor x) {  // lowers
  ;
  {}
  { ; }
  return x;
}

[[graph::static]] Tensor extreme_constants(Tensor x) {  // lowers
  long long lo = -9223372036854775807LL - 1;
  double big = 1e308 * 10;
  double nan = __builtin_nan("");
  double tiny = 4.9e-324;
  return x * lo + big + nan + tiny + __builtin_inf();
}

[[graph::static]] Tensor qualified_locals(Tensor x) {  // lowers
  [[maybe_unused]] int k = 3;
  volatile int v = 2;
  const Tensor y = x;
  return y * v;
}

[[graph::static]] Tensor global_constants(Tensor x) {  // lowers
  return x * kGlobalScale + kGlobalCount - kInlineShift + kEnumValue + static_cast<int>(Level::kA);
}
