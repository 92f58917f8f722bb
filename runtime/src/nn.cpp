// graph::nn: the Module tables (parameters, buffers, submodules), training
// mode, dtype conversion, and the built-in modules' constructors and
// initialization. Forward functions are inline in nn.h.
#include "graph/nn.h"

#include <cmath>
#include <set>

#include "storage.h"

namespace graph::nn {

// ---- Module ------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty()) throw Error(name_ + ": " + what + " name must not be empty");
  if (name.find('.') != std::string::npos)
    throw Error(name_ + ": " + what + " name '" + name + "' must not contain '.'");
  auto taken = [&](const std::string& n) { return n == name; };
  for (auto& s : params_)
    if (taken(s.name)) throw Error(name_ + ": a parameter named '" + name + "' is already registered");
  for (auto& s : buffers_)
    if (taken(s.name)) throw Error(name_ + ": a buffer named '" + name + "' is already registered");
  for (auto& c : children_)
    if (taken(c.first)) throw Error(name_ + ": a submodule named '" + name + "' is already registered");
}

namespace {
Tensor as_parameter(const Tensor& t, bool requires_grad) {
  Tensor p = t.detach();
  if (p.defined() && requires_grad) p.requires_grad_(true);
  return p;
}
}  // namespace

Tensor& Module::register_parameter(std::string name, Tensor t, bool requires_grad) {
  owned_.push_back(std::make_unique<Tensor>());
  return register_parameter(std::move(name), owned_.back().get(), requires_grad) = as_parameter(t, requires_grad);
}

Tensor& Module::register_parameter(std::string name, Tensor* slot, bool requires_grad) {
  if (!slot) throw Error(name_ + ": register_parameter: null tensor slot");
  check_new_name(name, "parameter");
  *slot = as_parameter(*slot, requires_grad);
  params_.push_back({std::move(name), slot});
  return *slot;
}

Tensor& Module::register_buffer(std::string name, Tensor t) {
  owned_.push_back(std::make_unique<Tensor>());
  return register_buffer(std::move(name), owned_.back().get()) = t.detach();
}

Tensor& Module::register_buffer(std::string name, Tensor* slot) {
  if (!slot) throw Error(name_ + ": register_buffer: null tensor slot");
  check_new_name(name, "buffer");
  *slot = slot->detach();
  buffers_.push_back({std::move(name), slot});
  return *slot;
}

void Module::add_child(std::string name, std::shared_ptr<Module> m) {
  if (!m) throw Error(name_ + ": register_module('" + name + "'): empty module");
  if (m.get() == this) throw Error(name_ + ": register_module('" + name + "'): a module cannot contain itself");
  check_new_name(name, "submodule");
  children_.emplace_back(std::move(name), std::move(m));
}

void Module::collect(const std::string& prefix, bool recurse, bool params, NamedTensors& out) const {
  for (auto& s : params ? params_ : buffers_)
    if (s.tensor->defined()) out.emplace_back(prefix + s.name, *s.tensor);
  if (!recurse) return;
  for (auto& [n, c] : children_) c->collect(prefix + n + ".", true, params, out);
}

namespace {
// Drops later occurrences of the same tensor (a module registered twice, a
// shared weight), as PyTorch does.
NamedTensors dedup(NamedTensors in) {
  std::set<std::pair<const void*, const void*>> seen;
  NamedTensors out;
  for (auto& [n, t] : in) {
    const void* key2 = t.autograd_meta() ? static_cast<const void*>(t.autograd_meta().get())
                                         : static_cast<const void*>(t.raw_data());
    if (seen.insert({t.storage().get(), key2}).second) out.emplace_back(std::move(n), std::move(t));
  }
  return out;
}
std::vector<Tensor> values(const NamedTensors& named) {
  std::vector<Tensor> v;
  v.reserve(named.size());
  for (auto& [n, t] : named) v.push_back(t);
  return v;
}
}  // namespace

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", recurse, true, out);
  return dedup(std::move(out));
}
std::vector<Tensor> Module::parameters(bool recurse) const { return values(named_parameters(recurse)); }
NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", recurse, false, out);
  return dedup(std::move(out));
}
std::vector<Tensor> Module::buffers(bool recurse) const { return values(named_buffers(recurse)); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> v;
  for (auto& c : children_) v.push_back(c.second);
  return v;
}
std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (auto& [n, c] : children_)
    for (auto& [sub, m] : c->named_modules()) out.emplace_back(sub.empty() ? n : n + "." + sub, m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->train(on);
}

void Module::zero_grad() {
  for (auto& s : params_)
    if (s.tensor->defined()) s.tensor->zero_grad();
  for (auto& c : children_) c.second->zero_grad();
}

void Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (auto& s : params_) {
    Tensor& t = *s.tensor;
    if (!t.defined() || t.dtype() == dtype) continue;
    const bool rg = t.requires_grad();
    if (rg && !is_floating(dtype))
      throw Error(name_ + ": to(" + std::string(dtype_name(dtype)) + "): parameter '" + s.name +
                  "' requires grad and must stay floating");
    t = as_parameter(t.to(dtype), rg);
  }
  for (auto& s : buffers_) {
    Tensor& t = *s.tensor;
    if (t.defined() && t.dtype() != dtype && is_floating(t.dtype())) t = t.to(dtype).detach();
  }
  for (auto& c : children_) c.second->to(dtype);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto& s : params_) {
    Tensor& t = *s.tensor;
    if (t.defined() && t.device() != device) t = as_parameter(t.to(device), t.requires_grad());
  }
  for (auto& s : buffers_) {
    Tensor& t = *s.tensor;
    if (t.defined() && t.device() != device) t = t.to(device).detach();
  }
  for (auto& c : children_) c.second->to(device);
}

// ---- initialization ----------------------------------------------------------

namespace detail {

Tensor uniform(const Shape& sizes, double bound) {
  NoGradGuard no_grad;
  return ((rand(sizes) * 2.0 - 1.0) * bound).detach();
}

Tensor normal(const Shape& sizes, double mean, double std) {
  NoGradGuard no_grad;
  return (randn(sizes) * std + mean).detach();
}

Shape checked_size2(const char* module, const char* what, const Size2& s, bool allow_zero) {
  if (s.values.size() != 2)
    throw Error(std::string(module) + ": " + what + " must be one number or two, got " + shape_str(s.values));
  for (int64_t v : s.values)
    if (v < 0 || (v == 0 && !allow_zero))
      throw Error(std::string(module) + ": " + what + " must be " + (allow_zero ? "non-negative" : "positive") +
                  ", got " + shape_str(s.values));
  return s.values;
}

void check_positive(const char* module, const char* what, int64_t v) {
  if (v <= 0) throw Error(std::string(module) + ": " + what + " must be positive, got " + std::to_string(v));
}

void init_cell_weights(Module& m, const std::string& suffix, int64_t gates, int64_t input, int64_t hidden, bool bias,
                       CellWeights w) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  *w.w_ih = uniform({gates * hidden, input}, bound);
  *w.w_hh = uniform({gates * hidden, hidden}, bound);
  m.register_parameter("weight_ih" + suffix, w.w_ih);
  m.register_parameter("weight_hh" + suffix, w.w_hh);
  if (!bias) return;
  *w.b_ih = uniform({gates * hidden}, bound);
  *w.b_hh = uniform({gates * hidden}, bound);
  m.register_parameter("bias_ih" + suffix, w.b_ih);
  m.register_parameter("bias_hh" + suffix, w.b_hh);
}

}  // namespace detail

using detail::check_positive;

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"), in_features(in), out_features(out) {
  check_positive("Linear", "in_features", in);
  check_positive("Linear", "out_features", out);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = detail::uniform({out, in}, bound);
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = detail::uniform({out}, bound);
    register_parameter("bias", &bias);
  }
}

Conv2dImpl::Conv2dImpl(int64_t in, int64_t out, Size2 kernel, Size2 stride_, Size2 padding_, Size2 dilation_,
                       int64_t groups_, bool with_bias)
    : Module("Conv2d"),
      in_channels(in),
      out_channels(out),
      kernel_size(detail::checked_size2("Conv2d", "kernel_size", kernel, false)),
      stride(detail::checked_size2("Conv2d", "stride", stride_, false)),
      padding(detail::checked_size2("Conv2d", "padding", padding_, true)),
      dilation(detail::checked_size2("Conv2d", "dilation", dilation_, false)),
      groups(groups_) {
  check_positive("Conv2d", "in_channels", in);
  check_positive("Conv2d", "out_channels", out);
  check_positive("Conv2d", "groups", groups_);
  if (in % groups_ != 0 || out % groups_ != 0)
    throw Error("Conv2d: in_channels (" + std::to_string(in) + ") and out_channels (" + std::to_string(out) +
                ") must be divisible by groups (" + std::to_string(groups_) + ")");
  const int64_t fan_in = in / groups_ * kernel_size[0] * kernel_size[1];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight = detail::uniform({out, in / groups_, kernel_size[0], kernel_size[1]}, bound);
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = detail::uniform({out}, bound);
    register_parameter("bias", &bias);
  }
}

LayerNormImpl::LayerNormImpl(Shape shape, double eps_, bool affine)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty()) throw Error("LayerNorm: normalized_shape must not be empty");
  for (int64_t d : normalized_shape)
    if (d <= 0) throw Error("LayerNorm: normalized_shape must be positive, got " + shape_str(normalized_shape));
  if (affine) {
    weight = ones(normalized_shape);
    bias = zeros(normalized_shape);
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
}

