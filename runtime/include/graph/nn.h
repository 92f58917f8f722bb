#pragma once
// graph::nn: modules in LibTorch's holder style.
//
//   struct NetImpl : graph::nn::Module {
//     NetImpl() : fc1(register_module("fc1", nn::Linear(2, 32))),
//                 fc2(register_module("fc2", nn::Linear(32, 2))) {}
//     Tensor forward(Tensor x) { return fc2(relu(fc1(x))); }
//     nn::Linear fc1, fc2;
//   };
//   GRAPH_MODULE(Net);            // Net: a shared handle to a NetImpl
//
//   Net net;                      // constructs a NetImpl
//   net->named_parameters();      // {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
//   Tensor y = net(x);            // net->forward(x)
//
// A Module owns named parameters (leaf tensors that require grad), named
// buffers (state that is saved but not trained) and named submodules, each in
// registration order. Modules are held through shared_ptr (ModuleHolder) and
// are not copyable: their parameter table points at their own members.
//
// Every built-in module's forward is defined inline below, out of public ops
// only and without virtual calls, so that a source-level compiler (the
// [[graph::static]] plugin) can read and lower it.
//
// Initialization follows PyTorch's defaults, drawn from graph::rand/randn
// (graph's generator, so the values are not PyTorch's; see manual_seed).
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/nn_ops.h"
#include "graph/nn_options.h"
#include "graph/ops.h"
#include "graph/tensor.h"

namespace graph::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// ---- Module ------------------------------------------------------------------
class Module {
 public:
  Module() = default;
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The type's name for messages ("Linear"); set by the built-in modules.
  const std::string& name() const { return name_; }

  // Registers `t` as a parameter owned by this module and returns a reference
  // to the stored handle (assign it to a member: `w = register_parameter("w", t)`;
  // the member and the table share data and gradient). The tensor is
  // detached and, if requires_grad, made a leaf that requires grad.
  // Names must be non-empty, without '.', and unique among parameters,
  // buffers and submodules of this module.
  Tensor& register_parameter(std::string name, Tensor t, bool requires_grad = true);
  // Registers the member `*slot` itself: the table points at it, so to()
  // and load() update the member as well. `*slot` must outlive the module.
  Tensor& register_parameter(std::string name, Tensor* slot, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor t);
  Tensor& register_buffer(std::string name, Tensor* slot);

  // Registers a submodule and returns it (the holder or the shared_ptr).
  template <class M>
    requires std::derived_from<M, Module>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    add_child(std::move(name), m);
    return m;
  }
  template <class Holder>
    requires requires(const Holder& h) { h.ptr(); }
  Holder register_module(std::string name, Holder h) {
    add_child(std::move(name), h.ptr());
    return h;
  }

  // Parameters of this module, then of each submodule in registration order,
  // recursively (PyTorch's order); shared tensors are listed once. Handles
  // share data and gradients with the modules' own.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;  // "fc1.weight"
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  // Direct submodules, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module ("") and all submodules, depth first: "", "fc1", "block.0", ...
  std::vector<std::pair<std::string, Module*>> named_modules();

  // Training mode (on by default), set on this module and every submodule.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Drops every parameter's accumulated gradient.
  void zero_grad();

  // Converts every parameter and buffer to `dtype` (floating dtypes only for
  // parameters); parameters stay leaves that require grad, with no gradient.
  // Optimizers built earlier keep the old tensors: build them afterwards.
  void to(DType dtype);
  // Moves every parameter and buffer to `device` (a copy per tensor, as
  // Tensor::to): parameters stay leaves with their requires_grad and no
  // gradient. As with to(DType), build optimizers afterwards.
  void to(Device device);

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;  // into owned_ or a member of the derived module
  };
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(std::string name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, bool recurse, bool params, NamedTensors& out) const;

  std::string name_ = "Module";
  bool training_ = true;
  std::vector<Slot> params_, buffers_;
  std::vector<std::unique_ptr<Tensor>> owned_;  // stable addresses
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// ---- ModuleHolder: LibTorch's TORCH_MODULE handle ------------------------------
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  // Constructs an Impl from the arguments (none: a default-constructed Impl).
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  // An empty holder, to be assigned later.
  ModuleHolder(std::nullptr_t) {}
  template <class Head, class... Tail>
    requires(!std::is_same_v<std::remove_cvref_t<Head>, std::nullptr_t> &&
             !std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Head>> &&
             !std::is_same_v<std::remove_cvref_t<Head>, std::shared_ptr<Impl>> &&
             std::is_constructible_v<Impl, Head, Tail...>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return checked(); }
  Impl& operator*() const { return *checked(); }
  Impl* get() const { return checked(); }
  const std::shared_ptr<Impl>& ptr() const {
    checked();
    return impl_;
  }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  // m(args...) is m->forward(args...). Through the public get(), so that a
  // static graph can name the module from its caller (the plugin inlines this).
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  Impl* checked() const {
    if (!impl_) throw Error("nn: use of an empty module holder");
    return impl_.get();
  }
  std::shared_ptr<Impl> impl_;
};

