// The plugin under bad input: clang 19 with the cxxgraph plugin on a corpus
// of odd, unsupported, ill-typed and subtle-but-valid code
// (tests/plugin_cases/odd/*.cpp, one test each), plus generated very long
// and very deeply nested functions. For each file:
//   - clang finishes within kMaxSeconds (it is killed after kKillSeconds) and
//     exits normally: status 0, or 1 when the file expects errors; never a
//     crash ("PLEASE submit a bug report", "Stack dump", a signal);
//   - every warning and error is expected by a marker on its line, and every
//     marker is met: `// expect@COL: text` (a warning at that line and
//     column whose message contains text), `// expect@COL: error: text`,
//     `// expect@COL: fatal error: text`; a line may hold several markers;
//     `// expect@COL: note: text` checks a note (other notes are not
//     checked); a line `// flags: ...` gives the generator extra flags;
//   - each -Wgraph-fallback warning is followed by its "will run eagerly" note;
//   - every function marked `// lowers` (or `// lowers: <file stem>` where the
//     stem is not the name on that line) has <stem>.graph and <stem>.opt.graph
//     that parse and verify, and no other function has one; the copy has one
//     prologue per lowered function and compiles, and so do the kernels;
//   - a file with errors gets no outputs at all.
// Then: what some subtle cases lower to (Lowering), and bad options and
// unwritable outputs (Outputs).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"

namespace {

namespace fs = std::filesystem;

// Limits for one clang run: the check, on clang's CPU time, and the
// wall-clock kill that keeps a hang from stalling the suite. The check
// catches runaway lowering (a quadratic pass, a loop that never ends), not
// slowness: 2-8 CPU seconds per file, about 20 for the long functions. CPU
// time, not wall time: a loaded 2-core machine tripled the wall time and
// failed the check with nothing wrong.
constexpr double kMaxSeconds = 45;
constexpr int kKillSeconds = 120;

struct Result {
  int status = -1;  // exit status, or -1 when clang did not exit normally
  double seconds = 0;  // CPU time, so other work on the machine does not count
  std::string output;  // stdout + stderr
};

// CPU seconds (user + system) of the children this process has waited for.
double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

Result run(const std::string& cmd) {
  Result r;
  const double start = children_cpu_seconds();
  FILE* p = popen(("timeout " + std::to_string(kKillSeconds) + " " + cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int w = pclose(p);
  r.seconds = children_cpu_seconds() - start;  // clang's, waited for by timeout, by sh, by pclose
  r.status = WIFEXITED(w) ? WEXITSTATUS(w) : -1;
  return r;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kCompile = std::string(CXXGRAPH_CLANG) + " -fsyntax-only -std=c++20 " + CXXGRAPH_INCLUDES;

Result generate(const fs::path& source, const fs::path& out, const std::string& flags = "") {
  fs::remove_all(out);
  fs::create_directories(out);
  return run(kCompile + flags + " -Wno-unknown-warning-option -fplugin=" + CXXGRAPH_PLUGIN +
             " -fplugin-arg-cxxgraph-copy=" + (out / "copy.cpp").string() +
             " -fplugin-arg-cxxgraph-kernels=" + (out / "kernels.cpp").string() +
             " -fplugin-arg-cxxgraph-graph-dir=" + out.string() + " " + source.string());
}

// ---- markers -------------------------------------------------------------

struct Diagnostic {
  std::string file;  // file name, no directory
  int line = 0, col = 0;
  std::string severity;  // warning, error or fatal error
  std::string text;
  std::string str() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + severity + ": " + text;
  }
};

struct Expectations {
  std::vector<Diagnostic> diagnostics;  // warnings and errors: all of them; notes: those checked
  std::string flags;                    // `// flags: ...`: extra generator flags
  std::vector<std::string> lowers;  // .graph file stems
  bool errors() const {
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return d.severity != "warning" && d.severity != "note"; });
  }
};

void add_markers(const fs::path& file, Expectations& e) {
  // Several markers may share a line; `// lowers` ends it.
  static const std::regex expect(
      R"(// expect@(\d+): (?:(warning|error|fatal error|note): )?(.*?)\s*(?=// expect@|// lowers|$))");
  static const std::regex flags(R"(^// flags: (.*)$)");
  static const std::regex lowers(R"(// lowers(?::\s*(\S+))?\s*$)");
  static const std::regex function_name(R"((\w+)\s*\()");
  std::istringstream in(read(file));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    for (std::sregex_iterator it(line.begin(), line.end(), expect), end; it != end; ++it) {
      const std::smatch& m = *it;
      e.diagnostics.push_back({file.filename().string(), n, std::stoi(m[1]),
                               m[2].matched ? m[2].str() : "warning", m[3].str()});
    }
    std::smatch m;
    if (std::regex_match(line, m, flags)) e.flags += " " + m[1].str();
    if (std::regex_search(line, m, lowers)) {
      if (m[1].matched) {
        e.lowers.push_back(m[1]);
      } else {
        std::string code = line.substr(0, line.find("//"));
        std::smatch f;
        ASSERT_TRUE(std::regex_search(code, f, function_name)) << file << ":" << n << ": no function name";
        e.lowers.push_back(f[1]);
      }
    }
  }
}

