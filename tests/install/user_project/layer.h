#pragma once
#include <graph/graph.h>

graph::Tensor layer(graph::Tensor x, graph::Tensor w, graph::Tensor b);
