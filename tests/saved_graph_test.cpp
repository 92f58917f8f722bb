// graph::save / load (runtime/src/saved_graph.cpp) and graph-run.
//
// Round trips keep the printed IR and every parameter bit for bit, in every
// dtype; the file layout is the documented one (docs/saved-graph-format.md);
// every malformed file (each truncation, each single-byte corruption, wrong
// magic or version, bad IR text, parameters that do not fit their input,
// huge length fields) throws graph::Error naming the problem; and graph-run,
// in a separate process, reproduces the seed RNN's outputs computed eagerly,
// for both branches.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <bit>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "graph/graph.h"
#include "graph/ir/ir.h"
#include "graph/nn.h"
#include "graph/saved_graph.h"

namespace {

using namespace graph;

// The seed's RNN step as the plugin lowers examples/rnn/rnn.cpp:
//   h2h = matmul(W_h, prev_h.t()); if (h2h.sum() > w_x.sum()) h2h = h2h + matmul(w_x, x.t());
//   return tanh(h2h);
// W_h and w_x are typed so that loading checks the saved parameters' shapes.
const char* kRnnText = R"(graph rnn_step(%x : Tensor, %prev_h : Tensor, %W_h : f32[4, 4], %w_x : f32[4, 3]) {
  %0 : Tensor = t(%prev_h) @"rnn.cpp":10:35
  %h2h : Tensor = matmul(%W_h, %0) @"rnn.cpp":10:16
  %1 : Tensor = sum(%h2h) @"rnn.cpp":11:11
  %2 : Tensor = sum(%w_x) @"rnn.cpp":11:23
  %3 : Tensor = gt(%1, %2) @"rnn.cpp":11:17
  %h2h.4 : Tensor = If(%3) @"rnn.cpp":11:3
    block() {
      %5 : Tensor = t(%x) @"rnn.cpp":12:32
      %i2h : Tensor = matmul(%w_x, %5) @"rnn.cpp":12:18
      %h2h.6 : Tensor = add(%h2h, %i2h) @"rnn.cpp":13:15
      -> (%h2h.6)
    }
    block() {
      -> (%h2h)
    }
  %7 : Tensor = tanh(%h2h.4) @"rnn.cpp":15:10
  return (%7)
}
)";

// The README's seed model: relu(matmul(W, X) + b), doubled when `flag` is set.
const char* kSeedText = R"(graph seed(%W : f32[2, 3], %X : Tensor, %b : f32[2, 1], %flag : bool) {
  %mm : Tensor = matmul(%W, %X) @"model.cpp":5:14
  %y : Tensor = add(%mm, %b) @"model.cpp":5:28
  %r : Tensor = relu(%y) @"model.cpp":5:10
  %out : Tensor = If(%flag) @"model.cpp":6:3
    block() {
      %two : float = constant{value=2.0}()
      %d : Tensor = mul(%r, %two) @"model.cpp":7:9
      -> (%d)
    }
    block() {
      -> (%r)
    }
  return (%out)
}
)";

// One input of every dtype (one of unknown type, one with a symbolic dim).
const char* kDtypesText = R"(graph dtypes(%a : f32[2, 2], %b : f64[3], %c : f16[2], %d : bf16[2], %e : i32[2, 1], %f : i64[], %g : i1[4], %h : Tensor, %s : f32[N, 2]) {
  return (%a, %b, %c, %d, %e, %f, %g, %h, %s)
}
)";

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no graph::Error>";
}

#define EXPECT_ERROR(stmt, text)                                               \
  do {                                                                         \
    const std::string e_ = error_of([&] { stmt; });                            \
    EXPECT_NE(e_.find(text), std::string::npos) << "message: " << e_;          \
  } while (0)

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "cxxgraph_saved_graph_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T> std::string le(T v) {
  std::string s;
  for (size_t i = 0; i < sizeof(T); ++i) s.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  return s;
}