// GRAPH_MODULE(Linear) declares `Linear`, a holder of `LinearImpl`.
#define GRAPH_MODULE(Name)                                   \
  class Name : public ::graph::nn::ModuleHolder<Name##Impl> { \
   public:                                                   \
    using ::graph::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

namespace detail {
// uniform(-bound, bound) in `sizes`, without recording autograd.
Tensor uniform(const Shape& sizes, double bound);
Tensor normal(const Shape& sizes, double mean = 0.0, double std = 1.0);
Shape checked_size2(const char* module, const char* what, const Size2& s, bool allow_zero);
// graph::Error "<module>: <what> must be positive, got <v>" when v <= 0.
void check_positive(const char* module, const char* what, int64_t v);
// A recurrent cell's weights as PyTorch makes them: weight_ih [G, input],
// weight_hh [G, hidden], and with `bias` bias_ih/bias_hh [G], G = gates *
// hidden, all uniform(+-1/sqrt(hidden)), registered on `m` as
// weight_ih<suffix>, weight_hh<suffix>, bias_ih<suffix>, bias_hh<suffix>.
struct CellWeights {
  Tensor *w_ih, *w_hh, *b_ih, *b_hh;
};
void init_cell_weights(Module& m, const std::string& suffix, int64_t gates, int64_t input, int64_t hidden, bool bias,
                       CellWeights w);

// One LSTM step from gi = W_ih x + b_ih [N, 4H]: gates i, f, g, o
// (LSTMCell, and nn::LSTM in nn_rnn.h).
inline std::pair<Tensor, Tensor> lstm_step(const Tensor& gi, const Tensor& h, const Tensor& c, const Tensor& w_hh,
                                           const Tensor& b_hh, int64_t H) {
  Tensor gates = gi + linear(h, w_hh, b_hh);
  Tensor i = sigmoid(gates.slice(-1, 0, H));
  Tensor f = sigmoid(gates.slice(-1, H, 2 * H));
  Tensor g = tanh(gates.slice(-1, 2 * H, 3 * H));
  Tensor o = sigmoid(gates.slice(-1, 3 * H, 4 * H));
  Tensor c2 = f * c + i * g;
  return {o * tanh(c2), c2};
}
}  // namespace detail

// ---- Linear -----------------------------------------------------------------
// y = x W^T + b: weight [out, in], bias [out]; both uniform(+-1/sqrt(in)),
// which is PyTorch's kaiming_uniform(a=sqrt(5)) and its bias rule.
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  explicit LinearImpl(const LinearOptions& o) : LinearImpl(o.in_features(), o.out_features(), o.bias()) {}
  Tensor forward(const Tensor& x) { return linear(x, weight, bias); }

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without one
};
GRAPH_MODULE(Linear);

// ---- Conv2d -----------------------------------------------------------------
// weight [out, in / groups, kH, kW], bias [out]; uniform(+-1/sqrt(fan_in)),
// fan_in = in / groups * kH * kW.
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1,
             Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1, bool bias = true);
  explicit Conv2dImpl(const Conv2dOptions& o)
      : Conv2dImpl(o.in_channels(), o.out_channels(), o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                   o.groups(), o.bias()) {}
  Tensor forward(const Tensor& x) { return conv2d(x, weight, bias, stride, padding, dilation, groups); }

  int64_t in_channels, out_channels;
  Shape kernel_size, stride, padding, dilation;
  int64_t groups;
  Tensor weight, bias;
};
GRAPH_MODULE(Conv2d);