BatchNormImplBase::BatchNormImplBase(const char* name, const BatchNormOptions& o, int64_t min_dim, int64_t max_dim)
    : Module(name), options(o), min_dim_(min_dim), max_dim_(max_dim) {
  check_positive(name, "num_features", o.num_features());
  const int64_t C = o.num_features();
  if (o.affine()) {
    weight = ones({C});
    bias = zeros({C});
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
  if (o.track_running_stats()) {
    running_mean = zeros({C});
    running_var = ones({C});
    num_batches_tracked = zeros({}, kInt64);
    register_buffer("running_mean", &running_mean);
    register_buffer("running_var", &running_var);
    register_buffer("num_batches_tracked", &num_batches_tracked);
  }
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  running_mean.fill_(0);
  running_var.fill_(1);
  num_batches_tracked.fill_(0);
}

void BatchNormImplBase::check_input(const Tensor& x) const {
  ::graph::detail::check_defined(name(), x);
  if (x.dim() < min_dim_ || x.dim() > max_dim_)
    throw Error(name() + ": expected " +
                (min_dim_ == max_dim_ ? std::to_string(min_dim_) + "D" : std::to_string(min_dim_) + "D or " + std::to_string(max_dim_) + "D") +
                " input, got " + std::to_string(x.dim()) + "D input of shape " + shape_str(x.sizes()));
  if (x.size(1) != options.num_features())
    throw Error(name() + ": expected " + std::to_string(options.num_features()) + " channels (dim 1), got input of shape " +
                shape_str(x.sizes()));
  // Before the running stats change (the update divides by the count - 1).
  if (is_training() && x.numel() / std::max<int64_t>(x.size(1), 1) <= 1)
    throw Error(name() + ": expected more than 1 value per channel when training, got input of shape " +
                shape_str(x.sizes()));
}

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim)
    : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  check_positive("Embedding", "num_embeddings", num);
  check_positive("Embedding", "embedding_dim", dim);
  weight = detail::normal({num, dim});
  register_parameter("weight", &weight);
}

LSTMCellImpl::LSTMCellImpl(int64_t input, int64_t hidden, bool with_bias)
    : Module("LSTMCell"), input_size(input), hidden_size(hidden) {
  check_positive("LSTMCell", "input_size", input);
  check_positive("LSTMCell", "hidden_size", hidden);
  detail::init_cell_weights(*this, "", 4, input, hidden, with_bias, {&weight_ih, &weight_hh, &bias_ih, &bias_hh});
}

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t E, int64_t heads, bool with_bias)
    : Module("MultiheadAttention"), embed_dim(E), num_heads(heads), head_dim(0), out_proj(nullptr) {
  check_positive("MultiheadAttention", "embed_dim", E);
  check_positive("MultiheadAttention", "num_heads", heads);
  if (E % heads != 0)
    throw Error("MultiheadAttention: embed_dim (" + std::to_string(E) + ") must be divisible by num_heads (" +
                std::to_string(heads) + ")");
  head_dim = E / heads;
  // xavier_uniform over [3E, E]: bound sqrt(6 / (fan_in + fan_out)).
  in_proj_weight = detail::uniform({3 * E, E}, std::sqrt(6.0 / static_cast<double>(E + 3 * E)));
  register_parameter("in_proj_weight", &in_proj_weight);
  if (with_bias) {
    in_proj_bias = zeros({3 * E});
    register_parameter("in_proj_bias", &in_proj_bias);
  }
  out_proj = register_module("out_proj", Linear(E, E, with_bias));
  if (with_bias) ::graph::detail::copy_into(out_proj->bias, zeros({E}));  // PyTorch zeroes it
}

DropoutImpl::DropoutImpl(double p_) : Module("Dropout"), p(p_) {
  if (!(p_ >= 0.0 && p_ <= 1.0)) throw Error("Dropout: p must be in [0, 1], got " + std::to_string(p_));
}

MaxPool2dImpl::MaxPool2dImpl(Size2 kernel, Size2 stride_, Size2 padding_)
    : Module("MaxPool2d"),
      kernel_size(detail::checked_size2("MaxPool2d", "kernel_size", kernel, false)),
      stride(stride_.values.empty() ? kernel_size : detail::checked_size2("MaxPool2d", "stride", stride_, false)),
      padding(detail::checked_size2("MaxPool2d", "padding", padding_, true)) {}

