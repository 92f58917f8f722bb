// Errors inside compiled graphs point at the source: the graph::Error a
// failing node throws carries the eager op's message (op name and operand
// shapes) followed by " (at <file>:<line>:<col>, <op> in static graph '<fn>')",
// where the line is the one in error_functions.cpp marked "@<fn>".
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "functions.h"
#include "support.h"

namespace {

using graph::Tensor;

// The line of error_functions.cpp that ends with "// @<fn>".
int marked_line(const std::string& fn) {
  std::ifstream in(CXXGRAPH_ERROR_FUNCTIONS);
  std::string text;
  for (int n = 1; std::getline(in, text); ++n)
    if (text.size() >= fn.size() + 4 && text.compare(text.size() - fn.size() - 4, std::string::npos, "// @" + fn) == 0)
      return n;
  ADD_FAILURE() << "no line marked @" << fn << " in " << CXXGRAPH_ERROR_FUNCTIONS;
  return -1;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// The message of the compiled graph's error and of the eager body's.
struct Messages {
  std::string graph, eager;
};

template <class F>
Messages both_errors(F f) {
  Messages m;
  graph::set_mode(graph::Mode::Static);
  m.graph = error_of(f);
  graph::set_mode(graph::Mode::Eager);
  m.eager = error_of(f);
  graph::set_mode(graph::Mode::Static);
  return m;
}

// `graph` is exactly `eager` (op and shapes) plus where the node came from.
void expect_points_at(const Messages& m, const std::string& eager, const std::string& fn, const std::string& what) {
  EXPECT_EQ(m.eager, eager);
  const std::string at = "error_functions.cpp:" + std::to_string(marked_line(fn)) + ":";
  const std::string tail = ", " + what + " in static graph '" + fn + "')";
  EXPECT_EQ(m.graph.rfind(eager + " (at ", 0), 0u) << m.graph;
  EXPECT_NE(m.graph.find(at), std::string::npos) << m.graph << "\nexpected " << at;
  EXPECT_TRUE(m.graph.size() > tail.size() && m.graph.compare(m.graph.size() - tail.size(), tail.size(), tail) == 0)
      << m.graph << "\nexpected to end with " << tail;
}

TEST(StaticGraphErrors, MatmulShapeMismatch) {
  Tensor a = rel::random_tensor({2, 3}, 1), b = rel::random_tensor({4, 5}, 2);
  Messages m = both_errors([&] { rel::bad_matmul(a, b); });
  expect_points_at(m, "matmul: shapes [2, 3] and [4, 5] cannot be multiplied", "bad_matmul", "matmul");
}

// The third op of a fused loop fails: the message names it (add), its own
// operand shapes and its line, as the eager op would.
TEST(StaticGraphErrors, BroadcastInsideFusedLoop) {
  Tensor x = rel::random_tensor({2, 3}, 3), y = rel::random_tensor({4}, 4);
  Messages m = both_errors([&] { rel::bad_broadcast(x, y); });
  expect_points_at(m, "add: shapes [2, 3] and [4] cannot be broadcast", "bad_broadcast", "add");
}

TEST(StaticGraphErrors, BroadcastInFusedLoopWithPartialOutputs) {
  Tensor x = rel::random_tensor({2, 3}, 5), y = rel::random_tensor({2}, 6);
  Messages m = both_errors([&] { rel::bad_broadcast_partial(x, y); });
  expect_points_at(m, "mul: shapes [2, 3] and [2] cannot be broadcast", "bad_broadcast_partial", "mul");
}

// A dtype mismatch that holds for every input is found at build time (shape
// inference): the plugin warns at the matmul's line instead of compiling a
// graph that can only fail, and the call runs the eager body, whose error
// names the op, the dtypes and the shapes.
TEST(StaticGraphErrors, MatmulOfBoolMaskIsCaughtAtBuildTime) {
  Tensor x = rel::random_tensor({2, 3}, 7), w = rel::random_tensor({3, 2}, 8);
  for (const auto* g : graph::detail::registered_graphs())
    EXPECT_EQ(std::string(g->mangled_name).find("bad_dtype"), std::string::npos) << "bad_dtype was compiled";
  Messages m = both_errors([&] { rel::bad_dtype(x, w); });
  const std::string dtypes = std::string(graph::dtype_name(graph::kBool)) + " and " +
                             std::string(graph::dtype_name(graph::kFloat32));
  const std::string eager = "matmul: expected operands of one dtype, got " + dtypes + " (shapes [2, 3] and [3, 2])";
  EXPECT_EQ(m.eager, eager);
  EXPECT_EQ(m.graph, eager);
}

TEST(StaticGraphErrors, IfOnManyElements) {
  Tensor x = rel::random_tensor({2, 3}, 9);
  Messages m = both_errors([&] { rel::ambiguous_if(x); });
  expect_points_at(m, "bool value of a tensor with more than one value is ambiguous (shape [2, 3])", "ambiguous_if",
                   "If condition");
}

TEST(StaticGraphErrors, WhileOnManyElements) {
  Tensor x = rel::random_tensor({4}, 10);
  Messages m = both_errors([&] { rel::ambiguous_while(x); });
  expect_points_at(m, "bool value of a tensor with more than one value is ambiguous (shape [4])", "ambiguous_while",
                   "Loop condition");
}

// A fused loop whose outputs do not broadcast with each other is no error:
// the graph runs it op by op and agrees with the eager body.
TEST(StaticGraphErrors, DisjointOutputShapesAreNotAnError) {
  Tensor x = rel::random_tensor({1}, 11), y = rel::random_tensor({2}, 12), z = rel::random_tensor({3}, 13);
  const uint64_t before = rel::graph_runs("disjoint_shapes");
  Tensor fused = rel::disjoint_shapes(x, y, z);
  EXPECT_EQ(rel::graph_runs("disjoint_shapes"), before + 1);
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = rel::disjoint_shapes(x, y, z);
  graph::set_mode(graph::Mode::Static);
  EXPECT_FLOAT_EQ(fused.item<float>(), eager.item<float>());
}

}  // namespace
