// Plugin tests: run clang 19 with the cxxgraph plugin on annotated sources
// and check what it reports and writes. Diagnostics are checked against
// `// expect@COL: text` markers in the case files (file, line, column, text).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int status;
  std::string output;  // stdout + stderr
};

Result run(const std::string& cmd) {
  Result r{0, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  r.status = pclose(p);
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the generator on tests/plugin_cases/<name> into a fresh directory.
Result generate(const std::string& name, const fs::path& out, const std::string& extra = "") {
  fs::remove_all(out);
  fs::create_directories(out);
  std::string cmd = std::string(CXXGRAPH_CLANG) + " -fsyntax-only -std=c++20 -Wno-unknown-warning-option " + CXXGRAPH_INCLUDES +
                    " -fplugin=" + CXXGRAPH_PLUGIN + " -fplugin-arg-cxxgraph-copy=" + (out / "copy.cpp").string() +
                    " -fplugin-arg-cxxgraph-kernels=" + (out / "kernels.cpp").string() +
                    " -fplugin-arg-cxxgraph-graph-dir=" + out.string() + " " + extra + " " +
                    CXXGRAPH_CASES + "/" + name;
  return run(cmd);
}

struct Expected {
  int line, col;
  std::string text;
};

std::vector<Expected> markers(const std::string& source) {
  std::vector<Expected> out;
  std::istringstream in(source);
  std::string line;
  std::regex marker(R"(// expect@(\d+): (.*)$)");
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (std::regex_search(line, m, marker)) out.push_back({n, std::stoi(m[1]), m[2]});
  }
  return out;
}

TEST(Plugin, FallbackWarningsAtTheirLocations) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "fallbacks";
  Result r = generate("fallbacks.cpp", out);
  EXPECT_EQ(r.status, 0) << r.output;
  auto expected = markers(read(fs::path(CXXGRAPH_CASES) / "fallbacks.cpp"));
  ASSERT_EQ(expected.size(), 11u);
  for (const Expected& e : expected) {
    std::string where = "fallbacks.cpp:" + std::to_string(e.line) + ":" + std::to_string(e.col) + ": warning: ";
    auto at = r.output.find(where);
    ASSERT_NE(at, std::string::npos) << "no warning at " << where << "\n" << r.output;
    std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_NE(line.find(e.text), std::string::npos) << line;
    EXPECT_NE(line.find("[-Wgraph-fallback]"), std::string::npos) << line;
  }
  // One warning per function. The unlowerable statement directly in the
  // body of io, uses_try and narrowing is a graph break: it runs eagerly
  // before the static rest of the function. Every other warning is followed
  // by the note naming its function, which runs eagerly.
  size_t warnings = 0, notes = 0, breaks = 0;
  for (size_t p = 0; (p = r.output.find("[-Wgraph-fallback]", p)) != std::string::npos; ++p) ++warnings;
  for (size_t p = 0; (p = r.output.find("will run eagerly", p)) != std::string::npos; ++p) ++notes;
  for (size_t p = 0; (p = r.output.find("; it runs eagerly before a static region [", p)) != std::string::npos; ++p)
    ++breaks;
  EXPECT_EQ(warnings, expected.size()) << r.output;
  EXPECT_EQ(breaks, 3u) << r.output;
  EXPECT_EQ(notes, expected.size() - breaks);
  EXPECT_NE(r.output.find("fallbacks.cpp:13:3: warning: the call to 'printf' cannot be lowered: it is not a graph op; "
                          "it runs eagerly before a static region [-Wgraph-fallback]"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("note: 'io' will run eagerly"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("note: 'pointer_param' will run eagerly"), std::string::npos) << r.output;
  // The lowerable functions (fine, and dynamic_shape: a reshape to another
  // tensor's sizes) got a graph and a prologue; each function with a break
  // got the static region after it.
  EXPECT_TRUE(fs::exists(out / "fine.graph"));
  EXPECT_TRUE(fs::exists(out / "dynamic_shape.graph"));
  EXPECT_FALSE(fs::exists(out / "io.graph"));
  for (const char* region : {"io.region1.graph", "uses_try.region1.graph", "narrowing.region1.graph"})
    EXPECT_TRUE(fs::exists(out / region)) << region;
  EXPECT_FALSE(fs::exists(out / "pointer_param.graph"));
  std::string copy = read(out / "copy.cpp");
  size_t prologues = 0, splits = 0;
  for (size_t p = 0; (p = copy.find("_graph_sf.run(", p)) != std::string::npos; ++p) ++prologues;
  for (size_t p = 0; (p = copy.find("_graph_sf.run_split(", p)) != std::string::npos; ++p) ++splits;
  EXPECT_EQ(prologues, 2u);
  EXPECT_EQ(splits, 3u);
}

TEST(Plugin, TrainStepBackwardLowersOrWarnsAtItsLine) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "train_steps";
  Result r = generate("train_steps.cpp", out);
  EXPECT_EQ(r.status, 0) << r.output;
  auto expected = markers(read(fs::path(CXXGRAPH_CASES) / "train_steps.cpp"));
  ASSERT_EQ(expected.size(), 7u);
  for (const Expected& e : expected) {
    std::string where = "train_steps.cpp:" + std::to_string(e.line) + ":" + std::to_string(e.col) + ": warning: ";
    auto at = r.output.find(where);
    ASSERT_NE(at, std::string::npos) << "no warning at " << where << "\n" << r.output;
    std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    EXPECT_NE(line.find(e.text), std::string::npos) << line;
    EXPECT_NE(line.find("[-Wgraph-fallback]"), std::string::npos) << line;
  }
  size_t warnings = 0;
  for (size_t p = 0; (p = r.output.find("[-Wgraph-fallback]", p)) != std::string::npos; ++p) ++warnings;
  EXPECT_EQ(warnings, expected.size()) << r.output;
  // step lowers whole: one graph holding backward_loss, expanded in the optimized one.
  std::string lowered = read(out / "step.graph"), optimized = read(out / "step.opt.graph");
  EXPECT_NE(lowered.find("backward_loss(%loss, %weight, %bias)"), std::string::npos) << lowered;
  EXPECT_NE(optimized.find("set_grads{params=2}"), std::string::npos) << optimized;
  EXPECT_NE(optimized.find("linear_backward"), std::string::npos) << optimized;
  // zero_grad() and step() in the graph: a guard first, the gradients fed to the step.
  std::string whole = read(out / "whole.graph"), whole_opt = read(out / "whole.opt.graph");
  EXPECT_EQ(whole.find("  optimizer_guard(%opt)"), whole.find("{\n") + 2) << whole;
  EXPECT_NE(whole.find("optimizer_zero_grad(%opt)"), std::string::npos) << whole;
  EXPECT_NE(whole.find("optimizer_step{params=0}(%opt)"), std::string::npos) << whole;
  EXPECT_NE(whole_opt.find("optimizer_step{params=2}(%opt, %weight, %bias, "), std::string::npos) << whole_opt;
  EXPECT_FALSE(fs::exists(out / "whole.region0.graph"));
  // backward() in an if and without parameters run eagerly between static regions.
  EXPECT_TRUE(fs::exists(out / "in_if.region0.graph"));
  EXPECT_TRUE(fs::exists(out / "no_parameters.region0.graph"));
}

TEST(Plugin, WerrorTurnsFallbacksIntoErrors) {
  Result r = generate("fallbacks.cpp", fs::path(CXXGRAPH_TEST_TMP) / "werror", "-Werror=graph-fallback");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("fallbacks.cpp:13:3: error: the call to 'printf'"), std::string::npos) << r.output;
}