AvgPool2dImpl::AvgPool2dImpl(Size2 kernel, Size2 stride_, Size2 padding_)
    : Module("AvgPool2d"),
      kernel_size(detail::checked_size2("AvgPool2d", "kernel_size", kernel, false)),
      stride(stride_.values.empty() ? kernel_size : detail::checked_size2("AvgPool2d", "stride", stride_, false)),
      padding(detail::checked_size2("AvgPool2d", "padding", padding_, true)) {}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& o)
    : Module("ConvTranspose2d"),
      in_channels(o.in_channels()),
      out_channels(o.out_channels()),
      kernel_size(detail::checked_size2("ConvTranspose2d", "kernel_size", o.kernel_size(), false)),
      stride(detail::checked_size2("ConvTranspose2d", "stride", o.stride(), false)),
      padding(detail::checked_size2("ConvTranspose2d", "padding", o.padding(), true)),
      output_padding(detail::checked_size2("ConvTranspose2d", "output_padding", o.output_padding(), true)),
      dilation(detail::checked_size2("ConvTranspose2d", "dilation", o.dilation(), false)),
      groups(o.groups()) {
  check_positive("ConvTranspose2d", "in_channels", in_channels);
  check_positive("ConvTranspose2d", "out_channels", out_channels);
  check_positive("ConvTranspose2d", "groups", groups);
  if (in_channels % groups != 0 || out_channels % groups != 0)
    throw Error("ConvTranspose2d: in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                std::to_string(out_channels) + ") must be divisible by groups (" + std::to_string(groups) + ")");
  for (size_t i = 0; i < 2; ++i)
    if (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i])
      throw Error("ConvTranspose2d: output_padding " + shape_str(output_padding) +
                  " must be smaller than the stride " + shape_str(stride) + " or the dilation " +
                  shape_str(dilation));
  const int64_t fan_in = out_channels / groups * kernel_size[0] * kernel_size[1];
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  weight = detail::uniform({in_channels, out_channels / groups, kernel_size[0], kernel_size[1]}, bound);
  register_parameter("weight", &weight);
  if (o.bias()) {
    bias = detail::uniform({out_channels}, bound);
    register_parameter("bias", &bias);
  }
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(Size2 output_size_)
    : Module("AdaptiveAvgPool2d"),
      output_size(detail::checked_size2("AdaptiveAvgPool2d", "output_size", output_size_, false)) {}
AdaptiveMaxPool2dImpl::AdaptiveMaxPool2dImpl(Size2 output_size_)
    : Module("AdaptiveMaxPool2d"),
      output_size(detail::checked_size2("AdaptiveMaxPool2d", "output_size", output_size_, false)) {}

Conv1dImpl::Conv1dImpl(const Conv1dOptions& o)
    : Module("Conv1d"),
      in_channels(o.in_channels()),
      out_channels(o.out_channels()),
      kernel_size(o.kernel_size()),
      stride(o.stride()),
      padding(o.padding()),
      dilation(o.dilation()),
      groups(o.groups()) {
  check_positive("Conv1d", "in_channels", in_channels);
  check_positive("Conv1d", "out_channels", out_channels);
  check_positive("Conv1d", "kernel_size", kernel_size);
  check_positive("Conv1d", "stride", stride);
  check_positive("Conv1d", "dilation", dilation);
  check_positive("Conv1d", "groups", groups);
  if (padding < 0) throw Error("Conv1d: padding must be non-negative, got " + std::to_string(padding));
  if (in_channels % groups != 0 || out_channels % groups != 0)
    throw Error("Conv1d: in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                std::to_string(out_channels) + ") must be divisible by groups (" + std::to_string(groups) + ")");
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_channels / groups * kernel_size));
  weight = detail::uniform({out_channels, in_channels / groups, kernel_size}, bound);
  register_parameter("weight", &weight);
  if (o.bias()) {
    bias = detail::uniform({out_channels}, bound);
    register_parameter("bias", &bias);
  }
}

GroupNormImpl::GroupNormImpl(int64_t groups, int64_t channels, double eps_, bool affine)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps_) {
  check_positive("GroupNorm", "num_groups", groups);
  check_positive("GroupNorm", "num_channels", channels);
  if (channels % groups != 0)
    throw Error("GroupNorm: num_channels (" + std::to_string(channels) + ") must be divisible by num_groups (" +
                std::to_string(groups) + ")");
  if (affine) {
    weight = ones({channels});
    bias = zeros({channels});
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
}

}  // namespace graph::nn

namespace graph {
Tensor one_hot(const Tensor& indices) {
  if (indices.dtype() != kInt64)
    throw Error("one_hot: expected int64 indices, got " + std::string(dtype_name(indices.dtype())));
  if (indices.numel() == 0) throw Error("one_hot: cannot infer the number of classes of an empty tensor");
  return one_hot(indices, amax(indices).item<int64_t>() + 1);
}
}  // namespace graph
