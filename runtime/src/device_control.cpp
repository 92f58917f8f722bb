// If and Loop as CUDA conditional nodes while a graph is captured
// (device_control.h): host code over a ConditionalBackend, in every build.
#include "graph/device_control.h"

#include <algorithm>
#include <string>
#include <vector>

#include "device.h"
#include "graph/error.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph::detail {

namespace {

thread_local const ConditionalBackend* active = nullptr;
thread_local int depth = 0;  // conditional bodies being captured

std::string shape_text(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + "[";
  for (size_t d = 0; d < t.sizes().size(); ++d) s += (d ? ", " : "") + std::to_string(t.sizes()[d]);
  return s + "]";
}

// The bytes [lo, hi) a tensor's elements span.
std::pair<const char*, const char*> extent(const Tensor& t) {
  const char* p = static_cast<const char*>(t.raw_data());
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    if (t.sizes()[d] == 0) return {p, p};
    const int64_t span = (t.sizes()[d] - 1) * t.strides()[d];
    (span < 0 ? lo : hi) += span;
  }
  const int64_t item = static_cast<int64_t>(element_size(t.dtype()));
  return {p + lo * item, p + (hi + 1) * item};
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const auto [alo, ahi] = extent(a);
  const auto [blo, bhi] = extent(b);
  return alo < bhi && blo < ahi;
}

// The one element of a device condition, checked.
const void* condition_data(const Tensor& t, const char* where, const char* what) {
  if (t.numel() != 1)
    throw Error(std::string(what) + ": a device condition must hold one element, got " + shape_text(t) + where);
  return t.raw_data();
}

// Captures `fn` into `body` on the stream of the next depth; the current
// stream is that one meanwhile. The body capture always ends.
void capture_body(const ConditionalBackend& b, void* body, void* parent, const std::function<void()>& fn) {
  void* s = b.body_stream(depth + 1);
  b.begin_body(s, body, parent);
  b.set_current_stream(s);
  ++depth;
  try {
    fn();
  } catch (...) {
    --depth;
    b.set_current_stream(parent);
    try {
      b.end_body(s);
    } catch (...) {
    }
    throw;
  }
  --depth;
  b.set_current_stream(parent);
  b.end_body(s);
}

void set_from(const ConditionalBackend& b, void* stream, uint64_t h, const Condition& c, ConditionalBackend::Counter k,
              int64_t* count, int64_t trips, const char* where, const char* what) {
  if (c.tensor.defined() && b.on_device(c.tensor)) {
    b.set(stream, h, condition_data(c.tensor, where, what), c.tensor.dtype(), false, k, count, trips);
  } else {
    // A host value, or a tensor off the device (a host decision: truth()).
    const bool v = c.tensor.defined() ? static_cast<bool>(c.tensor) : c.host;
    b.set(stream, h, nullptr, DType::Bool, v, k, count, trips);
  }
}

}  // namespace

DeviceControlScope::DeviceControlScope(const ConditionalBackend* backend) : prev_(active), prev_depth_(depth) {
  active = backend;
  depth = 0;
}

DeviceControlScope::~DeviceControlScope() {
  active = prev_;
  depth = prev_depth_;
}

bool device_control(const Tensor& cond) { return active && cond.defined() && active->on_device(cond); }

bool device_control_loop(const Condition& first, std::initializer_list<const Tensor*> carried) {
  if (!active) return false;
  if (first.tensor.defined()) return active->on_device(first.tensor);
  for (const Tensor* t : carried)
    if (t->defined() && active->on_device(*t)) return true;
  return false;
}