// Deterministic float32 values in [lo, hi).
Tensor values(const Shape& shape, float lo, float hi, int seed) {
  Tensor t = empty(shape, kFloat32);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * static_cast<float>((i * 37 + seed * 11) % 101) / 101.f;
  return t;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * element_size(a.dtype())) == 0;
}

// A saved graph built by hand from its documented parts, independent of
// graph::save: the parameter section is a tensor file's count and records
// (the tensor file minus its 8-byte magic and 4-byte version).
std::string assemble(const std::string& text, const nn::NamedTensors& params, uint32_t version = 1) {
  const std::string path = temp_path("params.tensor");
  nn::save_tensors(params, path);
  const std::string tensor_file = read_bytes(path);
  std::remove(path.c_str());
  return std::string("CXGSAVED", 8) + le<uint32_t>(version) + le<uint64_t>(text.size()) + text +
         tensor_file.substr(12);
}

std::map<std::string, Tensor> rnn_params() {
  return {{"W_h", values({4, 4}, -0.5f, 0.5f, 1)}, {"w_x", values({4, 3}, -0.2f, 0.3f, 2)}};
}

std::string rnn_file() { return save_to_string(*ir::parse(kRnnText), rnn_params()); }

// ---- round trips and the layout --------------------------------------------------------

TEST(SavedGraph, RoundTripKeepsTheIrAndEveryParameterBitForBit) {
  auto g = ir::parse(kDtypesText);
  Tensor a = tensor({{1.f, -0.f}, {std::nanf(""), INFINITY}});
  a.data_ptr<float>()[0] = std::bit_cast<float>(0x7fc01234u);  // a NaN payload survives
  Tensor b = empty({3}, kFloat64);
  b.data_ptr<double>()[0] = 1e-310;  // a denormal
  b.data_ptr<double>()[1] = -2.5;
  b.data_ptr<double>()[2] = 1e300;
  std::map<std::string, Tensor> params = {
      {"a", a},
      {"b", b},
      {"c", tensor({0.1f, 65504.f}).to(kFloat16)},
      {"d", tensor({-3.f, 1e30f}).to(kBFloat16)},
      {"e", tensor({{-2147483647 - 1}, {7}}).to(kInt32)},
      {"f", full({}, int64_t{INT64_MIN}, kInt64)},
      {"g", tensor({true, false, false, true})},
      {"h", zeros({0, 5})},  // an empty tensor, unknown-type input
      {"s", values({3, 2}, 0, 1, 3).t().contiguous().t()},  // a non-contiguous view is saved contiguous
  };
  const std::string path = temp_path("dtypes.cxgraph");
  save(path, *g, params);
  const SavedGraph m = load(path);
  std::remove(path.c_str());
  EXPECT_EQ(ir::print(*m.graph), ir::print(*g));
  ASSERT_EQ(m.params.size(), params.size());
  for (const auto& [name, t] : params) {
    ASSERT_TRUE(m.params.count(name)) << name;
    EXPECT_TRUE(bitwise_equal(m.params.at(name), t)) << name << ": " << m.params.at(name);
    EXPECT_TRUE(m.params.at(name).is_contiguous()) << name;
  }
  EXPECT_TRUE(m.free_inputs().empty());
  // Saving what was loaded gives the same bytes: the format is canonical.
  EXPECT_EQ(save_to_string(*m.graph, m.params), save_to_string(*g, params));
}