// Markers of the source and of the corpus headers it includes.
Expectations expectations(const fs::path& source) {
  Expectations e;
  add_markers(source, e);
  static const std::regex include(R"re(#include "([^"]+)")re");
  std::string text = read(source);
  for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
    fs::path header = source.parent_path() / (*it)[1].str();
    if (fs::exists(header)) add_markers(header, e);
  }
  return e;
}

std::vector<Diagnostic> reported(const std::string& output) {
  static const std::regex diag(R"(^(.*):(\d+):(\d+): (warning|error|fatal error|note): (.*)$)");
  std::vector<Diagnostic> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, diag))
      out.push_back({fs::path(m[1].str()).filename().string(), std::stoi(m[2]), std::stoi(m[3]), m[4], m[5]});
  }
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = s.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

// ---- the check -----------------------------------------------------------

struct Options {
  bool compile_kernels = true;
};

void check(const fs::path& source, const std::string& name, Options opts = {}) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "corpus" / name;
  Expectations expected = expectations(source);
  Result r = generate(source, out, expected.flags);
  SCOPED_TRACE(source.string());

  // Clang finished in time and exited normally.
  for (const char* crash : {"PLEASE submit a bug report", "Stack dump", "Segmentation fault", "Aborted",
                            "terminate called", "frontend command failed", "internal error"})
    EXPECT_EQ(r.output.find(crash), std::string::npos) << crash << " in\n" << r.output;
  EXPECT_LT(r.seconds, kMaxSeconds) << "clang took " << r.seconds << " s";
  ASSERT_EQ(r.status, expected.errors() ? 1 : 0) << r.output;

  // Every diagnostic expected, every expectation met.
  std::vector<Diagnostic> got = reported(r.output);
  std::vector<bool> used(got.size());
  for (const Diagnostic& want : expected.diagnostics) {
    bool found = false;
    for (size_t i = 0; i < got.size() && !found; ++i) {
      const Diagnostic& d = got[i];
      found = !used[i] && d.file == want.file && d.line == want.line && d.col == want.col &&
              d.severity == want.severity && d.text.find(want.text) != std::string::npos;
      used[i] = used[i] || found;
    }
    if (found) continue;
    std::string there;
    for (const Diagnostic& d : got)
      if (d.file == want.file && d.line == want.line) there += "\n  reported: " + d.str();
    ADD_FAILURE() << "missing: " << want.str() << there;
  }
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(used[i] || got[i].severity == "note") << "unexpected: " << got[i].str();
  // A graph break's warning says where its statement runs instead.
  // (Counted on diagnostic lines: the quoted source lines hold the markers.)
  static const std::regex graph_break(R"(^\S+:\d+:\d+: (warning|error): .*; (it|the .* that contains it) runs eagerly .*\[-Wgraph-fallback\]$)",
                                      std::regex::multiline);
  static const std::regex eager_note(R"(^\S+:\d+:\d+: note: .* will run eagerly$)", std::regex::multiline);
  auto lines = [&](const std::regex& re) {
    return std::distance(std::sregex_iterator(r.output.begin(), r.output.end(), re), std::sregex_iterator());
  };
  EXPECT_EQ(static_cast<long>(count(r.output, "[-Wgraph-fallback]")), lines(eager_note) + lines(graph_break))
      << r.output;

  if (expected.errors()) {
    // Nothing written after Clang's errors.
    EXPECT_FALSE(fs::exists(out / "copy.cpp"));
    EXPECT_FALSE(fs::exists(out / "kernels.cpp"));
    for (const auto& f : fs::directory_iterator(out)) ADD_FAILURE() << "written after errors: " << f.path();
    return;
  }

  // Exactly the `// lowers` functions have graphs, and they verify.
  std::set<std::string> want(expected.lowers.begin(), expected.lowers.end());
  EXPECT_EQ(want.size(), expected.lowers.size()) << "a stem is marked twice";
  std::set<std::string> have;
  for (const auto& f : fs::directory_iterator(out)) {
    std::string file = f.path().filename().string();
    if (file.size() > 10 && file.ends_with(".opt.graph")) continue;
    if (file.ends_with(".graph")) have.insert(file.substr(0, file.size() - 6));
  }
  EXPECT_EQ(have, want);
  for (const std::string& stem : have) {
    for (const char* suffix : {".graph", ".opt.graph"}) {
      fs::path p = out / (stem + suffix);
      ASSERT_TRUE(fs::exists(p)) << p;
      try {
        auto g = graph::ir::parse(read(p));
        std::vector<std::string> problems = graph::ir::verify(*g);
        EXPECT_TRUE(problems.empty()) << p << ": " << (problems.empty() ? "" : problems.front());
      } catch (const std::exception& e) {
        ADD_FAILURE() << p << " does not parse: " << e.what();
      }
    }
  }

  // The copy carries one prologue per lowered function (a function split by
  // graph breaks: one call per static region) and still compiles.
  std::string copy = read(out / "copy.cpp");
  static const std::regex region_call(R"(_graph_sf\d+\.run\()");
  EXPECT_EQ(count(copy, "_graph_sf.run(") +
                std::distance(std::sregex_iterator(copy.begin(), copy.end(), region_call), std::sregex_iterator()),
            want.size());
  Result c = run(kCompile + " -w -iquote " + source.parent_path().string() + " " + (out / "copy.cpp").string());
  EXPECT_EQ(c.status, 0) << "the copy does not compile:\n" << c.output;
  if (opts.compile_kernels) {
    Result k = run(kCompile + " -w " + (out / "kernels.cpp").string());
    EXPECT_EQ(k.status, 0) << "the kernels do not compile:\n" << k.output;
  }
}