void device_if(const Tensor& cond, const std::function<void(int)>& branch, std::initializer_list<Tensor*> outs,
               const char* where) {
  if (!active) throw Error(std::string("If: device_if outside a CUDA Graph capture") + where);
  const ConditionalBackend& b = *active;
  const void* data = condition_data(cond, where, "If condition");
  void* parent = b.current_stream();
  const uint64_t h = b.create_handle(parent);
  b.set(parent, h, data, cond.dtype(), false, ConditionalBackend::Counter::None, nullptr, 0);
  const std::vector<void*> bodies = b.add_node(parent, h, ConditionalBackend::Kind::If, 2);
  if (bodies.size() != 2) throw Error(std::string("If: the conditional node has no else body") + where);
  std::vector<Tensor> fixed(outs.size());
  for (int k = 0; k < 2; ++k) {
    capture_body(b, bodies[k], parent, [&] {
      branch(k);
      size_t i = 0;
      for (Tensor* o : outs) {
        if (!o->defined())
          throw Error("If: output " + std::to_string(i) + " of the " + (k ? "else" : "then") +
                      "-branch is undefined; a captured If needs a tensor from both branches" + where);
        if (!b.on_device(*o))
          throw Error("If: output " + std::to_string(i) + " of the " + (k ? "else" : "then") +
                      "-branch is not on the device; host work in a captured branch would run only while "
                      "capturing" + where);
        if (k == 0) {
          fixed[i] = empty_on(o->device(), o->sizes(), o->dtype());
        } else if (o->sizes() != fixed[i].sizes() || o->dtype() != fixed[i].dtype()) {
          throw Error("If: the branches give output " + std::to_string(i) + " as " + shape_text(fixed[i]) + " and " +
                      shape_text(*o) + "; a captured If needs one shape for both" + where);
        }
        copy_into(fixed[i], *o);
        ++i;
      }
    });
  }
  size_t i = 0;
  for (Tensor* o : outs) *o = fixed[i++];
}

void device_loop(int64_t trips, const Condition& first, const std::function<Condition()>& body,
                 std::initializer_list<Tensor*> carried, const char* where) {
  if (!active) throw Error(std::string("Loop: device_loop outside a CUDA Graph capture") + where);
  if (trips <= 0) return;  // a host decision: no iteration
  const ConditionalBackend& b = *active;
  void* parent = b.current_stream();
  // The carried values in buffers of their own: the body reads and writes
  // them at every iteration.
  std::vector<Tensor> fixed;
  for (Tensor* c : carried) {
    if (!c->defined())
      throw Error("Loop: carried value " + std::to_string(fixed.size()) +
                  " is undefined; a captured Loop needs tensors it can keep in buffers" + where);
    if (!b.on_device(*c))
      throw Error("Loop: carried value " + std::to_string(fixed.size()) +
                  " is not on the device; host work in a captured loop body would run only while capturing" + where);
    fixed.push_back(c->clone());
    *c = fixed.back();
  }
  constexpr int64_t kUnbounded = INT64_MAX;
  Tensor count;
  int64_t* count_ptr = nullptr;
  if (trips != kUnbounded) {
    const Tensor& like = first.tensor.defined() ? first.tensor : fixed.empty() ? Tensor() : fixed.front();
    if (!like.defined()) throw Error(std::string("Loop: nothing places the trip counter") + where);
    count = empty_on(like.device(), {}, DType::Int64);
    count_ptr = static_cast<int64_t*>(count.raw_data());
  }
  using Counter = ConditionalBackend::Counter;
  const uint64_t h = b.create_handle(parent);
  set_from(b, parent, h, first, count_ptr ? Counter::Reset : Counter::None, count_ptr, trips, where,
           "Loop condition");
  const std::vector<void*> bodies = b.add_node(parent, h, ConditionalBackend::Kind::While, 1);
  if (bodies.size() != 1) throw Error(std::string("Loop: the conditional node has no body") + where);
  capture_body(b, bodies[0], parent, [&] {
    const Condition next = body();
    // The handle first: the condition may be a carried value the copies
    // below overwrite.
    set_from(b, b.current_stream(), h, next, count_ptr ? Counter::Increment : Counter::None, count_ptr, trips, where,
             "Loop condition");
    // The results into the carried buffers; a result reading another
    // carried buffer (a swap) is copied out first.
    std::vector<Tensor> results;
    size_t i = 0;
    for (Tensor* c : carried) {
      Tensor r = *c;
      if (!r.defined() || r.sizes() != fixed[i].sizes() || r.dtype() != fixed[i].dtype())
        throw Error("Loop: carried value " + std::to_string(i) + " enters as " + shape_text(fixed[i]) +
                    " and leaves an iteration as " + (r.defined() ? shape_text(r) : std::string("undefined")) +
                    "; a captured Loop needs one shape" + where);
      bool same = r.raw_data() == fixed[i].raw_data() && r.strides() == fixed[i].strides();
      if (!same)
        for (size_t j = 0; j < fixed.size(); ++j)
          if (j != i && fixed[j].numel() > 0 && r.numel() > 0 && overlaps(r, fixed[j])) {
            r = r.clone();
            break;
          }
      results.push_back(same ? Tensor() : r);
      ++i;
    }
    for (size_t k = 0; k < fixed.size(); ++k)
      if (results[k].defined()) copy_into(fixed[k], results[k]);
  });
  size_t i = 0;
  for (Tensor* c : carried) *c = fixed[i++];
}

}  // namespace graph::detail