// ---- ConvTranspose2d --------------------------------------------------------
// torch.nn.ConvTranspose2d: weight [in, out / groups, kH, kW], bias [out];
// uniform(+-1/sqrt(fan_in)) with PyTorch's fan_in of that weight,
// out / groups * kH * kW.
class ConvTranspose2dImpl : public Module {
 public:
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, std::move(kernel_size))) {}
  Tensor forward(const Tensor& x) {
    return conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation);
  }

  int64_t in_channels, out_channels;
  Shape kernel_size, stride, padding, output_padding, dilation;
  int64_t groups;
  Tensor weight, bias;  // bias undefined when built without one
};
GRAPH_MODULE(ConvTranspose2d);

// ---- Conv1d -----------------------------------------------------------------
// torch.nn.Conv1d on x [N, C_in, L]: weight [out, in / groups, k], bias [out],
// uniform(+-1/sqrt(in / groups * k)). Options as LibTorch's:
// Conv1d(Conv1dOptions(16, 32, 3).stride(2).padding(1).bias(false)).
class Conv1dOptions {
 public:
  Conv1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  int64_t kernel_size() const { return kernel_size_; }
  int64_t stride() const { return stride_; }
  Conv1dOptions& stride(int64_t v) { stride_ = v; return *this; }
  int64_t padding() const { return padding_; }
  Conv1dOptions& padding(int64_t v) { padding_ = v; return *this; }
  int64_t dilation() const { return dilation_; }
  Conv1dOptions& dilation(int64_t v) { dilation_ = v; return *this; }
  int64_t groups() const { return groups_; }
  Conv1dOptions& groups(int64_t v) { groups_ = v; return *this; }
  bool bias() const { return bias_; }
  Conv1dOptions& bias(bool v) { bias_ = v; return *this; }

 private:
  int64_t in_channels_, out_channels_, kernel_size_;
  int64_t stride_ = 1, padding_ = 0, dilation_ = 1, groups_ = 1;
  bool bias_ = true;
};

class Conv1dImpl : public Module {
 public:
  Conv1dImpl(const Conv1dOptions& options);
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  Tensor forward(const Tensor& x) { return conv1d(x, weight, bias, stride, padding, dilation, groups); }

  int64_t in_channels, out_channels, kernel_size, stride, padding, dilation, groups;
  Tensor weight, bias;  // bias undefined when built without one
};
GRAPH_MODULE(Conv1d);

// ---- GroupNorm --------------------------------------------------------------
// torch.nn.GroupNorm: weight ones and bias zeros [num_channels] (affine);
// num_channels must be divisible by num_groups (checked here).
class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }

  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;  // undefined without affine
};
GRAPH_MODULE(GroupNorm);

// ---- LayerNorm --------------------------------------------------------------
// Over the trailing dims `normalized_shape`; weight ones, bias zeros.
class LayerNormImpl : public Module {
 public:
  LayerNormImpl(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) { return layer_norm(x, normalized_shape, weight, bias, eps); }

  Shape normalized_shape;
  double eps;
  Tensor weight, bias;  // undefined without elementwise_affine
};
GRAPH_MODULE(LayerNorm);

// ---- Embedding --------------------------------------------------------------
// weight [num_embeddings, embedding_dim] ~ normal(0, 1); int64 indices of any shape.
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) { return embedding(weight, indices); }

  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};
GRAPH_MODULE(Embedding);

// ---- LSTMCell ---------------------------------------------------------------
// PyTorch's LSTMCell: weight_ih [4H, I], weight_hh [4H, H], bias_ih/bias_hh
// [4H], all uniform(+-1/sqrt(H)); gates in the order input, forget, cell,
// output. forward(x [N, I], {h [N, H], c [N, H]}) -> {h', c'}.
class LSTMCellImpl : public Module {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size, bool bias = true);

  std::pair<Tensor, Tensor> forward(const Tensor& x, const std::pair<Tensor, Tensor>& state) {
    return detail::lstm_step(linear(x, weight_ih, bias_ih), state.first, state.second, weight_hh, bias_hh,
                             hidden_size);
  }
  // With a zero initial state.
  std::pair<Tensor, Tensor> forward(const Tensor& x) {
    Shape s = x.sizes();
    if (s.empty()) throw Error("LSTMCell: expected an input of shape [N, input_size] or [input_size], got []");
    s.back() = hidden_size;
    Tensor z = zeros(s, x.dtype());
    return forward(x, {z, z});
  }

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};
// The holder, plus a non-template call so that `cell(x, {h, c})` works.
class LSTMCell : public ModuleHolder<LSTMCellImpl> {
 public:
  using ModuleHolder<LSTMCellImpl>::ModuleHolder;
  using ModuleHolder<LSTMCellImpl>::operator();
  std::pair<Tensor, Tensor> operator()(const Tensor& x, const std::pair<Tensor, Tensor>& state) const {
    return get()->forward(x, state);
  }
};

