// Where the attribute appears: on things that are not functions (clang's own
// diagnostic), on declarations without a definition, on redeclarations, and
// on functions in namespaces, with C linkage, or declared in odd ways.
#include <graph/graph.h>

#include "odd_header.h"

using namespace graph;

[[graph::static]] int not_a_function = 0;  // expect@3: 'graph::static' attribute only applies to functions

struct [[graph::static]] NotAFunctionEither {  // expect@10: 'graph::static' attribute only applies to functions
  [[graph::static]] Tensor field;  // expect@5: 'graph::static' attribute only applies to functions
};

enum [[graph::static]] Color { kRed };  // expect@8: 'graph::static' attribute only applies to functions

namespace [[graph::static]] annotated_namespace {}  // expect@13: 'graph::static' attribute only applies to functions

using Alias [[graph::static]] = Tensor;  // expect@15: 'graph::static' attribute only applies to functions

Tensor parameter_attr([[graph::static]] Tensor x) {  // expect@25: 'graph::static' attribute only applies to functions
  return x;
}

Tensor statement_attr(Tensor x) {
  [[graph::static]] x = x + 1;  // expect@5: 'graph::static' attribute only applies to functions
  return x;
}

// Declared with the attribute in a header, defined here.
graph::Tensor declared_in_header(graph::Tensor x) {  // lowers
  return x + 1;
}

// Declared, never defined here: nothing to lower, nothing to say.
[[graph::static]] Tensor declared_only(Tensor x);

// Declared with the attribute, defined without it: the definition inherits it.
[[graph::static]] Tensor declared_then_defined(Tensor x);
Tensor declared_then_defined(Tensor x) {  // lowers
  return relu(x);
}

// Declared twice with the attribute, then defined with it.
[[graph::static]] Tensor declared_twice(Tensor x);
[[graph::static]] Tensor declared_twice(Tensor x);
[[graph::static]] Tensor declared_twice(Tensor x) {  // lowers
  return x * 2;
}

// The attribute only on a declaration after the definition: too late.
Tensor annotated_after_definition(Tensor x) {
  return x;
}
[[graph::static]] Tensor annotated_after_definition(Tensor x);  // expect@3: attribute declaration must precede definition

// Both attribute spellings in one list, and twice on one declaration.
[[graph::static, graph::static]] Tensor twice_in_a_list(Tensor x) {  // lowers
  return x - 1;
}
[[graph::static]] [[graph::static]] Tensor twice_in_two_lists(Tensor x) {  // lowers
  return x + 2;
}

Tensor shadowed_weight;
namespace {
Tensor hidden_weight;
Tensor shadowed_weight;  // ::shadowed_weight would name the other one
[[graph::static]] Tensor reads_shadowed_global(Tensor x) {
  return x + shadowed_weight;  // expect@14: the global 'shadowed_weight' in an anonymous namespace cannot be passed to the graph: another 'shado
}

[[graph::static]] Tensor in_anonymous_namespace(Tensor x) {  // lowers
  return x + hidden_weight;
}
}  // namespace

namespace outer {
inline namespace v1 {
Tensor versioned_weight;
[[graph::static]] Tensor in_inline_namespace(Tensor x) {  // lowers
  return x * versioned_weight;
}
}  // namespace v1
}  // namespace outer

namespace a::b::c {
[[graph::static]] Tensor in_nested_namespace(Tensor x) {  // lowers
  return -x;
}
}  // namespace a::b::c

extern "C" [[graph::static]] Tensor with_c_linkage(Tensor x) {  // expect@37: 'with_c_linkage' has C-linkage specified, but returns user-defined type 'Tensor' which is incompatib // lowers
  return exp(x);
}

static Tensor file_static_weight;
[[graph::static]] static Tensor file_static(Tensor x) {  // lowers
  return x + file_static_weight;
}

[[graph::static]] inline Tensor declared_inline(Tensor x) {  // lowers
  return x * x;
}

[[graph::static]] Tensor deleted(Tensor x) = delete;

struct Cmp {
  int v;
  [[graph::static]] friend bool operator==(const Cmp&, const Cmp&) = default;
};

// Names outside [A-Za-z0-9_] become underscores in the IR and file names.
[[graph::static]] Tensor λ_unicode(Tensor x) {  // lowers: ___unicode
  Tensor ψ = x * 2;
  return ψ;
}

[[graph::static]] Tensor dollar$name(Tensor x) {  // lowers: dollar_name
  Tensor a$b = x + 1;
  return a$b;
}
