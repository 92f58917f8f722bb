#pragma once
#include <graph/graph.h>

extern graph::Tensor W1, W2, b;

// relu((flag > 0 ? W1 : W2) @ X + b), compiled to a static graph.
graph::Tensor model(graph::Tensor X, int flag);
