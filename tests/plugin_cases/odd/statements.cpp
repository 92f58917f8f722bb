// Statements outside the subset: exceptions, goto, switch, do-while,
// range-for, break/continue, static locals, structured bindings, comma,
// ternaries with side effects, asm, and statements that do lower.
#include <graph/graph.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

using namespace graph;

struct Pair {
  Tensor a, b;
};

[[graph::static]] Tensor throws(Tensor x, bool bad) {  // lowers: throws.region1
  if (bad) throw std::runtime_error("bad");  // expect@12: 'throw' cannot be lowered
  return x;
}

[[graph::static]] Tensor try_catch(Tensor x) {  // lowers: try_catch.region1
  try {  // expect@3: 'try' blocks cannot be lowered; it runs eagerly before a static region
    x = relu(x);
  } catch (...) {
  }
  return x;
}

[[graph::static]] Tensor function_try_block(Tensor x) try {  // expect@55: function-try-blocks cannot be lowered
  return relu(x);
} catch (...) {
  return x;
}

[[graph::static]] Tensor uses_goto(Tensor x, int n) {
  int i = 0;
again:  // expect@1: 'goto' and labels cannot be lowered
  x = x + 1;
  i = i + 1;
  if (i < n) goto again;
  return x;
}

[[graph::static]] Tensor uses_switch(Tensor x, int k) {  // lowers
  switch (k) {
    case 0: x = x + 1; break;
    default: break;
  }
  return x;
}

[[graph::static]] Tensor uses_do_while(Tensor x, int n) {  // lowers
  int i = 0;
  do {
    x = x * 2;
    ++i;
  } while (i < n);
  return x;
}

[[graph::static]] Tensor range_for(Tensor x) {  // lowers
  std::vector<Tensor> xs{x, x};
  for (const Tensor& t : xs) x = x + t;
  return x;
}

[[graph::static]] Tensor range_for_array(Tensor x) {  // lowers: range_for_array.region1
  for (int k : {1, 2, 3}) x = x * k;  // expect@3: range-based 'for' loops over 'std::initializer_list<int>' cannot be lowered
  return x;
}

[[graph::static]] Tensor uses_continue(Tensor x, int n) {  // lowers
  for (int i = 0; i < n; ++i) {
    if (i == 1) continue;
    x = x + i;
  }
  return x;
}

[[graph::static]] Tensor uses_break(Tensor x, Tensor limit) {  // lowers
  while (x.sum() < limit) {
    x = x * 2;
    if (x.sum() > 100) break;
  }
  return x;
}

[[graph::static]] Tensor statement_expression(Tensor x) {  // lowers: statement_expression.region1
  Tensor y = ({ x * 2; });  // expect@14: statement expressions cannot be lowered; it runs eagerly before a static region
  return y;
}

[[graph::static]] Tensor member_read(Tensor x) {
  Pair p{x, x};  // expect@8: 'p' has type 'Pair'
  return p.a;
}

[[graph::static]] Tensor static_local(Tensor x) {
  static int calls = 0;  // expect@14: static local variables cannot be lowered
  return x * calls;
}

[[graph::static]] Tensor thread_local_local(Tensor x) {
  thread_local int calls = 0;  // expect@20: thread_local local variables cannot be lowered
  return x * calls;
}

[[graph::static]] Tensor structured_binding(Tensor x) {  // lowers: structured_binding.region1
  auto [a, b] = Pair{x, x * 2};  // expect@8: structured bindings of 'Pair' cannot be lowered; only of 'std::tuple' and 'std::pair'
  return a + b;
}

[[graph::static]] Tensor structured_binding_pair(Tensor x) {  // lowers
  auto [a, b] = std::pair<int, int>{1, 2};
  return x * a;
}

[[graph::static]] Tensor comma_in_expression(Tensor x) {  // lowers: comma_in_expression.region1
  Tensor y = (relu(x), x * 2);  // expect@22: the operator ',' cannot be lowered yet; it runs eagerly before a static region
  return y;
}

[[graph::static]] Tensor ternary_side_effect(Tensor x, bool c) {  // lowers: ternary_side_effect.region0
  int n = 0;  // lowers: ternary_side_effect.region1
  int k = c ? n++ : 3;  // expect@16: the operator '++' inside an expression cannot be lowered; use it as a statement; it runs eagerly between two static regions
  return x * k;
}

