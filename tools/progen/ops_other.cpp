// Emitters of the library, view and other ops, by id: operands of valid
// shapes (new inputs drawn where an op needs weights or indices).
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "gen.h"

namespace progen {

using graph::OpId;

namespace {

std::string s(int64_t v) { return std::to_string(v); }

}  // namespace

Val Gen::where_of(const Val& c, int depth) {
  Val a = broadcast_operand(c.shape, depth);
  Val o = broadcast_operand(c.shape, depth);
  Dims sh, sh2;
  broadcastable(c.shape, a.shape, &sh);
  if (!broadcastable(sh, o.shape, &sh2)) {
    o = op(OpId::mean, "mean(" + o.code + ")", {}, o.bound, {&o});
    sh2 = sh;
  }
  return op(OpId::where, "where(" + c.code + ", " + a.code + ", " + o.code + ")", sh2, std::max(a.bound, o.bound),
            {&c, &a, &o});
}

Val Gen::apply_other(OpId id, int depth) {
  Val x = float_expr(depth);
  // Keep sizes small: slice the largest dim while there are many elements.
  while (numel(x.shape) > 48) {
    const int d = std::max_element(x.shape.begin(), x.shape.end()) - x.shape.begin();
    Dims sh = x.shape;
    sh[d] = (sh[d] + 1) / 2;
    x = op(OpId::slice, x.code + ".slice(" + s(d) + ", 0, " + s(sh[d]) + ")", sh, x.bound, {&x});
  }
  const int r = x.shape.size();
  const Dims& xs = x.shape;
  switch (id) {
    // ---- views
    case OpId::t: {
      if (r > 2) x = to_rank(x, 2);
      Dims sh = x.shape;
      std::reverse(sh.begin(), sh.end());
      return op(id, x.code + ".t()", sh, x.bound, {&x});
    }
    case OpId::transpose: case OpId::permute: {
      if (r < 2) x = to_rank(x, 2);
      const int rr = x.shape.size();
      std::vector<int> p(rr);
      std::iota(p.begin(), p.end(), 0);
      std::string code;
      if (id == OpId::transpose) {
        const int d0 = uni(0, rr - 1), d1 = (d0 + uni(1, rr - 1)) % rr;
        std::swap(p[d0], p[d1]);
        code = x.code + ".transpose(" + s(d0) + ", " + s(d1) + ")";
      } else {
        std::shuffle(p.begin(), p.end(), rng);
        code = x.code + ".permute({";
        for (int i = 0; i < rr; ++i) code += (i ? ", " : "") + s(p[i]);
        code += "})";
      }
      Dims sh(rr);
      for (int i = 0; i < rr; ++i) sh[i] = x.shape[p[i]];
      return op(id, code, sh, x.bound, {&x});
    }
    case OpId::reshape: {
      Val v = to_rank(x, uni(1, 3));
      if (v.shape == xs) v = to_rank(x, r == 1 ? 2 : 1);
      if (coin(0.4) && !v.shape.empty()) {  // one size inferred (-1)
        Dims shown = v.shape;
        shown[uni(0, shown.size() - 1)] = -1;
        v.code = x.code + ".reshape(" + dims_str(shown) + ")";
      }
      return v;
    }
    case OpId::expand: {
      if (r >= 4) x = to_rank(x, 2);
      Dims to = x.shape, shown;
      bool any = false;
      for (int64_t& d : to)
        if (d == 1 && coin(0.7)) d = uni(2, 3), any = true;
      std::string code = x.code;
      if (!any || coin(0.3)) {
        to.insert(to.begin(), uni(2, 3));
        f.cov.constructs.insert("expand_new_dim");
      }
      for (size_t i = 0; i < to.size(); ++i) {
        const size_t off = to.size() - x.shape.size();
        shown.push_back(i >= off && x.shape[i - off] == to[i] && coin() ? -1 : to[i]);
      }
      return op(id, code + ".expand(" + dims_str(shown) + ")", to, x.bound, {&x});
    }
    case OpId::slice: {
      if (r == 0) x = to_rank(x, 1);
      const int d = uni(0, x.shape.size() - 1);
      const int64_t n = x.shape[d], start = uni(0, n - 1), end = uni(start + 1, n), step = uni(1, 2);
      Dims sh = x.shape;
      sh[d] = (end - start + step - 1) / step;
      return op(id, x.code + ".slice(" + s(d) + ", " + s(start) + ", " + s(end) + ", " + s(step) + ")", sh, x.bound,
                {&x});
    }
    case OpId::squeeze: {
      std::vector<int> ones;
      for (int d = 0; d < r; ++d)
        if (xs[d] == 1) ones.push_back(d);
      if (ones.empty()) {  // squeeze(d) of a size-1 dim just added
        if (r >= 4) x = to_rank(x, 2);
        const int d = uni(0, x.shape.size());
        Dims sh = x.shape;
        sh.insert(sh.begin() + d, 1);
        Val u = op(OpId::unsqueeze, x.code + ".unsqueeze(" + s(d) + ")", sh, x.bound, {&x});
        return op(id, u.code + ".squeeze(" + s(d) + ")", x.shape, x.bound, {&u});
      }
      Dims sh;
      if (coin(0.3)) {
        for (int64_t d : xs)
          if (d != 1) sh.push_back(d);
        return op(id, x.code + ".squeeze()", sh, x.bound, {&x});
      }
      const int d = ones[uni(0, ones.size() - 1)];
      sh = xs;
      sh.erase(sh.begin() + d);
      return op(id, x.code + ".squeeze(" + s(d) + ")", sh, x.bound, {&x});
    }
    case OpId::unsqueeze: {
      if (r >= 4) x = to_rank(x, 2);
      const int d = uni(0, x.shape.size());
      Dims sh = x.shape;
      sh.insert(sh.begin() + d, 1);
      return op(id, x.code + ".unsqueeze(" + s(d) + ")", sh, x.bound, {&x});
    }
    case OpId::flatten: {
      if (r == 0) x = to_rank(x, 1);
      const int rr = x.shape.size(), s0 = uni(0, rr - 1), e0 = uni(s0, rr - 1);
      Dims sh(x.shape.begin(), x.shape.begin() + s0);
      int64_t m = 1;
      for (int i = s0; i <= e0; ++i) m *= x.shape[i];
      sh.push_back(m);
      sh.insert(sh.end(), x.shape.begin() + e0 + 1, x.shape.end());
      const std::string args = coin(0.3) && e0 == rr - 1 ? s(s0) : s(s0) + ", " + s(e0);
      return op(id, x.code + ".flatten(" + args + ")", sh, x.bound, {&x});
    }
    default: return apply_nn(id, x, depth);
  }
}

}  // namespace progen
