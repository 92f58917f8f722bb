#pragma once
// The generator's state while it draws one function (generator.cpp: values
// and statements; ops.cpp: one emitter per op of the table).
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "program.h"

namespace progen {

// An expression being built: its C++ text, static shape and type, a bound on
// its magnitude (to keep values away from overflow), and whether a gradient
// flows into it from an input.
struct Val {
  std::string code;
  Dims shape;
  VType type = VType::Float;
  double bound = 1;
  bool grad = false;
  std::set<std::string> reads;
  bool host = false;  // a C++ scalar (literal or host variable), not a tensor
};

struct Var {
  std::string name;
  Dims shape;
  double bound;
  bool grad;
  bool used = false;
};

struct HostVar {
  std::string name;
  bool is_int;
  double bound;  // |value| <= bound for every host variant
};

class Gen {
 public:
  // `device`: only ops with a CUDA kernel (no CpuOnly trait, and none of
  // the CPU-only attribute values of a CudaPartly op), for the GPU check.
  Gen(uint64_t seed, int index, bool device = false);
  Function run();

  // ---- used by the op emitters (ops.cpp)
  std::mt19937_64 rng;
  Function f;
  const bool device;
  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  std::string fmt(double v);

  Val float_expr(int depth);
  Val bool_expr(int depth);
  Val leaf();
  // A float operand whose shape broadcasts with `shape` (maybe a new input).
  Val broadcast_operand(const Dims& shape, int depth);
  // A float operand of exactly `shape` (a variable, a new input, or an
  // expression of `like`).
  Val same_shape_operand(const Dims& shape, const Val& like);
  std::optional<Val> new_input(const Dims& shape, VType type = VType::Float, int64_t int_hi = 0);
  Val host_scalar(bool positive);
  // `v` reshaped to `rank` dims (sizes from its element count).
  Val to_rank(const Val& v, int rank);
  Val bounded(Val v, double limit = 8);  // tanh(v) when its bound exceeds limit
  Val op(graph::OpId id, std::string code, Dims shape, double bound, std::vector<const Val*> operands,
         VType type = VType::Float);
  Val apply(graph::OpId id, int depth);  // ops.cpp: one emitter per op
  Val apply_other(graph::OpId id, int depth);  // library, view and other ops
  Val apply_nn(graph::OpId id, Val x, int depth);  // ops_nn.cpp
  Val where_of(const Val& cond, int depth);

 private:
  std::vector<Var> vars_;
  std::vector<HostVar> hosts_;
  std::vector<graph::OpId> ops_;  // the generatable ops, drawn uniformly
  int next_id_ = 0, next_var_ = 0;
  bool in_loop_ = false;  // the statement being drawn is in a loop body

  std::vector<Stmt> block(int depth, int loop_depth, int count, bool keep_scope = false);
  std::optional<Stmt> statement(int depth, int loop_depth);
  Stmt decl();
  std::optional<Stmt> reassign(const std::string& loop_var);
  Stmt host_decl();
  Stmt if_stmt(int depth, int loop_depth, bool on_tensor);
  Stmt for_stmt(int depth, int loop_depth);
  Stmt while_stmt(int depth, int loop_depth);
  Stmt exit_stmt(int loop_depth);
  std::string result_expr(std::vector<Var*> extra, std::set<std::string>* reads);
  Val fit(const Val& v, const Dims& shape);
  Stmt simple(std::string text, std::set<std::string> reads = {});
};

bool broadcastable(const Dims& a, const Dims& b, Dims* out = nullptr);
// Whether a device batch may draw `id`: neither it nor an op its emitter
// writes without drawing it (ops_nn.cpp) is CpuOnly in the op table.
bool runs_on_device(graph::OpId id);
int64_t numel(const Dims& d);
std::string dims_str(const Dims& d);  // "{2, 3}"

}  // namespace progen
