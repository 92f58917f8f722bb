// graph-progen: writes a batch of random [[graph::static]] functions, plus
// the harness's case table, as one translation unit (docs/fuzzing.md).
//
//   graph-progen --seed S --functions N --out batch.cpp [--coverage cov.txt]
//   graph-progen --seed S --only K --edit 3:drop,7:then --out one.cpp
//   graph-progen --seed S --only K --list-statements
//   graph-progen --check-table     every generatable op has an emitter
//   graph-progen --check-device --seed S --functions N
//                                  device batches name no op without a CUDA kernel
//   graph-progen --list-ops        the generatable ops, and whether each is differentiable
//   graph-progen --args-file F     the arguments read from F (the build's batch)
//   --device      only ops that run on CUDA tensors (the GPU check's batches)
//   --registrar   no main(): the cases register themselves (progen::Registrar)
//                 under names s<seed>_pg<k>, so several batches share a binary
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gen.h"

namespace {

using namespace progen;

int usage(const char* msg) {
  std::fprintf(stderr, "graph-progen: %s\nusage: graph-progen --seed S (--functions N | --only K) --out FILE "
                       "[--coverage FILE] [--edit ID:drop|then|else,...] | --list-statements | --check-table\n", msg);
  return 2;
}

// Every generatable op drawn once from a scratch generator: an op without an
// emitter throws.
int check_table() {
  int missing = 0, count = 0;
  for (const graph::OpInfo& op : graph::kOpTable) {
    if (!graph::generatable(op)) continue;
    ++count;
    try {
      Gen g(1, 0);
      g.f.inputs.push_back({"x0", {2, 3}, VType::Float, 0});
      g.apply(op.id, 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ++missing;
    }
  }
  std::printf("%d generatable ops, %d without an emitter\n", count, missing);
  return missing ? 1 : 0;
}

// Whether `src` calls the op `name` (`name(` or `.name(`, not a longer name).
bool calls(const std::string& src, const std::string& name) {
  const std::string pat = name + "(";
  for (size_t at = src.find(pat); at != std::string::npos; at = src.find(pat, at + 1)) {
    const char before = at ? src[at - 1] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(before)) && before != '_') return true;
  }
  return false;
}

// Device batches (--device) name no generatable CpuOnly op of the table,
// whichever emitter writes it, and no causal attention while that op is
// CudaPartly (its mask is built on the CPU). The same functions drawn for
// the CPU must name such ops, or the check shows nothing.
int check_device(uint64_t seed, int functions) {
  std::vector<std::string> cpu_only;
  for (const graph::OpInfo& op : graph::kOpTable)
    if (graph::generatable(op) && op.has(graph::op_trait::CpuOnly)) cpu_only.emplace_back(op.name);
  const bool causal_cpu = graph::op_info(graph::OpId::scaled_dot_product_attention).has(graph::op_trait::CudaPartly);
  const std::string causal = "Tensor(), 0.0, true)";
  int bad = 0, cpu_calls = 0;
  for (int k = 0; k < functions; ++k) {
    const std::string dev = emit_function(generate(seed, k, true)), cpu = emit_function(generate(seed, k, false));
    for (const std::string& name : cpu_only) {
      if (calls(dev, name)) {
        std::printf("device function %d of seed %llu calls %s, which has no CUDA kernel\n", k,
                    (unsigned long long)seed, name.c_str());
        ++bad;
      }
      cpu_calls += calls(cpu, name);
    }
    if (causal_cpu && dev.find(causal) != std::string::npos) {
      std::printf("device function %d of seed %llu has a causal attention (CudaPartly)\n", k, (unsigned long long)seed);
      ++bad;
    }
  }
  std::string names;
  for (const std::string& n : cpu_only) names += " " + n;
  std::printf("%d device functions of seed %llu: %d call an op without a CUDA kernel; %zu generatable ops are CpuOnly "
              "(%s ), which the same functions drawn for the CPU call %d times\n",
              functions, (unsigned long long)seed, bad, cpu_only.size(), names.c_str(), cpu_calls);
  return bad || (!cpu_only.empty() && cpu_calls == 0) ? 1 : 0;
}

std::string coverage_line(const Function& f) {
  std::string s = f.name + " fwd=";
  for (graph::OpId id : f.cov.forward) s += std::string(graph::op_info(id).name) + ",";
  s += " bwd=";
  for (graph::OpId id : f.cov.backward) s += std::string(graph::op_info(id).name) + ",";
  s += " cf=";
  for (const std::string& c : f.cov.constructs) s += c + ",";
  return s + "\n";
}