TEST(SavedGraph, FileLayoutIsTheDocumentedOne) {
  auto g = ir::parse(kRnnText);
  const std::string text = ir::print(*g);
  const std::string bytes = rnn_file();
  // magic, version 1, IR text length, the text, then the parameters as in a
  // tensor file (count, then records sorted by name).
  EXPECT_EQ(bytes, assemble(text, {{"W_h", rnn_params()["W_h"]}, {"w_x", rnn_params()["w_x"]}}));
  EXPECT_EQ(bytes.substr(0, 8), "CXGSAVED");
  EXPECT_EQ(bytes.substr(8, 4), std::string("\1\0\0\0", 4));
  EXPECT_EQ(bytes.substr(12, 8), le<uint64_t>(text.size()));
  EXPECT_EQ(bytes.substr(20, text.size()), text);
  EXPECT_EQ(bytes.substr(20 + text.size(), 8), le<uint64_t>(2));
  EXPECT_EQ(bytes.substr(28 + text.size(), 7), std::string("\3\0\0\0W_h", 7));
  EXPECT_EQ(bytes.size(), 28 + text.size() + (4 + 3 + 1 + 4 + 16 + 8 + 64) + (4 + 3 + 1 + 4 + 16 + 8 + 48));
}

TEST(SavedGraph, GraphWithoutParametersAndFreeInputsInOrder) {
  const SavedGraph m = load_from_string(save_to_string(*ir::parse(kRnnText), {{"W_h", rnn_params()["W_h"]}}));
  std::vector<std::string> names;
  for (const ir::Value* v : m.free_inputs()) names.push_back(v->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "prev_h", "w_x"}));
  EXPECT_EQ(load_from_string(save_to_string(*ir::parse(kSeedText))).free_inputs().size(), 4u);
}

// ---- what save refuses ----------------------------------------------------------------

TEST(SavedGraph, SaveChecksEveryParameterAgainstItsInput) {
  auto rnn = ir::parse(kRnnText);
  auto seed = ir::parse(kSeedText);
  EXPECT_ERROR(save_to_string(*rnn, {{"W_q", zeros({4, 4})}}),
               "save: parameter 'W_q' names no input of graph 'rnn_step' (inputs: %x, %prev_h, %W_h, %w_x)");
  EXPECT_ERROR(save_to_string(*rnn, {{"W_h", zeros({4, 4}, kFloat64)}}),
               "save: parameter 'W_h' is f64[4, 4] but input %W_h : f32[4, 4]");
  EXPECT_ERROR(save_to_string(*rnn, {{"W_h", zeros({4, 3})}}),
               "save: parameter 'W_h' is f32[4, 3] but input %W_h : f32[4, 4] (dim 1)");
  EXPECT_ERROR(save_to_string(*rnn, {{"W_h", zeros({16})}}), "(rank 2)");
  EXPECT_ERROR(save_to_string(*rnn, {{"x", Tensor()}}), "save: parameter 'x' is undefined");
  EXPECT_ERROR(save_to_string(*seed, {{"flag", ones({1})}}),
               "save: parameter 'flag' is a tensor but input %flag : bool is not");
  auto sym = ir::parse("graph sym(%a : f32[N], %b : f32[N]) {\n  %c : Tensor = add(%a, %b)\n  return (%c)\n}\n");
  EXPECT_ERROR(save_to_string(*sym, {{"a", zeros({3})}, {"b", zeros({4})}}),
               "parameter 'b' is f32[4] but input %b : f32[N]: N is 3 in an earlier parameter");
  EXPECT_NO_THROW(save_to_string(*sym, {{"a", zeros({3})}, {"b", zeros({3})}}));
  auto bad = ir::parse("graph bad(%x : Tensor) {\n  %y : Tensor = no_such_op(%x)\n  return (%y)\n}\n");
  EXPECT_ERROR(save_to_string(*bad), "save: graph 'bad' is invalid");
  EXPECT_ERROR(save(temp_path("no_such_dir/m.cxgraph"), *rnn), "cannot open");
}

// ---- malformed files ------------------------------------------------------------------

TEST(SavedGraph, EveryTruncationIsAClearError) {
  const std::string good = rnn_file();
  for (size_t n = 0; n < good.size(); ++n) {
    const std::string e = error_of([&] { load_from_string(good.substr(0, n)); });
    EXPECT_TRUE(e.find("truncated at byte") != std::string::npos || e.find("bad magic") != std::string::npos)
        << "prefix " << n << ": " << e;
  }
  // The message names the offset, the parameter and the bytes missing.
  EXPECT_ERROR(load_from_string(good.substr(0, good.size() - 10)),
               "saved graph: truncated at byte " + std::to_string(good.size() - 48) +
                   " while reading parameter 'w_x' (need 48 bytes, 38 left)");
  EXPECT_ERROR(load_from_string(good.substr(0, 30)), "truncated at byte 20 while reading the IR text");
}