// ---- MultiheadAttention -----------------------------------------------------
// batch_first: query [N, L, E], key/value [N, S, E] -> [N, L, E].
// Parameters as PyTorch names them: in_proj_weight [3E, E] (xavier_uniform),
// in_proj_bias [3E] (zeros), out_proj.weight [E, E] (Linear's init),
// out_proj.bias [E] (zeros). attn_mask: bool (true = attend) or additive
// float, [L, S] or broadcastable to [N, heads, L, S].
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, bool bias = true);

  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = Tensor(),
                 bool is_causal = false) {
    const int64_t E = embed_dim, H = num_heads, D = head_dim;
    const int64_t N = query.size(0), L = query.size(1), S = key.size(1);
    Tensor b_q, b_k, b_v;
    if (in_proj_bias.defined()) {
      b_q = in_proj_bias.slice(0, 0, E);
      b_k = in_proj_bias.slice(0, E, 2 * E);
      b_v = in_proj_bias.slice(0, 2 * E, 3 * E);
    }
    Tensor q = linear(query, in_proj_weight.slice(0, 0, E), b_q);
    Tensor k = linear(key, in_proj_weight.slice(0, E, 2 * E), b_k);
    Tensor v = linear(value, in_proj_weight.slice(0, 2 * E, 3 * E), b_v);
    q = q.reshape({N, L, H, D}).transpose(1, 2);  // [N, H, L, D]
    k = k.reshape({N, S, H, D}).transpose(1, 2);
    v = v.reshape({N, S, H, D}).transpose(1, 2);
    Tensor a = scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal);
    a = a.transpose(1, 2).reshape({N, L, E});
    return out_proj->forward(a);
  }
  // Self-attention.
  Tensor forward(const Tensor& x) { return forward(x, x, x); }

  int64_t embed_dim, num_heads, head_dim;
  Tensor in_proj_weight, in_proj_bias;
  Linear out_proj;
};
GRAPH_MODULE(MultiheadAttention);

// A member tensor's dtype in [[graph::static]] graphs, which otherwise
// specialize member tensors for the float dtype: a dtype token ("i64").
#if defined(__clang__)
#define GRAPH_MEMBER_DTYPE(token) [[clang::annotate("graph.dtype", token)]]
#else
#define GRAPH_MEMBER_DTYPE(token)
#endif

// ---- Dropout ----------------------------------------------------------------
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& x) { return dropout(x, p, is_training()); }
  double p;
};
GRAPH_MODULE(Dropout);

// ---- BatchNorm1d, BatchNorm2d ---------------------------------------------------
// torch.nn.BatchNorm*d: weight ones and bias zeros [C] (affine); buffers
// running_mean zeros, running_var ones [C] and num_batches_tracked (int64, 0-d)
// when track_running_stats. Training normalizes with the batch's statistics
// and updates the running ones (momentum unset: their cumulative average);
// eval() normalizes with the running ones. Options as LibTorch's:
// BatchNorm2d(BatchNorm2dOptions(64).momentum(0.01).affine(false)).
class BatchNormOptions {
 public:
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  int64_t num_features() const { return num_features_; }
  double eps() const { return eps_; }
  BatchNormOptions& eps(double v) { eps_ = v; return *this; }
  const std::optional<double>& momentum() const { return momentum_; }
  BatchNormOptions& momentum(std::optional<double> v) { momentum_ = v; return *this; }
  bool affine() const { return affine_; }
  BatchNormOptions& affine(bool v) { affine_ = v; return *this; }
  bool track_running_stats() const { return track_running_stats_; }
  BatchNormOptions& track_running_stats(bool v) { track_running_stats_ = v; return *this; }

