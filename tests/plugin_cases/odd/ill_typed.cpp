// Code clang itself rejects. The plugin must neither crash after the errors
// nor write any output; clang exits with its usual error status.
#include <graph/graph.h>

using namespace graph;

[[graph::static]] Tensor undeclared_identifier(Tensor x) {
  return x + y;  // expect@14: error: use of undeclared identifier 'y'
}

[[graph::static]] Tensor wrong_arity(Tensor x) {
  return relu(x, x);  // expect@10: error: no matching function for call to 'relu'
}

[[graph::static]] Tensor bad_conversion(Tensor x) {
  int n = x;  // expect@7: error: no viable conversion from 'Tensor' to 'int'
  return x * n;
}

[[graph::static]] Tensor missing_return_type_conversion(Tensor x) {
  return 1.5;  // expect@10: error: no viable conversion from returned value of type 'double' to function return type 'Tensor'
}

[[graph::static]] UnknownType unknown_type(Tensor x) {  // expect@19: error: unknown type name 'UnknownType'
  return x;  // expect@10: error: no viable conversion from returned value of type 'Tensor' to function return type 'int'
}

[[graph::static]] Tensor unknown_param(Tensor x, Missing m) {  // expect@50: error: unknown type name 'Missing'
  return x;
}

[[graph::static(1)]] Tensor attribute_with_argument(Tensor x) {  // expect@3: error: 'graph::static' attribute takes no arguments
  return x;
}

[[graph::static()]] Tensor attribute_empty_arguments(Tensor x) {  // expect@3: error: 'graph::static' attribute takes no arguments
  return x;
}

#define STATIC_WITH_ARGUMENTS [[graph::static(foo bar)]]
STATIC_WITH_ARGUMENTS Tensor attribute_arguments_from_macro(Tensor x) {  // expect@1: error: 'graph::static' attribute takes no arguments
  return x;
}

[[graph::static]] Tensor lambda_type_attribute(Tensor x) {
  auto f = [](Tensor t) [[graph::static]] -> Tensor { return relu(t); };  // expect@27: error: 'static' attribute cannot be applied to types
  return f(x);
}

template <class T>
[[graph::static]] Tensor bad_instantiation(Tensor x, T k) {
  return x * k;  // expect@12: error: invalid operands to binary expression ('Tensor' and 'NotAScalar')
}
struct NotAScalar {};
Tensor use_bad(Tensor x) { return bad_instantiation(x, NotAScalar{}); }

[[graph::static]] Tensor unterminated_paren(Tensor x) {
  return relu((x);  // expect@18: error: expected ')'
}

[[graph::static]] Tensor fine_but_file_has_errors(Tensor x) {
  return relu(x);
}
