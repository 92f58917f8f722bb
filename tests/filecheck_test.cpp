// FileCheck-style pass tests: each tests/ir_passes/*.ir file is one case.
//
//   // RUN: simplify,dce            passes to run, by name (pipeline.h)
//   graph f(...) { ... }            the input IR (one or more graphs)
//   // CHECK: text                  matched in order against the printed output
//   // CHECK-NEXT: text             on the line right after the previous match
//   // CHECK-SAME: text             on the previous match's line, after it
//   // CHECK-NOT: text              absent between the neighbouring matches
//   // ERROR: text                  parsing, verifying or a pass must throw a
//                                   graph::Error whose message contains text
//
// Matches are substrings, as in LLVM's FileCheck. The verifier runs on the
// input and after every pass. Other `//` lines are comments.
//
// Usage: filecheck_test [case.ir ...]; without cases, every file of the
// cases directory. Each case is one gtest test (PassCase.<file stem>).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/ir/pipeline.h"
#include "graph/ir/verifier.h"

namespace {

using namespace graph::ir;

struct Directive {
  enum Kind { Check, Next, Same, Not } kind;
  std::string text;
  int line;  // in the case file, for messages
};

struct Case {
  std::string input;  // the file with directive lines blanked (line numbers kept)
  std::string run;
  std::vector<Directive> checks;
  std::vector<std::string> errors;
};

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Case parse_case(const std::string& text) {
  Case c;
  std::istringstream in(text);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    const std::string t = trim(line);
    if (t.rfind("//", 0) != 0) {
      c.input += line + "\n";
      continue;
    }
    c.input += "\n";
    const std::string body = trim(t.substr(2));
    auto directive = [&](const std::string& tag, std::string& rest) {
      if (body.rfind(tag + ":", 0) != 0) return false;
      rest = trim(body.substr(tag.size() + 1));
      return true;
    };
    std::string rest;
    if (directive("RUN", rest)) c.run += (c.run.empty() ? "" : ",") + rest;
    else if (directive("CHECK", rest)) c.checks.push_back({Directive::Check, rest, no});
    else if (directive("CHECK-NEXT", rest)) c.checks.push_back({Directive::Next, rest, no});
    else if (directive("CHECK-SAME", rest)) c.checks.push_back({Directive::Same, rest, no});
    else if (directive("CHECK-NOT", rest)) c.checks.push_back({Directive::Not, rest, no});
    else if (directive("ERROR", rest)) c.errors.push_back(rest);
  }
  return c;
}