// ---- the corpus ----------------------------------------------------------

std::vector<std::string> corpus() {
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(CXXGRAPH_CORPUS))
    if (f.path().extension() == ".cpp") files.push_back(f.path().stem().string());
  std::sort(files.begin(), files.end());
  return files;
}

class Corpus : public testing::TestWithParam<std::string> {};

TEST_P(Corpus, NoCrashAndExactDiagnostics) {
  check(fs::path(CXXGRAPH_CORPUS) / (GetParam() + ".cpp"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Odd, Corpus, testing::ValuesIn(corpus()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// ---- bad options and unwritable outputs ------------------------------------

Result generate_with(const std::string& plugin_args, const std::string& source) {
  return run(kCompile + " -fplugin=" + CXXGRAPH_PLUGIN + " " + plugin_args + " " + source);
}

void expect_clean_error(const Result& r, const std::string& message) {
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  for (const char* crash : {"PLEASE submit a bug report", "Stack dump", "IO failure", "terminate called"})
    EXPECT_EQ(r.output.find(crash), std::string::npos) << r.output;
}

TEST(Outputs, UnwritableFilesAreErrorsNotCrashes) {
  std::string subtle = (fs::path(CXXGRAPH_CORPUS) / "subtle.cpp").string();
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-copy=/dev/full", subtle), "cxxgraph: cannot write '/dev/full'");
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-kernels=/dev/null/k.cpp", subtle),
                     "cxxgraph: cannot write '/dev/null/k.cpp'");
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-copy=/dev/null -fplugin-arg-cxxgraph-graph-dir=/dev/null/g",
                                   subtle),
                     "cannot write '/dev/null/g/");
}

TEST(Outputs, UnknownOptionIsAnError) {
  std::string subtle = (fs::path(CXXGRAPH_CORPUS) / "subtle.cpp").string();
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-bogus=1", subtle), "unknown plugin option or value 'bogus=1'");
  // dtypes= takes dtypes other than float32 (the build's own) and bool.
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-dtypes=float64,float8", subtle),
                     "unknown plugin option or value 'dtypes=float64,float8'");
  expect_clean_error(generate_with("-fplugin-arg-cxxgraph-dtypes=f32", subtle),
                     "unknown plugin option or value 'dtypes=f32'");
}

