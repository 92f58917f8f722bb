// Kinds of functions and calls: members, virtuals, recursion, variadics,
// annotated functions calling each other, overloads, operators on user
// types, if constexpr, consteval, constexpr, coroutines.
#include <graph/graph.h>

#include <coroutine>
#include <cstdarg>

using namespace graph;

struct Layer {
  Tensor w;
  [[graph::static]] Tensor forward(Tensor x) { return matmul(w, x); }  // lowers
  [[graph::static]] static Tensor static_member(Tensor x) { return relu(x); }  // lowers
  [[graph::static]] virtual Tensor virtual_member(Tensor x) { return x; }  // lowers
  [[graph::static]] Tensor out_of_line(Tensor x);
  [[graph::static]] Tensor operator()(Tensor x) { return x * 2; }  // lowers: operator__
  virtual ~Layer() = default;
};

Tensor Layer::out_of_line(Tensor x) { return tanh(x); }  // lowers

struct Derived : Layer {
  [[graph::static]] Tensor virtual_member(Tensor x) override { return -x; }  // lowers: virtual_member.1
};

[[graph::static]] Tensor calls_virtual(Tensor x, Layer& layer) {  // expect@57: parameter 'layer' has type 'Layer &'; accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and d
  return layer.virtual_member(x);
}

[[graph::static]] Tensor factorial(Tensor x, int n) {
  if (n <= 1) return x;
  return x * factorial(x, n - 1);  // expect@14: the recursive call to 'factorial' cannot be lowered
}

[[graph::static]] Tensor recurse(Tensor x, int n) {  // lowers: recurse.region1
  Tensor y = n > 0 ? recurse(x, n - 1) : x;  // expect@22: the recursive call to 'recurse' cannot be lowered; it runs eagerly before a static region
  return y;
}

Tensor odd(Tensor x, int n);
[[graph::static]] Tensor even(Tensor x, int n) {
  Tensor y = n > 0 ? odd(x, n - 1) : x;  // expect@22: the recursive call to 'odd' cannot be lowered
  return y;
}
[[graph::static]] Tensor odd(Tensor x, int n) {
  Tensor y = n > 0 ? even(x, n - 1) : -x;  // expect@22: the recursive call to 'even' cannot be lowered
  return y;
}

[[graph::static]] Tensor leaf(Tensor x) {  // lowers
  return relu(x);
}

[[graph::static]] Tensor calls_leaf(Tensor x) {  // lowers
  return leaf(x) + 1;  // inlined: its body is visible
}

[[graph::static]] Tensor indirect_call(Tensor x, Tensor (*f)(const Tensor&)) {  // expect@59: parameter 'f' has type 'Tensor (*)(const Tensor &)'
  return f(x);
}

[[graph::static]] Tensor function_pointer_local(Tensor x) {
  Tensor (*f)(const Tensor&) = &relu;  // expect@12: 'f' has type 'Tensor (*)(const Tensor &)'
  return f(x);
}

[[graph::static]] Tensor c_variadic(Tensor x, ...) {  // expect@26: variadic functions cannot be lowered
  return x;
}

[[graph::static]] Tensor with_defaults(Tensor x, int n = 2, float s = 0.5f) {  // lowers
  return x * n + s;
}

[[graph::static]] Tensor overloaded(Tensor x) {  // lowers
  return x + 1;
}

[[graph::static]] Tensor overloaded(Tensor x, Tensor y) {  // lowers: overloaded.1
  return x + y;
}

struct Vec {
  Tensor t;
};

[[graph::static]] Vec operator+(Vec a, Vec b) {  // expect@19: the result must be a 'graph::Tensor', not 'Vec'
  return Vec{a.t + b.t};
}

[[graph::static]] Tensor operator*(Vec a, Tensor b) {  // expect@40: parameter 'a' has type 'Vec'; accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and double
  return a.t * b;
}

namespace ops {
struct Tag {};
[[graph::static]] Tensor operator%(Tensor a, Tensor b) {  // lowers: operator_
  return a * b;
}
}  // namespace ops

constexpr bool kUseRelu = true;

[[graph::static]] Tensor if_constexpr(Tensor x) {  // lowers
  if constexpr (kUseRelu) {
    x = relu(x);
  } else {
    x = tanh(x);
  }
  return x;
}

[[graph::static]] Tensor if_constexpr_false(Tensor x) {  // lowers
  if constexpr (sizeof(int) == 2) x = relu(x);
  return x;
}

consteval int twice(int n) { return 2 * n; }
constexpr int square(int n) { return n * n; }

[[graph::static]] Tensor calls_consteval(Tensor x) {  // lowers
  return x * twice(3) + square(2);
}

[[graph::static]] Tensor calls_constexpr_runtime(Tensor x, int n) {  // lowers
  return x * square(n);  // inlined
}

[[graph::static]] Tensor if_consteval(Tensor x) {  // lowers
  if consteval {  // expect@6: consteval if is a C++23 extension
    x = x + 1;
  } else {
    x = x * 3;
  }
  return x;
}

[[graph::static]] constexpr int constexpr_scalar(int n) {  // expect@33: 'constexpr' functions cannot be lowered: the dispatch prologue is not a constant expression
  return n;
}

struct Task {
  struct promise_type {
    Task get_return_object() { return {}; }
    std::suspend_never initial_suspend() { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
};

[[graph::static]] Task coroutine(Tensor x) {  // expect@24: coroutines cannot be lowered
  co_return;
}

[[graph::static]] Tensor nothrow(Tensor x) noexcept {  // lowers
  return x * 2;
}

[[graph::static]] Tensor noexcept_expr(Tensor x) noexcept(noexcept(x + 1)) {  // lowers
  return x + 1;
}

[[graph::static]] Tensor unnamed_param(Tensor x, int) {  // lowers
  return x;
}

[[graph::static]] Tensor enum_param(Tensor x, std::byte b) {  // expect@57: parameter 'b' has type 'std::byte'; accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and dou
  return x;
}

[[graph::static]] void void_result(Tensor x) {}  // expect@19: the result must be a 'graph::Tensor', not 'void'

[[graph::static]] Tensor no_return(Tensor x) {
  x = x + 1;
}  // expect@1: non-void function does not return a value // expect@1: the function must end with 'return <tensor>;'

struct WithFriend {
  // A friend defined in a class is an ordinary function: it lowers.
  [[graph::static]] friend Tensor plain_friend(Tensor x) {  // lowers
    return x * 2;
  }
};
Tensor plain_friend(Tensor x);

// A local class is only a declaration: the function lowers; its annotated
// member gets its own diagnostic.
[[graph::static]] Tensor with_local_class(Tensor x) {  // lowers
  struct Local {
    [[graph::static]] Tensor inner(Tensor y) { return y; }  // expect@30: member functions of local classes are not supported yet
  };
  return x + 1;
}
