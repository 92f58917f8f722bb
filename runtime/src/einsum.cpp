// einsum (issue 19): the equation is parsed once per call and evaluated as
// sums, permutes, reshapes and bmm (ops.h says what is supported). The
// gradient is those ops'; no kernel of its own.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "graph/ops.h"

namespace graph {

namespace {

struct Operand {
  Tensor t;
  std::string letters;  // one per dim of t
};

bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

// Sums t over its letters that are not in `keep`.
Operand sum_away(Operand a, const std::string& keep) {
  Shape dims;
  std::string left;
  for (size_t i = 0; i < a.letters.size(); ++i) {
    if (has(keep, a.letters[i])) left += a.letters[i];
    else dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return a;  // sum over {} would reduce every dim
  return {sum(a.t, dims, false), left};
}

// t permuted so its letters read `order` (a permutation of them).
Tensor permuted(const Operand& a, const std::string& order) {
  Shape perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(a.letters.find(c)));
  return a.t.permute(perm);
}

int64_t size_of(const Operand& a, const std::string& letters) {
  int64_t n = 1;
  for (char c : letters) n *= a.t.size(static_cast<int64_t>(a.letters.find(c)));
  return n;
}

// A (x) B keeping the letters in `keep`: shared kept letters are batch dims,
// shared others are contracted, the rest are each side's free dims; one bmm.
Operand contract(const Operand& a_in, const Operand& b_in, const std::string& keep) {
  const Operand a = sum_away(a_in, keep + b_in.letters);
  const Operand b = sum_away(b_in, keep + a_in.letters);
  std::string batch, inner, afree, bfree;
  for (char c : a.letters) (has(b.letters, c) ? (has(keep, c) ? batch : inner) : afree) += c;
  for (char c : b.letters)
    if (!has(a.letters, c)) bfree += c;
  const int64_t B = size_of(a, batch), M = size_of(a, afree), K = size_of(a, inner), N = size_of(b, bfree);
  Tensor x = permuted(a, batch + afree + inner).reshape({B, M, K});
  Tensor y = permuted(b, batch + inner + bfree).reshape({B, K, N});
  Shape out;
  for (char c : batch + afree) out.push_back(a.t.size(static_cast<int64_t>(a.letters.find(c))));
  for (char c : bfree) out.push_back(b.t.size(static_cast<int64_t>(b.letters.find(c))));
  return {bmm(x, y).reshape(out), batch + afree + bfree};
}

// The operands' letters and the output's, checked against the tensors.
std::vector<std::string> parse(const std::string& eq, const std::vector<Tensor>& tensors, std::string& output) {
  if (eq.find('.') != std::string::npos) throw Error("ellipsis (...) is not supported");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> ins(1);
  for (char c : lhs) {
    if (c == ',') ins.emplace_back();
    else if (std::isalpha(static_cast<unsigned char>(c))) ins.back() += c;
    else if (c != ' ') throw Error(std::string("unexpected character '") + c + "'");
  }
  if (ins.size() != tensors.size())
    throw Error(std::to_string(ins.size()) + " operands in the equation, " + std::to_string(tensors.size()) +
                " tensors given");
  std::string all;
  for (size_t i = 0; i < ins.size(); ++i) {
    for (char c : ins[i])
      if (std::count(ins[i].begin(), ins[i].end(), c) > 1)
        throw Error(std::string("the letter '") + c + "' repeats within operand " + std::to_string(i) +
                    " (diagonals are not supported)");
    if (!tensors[i].defined()) throw Error("operand " + std::to_string(i) + " is undefined");
    if (static_cast<int64_t>(ins[i].size()) != tensors[i].dim())
      throw Error("operand " + std::to_string(i) + " has " + std::to_string(ins[i].size()) +
                  " letters but shape " + shape_str(tensors[i].sizes()));
    all += ins[i];
  }
  output.clear();
  if (arrow == std::string::npos) {  // implicit: the letters seen once, sorted
    for (char c : all)
      if (std::count(all.begin(), all.end(), c) == 1) output += c;
    std::sort(output.begin(), output.end());
  } else {
    for (char c : eq.substr(arrow + 2)) {
      if (c == ' ') continue;
      if (!std::isalpha(static_cast<unsigned char>(c)) || !has(all, c) || has(output, c))
        throw Error(std::string("the output letter '") + c + "' is not an input letter, or repeats");
      output += c;
    }
  }
  return ins;
}

// Every letter has one size across the operands (no broadcasting).
void check_sizes(const std::vector<Operand>& ops) {
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      for (size_t a = 0; a < ops[i].letters.size(); ++a) {
        const size_t b = ops[j].letters.find(ops[i].letters[a]);
        if (b != std::string::npos && ops[i].t.size(static_cast<int64_t>(a)) != ops[j].t.size(static_cast<int64_t>(b)))
          throw Error(std::string("the letter '") + ops[i].letters[a] + "' has sizes " +
                      std::to_string(ops[j].t.size(static_cast<int64_t>(b))) + " and " +
                      std::to_string(ops[i].t.size(static_cast<int64_t>(a))) + " (shapes " +
                      shape_str(ops[j].t.sizes()) + " and " + shape_str(ops[i].t.sizes()) + ")");
      }
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors) {
  const std::string eq(equation);
  try {
    if (tensors.empty()) throw Error("no tensors given");
    std::string output;
    const std::vector<std::string> letters = parse(eq, tensors, output);
    std::vector<Operand> ops;
    for (size_t i = 0; i < tensors.size(); ++i) ops.push_back({tensors[i], letters[i]});
    check_sizes(ops);
    // Left to right; each step keeps the letters the output or a later operand needs.
    Operand cur = ops[0];
    for (size_t i = 1; i < ops.size(); ++i) {
      std::string keep = output;
      for (size_t j = i + 1; j < ops.size(); ++j) keep += ops[j].letters;
      cur = contract(cur, ops[i], keep);
    }
    cur = sum_away(cur, output);
    return cur.letters == output ? cur.t : permuted(cur, output);
  } catch (const Error& e) {
    throw Error("einsum \"" + eq + "\": " + e.what());
  }
}

}  // namespace graph