TEST(Plugin, NoWarningWhenDisabled) {
  Result r = generate("fallbacks.cpp", fs::path(CXXGRAPH_TEST_TMP) / "quiet", "-Wno-graph-fallback");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output.find("graph-fallback"), std::string::npos) << r.output;
}

TEST(Plugin, CopyKeepsLineNumbersAndOriginalPath) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "lines";
  ASSERT_EQ(generate("control_flow.cpp", out).status, 0);
  std::string original = read(fs::path(CXXGRAPH_CASES) / "control_flow.cpp");
  std::string copy = read(out / "copy.cpp");
  // Line 1 of the copy is the include for the prologue, line 2 the #line.
  EXPECT_EQ(copy.rfind("#include <graph/static.h>\n#line 1 \"", 0), 0u);
  std::istringstream a(original), b(copy.substr(copy.find('\n', copy.find("#line")) + 1));
  std::string la, lb;
  int n = 0;
  while (std::getline(a, la)) {
    ASSERT_TRUE(std::getline(b, lb)) << "copy is shorter";
    ++n;
    if (la != lb) EXPECT_EQ(lb.find(la.substr(0, la.find('{') + 1)), 0u) << "line " << n << " changed: " << lb;
  }
  EXPECT_FALSE(std::getline(b, lb)) << "copy is longer";
}

TEST(Plugin, IfAndLoopStructure) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "cf";
  Result r = generate("control_flow.cpp", out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "") << "no diagnostics expected";
  auto g = graph::ir::parse(read(out / "branchy.graph"));
  EXPECT_TRUE(graph::ir::verify(*g).empty());
  std::string text = graph::ir::print(*g);
  // Both branches as blocks; a and b (the variables either branch assigns)
  // are the If's outputs, in declaration order.
  EXPECT_NE(text.find("%a : Tensor, %b.0 : int = If(%c)"), std::string::npos) << text;
  const graph::ir::Node* if_node = nullptr;
  graph::ir::walk(g->top(), [&](const graph::ir::Node* n) { if (n->op() == "If") if_node = n; });
  ASSERT_NE(if_node, nullptr);
  EXPECT_EQ(if_node->block(0)->returns().size(), 2u);
  EXPECT_EQ(if_node->block(1)->returns().at(1)->producer()->op(), "constant") << "else keeps b = 1";

  auto loop = graph::ir::parse(read(out / "counted.graph"));
  EXPECT_TRUE(graph::ir::verify(*loop).empty());
  const graph::ir::Node* l = nullptr;
  graph::ir::walk(loop->top(), [&](const graph::ir::Node* n) { if (n->op() == "Loop") l = n; });
  ASSERT_NE(l, nullptr);
  // Carried: acc, k, i (declaration order), after (max trips, condition).
  EXPECT_EQ(l->inputs().size(), 5u);
  EXPECT_EQ(l->num_outputs(), 3u);
  std::vector<std::string> names;
  for (const auto& p : l->block(0)->params()) names.push_back(p->name().substr(0, p->name().find('.')));
  EXPECT_EQ(names, (std::vector<std::string>{"iter", "acc", "k", "i"}));
}

}  // namespace