std::vector<Edit> parse_edits(const std::string& spec) {
  std::vector<Edit> edits;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw std::runtime_error("bad --edit item '" + item + "'");
    edits.push_back({std::stoi(item.substr(0, colon)), item.substr(colon + 1)});
  }
  return edits;
}

int run(std::vector<std::string> args) {
  uint64_t seed = 1;
  int functions = 0, only = -1;
  std::string out, coverage, edits;
  bool list = false, device = false, registrar = false, check_dev = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw std::runtime_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--seed") seed = std::stoull(value());
    else if (a == "--functions") functions = std::stoi(value());
    else if (a == "--only") only = std::stoi(value());
    else if (a == "--out") out = value();
    else if (a == "--coverage") coverage = value();
    else if (a == "--edit") edits = value();
    else if (a == "--list-statements") list = true;
    else if (a == "--device") device = true;
    else if (a == "--registrar") registrar = true;
    else if (a == "--check-table") return check_table();
    else if (a == "--check-device") check_dev = true;
    else if (a == "--list-ops") {
      for (const graph::OpInfo& op : graph::kOpTable)
        if (graph::generatable(op)) std::printf("%s %d\n", std::string(op.name).c_str(), graph::differentiable(op));
      return 0;
    }
    else if (a == "--args-file") {
      std::ifstream in(value());
      std::vector<std::string> more;
      for (std::string w; in >> w;) more.push_back(w);
      args.insert(args.end(), more.begin(), more.end());
    } else if (a == "-h" || a == "--help") {
      usage("random [[graph::static]] functions for differential testing");
      return 0;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (check_dev) return check_device(seed, functions);
  if (list) {
    for (const auto& [id, kind] : statement_ids(generate(seed, only < 0 ? 0 : only, device)))
      std::printf("%d %s\n", id, kind == Stmt::If ? "if" : kind == Stmt::Loop ? "loop" : "simple");
    return 0;
  }
  if (out.empty() || (functions <= 0 && only < 0)) return usage("--out and --functions or --only are required");
  std::vector<Function> fs;
  if (only >= 0) fs.push_back(generate(seed, only, device));
  for (int k = 0; k < functions && only < 0; ++k) fs.push_back(generate(seed, k, device));
  // Batches sharing a binary need their own namespace and case names.
  const std::string ns = registrar ? "progen_batch_" + std::to_string(seed) : "progen_batch";
  const std::string label = registrar ? "s" + std::to_string(seed) + "_" : "";

  std::string src = "// Generated by graph-progen --seed " + std::to_string(seed) +
                    (only >= 0 ? " --only " + std::to_string(only) : " --functions " + std::to_string(functions)) +
                    (edits.empty() ? "" : " --edit " + edits) + (device ? " --device" : "") +
                    (registrar ? " --registrar" : "") + "; do not edit.\n";
  src += "#include <tuple>\n#include <vector>\n\n#include <graph/graph.h>\n\n#include \"harness.h\"\n\n";
  src += "namespace " + ns + " {\nusing namespace graph;\n\n";
  for (const Function& f : fs) src += emit_function(f, only >= 0 ? parse_edits(edits) : std::vector<Edit>{}) + "\n";
  src += "const progen::Case kCases[] = {\n";
  for (const Function& f : fs) src += emit_case(f, label);
  if (registrar) {
    src += "};\nconst progen::Registrar kRegistrar(kCases, std::size(kCases));\n\n}  // namespace " + ns + "\n";
  } else {
    src += "};\n\n}  // namespace progen_batch\n\n";
    src += "int main(int argc, char** argv) {\n  return progen::run_cases(progen_batch::kCases, std::size("
           "progen_batch::kCases), " + std::to_string(seed) + ", argc, argv);\n}\n";
  }
  // Unchanged output keeps its timestamp: no rebuild when nothing changed.
  std::ifstream old(out);
  std::stringstream prev;
  prev << old.rdbuf();
  if (prev.str() != src) std::ofstream(out) << src;
  if (!coverage.empty()) {
    std::ofstream cov(coverage);
    for (const Function& f : fs) cov << coverage_line(f);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph-progen: %s\n", e.what());
    return 3;
  }
}