[[graph::static]] Tensor ternary_assign(Tensor x, Tensor y, bool c) {  // lowers: ternary_assign.region0
  Tensor z = x;  // lowers: ternary_assign.region1
  c ? (z = y) : (z = x);  // expect@10: an assignment inside an expression cannot be lowered; assign in its own statement; it runs eagerly between two static regions
  return z;
}

[[graph::static]] Tensor logical_and(Tensor x, bool a, bool b) {  // lowers
  if (a && b) x = x + 1;  // an If: b is evaluated only when a holds
  return x;
}

[[graph::static]] Tensor modulo(Tensor x, int n) {  // lowers
  int r = n % 2;
  return x * r;
}

[[graph::static]] Tensor inline_asm(Tensor x) {  // lowers: inline_asm.region1
  asm("nop");  // expect@3: inline assembly cannot be lowered; it runs eagerly before a static region
  return x;
}

[[graph::static]] Tensor local_extern(Tensor x) {
  extern Tensor G2;  // expect@17: local 'extern' declarations cannot be lowered
  return x + G2;
}

[[graph::static]] Tensor for_ever(Tensor x) {  // lowers: for_ever.region1
  for (;;) {  // expect@3: a 'for' without a condition cannot be lowered
    x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor while_decl(Tensor x, int n) {  // lowers: while_decl.region1
  while (int k = n) {  // expect@3: a 'while' with a declaration in its condition cannot be lowered yet
    n = n - 1;
    x = x + k;
  }
  return x;
}

[[graph::static]] Tensor void_return(Tensor x) {  // lowers
  return x;
  return x;  // unreachable: not lowered, as it never runs
}

[[graph::static]] Tensor unsigned_counter(Tensor x, unsigned n) {  // expect@62: parameter 'n' has type 'unsigned int'; accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and
  for (unsigned i = n; i > 0; --i) x = x + 1;
  return x;
}

[[graph::static]] Tensor char_local(Tensor x) {
  char c = 'a';  // expect@8: 'c' has type 'char', which a static graph cannot hold
  return x * c;
}

[[graph::static]] Tensor bool_to_int(Tensor x, bool flag) {  // lowers
  int k = flag;
  int m = -flag;
  return x * k + m;
}

[[graph::static]] Tensor narrowing(Tensor x, long n) {  // lowers: narrowing.region1
  int k = n;  // expect@11: the conversion from 'long' to 'int' may change the value and cannot be lowered; it runs eagerly before a static region
  return x * k;
}

[[graph::static]] Tensor bool_compound(Tensor x, bool b) {  // lowers: bool_compound.region1
  b += 1;  // expect@5: compound assignment to the bool 'b' cannot be lowered; it runs eagerly before a static region
  return x * b;
}

[[graph::static]] Tensor braced_scalar(Tensor x) {  // lowers
  int n{3};
  float f{0.5f};
  return x * n + f;
}

[[graph::static]] Tensor sizeof_constant(Tensor x) {  // lowers
  int n = sizeof(int);
  return x * n;
}

[[graph::static]] Tensor void_cast(Tensor x, int n) {  // lowers
  (void)n;
  x;  // expect@3: expression result unused
  relu(x);
  return x;
}

[[graph::static]] Tensor local_typedefs(Tensor x) {  // lowers
  using T = Tensor;
  typedef int Int;
  static_assert(sizeof(Int) == 4);
  T y = x;
  Int n = 2;
  return y * n;
}

[[graph::static]] Tensor likely_attribute(Tensor x, bool c) {  // lowers
  if (c) [[likely]] {
    x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor if_with_init(Tensor x) {  // lowers
  if (Tensor s = x.sum(); s > 0) x = x - s;
  return x;
}

[[graph::static]] Tensor if_with_declaration(Tensor x, int n) {  // lowers
  if (int k = n * 2) x = x * k;
  return x;
}

[[graph::static]] Tensor function_name(Tensor x) {  // lowers: function_name.region1
  const char* name = __func__;  // expect@15: 'name' has type 'const char *', which a static graph cannot hold; it runs eagerly before a static region
  return x;
}

const double kRuntimeScale = std::sqrt(2.0) + std::rand();
[[graph::static]] Tensor runtime_constant(Tensor x) {
  return x * kRuntimeScale;  // expect@14: 'kRuntimeScale' is not a local, a parameter or a global tensor
}
