#!/usr/bin/env python3
"""bench/report.py flags every row where cxxgraph static is slower than eager,
the rows of its own list and the others the suite times both ways (models,
small ops), from Google Benchmark JSON as bench_suite writes it."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import report  # noqa: E402


def bench(name, seconds):
    return {"run_name": name, "run_type": "aggregate", "aggregate_name": "median", "real_time": seconds * 1e3,
            "time_unit": "ms"}


def main():
    suite = {"benchmarks": [
        bench("sum_16M/cxxgraph_eager", 2.0), bench("sum_16M/cxxgraph_static", 2.5),          # listed, slower
        bench("op64_relu/cxxgraph_eager", 1.0), bench("op64_relu/cxxgraph_static", 0.5),      # listed, faster
        bench("model_resnet_x/cxxgraph_eager", 3.0), bench("model_resnet_x/cxxgraph_static", 3.3),  # not listed
        bench("model_tcn_x/cxxgraph_eager", 4.0), bench("model_tcn_x/cxxgraph_static", 3.9),
        bench("only_eager/cxxgraph_eager", 1.0),                                              # one column: no row
        {"run_name": "model_gru_x/cxxgraph_static", "error_occurred": True, "error_message": "n/a: a list input"},
        bench("model_gru_x/cxxgraph_eager", 1.0),
    ]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(suite, f)
    cells = report.load_suite(f.name)
    cells[("sum_16M", "torch_compile")] = {"median_s": 5.0}  # as main() merges --torch-compile
    rows = {r["workload"]: r for r in report.build_rows(cells)}
    os.unlink(f.name)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    expect(rows["sum_16M"]["ratios"]["static_slower"], "sum_16M flagged")
    expect(abs(rows["sum_16M"]["ratios"]["static_vs_eager"] - 0.8) < 1e-12, "sum_16M ratio 0.8")
    expect(abs(rows["sum_16M"]["ratios"]["vs_torch_compile"] - 2.0) < 1e-12, "sum_16M vs torch.compile 2.0")
    expect("vs_torch_compile" not in rows["op64_relu"]["ratios"], "no torch.compile cell, no ratio")
    expect(not rows["op64_relu"]["ratios"]["static_slower"], "op64_relu not flagged")
    expect("model_resnet_x" in rows and rows["model_resnet_x"]["ratios"]["static_slower"], "an unlisted model flagged")
    expect(rows["model_resnet_x"]["title"] == "model_resnet_x", "an unlisted row is titled by its name")
    expect(not rows["model_tcn_x"]["ratios"]["static_slower"], "an unlisted faster model not flagged")
    expect("only_eager" not in rows, "a row with one column is left out")
    expect("static_slower" not in rows["model_gru_x"]["ratios"], "an n/a static column is not compared")
    text = report.markdown(list(rows.values()), {}, {"functions": 0, "runs": 1, "steps": {"plain": [1.0]}}, "")
    expect("**Static slower than eager** in 2 row(s)" in text and "model_resnet_x" in text.split("**Static slower")[1],
           "the summary names both slower rows")
    expect("| 2.00x |" in text, "the torch.compile ratio is in the table")
    for f in failures:
        print("FAILED:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