TEST(SavedGraph, EverySingleByteCorruptionLoadsOrThrowsGraphError) {
  const std::string good = rnn_file();
  size_t loaded = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (int v : {0x00, 0x01, 0x7f, 0xff, static_cast<unsigned char>(good[i]) ^ 0x20}) {
      std::string bad = good;
      bad[i] = static_cast<char>(v);
      try {
        load_from_string(bad);
        ++loaded;  // e.g. a changed weight or source line: still a valid file
      } catch (const Error&) {
      }
    }
  EXPECT_GT(loaded, 0u);
}

TEST(SavedGraph, WrongMagicVersionAndTrailingBytes) {
  const std::string good = rnn_file();
  EXPECT_ERROR(load_from_string("hello, world, this is not a model"),
               "saved graph: not a saved graph (bad magic; expected \"CXGSAVED\") (at byte 0)");
  EXPECT_ERROR(load_from_string(""), "bad magic");
  const std::string tensor_file = temp_path("w.tensor");
  nn::save_tensors({{"w", ones({2})}}, tensor_file);
  EXPECT_ERROR(load(tensor_file), "saved graph '" + tensor_file + "': this is a tensor file (nn::save), not a saved graph");
  std::remove(tensor_file.c_str());
  EXPECT_ERROR(load_from_string(assemble(kRnnText, {}, 3)),
               "saved graph: saved graph version 3 is newer than this build supports (1)");
  EXPECT_ERROR(load_from_string(assemble(kRnnText, {}, 0)), "invalid format version 0");
  EXPECT_ERROR(load_from_string(good + "x"), "1 unexpected bytes after the last parameter (at byte " +
                                                 std::to_string(good.size()) + ")");
  EXPECT_ERROR(load(temp_path("does_not_exist.cxgraph")), "load: cannot open");
}

TEST(SavedGraph, BadIrTextIsReportedWithLineAndColumn) {
  const std::string text = "graph g(%x : Tensor) {\n  %y : Tensor = relu(%x\n  return (%y)\n}\n";
  const std::string e = error_of([&] { load_from_string(assemble(text, {})); });
  EXPECT_NE(e.find("saved graph: invalid IR text (starting at byte 20): 3:"), std::string::npos) << e;
  EXPECT_TRUE(std::regex_search(e, std::regex("IR text \\(starting at byte 20\\): 3:[0-9]+: "))) << e;
  EXPECT_ERROR(load_from_string(assemble("graph g(%x : Tensor) {\n  %y : Tensor = no_such_op(%x)\n  return (%y)\n}\n", {})),
               "saved graph: graph 'g' does not verify");
  EXPECT_ERROR(load_from_string(assemble("", {})), "invalid IR text");
}