// dtypes=: a variant the graph's type rules refuse is a -Wgraph-fallback
// warning naming the dtype, the function and the rule, and the build goes on.
TEST(Outputs, DtypeVariantThatCannotBeCompiledWarns) {
  const std::string source =
      (fs::path(CXXGRAPH_CORPUS).parent_path().parent_path() / "e2e" / "dtype_variant_functions.cpp").string();
  const Result r = generate_with("-fplugin-arg-cxxgraph-kernels=/dev/null -fplugin-arg-cxxgraph-dtypes=float64", source);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("dtype_variant_functions.cpp:17:26: warning: no f64 variant of 'needs_float' can be "
                          "compiled (infer_types: 'matmul' at "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("operands have different dtypes: f64 and f32); its calls with f64 tensors will run the graph "
                          "specialized at run time, on the interpreter [-Wgraph-fallback]"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("variant of 'layer'"), std::string::npos) << r.output;
  expect_clean_error(generate_with("-Werror=graph-fallback -fplugin-arg-cxxgraph-kernels=/dev/null "
                                   "-fplugin-arg-cxxgraph-dtypes=f64",
                                   source),
                     "error: no f64 variant of 'needs_float' can be compiled");
}

TEST(Outputs, SourceFromStandardInput) {
  fs::path out = fs::path(CXXGRAPH_TEST_TMP) / "corpus_stdin";
  fs::create_directories(out);
  Result r = generate_with("-fplugin-arg-cxxgraph-copy=" + (out / "copy.cpp").string() +
                               " -fplugin-arg-cxxgraph-kernels=" + (out / "kernels.cpp").string() + " -x c++ - <",
                           (fs::path(CXXGRAPH_CORPUS) / "subtle.cpp").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read(out / "copy.cpp").rfind("#include <graph/static.h>\n#line 1 \"<stdin>\"\n", 0), 0u);
}

// ---- what the subtle cases lower to --------------------------------------

// A value as an expression over the graph's inputs: "add(mul(x, 10), 1)".
// Names lose the printer's ".N" suffix; If and Loop outputs read "If#i(cond)"
// and "Loop#i".
std::string sexpr(const graph::ir::Value* v) {
  const graph::ir::Node* n = v->producer();
  if (!n) return v->name().substr(0, v->name().find('.'));
  if (n->op() == "constant") {
    const auto& a = n->attrs().at("value");
    if (auto* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
    if (auto* b = std::get_if<bool>(&a)) return *b ? "true" : "false";
    std::ostringstream os;
    os << std::get<double>(a);
    return os.str();
  }
  size_t index = 0;
  while (n->output(index) != v) ++index;
  if (n->op() == "If") return "If#" + std::to_string(index) + "(" + sexpr(n->input(0)) + ")";
  if (n->op() == "Loop") return "Loop#" + std::to_string(index);
  std::string s = n->op() + "(";
  for (size_t i = 0; i < n->inputs().size(); ++i) s += (i ? ", " : "") + sexpr(n->input(i));
  return s + ")";
}

// Generates each corpus file a test reads once, into the test's own
// directory (CTest runs tests in parallel processes).
class Lowering : public testing::Test {
 protected:
  std::unique_ptr<graph::ir::Graph> graph(const std::string& file, const std::string& stem) {
    const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
    fs::path dir = fs::path(CXXGRAPH_TEST_TMP) / "corpus_lowering" / t->name() / file;
    if (generated_.insert(file).second) {
      Result r = generate(fs::path(CXXGRAPH_CORPUS) / (file + ".cpp"), dir);
      EXPECT_EQ(r.status, 0) << r.output;
    }
    return graph::ir::parse(read(dir / (stem + ".graph")));
  }
  std::string result(const std::string& file, const std::string& stem) { return sexpr(graph(file, stem)->outputs().at(0)); }

 private:
  std::set<std::string> generated_;
};

TEST_F(Lowering, ShadowedVariablesKeepTheirOwnValues) {
  EXPECT_EQ(result("subtle", "shadowed_in_block"), "add(mul(x, 10), add(x, 1))");
  auto g = graph("subtle", "shadowed_param_in_branch");
  const graph::ir::Node* n = g->outputs().at(0)->producer();
  ASSERT_EQ(n->op(), "If");
  EXPECT_EQ(sexpr(n->block(0)->returns().at(0)), "x") << "the inner x is another variable";
  EXPECT_EQ(sexpr(n->block(1)->returns().at(0)), "sub(x, 1)");
  EXPECT_EQ(result("subtle", "shadowed_in_loop"), "mul(Loop#0, 100)") << "the outer i stays 100";
}

TEST_F(Lowering, AssignmentChainsAndCommas) {
  EXPECT_EQ(result("subtle", "assignment_chain"), "add(add(add(add(mul(x, 2), mul(x, 2)), mul(x, 2)), 3), 3)");
  EXPECT_EQ(result("subtle", "comma_statement"), "sub(add(x, 1), mul(x, 2))");
  auto g = graph("subtle", "for_comma_increment");
  const graph::ir::Node* loop = g->outputs().at(0)->producer();
  ASSERT_EQ(loop->op(), "Loop");
  EXPECT_EQ(loop->num_outputs(), 3u) << "x, j and i are carried";
}

TEST_F(Lowering, GlobalsAreInputsReadOnce) {
  auto g = graph("subtle", "global_in_branch_twice");
  ASSERT_EQ(g->inputs().size(), 3u);
  EXPECT_EQ(g->inputs()[2]->name(), "W");
}

TEST_F(Lowering, ConstantsFold) {
  EXPECT_EQ(result("subtle", "constant_fold"), "add(mul(x, 0.25), 4)");
  EXPECT_EQ(result("subtle", "global_constants"), "add(add(sub(add(mul(x, 0.25), 3), 1.5), 7), 2)");
  EXPECT_EQ(result("statements", "braced_scalar"), "add(mul(x, 3), 0.5)");
  EXPECT_EQ(result("statements", "sizeof_constant"), "mul(x, 4)");
  EXPECT_EQ(result("functions", "calls_consteval"), "add(mul(x, 6), 4)");
}

TEST_F(Lowering, CompileTimeBranchesPickOneSide) {
  EXPECT_EQ(result("functions", "if_constexpr"), "relu(x)");
  EXPECT_EQ(result("functions", "if_constexpr_false"), "x");
  EXPECT_EQ(result("functions", "if_consteval"), "mul(x, 3)") << "never a constant context at run time";
}

TEST_F(Lowering, BoolToIntIsZeroOrOne) {
  // int k = flag; int m = -flag;  ->  m is -1, not -true.
  auto g = graph("statements", "bool_to_int");
  EXPECT_EQ(sexpr(g->outputs().at(0)), "add(mul(x, If#0(flag)), neg(If#0(flag)))");
  const graph::ir::Node* k = g->outputs().at(0)->producer()->input(0)->producer()->input(1)->producer();
  ASSERT_EQ(k->op(), "If");
  EXPECT_EQ(k->output(0)->type().str(), "int");
  EXPECT_EQ(sexpr(k->block(0)->returns().at(0)), "1");
  EXPECT_EQ(sexpr(k->block(1)->returns().at(0)), "0");
}

TEST_F(Lowering, IfInitializersAndDeclarations) {
  EXPECT_EQ(sexpr(graph("statements", "if_with_init")->outputs().at(0)), "If#0(gt(sum(x), 0))");
  EXPECT_EQ(sexpr(graph("statements", "if_with_declaration")->outputs().at(0)), "If#0(mul(n, 2))");
}

TEST_F(Lowering, TupleElementsAreValuesAndReferencesAlias) {
  EXPECT_EQ(result("subset", "binds"), "mul(add(x, 1), mul(x, 2))");
  EXPECT_EQ(result("subset", "binds_by_ref_to_local"), "add(mul(x, 3), x)") << "a = a * 3 writes p.first";
  EXPECT_EQ(result("subset", "const_ref_alias"), "add(x, 1)") << "r reads x after its assignment";
  EXPECT_EQ(result("subset", "pair_members"), "mul(mul(x, n), add(add(n, 1), 2))");
  auto g = graph("subset", "tuple_in_loop");
  const graph::ir::Node* loop = g->outputs().at(0)->producer()->input(0)->producer();
  ASSERT_EQ(loop->op(), "Loop");
  EXPECT_EQ(loop->num_outputs(), 3u) << "t's two elements and i are carried";
}

TEST_F(Lowering, HostIntsKeepCppSemantics) {
  EXPECT_EQ(result("subset", "int_div_mod"), "mul(x, add(mul(int_div(a, b), b), int_mod(a, b)))");
  EXPECT_EQ(result("subset", "runtime_slice"), "slice_dyn(x, k, tensor_size(x, 0), 1)");
  EXPECT_EQ(result("subset", "optional_bias"), "If#0(defined(b))");
}

TEST_F(Lowering, SwitchRunsCasesBehindAFlag) {
  // No break: the cases are Ifs in order; with breaks, a Loop of one trip.
  auto plain = graph("statements", "uses_do_while");
  EXPECT_EQ(plain->outputs().at(0)->producer()->op(), "Loop");
  auto sw = graph("subset", "switch_default_first");
  bool one_trip = false;
  graph::ir::walk(sw->top(), [&](const graph::ir::Node* n) {
    one_trip = one_trip || (n->op() == "Loop" && sexpr(n->input(0)) == "1");
  });
  EXPECT_TRUE(one_trip);
}

// Issue 20: casts, contiguous(), host conversions, arange and factories.
TEST_F(Lowering, CastsContiguousAndArange) {
  auto g = graph("conversions", "to_double");
  EXPECT_EQ(sexpr(g->outputs().at(0)), "mul(to(x), 2)");
  EXPECT_EQ(g->outputs().at(0)->producer()->input(0)->producer()->s("dtype"), "f64");
  EXPECT_EQ(result("conversions", "mask_to_float"), "mul(x, to(gt(x, 0)))");
  EXPECT_EQ(result("conversions", "to_constexpr_dtype"), "to(x)");
  EXPECT_EQ(result("conversions", "contiguous_view"), "add(contiguous(t(x)), 1)");
  EXPECT_EQ(result("conversions", "int_to_double"),
            "add(mul(x, int_to_float(n)), div(x, int_to_float(tensor_size(x, 0))))");
  EXPECT_EQ(result("conversions", "double_to_int"), "add(add(x, float_to_int(d)), float_to_int(mul(d, 2)))");
  EXPECT_EQ(result("conversions", "arange_size"), "add(x, to(arange_dyn(0, tensor_size(x, 0), 1)))");
  EXPECT_EQ(result("conversions", "arange_step"),
            "add(add(sum(x), sum(arange_dyn(0, n, 2))), sum(arange_dyn(0.5, n, step)))");
}

// Issues 19 and 20: item<T>() read on the host, <cmath> on host values, the
// method forms x.pow and x.clamp.
TEST_F(Lowering, HostReadsAndHostMath) {
  EXPECT_EQ(result("host_reads", "item_scales"), "add(div(x, item(amax(x))), item(argmax(x)))");
  EXPECT_EQ(result("host_reads", "host_sqrt_exp"), "sub(add(mul(x, sqrt(d)), exp(int_to_float(n))), log(add(d, 1)))");
  EXPECT_EQ(result("host_reads", "host_pow_abs"),
            "add(add(add(mul(x, pow(d, 2)), abs(n)), abs(d)), pow(int_to_float(n), int_to_float(2)))");
  EXPECT_EQ(result("host_reads", "host_math_of_item"), "div(x, add(sqrt(item(sum(mul(x, x)))), 1e-06))");
  EXPECT_EQ(result("host_reads", "pow_clamp_methods"), "add(add(pow(x, 2), pow(x, e)), clamp_max(clamp_min(x, -1), 1))");
  // The while's condition reads the tensor on every trip: item inside the Loop.
  auto g = graph("host_reads", "item_while");
  const graph::ir::Node* loop = g->outputs().at(0)->producer()->input(0)->producer();
  ASSERT_EQ(loop->op(), "Loop");
  int items_in_body = 0;
  graph::ir::walk(loop->block(0), [&](const graph::ir::Node* n) { items_in_body += n->op() == "item"; });
  EXPECT_EQ(items_in_body, 1);
  EXPECT_EQ(graph("host_reads", "item_bool")->outputs().at(0)->producer()->op(), "If");
}

// In-place updates of members: the op out of place, the member rebound (an
// If merges it), and one assign per member at the end of the graph, writing
// the last value into the member's input. is_training() is a bool input.
TEST_F(Lowering, ModuleState) {
  EXPECT_EQ(result("module_state", "chained"), "sub(x, add(mul(total, 0.5), mean(x)))");
  auto assigns = [](const graph::ir::Graph& g) {
    std::vector<std::string> out;
    for (const auto& n : g.top()->nodes())
      if (n->op() == "assign") out.push_back(sexpr(n->input(0)) + " <- " + sexpr(n->input(1)));
    return out;
  };
  EXPECT_EQ(assigns(*graph("module_state", "chained")),
            std::vector<std::string>{"total <- add(mul(total, 0.5), mean(x))"});
  auto g = graph("module_state", "forward.1");  // CounterImpl::forward
  const std::vector<std::string> a = assigns(*g);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], "total <- If#0(is_training)");
  EXPECT_EQ(g->top()->nodes().back()->op(), "assign") << "the write-back ends the graph";
  EXPECT_EQ(assigns(*graph("module_state", "copied")).size(), 1u);
  // A forward that updates nothing writes nothing back.
  EXPECT_TRUE(assigns(*graph("module_state", "forward")).empty());
}

