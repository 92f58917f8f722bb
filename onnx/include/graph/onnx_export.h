#pragma once
// ONNX export: a graph of the IR (traced, lowered by the plugin, or loaded
// from a saved graph) as an ONNX model, opset 17, written with the ONNX
// protobuf schema (libonnx). ONNX Runtime, TensorRT and OpenVINO read it.
//
//   graph::TracedGraph tg = graph::trace(model_fn, example);
//   graph::onnx::export_model("model.onnx", *tg.graph, tg.params);
//
//   graph::SavedGraph m = graph::load("rnn.cxgraph");
//   graph::onnx::export_model("rnn.onnx", m);          // weights as initializers
//
// The graph's inputs bound by `params` become initializers; the other tensor
// inputs become the model's inputs, in graph order, with the IR's dtypes and
// shapes (static sizes, symbolic dims as dim_param). The outputs are
// "output0", "output1", ... Host-scalar inputs (an `eps`, a `groups`) must be
// given in `ExportOptions::scalars`: ONNX attributes are constants.
//
// Every op maps to ONNX ops from the op table's id (docs/onnx.md has the
// table); an If whose condition is known at export time keeps its taken
// branch. Anything the exporter cannot express exactly (a Loop, an If on a
// run-time condition, a training-mode dropout, a dtype or shape it needs but
// the IR leaves unknown) throws graph::Error naming the op and its C++ source
// line, e.g.
//   onnx export: Loop at model.cpp:12:5: control flow on a run-time condition is not exported
// never a model that computes something else.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/saved_graph.h"
#include "graph/tensor.h"

namespace graph::onnx {

inline constexpr int64_t kOpset = 17;

struct ExportOptions {
  // Values of host-scalar graph inputs (int, float, bool), by input name.
  std::map<std::string, std::variant<int64_t, double, bool>> scalars;
  // Shapes of tensor inputs whose IR type lacks one (a plugin's graph reads
  // `Tensor`): sizes, -1 for a dynamic dim. The shapes are propagated through
  // the graph (infer_types) before the export, as are the parameters' shapes.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::string model_name;  // default: the graph's name
};

// The serialized ModelProto. Throws graph::Error as described above.
std::string export_to_string(const ir::Graph& g, const std::map<std::string, Tensor>& params = {},
                             const ExportOptions& options = {});
void export_model(const std::string& path, const ir::Graph& g, const std::map<std::string, Tensor>& params = {},
                  const ExportOptions& options = {});
void export_model(const std::string& path, const SavedGraph& saved, const ExportOptions& options = {});

}  // namespace graph::onnx

namespace graph {
// The name issue #22 asks for: export_model under the top namespace.
inline void export_onnx(const ir::Graph& g, const std::map<std::string, Tensor>& params, const std::string& path) {
  onnx::export_model(path, g, params);
}
}  // namespace graph