TEST(SavedGraph, ParametersThatDoNotFitTheirInputAreRefused) {
  auto p = rnn_params();
  EXPECT_ERROR(load_from_string(assemble(kRnnText, {{"W_q", p["W_h"]}})),
               "parameter 'W_q' names no input of graph 'rnn_step' (inputs: %x, %prev_h, %W_h, %w_x)");
  EXPECT_ERROR(load_from_string(assemble(kRnnText, {{"W_h", p["W_h"].to(kFloat64)}})),
               "parameter 'W_h' is f64[4, 4] but input %W_h : f32[4, 4] (at byte");
  EXPECT_ERROR(load_from_string(assemble(kRnnText, {{"w_x", zeros({3, 4})}})),
               "parameter 'w_x' is f32[3, 4] but input %w_x : f32[4, 3] (dim 0)");
  EXPECT_ERROR(load_from_string(assemble(kSeedText, {{"flag", ones({})}})), "input %flag : bool is not");
  EXPECT_ERROR(load_from_string(assemble(kDtypesText, {{"s", zeros({3, 3})}})), "(dim 1)");
  // Two records with one name: a tensor file cannot hold that, so splice it.
  std::string one = assemble(kRnnText, {{"x", ones({1, 3})}});
  const std::string record = one.substr(28 + std::strlen(kRnnText));
  one.replace(20 + std::strlen(kRnnText), 8, le<uint64_t>(2));
  EXPECT_ERROR(load_from_string(one + record), "duplicate parameter 'x'");
  // A bool parameter whose bytes are not 0 or 1.
  std::string flag = assemble(kDtypesText, {{"g", tensor({true, false, false, true})}});
  flag[flag.size() - 2] = 2;
  EXPECT_ERROR(load_from_string(flag), "parameter 'g': bool value other than 0 or 1");
}

TEST(SavedGraph, HugeLengthFieldsFailBeforeAllocating) {
  const std::string good = rnn_file();
  const size_t text_len = std::strlen(kRnnText);
  auto with = [&](size_t at, const std::string& bytes) {
    std::string s = good;
    s.replace(at, bytes.size(), bytes);
    return s;
  };
  EXPECT_ERROR(load_from_string(with(12, le<uint64_t>(uint64_t(1) << 63))), "IR text length 9223372036854775808 exceeds 64 MiB");
  EXPECT_ERROR(load_from_string(with(12, le<uint64_t>(60 << 20))),
               "truncated at byte 20 while reading the IR text (need 62914560 bytes, " +
                   std::to_string(good.size() - 20) + " left)");
  const size_t params = 20 + text_len;
  EXPECT_ERROR(load_from_string(with(params, le<uint64_t>(uint64_t(1) << 40))),
               "parameter count 1099511627776 exceeds the graph's 4 inputs");
  EXPECT_ERROR(load_from_string(with(params + 8, le<uint32_t>(0x7fffffff))),
               "parameter 0: name length 2147483647 is too large");
  // W_h's record: name_len, "W_h", dtype, rank, then sizes [4, 4] and nbytes.
  const size_t sizes = params + 8 + 4 + 3 + 1 + 4;
  EXPECT_ERROR(load_from_string(with(sizes, le<uint64_t>(uint64_t(1) << 61) + le<uint64_t>(uint64_t(1) << 61))),
               "parameter 'W_h': shape [2305843009213693952, 2305843009213693952] of float is too large");
  EXPECT_ERROR(load_from_string(with(sizes + 16, le<uint64_t>(60))), "data length 60 does not match shape [4, 4]");
  // An empty tensor whose strides would overflow (found by the fuzzer).
  std::string empty_huge = assemble(kDtypesText, {});
  empty_huge.replace(empty_huge.size() - 8, 8,
                     le<uint64_t>(1) + le<uint32_t>(1) + "h" + '\0' + le<uint32_t>(3) + le<uint64_t>(0) +
                         le<uint64_t>(uint64_t(1) << 51) + le<uint64_t>(uint64_t(1) << 56) + le<uint64_t>(0));
  EXPECT_ERROR(load_from_string(empty_huge),
               "parameter 'h': shape [0, 2251799813685248, 72057594037927936] of float is too large");
  EXPECT_ERROR(load_from_string(with(sizes - 4, le<uint32_t>(1000))), "parameter 'W_h': rank 1000 is too large");
  // A consistent 4 PiB tensor: refused because the bytes are not there, before
  // anything is allocated (under ASan an attempt would abort the test).
  EXPECT_ERROR(load_from_string(with(sizes, le<uint64_t>(uint64_t(1) << 25) + le<uint64_t>(uint64_t(1) << 25) +
                                                le<uint64_t>(uint64_t(1) << 52))),
               "while reading parameter 'W_h' (need 4503599627370496 bytes");
}