// ---- generated: very long and very deep ---------------------------------

fs::path write_generated(const std::string& name, const std::string& text) {
  fs::path dir = fs::path(CXXGRAPH_TEST_TMP) / "corpus_generated";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

const char* kPreamble = "#include <graph/graph.h>\nusing namespace graph;\n";

// 2000 statements in one body, and a 2000-term expression. The generated
// kernels are not compiled: a 2000-op fused loop takes clang's constant
// evaluator down a 2000-deep chain of const locals (a codegen matter).
TEST(Generated, LongFunctions) {
  std::string s = kPreamble;
  s += "[[graph::static]] Tensor long_body(Tensor x, int n) {  // lowers\n  Tensor y = x;\n  int k = n;\n";
  for (int i = 0; i < 2000; ++i) {
    std::string v = std::to_string(i);
    switch (i % 4) {
      case 0: s += "  y = y + " + v + ";\n"; break;
      case 1: s += "  k = k + " + v + ";\n"; break;
      case 2: s += "  y = y * k;\n"; break;
      case 3: s += "  if (k > " + v + ") y = relu(y);\n"; break;
    }
  }
  s += "  return y;\n}\n";
  s += "[[graph::static]] Tensor long_expression(Tensor x) {  // lowers\n  return x";
  for (int i = 0; i < 2000; ++i) s += " + " + std::to_string(i);
  s += ";\n}\n";
  // A graph break: 2000 statements in one static region, then the eager
  // statement, then the second region.
  s += "[[graph::static]] Tensor long_then_unsupported(Tensor x) {  // lowers: long_then_unsupported.region0\n";
  for (int i = 0; i < 2000; ++i) s += "  x = x + 1;\n";
  s += "  x = x.clone();  // expect@9: the call to 'graph::Tensor::clone' cannot be lowered: it is not a graph op; it "
       "runs eagerly between two static regions\n  return x;  // lowers: long_then_unsupported.region1\n}\n";
  check(write_generated("long.cpp", s), "long", {.compile_kernels = false});
}

// Control flow nested 64 deep (the plugin's limit, below the 100 levels the
// IR text format reads back) lowers; 200 deep gets a diagnostic at the 65th
// level. Calls and blocks nest 200 deep: they add no IR blocks (Clang's own
// limit for brackets is 256).
constexpr int kDepthLimit = 64;

std::string indent(int n) { return std::string(2 * n, ' '); }

// `if`s, `for`s or `while`s nested `depth` deep around `x = x + 1;`.
std::string nested(const std::string& kind, int depth) {
  std::string name = "deep_" + kind + "_" + std::to_string(depth);
  // Too deep: the outermost statement runs eagerly before the static `return`.
  std::string s = "[[graph::static]] Tensor " + name + "(Tensor x, int n) {" +
                  (depth <= kDepthLimit ? "  // lowers" : "  // lowers: " + name + ".region1") + "\n";
  for (int i = 0; i < depth; ++i) {
    std::string v = "i" + std::to_string(i), head;
    if (kind == "if") head = "if (n > " + std::to_string(i) + ") {";
    if (kind == "for") head = "for (int " + v + " = 0; " + v + " < n; ++" + v + ") {";
    if (kind == "while") head = "while (x.sum() > " + std::to_string(i) + ") {";
    s += indent(i + 1) + head;
    if (i == kDepthLimit)
      s += "  // expect@" + std::to_string(2 * (i + 1) + 1) + ": control flow nested more than " +
           std::to_string(kDepthLimit) + " levels deep cannot be lowered; the " +
           (kind == "if" ? "'if' statement" : "'" + kind + "' loop") + " at line";
    s += "\n";
  }
  s += indent(depth + 1) + "x = x + 1;\n";
  for (int i = depth - 1; i >= 0; --i) s += indent(i + 1) + "}\n";
  return s + "  return x;\n}\n";
}

std::string nested_ternary(int depth) {
  std::string name = "deep_ternary_" + std::to_string(depth);
  std::string line = "  Tensor y = ", marker;
  for (int i = 0; i < depth; ++i) {
    line += "n > " + std::to_string(i) + " ";
    if (i == kDepthLimit) marker = "  // expect@" + std::to_string(line.size() + 1) + ": control flow nested more than " +
                                std::to_string(kDepthLimit);
    line += "? x * " + std::to_string(i) + " : (";
  }
  line += "x" + std::string(depth, ')') + ";";
  // Too deep: the declaration runs eagerly before the static `return`.
  if (depth > kDepthLimit) marker += " levels deep cannot be lowered; it runs eagerly before a static region";
  return "[[graph::static]] Tensor " + name + "(Tensor x, int n) {" +
         (depth <= kDepthLimit ? "  // lowers" : "  // lowers: " + name + ".region1") + "\n" + line + marker +
         "\n  return y;\n}\n";
}

TEST(Generated, DeepNesting) {
  std::string s = kPreamble;
  for (int depth : {kDepthLimit, 200}) {
    for (const char* kind : {"if", "for", "while"}) s += nested(kind, depth);
    s += nested_ternary(depth);
  }
  s += "[[graph::static]] Tensor deep_calls(Tensor x) {  // lowers\n  return " + std::string() ;
  for (int i = 0; i < 200; ++i) s += "relu(";
  s += "x" + std::string(200, ')') + ";\n}\n";
  s += "[[graph::static]] Tensor deep_blocks(Tensor x) {  // lowers\n";
  s += std::string(200, '{') + " x = -x; " + std::string(200, '}') + "\n  return x;\n}\n";
  s += "[[graph::static]] Tensor deep_then_unsupported(Tensor x, int n) {  // lowers: deep_then_unsupported.region1\n";
  for (int i = 0; i < 50; ++i) s += indent(i + 1) + "if (n > " + std::to_string(i) + ") {\n";
  s += indent(51) + "throw 1;  // expect@" + std::to_string(2 * 51 + 1) + ": 'throw' cannot be lowered; the 'if' statement at line\n";
  for (int i = 49; i >= 0; --i) s += indent(i + 1) + "}\n";
  s += "  return x;\n}\n";
  check(write_generated("deep.cpp", s), "deep");
}

}  // namespace
