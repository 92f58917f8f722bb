// graph-inspect on this build's own generated graphs (the seed examples),
// run as a separate process, as a user runs it; and on a Loop graph written
// here. Checks what each command prints, the DOT/SVG structure (the seed
// RNN's If has a "then" and an "else" cluster holding their own nodes), and
// that bad input exits non-zero with a message naming the problem.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr
};

Result inspect(const std::string& args) {
  const std::string cmd = std::string(CXXGRAPH_GRAPH_INSPECT) + " --build " + CXXGRAPH_BUILD_DIR + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("graph_inspect_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// The text of the DOT cluster whose label is `label`, up to its closing brace.
std::string cluster(const std::string& dot, const std::string& label) {
  const size_t at = dot.find("label=\"" + label + "\"");
  if (at == std::string::npos) return "";
  const size_t open = dot.rfind("subgraph", at);
  int depth = 0;
  for (size_t i = dot.find('{', open); i < dot.size(); ++i) {
    depth += dot[i] == '{' ? 1 : dot[i] == '}' ? -1 : 0;
    if (depth == 0) return dot.substr(open, i - open + 1);
  }
  return "";
}

// The row of `list` output naming `graph`, its columns joined by one space.
std::string row(const std::string& output, const std::string& graph) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string word, joined;
    while (words >> word) joined += (joined.empty() ? "" : " ") + word;
    if (joined.rfind(graph + " ", 0) == 0) return joined;
  }
  return "";
}

TEST(GraphInspect, ListFindsTheSeedGraphs) {
  const Result r = inspect("list");
  ASSERT_EQ(r.status, 0) << r.output;
  // name, node count, fusion groups, C++ lines (inlined callees' files after '+')
  EXPECT_EQ(row(r.output, "example_model/model_model/model"), "example_model/model_model/model 8 1 model.cpp:19-20");
  EXPECT_EQ(row(r.output, "example_rnn/rnn_rnn/rnn_step"), "example_rnn/rnn_rnn/rnn_step 13 3 rnn.cpp:10-15");
  EXPECT_NE(row(r.output, "example_lenet/lenet_lenet/forward").find(" lenet.cpp:"), std::string::npos) << r.output;
  // Three linear (nn::Linear, lowered from nn.h) and two fusion groups holding
  // the relu and the tanh.
  EXPECT_EQ(row(r.output, "example_mlp_train/mlp_train_mlp/forward"),
            "example_mlp_train/mlp_train_mlp/forward 7 2 mlp.cpp:14-15 + nn.h")
      << r.output;
}