// ---- the committed fuzzing seeds ------------------------------------------------------

// The seed corpus of fuzz/saved_graph_fuzzer.cpp: valid files as save()
// writes them today, and damaged ones. CXXGRAPH_WRITE_SEEDS=1 rewrites it.
std::map<std::string, std::string> seed_corpus() {
  std::map<std::string, std::string> out;
  out["valid_rnn.cxgraph"] = rnn_file();
  out["valid_seed.cxgraph"] = save_to_string(*ir::parse(kSeedText), {{"W", values({2, 3}, -1, 1, 4)}, {"b", values({2, 1}, -1, 1, 5)}});
  out["valid_dtypes.cxgraph"] = save_to_string(
      *ir::parse(kDtypesText), {{"c", tensor({0.5f, 2.f}).to(kFloat16)}, {"e", tensor({{1}, {-2}}).to(kInt32)},
                                {"f", full({}, int64_t{42}, kInt64)}, {"g", tensor({true, false, true, true})},
                                {"s", values({2, 2}, 0, 1, 6)}});
  out["valid_loop.cxgraph"] = save_to_string(*ir::parse(R"(graph loop(%n : int, %h0 : Tensor, %w : f32[3]) {
  %go : bool = constant{value=true}()
  %zero : int = constant{value=0}()
  %k.2 : int, %h.2 : Tensor = Loop(%n, %go, %zero, %h0)
    block(%iter : int, %k : int, %h : Tensor) {
      %one : int = constant{value=1}()
      %k.n : int = add(%k, %one)
      %hw : Tensor = mul(%h, %w)
      %h.n : Tensor = tanh(%hw)
      %cond : bool = lt(%k.n, %n)
      -> (%cond, %k.n, %h.n)
    }
  return (%k.2, %h.2)
}
)"), {{"w", values({3}, -1, 1, 7)}});
  const std::string rnn = out["valid_rnn.cxgraph"];
  out["bad_truncated.cxgraph"] = rnn.substr(0, rnn.size() - 20);
  out["bad_version.cxgraph"] = assemble(kRnnText, {}, 2);
  out["bad_ir.cxgraph"] = assemble("graph g(%x : Tensor) {\n  %y : Tensor = relu(%x\n}\n", {});
  out["bad_param_dtype.cxgraph"] = assemble(kRnnText, {{"W_h", zeros({4, 4}, kInt32)}});
  return out;
}

TEST(SavedGraph, SeedCorpusIsCurrent) {
  const std::filesystem::path dir = CXXGRAPH_SAVED_CORPUS;
  const bool write = std::getenv("CXXGRAPH_WRITE_SEEDS") != nullptr;
  for (const auto& [name, bytes] : seed_corpus()) {
    if (write) write_bytes(dir / name, bytes);
    EXPECT_EQ(read_bytes(dir / name), bytes) << name << " is stale: rerun with CXXGRAPH_WRITE_SEEDS=1";
    EXPECT_LT(bytes.size(), 10000u) << name;
    if (name.starts_with("valid_")) EXPECT_NO_THROW(load_from_string(bytes)) << name;
    else EXPECT_THROW(load_from_string(bytes), Error) << name;
  }
  // Inputs the fuzzer once crashed on (bad_fuzz_*), kept as seeds: errors now.
  int regressions = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().starts_with("bad_fuzz_")) {
      EXPECT_THROW(load_from_string(read_bytes(entry.path())), Error) << entry.path();
      ++regressions;
    }
  EXPECT_GE(regressions, 1);
}

// ---- running --------------------------------------------------------------------------

// The RNN step computed eagerly, op by op: the reference for the interpreter
// and graph-run.
Tensor rnn_eager(const Tensor& x, const Tensor& prev_h, const Tensor& W_h, const Tensor& w_x, bool* added) {
  Tensor h2h = matmul(W_h, prev_h.t());
  *added = static_cast<bool>(h2h.sum() > w_x.sum());
  if (*added) h2h = h2h + matmul(w_x, x.t());
  return tanh(h2h);
}