// Matches `checks` against `output`; the first failure as a message, or "".
std::string run_checks(const std::string& output, const std::vector<Directive>& checks) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t cur_line = 0, cur_col = 0;  // just after the previous match
  bool matched_any = false;
  std::vector<const Directive*> nots;

  // The first occurrence of any pending CHECK-NOT in [from, to).
  auto check_nots = [&](size_t from_line, size_t from_col, size_t to_line, size_t to_col) -> std::string {
    for (const Directive* d : nots)
      for (size_t l = from_line; l < lines.size() && l <= to_line; ++l) {
        const size_t b = l == from_line ? from_col : 0;
        const size_t e = l == to_line ? to_col : lines[l].size();
        if (b > e || b > lines[l].size()) continue;
        if (lines[l].substr(b, e - b).find(d->text) != std::string::npos)
          return "line " + std::to_string(d->line) + ": CHECK-NOT: '" + d->text + "' found in output line " +
                 std::to_string(l + 1) + ": " + lines[l];
      }
    nots.clear();
    return "";
  };

  for (const Directive& d : checks) {
    if (d.kind == Directive::Not) {
      nots.push_back(&d);
      continue;
    }
    std::string tag = d.kind == Directive::Check ? "CHECK" : d.kind == Directive::Next ? "CHECK-NEXT" : "CHECK-SAME";
    const std::string fail = "line " + std::to_string(d.line) + ": " + tag + ": '" + d.text + "' ";
    size_t found_line = std::string::npos, found_col = 0;
    if (d.kind == Directive::Check) {
      for (size_t l = cur_line; l < lines.size() && found_line == std::string::npos; ++l) {
        const size_t from = l == cur_line ? cur_col : 0;
        if (from > lines[l].size()) continue;
        const size_t p = lines[l].find(d.text, from);
        if (p != std::string::npos) found_line = l, found_col = p;
      }
      if (found_line == std::string::npos) return fail + "not found after output line " + std::to_string(cur_line + 1);
    } else if (d.kind == Directive::Next) {
      const size_t l = matched_any ? cur_line + 1 : 0;
      const size_t p = l < lines.size() ? lines[l].find(d.text) : std::string::npos;
      if (p == std::string::npos)
        return fail + "not on output line " + std::to_string(l + 1) + (l < lines.size() ? ": " + lines[l] : "");
      found_line = l, found_col = p;
    } else {
      const size_t p = cur_line < lines.size() ? lines[cur_line].find(d.text, cur_col) : std::string::npos;
      if (p == std::string::npos) return fail + "not on the rest of output line " + std::to_string(cur_line + 1);
      found_line = cur_line, found_col = p;
    }
    if (std::string e = check_nots(cur_line, cur_col, found_line, found_col); !e.empty()) return e;
    cur_line = found_line;
    cur_col = found_col + d.text.size();
    matched_any = true;
  }
  return check_nots(cur_line, cur_col, lines.empty() ? 0 : lines.size() - 1, std::string::npos);
}

// Parses, verifies and runs the case's passes; the printed module.
std::string run_case(const Case& c) {
  Module m = parse_all(c.input);
  PipelineOptions opts;
  opts.verify = true;
  opts.dump_after = "";  // a test's output is the result, whatever the environment says
  run_pipeline(m, parse_pipeline(c.run), opts);
  std::string out;
  for (const auto& g : m) out += print(*g);
  return out;
}

// The failure of a whole case, or "".
std::string check_case(const std::string& text) {
  const Case c = parse_case(text);
  if (c.errors.empty() && c.checks.empty()) return "the case has no CHECK or ERROR line";
  std::string output;
  try {
    output = run_case(c);
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    if (c.errors.empty()) return std::string("unexpected error: ") + what;
    for (const auto& want : c.errors)
      if (what.find(want) == std::string::npos) return "the error does not contain '" + want + "':\n" + what;
    return "";
  }
  if (!c.errors.empty()) return "expected an error containing '" + c.errors[0] + "', got the output:\n" + output;
  std::string e = run_checks(output, c.checks);
  return e.empty() ? "" : e + "\n--- output ---\n" + output;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class PassCase : public ::testing::Test {
 public:
  explicit PassCase(std::filesystem::path p) : path_(std::move(p)) {}
  void TestBody() override {
    ASSERT_TRUE(std::filesystem::exists(path_)) << path_;
    const std::string failure = check_case(read(path_));
    EXPECT_TRUE(failure.empty()) << path_.string() << ":\n" << failure;
  }

 private:
  std::filesystem::path path_;
};

// ---- the checker checks itself: a wrong CHECK must fail ---------------------------

const char* kSelfCase = R"(// RUN: dce
graph f(%x : f32[4]) {
  %a : f32[4] = relu(%x)
  %b : f32[4] = neg(%x)
  return (%a)
}
)";

TEST(FileCheckSelf, CorrectChecksPass) {
  EXPECT_EQ(check_case(std::string(kSelfCase) + "// CHECK: relu(%x)\n// CHECK-NEXT: return (%a)\n// CHECK-NOT: neg\n"), "");
  EXPECT_EQ(check_case(std::string(kSelfCase) + "// CHECK: %a : f32[4]\n// CHECK-SAME: = relu\n"), "");
}