// A build tree holding a scratch project configured and built inside it (as
// the install test does): the scratch build's graphs are its own, and `list`
// leaves them out, at any depth below the nested CMakeCache.txt.
TEST(GraphInspect, ListLeavesOutNestedBuildTrees) {
  const fs::path root = scratch("outer_build");
  auto write = [](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  auto graph = [](const std::string& name) {
    return "graph " + name + "(%x : f32[4]) {\n  %y : f32[4] = tanh(%x) @\"f.cpp\":2:10\n  return (%y)\n}\n";
  };
  write(root / "CMakeCache.txt", "");
  write(root / "app/cxxgraph/app/f_cpp/f.graph", graph("f"));
  write(root / "scratch/CMakeCache.txt", "");
  write(root / "scratch/cxxgraph/nested/f_cpp/g.graph", graph("g"));
  write(root / "scratch/deeper/cxxgraph/deeper/f_cpp/h.graph", graph("h"));

  Result r = inspect("--build " + root.string() + " list");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(row(r.output, "app/f_cpp/f"), "app/f_cpp/f 1 0 f.cpp:2") << r.output;
  EXPECT_EQ(r.output.find("nested/"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("deeper/"), std::string::npos) << r.output;

  // Without its CMakeCache.txt the directory is part of the outer build.
  fs::remove(root / "scratch/CMakeCache.txt");
  r = inspect("--build " + root.string() + " list");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(row(r.output, "nested/f_cpp/g"), "nested/f_cpp/g 1 0 f.cpp:2") << r.output;
  EXPECT_EQ(row(r.output, "deeper/f_cpp/h"), "deeper/f_cpp/h 1 0 f.cpp:2") << r.output;
  fs::remove_all(root.parent_path());
}

TEST(GraphInspect, ShowPrintsBothIRsFusionGroupsAndTheSourceMap) {
  const Result r = inspect("show example_rnn/rnn_step");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("== IR as lowered from C++"), std::string::npos);
  EXPECT_NE(r.output.find("%h2h.4 : Tensor = If(%3)"), std::string::npos);  // lowered: no types yet
  EXPECT_NE(r.output.find("== IR after the passes"), std::string::npos);
  EXPECT_NE(r.output.find("%h2h.4 : f32 = If(%3)"), std::string::npos);  // after infer_types
  EXPECT_NE(r.output.find("group 2: %h2h.6 (elementwise, 1 ops) in If (then) at rnn.cpp:11:3\n"
                          "  rnn.cpp:13:15  %h2h.6.5 = add(%h2h.3, %i2h.4)\n"),
            std::string::npos)
      << r.output;
  // The source map quotes the C++ line and lists the nodes from it.
  EXPECT_NE(r.output.find("rnn.cpp:12  Tensor i2h = matmul(w_x, x.t());\n"
                          "    %5 = t(%x)  col 32  [in If (then) at rnn.cpp:11:3]\n"
                          "    %i2h = matmul(%w_x, %5)  col 18  [in If (then) at rnn.cpp:11:3]\n"),
            std::string::npos)
      << r.output;
}

TEST(GraphInspect, MemoryPlanForGivenInputShapes) {
  // Shape-generic as generated: nothing of known size but the scalars.
  const Result generic = inspect("show example_model/model --memory");
  ASSERT_EQ(generic.status, 0) << generic.output;
  EXPECT_NE(generic.output.find("shape not static"), std::string::npos) << generic.output;
  // X [3, 5], W [4, 3]: each matmul result is 4*5 floats = 80 B -> 128 B; the
  // two branches share a slot, the If result takes another; relu's result is
  // the output (per call).
  const Result r = inspect("show example_model/model --memory --input X=f32[3,5] --input W1=f32[4,3] "
                        "--input W2=f32[4,3] --input 'b=f32[4, 1]'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("arena 256 B"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("%result          output            -        128"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("== source map"), std::string::npos);  // only the section asked for
}

TEST(GraphInspect, RnnDrawingHasBothBranchesAndFusionClusters) {
  const fs::path dot = scratch("rnn.dot"), svg = scratch("rnn.svg");
  ASSERT_EQ(inspect("render example_rnn/rnn_step -o " + dot.string()).status, 0);
  const std::string text = read(dot);
  const std::string then_block = cluster(text, "then"), else_block = cluster(text, "else");
  EXPECT_NE(then_block.find("matmul\\n%i2h : f32\\nrnn.cpp:12:18"), std::string::npos) << text;
  EXPECT_NE(then_block.find("add\\n%h2h.6.5 : f32\\nrnn.cpp:13:15"), std::string::npos) << text;
  EXPECT_NE(else_block.find("label=\"-> %h2h\""), std::string::npos) << text;
  EXPECT_EQ(else_block.find("matmul"), std::string::npos) << text;
  EXPECT_NE(cluster(text, "If at rnn.cpp:11:3").find("label=\"then\""), std::string::npos);

  const Result r = inspect("render example_rnn/rnn_step -o " + svg.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string s = read(svg);
  EXPECT_NE(s.find("<svg"), std::string::npos);
  for (const char* label : {">then<", ">else<", ">If at rnn.cpp:11:3<", ">%i2h : f32<", ">rnn.cpp:12:18<",
                            ">rnn.cpp:13:15<", "&#45;&gt; %h2h<", ">%h2h.4 : f32<", ">rnn.cpp:15:10<"})
    EXPECT_NE(s.find(label), std::string::npos) << label;
  // Three fusion groups: gt, the add in the then block, tanh.
  size_t clusters = 0;
  for (size_t at = s.find("FusionGroup (elementwise)"); at != std::string::npos;
       at = s.find("FusionGroup (elementwise)", at + 1))
    ++clusters;
  EXPECT_EQ(clusters, 3u);
  fs::remove_all(dot.parent_path());
}

TEST(GraphInspect, LoopBodyIsANestedCluster) {
  const fs::path file = scratch("while_tanh.graph"), dot = scratch("while_tanh.dot");
  std::ofstream(file) << R"(graph f(%x : f32[4], %n : int) {
  %go : bool = constant{value=true}()
  %h.2 : f32[4] = Loop(%n, %go, %x) @"w.cpp":3:3
    block(%iter : int, %h : f32[4]) {
      %h.n : f32[4] = tanh(%h) @"w.cpp":4:9
      %s : f32[] = sum(%h.n) @"w.cpp":5:9
      %lim : float = constant{value=0.5}()
      %cond : i1[] = gt(%s, %lim) @"w.cpp":5:15
      -> (%cond, %h.n)
    }
  return (%h.2)
}
)";
  const Result r = inspect("render " + file.string() + " -o " + dot.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string text = read(dot);
  const std::string loop = cluster(text, "Loop at w.cpp:3:3"), body = cluster(text, "body");
  EXPECT_NE(loop.find("label=\"body\""), std::string::npos) << text;
  EXPECT_NE(body.find("tanh\\n%h.n : f32[4]\\nw.cpp:4:9"), std::string::npos) << text;
  EXPECT_NE(body.find("block(%iter, %h)"), std::string::npos) << text;
  EXPECT_NE(text.find("label=\"next iteration\""), std::string::npos);
  fs::remove_all(file.parent_path());
}

// The op listing is the op table's: kinds, arities and traits as declared.
TEST(GraphInspect, OpsListsTheTableWithItsTraits) {
  const Result r = inspect("ops");
  ASSERT_EQ(r.status, 0) << r.output;
  auto line = [&](const std::string& op) {
    std::istringstream lines(r.output);
    for (std::string l; std::getline(lines, l);)
      if (l.rfind(op + " ", 0) == 0) return l;
    return std::string();
  };
  EXPECT_NE(line("exp").find("elementwise  1 -> 1  pure,expensive"), std::string::npos) << line("exp");
  EXPECT_NE(line("dropout").find("random"), std::string::npos) << line("dropout");
  EXPECT_EQ(line("dropout").find("pure"), std::string::npos) << line("dropout");
  EXPECT_NE(line("scaled_dot_product_attention").find("random-if-dropout_p,reads-host"), std::string::npos);
  EXPECT_NE(line("matmul_backward").find("3 -> 2  pure,backward-of=matmul"), std::string::npos)
      << line("matmul_backward");
  EXPECT_NE(line("cat").find("other        * -> 1"), std::string::npos) << line("cat");
  EXPECT_NE(line("call").find("control      * -> *  effectful"), std::string::npos) << line("call");
  EXPECT_NE(line("list_append").find("list"), std::string::npos);
}

// docs/ops.md is generated from the op table; the committed file must be
// what the table says now.
TEST(GraphInspect, OpsMarkdownIsTheCommittedDocsTable) {
  const Result r = inspect("ops --markdown");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, read(fs::path(CXXGRAPH_DOCS_DIR) / "ops.md"))
      << "docs/ops.md is stale: regenerate it with graph-inspect ops --markdown > docs/ops.md";
  EXPECT_NE(r.output.find("| `leaky_relu` | elementwise | promoted inputs | yes | yes | yes |\n"), std::string::npos);
  EXPECT_NE(r.output.find("| `sin` | elementwise | floating (integral: float32) | yes | yes | yes |\n"),
            std::string::npos);
  EXPECT_NE(r.output.find("| `argmax` | reduce | int64 | no | yes | yes |\n"), std::string::npos);
  EXPECT_NE(r.output.find("| `dropout` | other | floating inputs only | yes | yes | partly |\n"), std::string::npos);
  EXPECT_EQ(r.output.find("matmul_backward"), std::string::npos);  // gradient ops are internal
  const Result bad = inspect("list --markdown");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--markdown is an option of ops"), std::string::npos) << bad.output;
}

TEST(GraphInspect, BadInputIsAClearError) {
  Result r = inspect("show no_such_graph");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("graph-inspect: no graph named 'no_such_graph'; the build has:\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  example_rnn/rnn_rnn/rnn_step\n"), std::string::npos);

  // The seed RNN is generated for several targets (examples and, in a full
  // build, the e2e tests).
  r = inspect("show rnn_step");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("'rnn_step' names "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" graphs; give one of\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n  example_rnn/rnn_rnn/rnn_step\n  example_trace_vs_parse/rnn_rnn/rnn_step"),
            std::string::npos)
      << r.output;

  r = inspect("--build /no/such/dir list");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("build directory '/no/such/dir' does not exist"), std::string::npos) << r.output;

  r = inspect("show example_model/model --memory --input X=f32[3,");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("'f32[3,' is not an IR type"), std::string::npos) << r.output;

  r = inspect("show example_model/model --memory --input Q=f32[3]");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("graph 'model' has no input named 'Q'"), std::string::npos) << r.output;

  r = inspect("render example_model/model -o /tmp/x.bmpx --format 'svg;'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("'svg;' is not an output format"), std::string::npos) << r.output;

  r = inspect("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
  r = inspect("render example_model/model");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("render needs -o FILE"), std::string::npos) << r.output;
}

}  // namespace