 private:
  int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = true, track_running_stats_ = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

class BatchNormImplBase : public Module {
 public:
  // PyTorch's _BatchNorm.forward over dim 1 of x. Training normalizes with the
  // batch's statistics and, with track_running_stats, counts the batch and
  // moves the running stats toward the batch's mean and unbiased variance by
  // momentum (unset: 1 / the count, their cumulative average); eval
  // normalizes with the running stats. Inline and written with functional ops
  // and in-place updates of the buffers, so that a [[graph::static]] forward
  // lowers it whole: the plugin reads is_training() and the options at each
  // call and writes the buffers back at the end of the graph.
  Tensor forward(const Tensor& x) {
    check_input(x);
    if (is_training() && options.track_running_stats()) {
      num_batches_tracked.add_(1);
      const double factor =
          cumulative_average() ? 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>()) : momentum_value();
      // running <- (1 - factor) * running + factor * the batch's mean and
      // unbiased variance over every dim but 1 (x viewed as [N, C, L]: one
      // code path for every rank), one in-place write each, as PyTorch's
      // kernel makes (one version bump).
      const Tensor x3 = x.reshape({x.size(0), x.size(1), -1});
      const Tensor mean = x3.mean({0, 2}, true);
      const Tensor d = x3 - mean;
      const double n = static_cast<double>(x.numel() / x.size(1));
      running_mean.copy_(running_mean * (1.0 - factor) + mean.reshape({-1}) * factor);
      running_var.copy_(running_var * (1.0 - factor) + (d * d).sum({0, 2}) * (factor / (n - 1.0)));
    }
    if (is_training() || !options.track_running_stats())
      return batch_norm(x, Tensor(), Tensor(), weight, bias, true, 0.0, options.eps());
    return batch_norm(x, running_mean, running_var, weight, bias, false, 0.0, options.eps());
  }
  // Zeroes the running stats and the batch count (running_var: ones).
  void reset_running_stats();
  // momentum() unset: the running stats are the cumulative average.
  bool cumulative_average() const { return !options.momentum().has_value(); }
  double momentum_value() const { return options.momentum().value_or(0.0); }

  BatchNormOptions options;
  Tensor weight, bias;                                       // undefined without affine
  Tensor running_mean, running_var;                          // undefined without track_running_stats
  GRAPH_MEMBER_DTYPE("i64") Tensor num_batches_tracked;      // 0-d int64; undefined likewise

 protected:
  BatchNormImplBase(const char* name, const BatchNormOptions& options, int64_t min_dim, int64_t max_dim);

 private:
  // The module's errors: the input's rank and channels, and more than one
  // value per channel when training (left out of graphs, whose ops check).
  GRAPH_EAGER_CHECK void check_input(const Tensor& x) const;
  int64_t min_dim_, max_dim_;  // the input ranks the module accepts
};

// Input [N, C] or [N, C, L].
class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormImplBase("BatchNorm1d", options, 2, 3) {}
};
GRAPH_MODULE(BatchNorm1d);

// Input [N, C, H, W].
class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormImplBase("BatchNorm2d", options, 4, 4) {}
};
GRAPH_MODULE(BatchNorm2d);

// ---- pooling and reshaping --------------------------------------------------
class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(Size2 kernel_size, Size2 stride = Size2(), Size2 padding = 0);  // stride: kernel_size
  Tensor forward(const Tensor& x) { return max_pool2d(x, kernel_size, stride, padding); }
  Shape kernel_size, stride, padding;
};
GRAPH_MODULE(MaxPool2d);

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(Size2 kernel_size, Size2 stride = Size2(), Size2 padding = 0);  // stride: kernel_size
  Tensor forward(const Tensor& x) { return avg_pool2d(x, kernel_size, stride, padding); }
  Shape kernel_size, stride, padding;
};
GRAPH_MODULE(AvgPool2d);

// output_size {oh, ow} (1: a global mean; windows overlap where oh does
// not divide the height); see adaptive_avg_pool2d and adaptive_max_pool2d.
class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(Size2 output_size);
  Tensor forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }
  Shape output_size;
};
GRAPH_MODULE(AdaptiveAvgPool2d);
class AdaptiveMaxPool2dImpl : public Module {
 public:
  explicit AdaptiveMaxPool2dImpl(Size2 output_size);
  Tensor forward(const Tensor& x) { return adaptive_max_pool2d(x, output_size); }
  Shape output_size;
};
GRAPH_MODULE(AdaptiveMaxPool2d);

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
  int64_t start_dim, end_dim;
};
GRAPH_MODULE(Flatten);

