// Macros: op calls and statements through macros lower (locations point at
// the expansion); bodies and whole functions from macros are diagnosed.
#include <graph/graph.h>

#include <cstdio>

using namespace graph;

#define RELU(x) relu(x)
#define SCALE(t, k) ((t) * (k))
#define ACCUMULATE(acc, v) acc = acc + (v)
#define BODY { return x * 2; }
#define DEFINE_STATIC(name) \
  [[graph::static]] Tensor name(Tensor x) { return tanh(x); }
#define STATIC [[graph::static]]
#define PRINT_AND_RETURN(v) \
  do {                      \
    (void)0;                \
  } while (false);          \
  return v

[[graph::static]] Tensor op_through_macro(Tensor x) {  // lowers
  return RELU(SCALE(x, 0.5f));
}

[[graph::static]] Tensor statement_macro(Tensor x, int n) {  // lowers
  Tensor acc = x;
  for (int i = 0; i < n; ++i) ACCUMULATE(acc, x);
  return acc;
}

[[graph::static]] Tensor body_from_macro(Tensor x) BODY  // expect@52: the body of an annotated function cannot come from a macro

DEFINE_STATIC(whole_function_from_macro)  // expect@1: the body of an annotated function cannot come from a macro

#define NAME(n) n##_from_macro
[[graph::static]] Tensor NAME(name)(Tensor x) {  // lowers: name_from_macro
  return x - 1;
}

STATIC Tensor attribute_from_macro(Tensor x) {  // lowers
  return sigmoid(x);
}

// A do { ... } while (false) macro: lowered as a loop of one trip.
[[graph::static]] Tensor unsupported_in_macro(Tensor x) {  // lowers
  PRINT_AND_RETURN(x);
}

#define CALL_PRINTF() std::printf("x")
[[graph::static]] Tensor call_in_macro(Tensor x) {  // lowers: call_in_macro.region1
  CALL_PRINTF();  // expect@3: the call to 'printf' cannot be lowered: it is not a graph op; it runs eagerly before a static region
  return x;
}
