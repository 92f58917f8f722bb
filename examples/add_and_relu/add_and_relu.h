#pragma once
#include <graph/graph.h>

// relu(x + y), compiled to a static graph; called from an eager model.
graph::Tensor add_and_relu(graph::Tensor x, graph::Tensor y);