// Inputs taking each branch: prev_h of one sign or the other flips sum(h2h).
struct RnnCase {
  Tensor x, prev_h;
  bool expect_added;
};
std::vector<RnnCase> rnn_cases() {
  // sum(W_h @ prev_h^T) is the column sums of W_h dotted with prev_h: a
  // multiple of them makes it large and positive, its negation negative.
  Tensor col = rnn_params()["W_h"].sum(0).reshape({1, 4});
  return {{values({1, 3}, -1, 1, 8), col * 10.f, true}, {values({1, 3}, -1, 1, 9), col * -10.f, false}};
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.dtype(), want.dtype());
  const Tensor g = got.to(kFloat64).contiguous(), w = want.to(kFloat64).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i)
    EXPECT_NEAR(g.data_ptr<double>()[i], w.data_ptr<double>()[i], tol) << "element " << i;
}

TEST(RunSaved, RnnMatchesEagerOnBothBranches) {
  const SavedGraph m = load_from_string(rnn_file());
  auto p = rnn_params();
  for (const RnnCase& c : rnn_cases()) {
    bool added = false;
    const Tensor want = rnn_eager(c.x, c.prev_h, p["W_h"], p["w_x"], &added);
    ASSERT_EQ(added, c.expect_added);
    const std::vector<IValue> out = run_saved(m, {c.x, c.prev_h});
    ASSERT_EQ(out.size(), 1u);
    expect_close(std::get<Tensor>(out[0]), want, 1e-6);
  }
  EXPECT_ERROR(run_saved(m, {rnn_cases()[0].x}),
               "run_saved: graph 'rnn_step' takes 2 free inputs (%x, %prev_h), got 1");
}

// ---- graph-run in a separate process ---------------------------------------------------

struct Exit {
  int status;
  std::string out, err;
};

Exit graph_run(const std::string& args) {
  const std::string out = temp_path("stdout.txt"), err = temp_path("stderr.txt");
  const std::string cmd = std::string("'") + CXXGRAPH_GRAPH_RUN + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(cmd.c_str());
  Exit e{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_bytes(out), read_bytes(err)};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return e;
}

TEST(GraphRun, ReproducesTheSavedRnnInASeparateProcess) {
  const std::string model = temp_path("rnn.cxgraph");
  save(model, *ir::parse(kRnnText), rnn_params());
  auto p = rnn_params();
  int k = 0;
  for (const RnnCase& c : rnn_cases()) {
    const std::string x = temp_path("x.tensor"), h = temp_path("h.tensor"), out = temp_path("out.tensor");
    nn::save_tensors({{"x", c.x}}, x);
    nn::save_tensors({{"anything", c.prev_h}}, h);  // a file's only tensor needs no matching name
    const Exit e = graph_run("'" + model + "' --input x='" + x + "' --input prev_h='" + h + "' --output '" + out + "'");
    ASSERT_EQ(e.status, 0) << e.err;
    bool added = false;
    const Tensor want = rnn_eager(c.x, c.prev_h, p["W_h"], p["w_x"], &added);
    EXPECT_EQ(added, c.expect_added) << "case " << k;
    const nn::NamedTensors got = nn::load_tensors(out);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].first, "output0");
    expect_close(got[0].second, want, 1e-6);
    for (const auto& f : {x, h, out}) std::remove(f.c_str());
    ++k;
  }
  std::remove(model.c_str());
}

