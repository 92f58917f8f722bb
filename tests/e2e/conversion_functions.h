#pragma once
// Annotated functions for the conversion end-to-end tests (conversion_test.cpp):
// dtype casts, contiguous(), host int/float conversions, arange and factories
// with sizes known at run time (issue 20). Each is compared with its eager body.
#include <graph/graph.h>

namespace conv {
using graph::Tensor;

Tensor to_double(Tensor x);
Tensor mask_to_float(Tensor x);
Tensor to_integral(Tensor x);
Tensor to_same_dtype(Tensor x);
Tensor cast_grad(Tensor w, Tensor b);
Tensor contiguous_t(Tensor x);
Tensor host_casts(Tensor x, int n, double d);
Tensor aranges(Tensor x, int n, double step);
Tensor arange_ints(Tensor x, int64_t step);
Tensor sizes_in_loops(Tensor x, int n);
Tensor mlp_any(Tensor x, Tensor w, Tensor b);
Tensor int_math(Tensor x, int64_t k);
Tensor matmul_only(Tensor x, Tensor w);

}  // namespace conv