TEST(FileCheckSelf, WrongChecksFail) {
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK: neg(%x)\n"), "");  // dce removed it
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK: return\n// CHECK: relu\n"), "");  // order
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK: graph f\n// CHECK-NEXT: return\n"), "");
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK: relu\n// CHECK-SAME: neg\n"), "");
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK-NOT: relu\n// CHECK: return\n"), "");
  EXPECT_NE(check_case(std::string(kSelfCase) + "// CHECK: graph\n// CHECK-NOT: f32\n"), "");
  EXPECT_NE(check_case(kSelfCase), "");  // no checks at all
}

TEST(FileCheckSelf, ErrorCasesMustThrowTheRightError) {
  const std::string bad = "// RUN: dce\ngraph f(%x : f32[4]) {\n  %a : f32[4] = relu(%x, %x)\n  return (%a)\n}\n";
  EXPECT_EQ(check_case(bad + "// ERROR: expects 1 inputs\n"), "");
  EXPECT_NE(check_case(bad + "// ERROR: something else\n"), "");
  EXPECT_NE(check_case(std::string(kSelfCase) + "// ERROR: expects 1 inputs\n"), "");  // no error at all
}

TEST(FileCheckSelf, UnknownPassIsAnError) {
  EXPECT_NE(check_case("// RUN: no_such_pass\ngraph f() {\n  return ()\n}\n// CHECK: graph\n"), "");
}

// ---- the pipeline itself -------------------------------------------------------

TEST(Pipeline, DumpsAfterNamedPasses) {
  Module m = parse_all(parse_case(kSelfCase).input);
  std::ostringstream dump;
  PipelineOptions opts;
  opts.dump = &dump;
  opts.dump_after = "dce";
  run_pipeline(*m[0], parse_pipeline("cse, dce, simplify"), opts);
  EXPECT_EQ(dump.str(), "// after dce\n" + print(*m[0]));

  std::ostringstream all;
  opts.dump = &all;
  opts.dump_after = "all";
  run_pipeline(*m[0], parse_pipeline("cse,dce"), opts);
  EXPECT_NE(all.str().find("// after cse\n"), std::string::npos);
  EXPECT_NE(all.str().find("// after dce\n"), std::string::npos);
}

TEST(Pipeline, VerifierNamesThePassThatBrokeTheGraph) {
  Module m = parse_all(parse_case(kSelfCase).input);
  // A deliberately wrong pass: gives relu a second input.
  Pass breaker{"breaker", [](Graph& g, const PassContext&) {
                 Node* relu = g.top()->nodes().front().get();
                 relu->add_input(relu->input(0));
               }};
  PipelineOptions opts;
  opts.verify = true;
  try {
    run_pipeline(*m[0], {find_pass("dce"), breaker}, opts);
    FAIL() << "the broken graph was not reported";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("pass 'breaker' broke graph 'f'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expects 1 inputs, has 2"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, DefaultOrderAndLookup) {
  std::string names;
  for (const Pass& p : default_pipeline()) names += p.name + " ";
  EXPECT_EQ(names,
            "inline_calls infer_types simplify unpack_lists const_fold cse dce infer_types fuse_attention sink_slices "
            "fuse_elementwise fuse_groups place_grad_sync ");
  EXPECT_EQ(find_pass("fuse_groups").name, "fuse_groups");
  try {
    find_pass("nope");
    FAIL();
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'nope' (known: inline_calls,"), std::string::npos);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::vector<std::filesystem::path> cases;
  for (int i = 1; i < argc; ++i) cases.emplace_back(argv[i]);
  if (cases.empty())
    for (const auto& e : std::filesystem::directory_iterator(CXXGRAPH_PASS_CASES))
      if (e.path().extension() == ".ir") cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  for (const auto& p : cases)
    ::testing::RegisterTest("PassCase", p.stem().string().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [p]() -> ::testing::Test* { return new PassCase(p); });
  return RUN_ALL_TESTS();
}