TEST(GraphRun, ScalarInputsHelperModesAndPrinting) {
  const std::string graph_file = temp_path("seed.graph"), params = temp_path("params.tensor");
  const std::string model = temp_path("seed.cxgraph"), X = temp_path("X.tensor");
  write_bytes(graph_file, kSeedText);
  nn::save_tensors({{"W", tensor({{1.f, 0.f, -1.f}, {0.5f, 0.5f, 0.5f}})}, {"b", tensor({{0.f}, {-1.f}})}}, params);
  ASSERT_EQ(graph_run("--pack '" + model + "' '" + graph_file + "' '" + params + "'").status, 0);
  ASSERT_EQ(graph_run("--make-tensor '" + X + "' f32 3,1 2 1 -4").status, 0);
  // W @ X + b = [2 + 4, 1 + 0.5 - 2 - 1] = [6, -1.5]; relu, doubled: [12, 0].
  Exit e = graph_run("'" + model + "' --input X='" + X + "' --input flag=true --print");
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_NE(e.out.find("output0 = tensor([[12.0000],\n        [0.0000]], shape=[2, 1], dtype=float)"), std::string::npos) << e.out;
  e = graph_run("'" + model + "' --input X='" + X + "' --input flag=0");
  EXPECT_NE(e.out.find("output0 = tensor([[6.0000],"), std::string::npos) << e.out;
  e = graph_run("--show '" + X + "'");
  EXPECT_NE(e.out.find("tensor = tensor([[2.0000],\n        [1.0000],\n        [-4.0000]], shape=[3, 1], dtype=float)"), std::string::npos) << e.out;
  e = graph_run("--info '" + model + "'");
  EXPECT_NE(e.out.find("%W : f32[2, 3]  (parameter f32[2, 3])"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("%flag : bool\n"), std::string::npos) << e.out;
  EXPECT_EQ(graph_run("--help").status, 0);
  for (const auto& f : {graph_file, params, model, X}) std::remove(f.c_str());
}

TEST(GraphRun, BadArgumentsAndFilesExitNonZeroWithAMessage) {
  const std::string model = temp_path("rnn_errors.cxgraph"), x = temp_path("x2.tensor"), junk = temp_path("junk");
  save(model, *ir::parse(kRnnText), rnn_params());
  nn::save_tensors({{"x", ones({1, 3})}}, x);
  write_bytes(junk, "not a model at all");
  struct Case {
    std::string args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", 2, "graph-run: no arguments"},
      {"'" + model + "' --input x='" + x + "'", 2, "missing --input prev_h=... (a Tensor)"},
      {"'" + model + "' --input x='" + x + "' --input prev_h='" + x + "' --input W_h='" + x + "'", 2,
       "input 'W_h': bound by a saved parameter"},
      {"'" + model + "' --input x='" + x + "' --input prev_h='" + x + "' --input z=1", 2,
       "input 'z': the graph has no such input"},
      {"'" + model + "' --input x", 2, "--input expects NAME=VALUE"},
      {"'" + model + "' --bogus", 2, "unknown or incomplete option '--bogus'"},
      {"'" + model + "' --threads -1", 2, "--threads: -1 is not in 0..1024"},
      {"'" + junk + "'", 1, "not a saved graph (bad magic"},
      {"'" + temp_path("missing.cxgraph") + "'", 1, "load: cannot open"},
      {"'" + model + "' --input x='" + junk + "' --input prev_h='" + x + "'", 1, "bad magic"},
      // prev_h [1, 3] does not fit W_h [4, 4]: the run fails and names the op.
      {"'" + model + "' --input x='" + x + "' --input prev_h='" + x + "'", 1, "matmul"},
      {"--make-tensor '" + x + "' f32 2,2 1 2 3", 2, "shape [2, 2] needs 4 values (or one for all), got 3"},
      {"--make-tensor '" + x + "' f99 2", 2, "unknown dtype 'f99'"},
      {"--make-tensor '" + x + "' i64 1 1.5", 2, "value 0: '1.5' is not an integer"},
  };
  for (const Case& c : cases) {
    const Exit e = graph_run(c.args);
    EXPECT_EQ(e.status, c.status) << c.args << "\n" << e.err;
    EXPECT_NE(e.err.find(c.message), std::string::npos) << c.args << "\nstderr: " << e.err;
  }
  for (const auto& f : {model, x, junk}) std::remove(f.c_str());
}

}  // namespace
