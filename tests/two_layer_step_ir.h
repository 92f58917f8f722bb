#pragma once
// A whole train step as IR, shared by train_step_ir_test (where place_grad_sync
// puts the all-reduce nodes) and grad_sync_test (what those nodes do):
// fc1 -> relu -> fc2 -> cross_entropy; zero_grad, backward and step in the
// graph. Backward computes fc2's gradients, then fc1's.
namespace graph::test {

inline const char* const kTwoLayerStep = R"(graph step(%x : f32[6, 4], %y : i64[6], %w1 : f32[5, 4], %b1 : f32[5], %w2 : f32[3, 5], %b2 : f32[3], %opt : int) {
  optimizer_guard(%opt) @"t.cpp":2:8
  optimizer_zero_grad(%opt) @"t.cpp":2:8
  %h : f32 = linear(%x, %w1, %b1) @"t.cpp":3:5
  %r : f32 = relu(%h) @"t.cpp":3:5
  %o : f32 = linear(%r, %w2, %b2) @"t.cpp":4:5
  %loss : f32 = cross_entropy(%o, %y) @"t.cpp":5:5
  backward_loss(%loss, %w1, %b1, %w2, %b2) @"t.cpp":6:8
  optimizer_step{params=0}(%opt) @"t.cpp":7:8
  return (%loss)
})";

}  // namespace graph::test