// ---- activations --------------------------------------------------------------
#define GRAPH_NN_ACTIVATION(Name, fn)                                \
  class Name##Impl : public Module {                                 \
   public:                                                           \
    Name##Impl() : Module(#Name) {}                                  \
    Tensor forward(const Tensor& x) { return fn(x); }                \
  };                                                                 \
  GRAPH_MODULE(Name)
GRAPH_NN_ACTIVATION(ReLU, relu);
GRAPH_NN_ACTIVATION(Tanh, tanh);
GRAPH_NN_ACTIVATION(Sigmoid, sigmoid);
GRAPH_NN_ACTIVATION(GELU, gelu);
GRAPH_NN_ACTIVATION(SiLU, silu);
#undef GRAPH_NN_ACTIVATION

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) { return softmax(x, dim); }
  int64_t dim;
};
GRAPH_MODULE(Softmax);

// ---- Sequential -------------------------------------------------------------
// Modules with a `Tensor forward(const Tensor&)` (or by value), applied in
// order; registered as "0", "1", ... (or the names given to push_back).
//   nn::Sequential seq(nn::Linear(2, 8), nn::ReLU(), nn::Linear(8, 1));
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... Ms>
    requires(sizeof...(Ms) > 0)
  explicit SequentialImpl(Ms&&... modules) : Module("Sequential") {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  template <class M>
  void push_back(M&& m) {
    push_back(std::to_string(steps_.size()), std::forward<M>(m));
  }
  template <class M>
  void push_back(std::string name, M&& m) {
    auto p = as_shared(std::forward<M>(m));
    register_module(std::move(name), p);
    steps_.push_back({p, [raw = p.get()](const Tensor& x) -> Tensor { return raw->forward(x); }});
  }

  Tensor forward(const Tensor& x) {
    Tensor y = x;
    for (auto& s : steps_) y = s.run(y);
    return y;
  }

  size_t size() const { return steps_.size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return steps_.at(i).module; }
  // The i-th module as its type: seq->at<LinearImpl>(0).weight
  template <class M>
  M& at(size_t i) const {
    auto* p = dynamic_cast<M*>(steps_.at(i).module.get());
    if (!p) throw Error("Sequential: module " + std::to_string(i) + " is not of the requested type");
    return *p;
  }

 private:
  struct Step {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> run;
  };
  template <class M>
  static auto as_shared(M&& m) {
    using D = std::remove_cvref_t<M>;
    if constexpr (requires { typename D::ContainedType; }) {
      return m.ptr();
    } else if constexpr (requires { typename D::element_type; }) {
      return std::shared_ptr<typename D::element_type>(m);
    } else {
      return std::make_shared<D>(std::forward<M>(m));
    }
  }
  std::vector<Step> steps_;
};
GRAPH_MODULE(Sequential);

// ---- saving and loading -------------------------------------------------------
// The tensor file format, version 1; all integers little-endian:
//
//   magic    8 bytes  "CXGRAPH\0"
//   version  u32      1
//   count    u64      number of tensors
//   then `count` records:
//     name_len u32, name (UTF-8, name_len bytes, no terminator)
//     dtype    u8     0 float32, 1 float64, 2 float16, 3 bfloat16, 4 int32, 5 int64, 6 bool
//     ndim     u32,   then ndim sizes (i64 each)
//     nbytes   u64    = numel * element size
//     data     nbytes, row-major (contiguous), each element little-endian
//
// and nothing after the last record. save(Module) writes named_parameters()
// then named_buffers() (dotted names). load(Module) requires exactly those
// names with the same shapes (a different dtype is converted) and copies the
// values into the existing tensors, so handles and optimizers stay valid;
// on any error (unreadable, not this format, truncated, missing, unexpected
// or mismatched tensors) it throws graph::Error before modifying anything.
void save(const Module& module, const std::string& path);
void load(Module& module, const std::string& path);
// Any named tensors, in the same format.
void save_tensors(const NamedTensors& tensors, const std::string& path);
NamedTensors load_tensors(const std::string& path);

}  // namespace graph::nn

#include "graph/nn_rnn.h"  // GRUCell, GRU, LSTM
