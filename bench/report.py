#!/usr/bin/env python3
"""Merges tools/bench.sh's measurements into one table of medians and ratios.

  report.py --suite S.json [--libtorch L.json] --torchscript T.json [--torch-compile TC.json]
            --check C.json --build B.json [--markdown FILE] [--json FILE] [--note TEXT]

S is bench_suite's Google Benchmark JSON (every repetition and the median
aggregate), L bench_libtorch's (the same format), T the TorchScript script's,
TC the same script's with --compile (torch.compile), C bench_suite --check's (why a static
column ran eagerly, as GRAPH_EXPLAIN=1 said; peak memory), B the build
cost measured by tools/bench.sh. Prints the Markdown table to stdout too.
"""
import argparse
import json

LIBRARIES = [("cxxgraph_eager", "cxxgraph eager"), ("cxxgraph_static", "cxxgraph static"),
             ("libtorch", "LibTorch"), ("torchscript", "TorchScript"), ("torch_compile", "torch.compile"),
             ("reference", "hand / Eigen / BLAS")]
WORKLOADS = [
    ("copy_16M", "copy, 16M float32 (memory bandwidth)"),
    ("triad_16M", "triad a = b + 1.5c, 16M float32"),
    ("chain8_16M", "8-op elementwise chain, 16M float32"),
    ("sum_16M", "x.sum(), 16M float32"),
    ("mse_16M", "((x - y) * (x - y)).mean(), 16M float32"),
    ("rowsum_16M", "relu(x * y + 1).sum(-1), [16384, 1024] float32"),
    ("op64_add", "add, 64 floats"),
    ("op64_relu", "relu, 64 floats"),
    ("op64_tanh", "tanh, 64 floats"),
    ("op64_sum", "sum, 64 floats"),
    ("op64_softmax", "softmax, 64 floats"),
    ("op_matmul_8x8", "matmul 8x8"),
    ("lstm_h64_100steps", "LSTM step, batch 1, hidden 64, 100 steps"),
    ("sgemm_256", "sgemm 256^3"),
    ("sgemm_1024", "sgemm 1024^3"),
    ("mlp_infer_b64", "MLP 784-512-512-10, batch 64, inference"),
    ("mlp_train_step_b64", "MLP 784-512-512-10, batch 64, SGD step"),
    ("mlp_train_whole_step_b64", "the same, whole step static (loss.backward() in the graph)"),
    ("transformer_b8_s64_d256", "Transformer block b8 s64 d256 h4 ffn1024"),
    ("lenet_b64", "LeNet-5 CNN, batch 64, 28x28"),
    ("mlp_train_fullstep_b64", "MLP SGD step with momentum, all in one graph"),
    ("transformer_train_fullstep_b8", "Transformer block SGD step (mse), all in one graph"),
    ("lenet_train_fullstep_b64", "LeNet-5 SGD step (cross-entropy), all in one graph"),
    ("sgemm_1024_bf16", "sgemm 1024^3, bf16 autocast"),
    ("mlp_infer_b64_bf16", "MLP inference, bf16 autocast"),
    ("transformer_b8_s64_d256_bf16", "Transformer block, bf16 autocast"),
]
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load_suite(path):
    """{(workload, library): {"median_s": t} or {"na": reason}} from Google Benchmark JSON."""
    cells = {}
    for b in json.load(open(path))["benchmarks"]:
        workload, library = b["run_name"].split("/")[:2]
        cell = cells.setdefault((workload, library), {})
        if b.get("error_occurred"):
            cell.setdefault("na", b["error_message"].removeprefix("n/a: "))
        elif b.get("aggregate_name") == "median":
            cell["median_s"] = b["real_time"] * UNIT[b["time_unit"]]
        elif b.get("run_type") == "iteration":
            cell.setdefault("runs", []).append(b["real_time"] * UNIT[b["time_unit"]])
    for cell in cells.values():  # a single repetition has no aggregate
        runs = sorted(cell.pop("runs", []))
        if "median_s" not in cell and "na" not in cell and runs:
            cell["median_s"] = runs[len(runs) // 2]
    return cells


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def build_rows(cells):
    """The table's rows: WORKLOADS in order, then every other workload the suite timed
    both ways (the model suite, the small ops), titled by its name, so that each row where
    static is slower than eager is flagged."""
    rows = []
    listed = {w for w, _ in WORKLOADS}
    others = sorted({w for (w, lib) in cells if w not in listed and lib == "cxxgraph_static"} &
                    {w for (w, lib) in cells if lib == "cxxgraph_eager"})
    for workload, title in WORKLOADS + [(w, w) for w in others]:
        cols = {lib: cells.get((workload, lib), {"na": "not measured"}) for lib, _ in LIBRARIES}
        t = {lib: c.get("median_s") for lib, c in cols.items()}
        ratios = {}
        if t["cxxgraph_eager"] and t["cxxgraph_static"]:
            ratios["static_vs_eager"] = t["cxxgraph_eager"] / t["cxxgraph_static"]
            # A static graph must never be slower than the eager ops it replaces.
            ratios["static_slower"] = ratios["static_vs_eager"] < 1.0
        ref = "reference" if t["reference"] else "libtorch"
        ours = "cxxgraph_static" if t["cxxgraph_static"] else "cxxgraph_eager"
        if t[ref] and t[ours]:
            ratios["vs_reference"] = {"value": t[ref] / t[ours], "reference": ref, "cxxgraph": ours}
        if t["torch_compile"] and t[ours]:
            ratios["vs_torch_compile"] = t["torch_compile"] / t[ours]
        rows.append({"workload": workload, "title": title, "columns": cols, "ratios": ratios})
    return rows


def markdown(rows, memory, build, note):
    notes, out = [], []

    def cell(c):
        if "median_s" in c:
            return fmt_time(c["median_s"])
        if c["na"] not in notes:
            notes.append(c["na"])
        return f"n/a [{notes.index(c['na']) + 1}]"

    names = dict(LIBRARIES)
    out.append("| workload | " + " | ".join(n for _, n in LIBRARIES) +
               " | static vs eager | vs reference | vs torch.compile |")
    out.append("|---" * (len(LIBRARIES) + 4) + "|")
    for r in rows:
        sv = r["ratios"].get("static_vs_eager")
        vr = r["ratios"].get("vs_reference")
        vr_text = "n/a"
        if vr:
            who = "" if vr["cxxgraph"] == "cxxgraph_static" else "eager "
            vr_text = f"{who}{vr['value']:.2f}x ({names[vr['reference']]})"
        sv_text = f"{sv:.2f}x" if sv else "n/a"
        if r["ratios"].get("static_slower"):
            sv_text += " **static slower**"
        vc = r["ratios"].get("vs_torch_compile")
        out.append(f"| {r['title']} | " + " | ".join(cell(r["columns"][lib]) for lib, _ in LIBRARIES) +
                   f" | {sv_text} | {vr_text} | " + (f"{vc:.2f}x" if vc else "") + " |")
    out.append("")
    slower = [r["title"] for r in rows if r["ratios"].get("static_slower")]
    if slower:
        out.append(f"**Static slower than eager** in {len(slower)} row(s): " + "; ".join(slower) + ".")
        out.append("")
    out.append("Ratios are time of the other / time of cxxgraph static (above 1: static is faster); "
               "\"vs torch.compile\" is torch.compile's time over cxxgraph's (static, else eager); "
               "\"vs reference\" compares with the hand-written column where there is one, else LibTorch, "
               "and uses cxxgraph eager (\"eager\") where static is n/a.")
    out.append("")
    for i, n in enumerate(notes):
        out.append(f"[{i + 1}] {n}  ")
    out.append("")
    out.append("Peak memory of one call (caching allocator, bytes in use above the inputs and weights, output included):")
    out.append("")
    out.append("| model | cxxgraph eager | cxxgraph static | static / eager |")
    out.append("|---|---|---|---|")
    for name, m in memory.items():
        e, s = m["cxxgraph_eager"], m.get("cxxgraph_static")
        out.append(f"| {name} | {e / 2**20:.2f} MiB | " +
                   (f"{s / 2**20:.2f} MiB | {s / e:.2f} |" if s is not None else f"n/a ({m['reason']}) | n/a |"))
    out.append("")
    out.append(f"Build cost of bench/models.cpp ({build['functions']} [[graph::static]] functions), "
               f"tools/build_cost.sh, median of {build['runs']} run(s), ccache off, CPU seconds:")
    out.append("")
    out.append("| step | CPU time | vs plain compile |")
    out.append("|---|---|---|")
    steps = build["steps"]
    plain = steps["plain"][0]
    titles = {"plain": "plain compile (no plugin)", "generator": "generator step (clang++-19 -fsyntax-only + plugin)",
              "copy": "compile of the rewritten copy", "kernels": "compile of the generated CPU kernels",
              "cuda": "compile of the generated CUDA kernels (nvcc)", "static": "static build in all"}
    for key, title in titles.items():
        if key in steps:
            out.append(f"| {title} | {steps[key][0]:.2f} s | {steps[key][0] / plain:.2f}x |")
    if note:
        out.append("")
        out.append(note)
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for f in ("suite", "torchscript", "check", "build"):
        ap.add_argument("--" + f, required=True)
    ap.add_argument("--libtorch", help="bench_libtorch's Google Benchmark JSON")
    ap.add_argument("--torch-compile", help="torchscript_bench.py --compile's JSON")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    cells = load_suite(args.suite)
    if args.libtorch:
        cells.update(load_suite(args.libtorch))
    ts = json.load(open(args.torchscript))
    global LIBRARIES  # the PyTorch columns name the version measured (the LibTorch column links the same wheel)
    LIBRARIES = [(lib, f"{name} {ts['torch'].split('+')[0]}" if lib in ("libtorch", "torchscript") else name)
                 for lib, name in LIBRARIES]
    for workload, c in ts["results"].items():
        cells[(workload, "torchscript")] = c
    if args.torch_compile:
        for workload, c in json.load(open(args.torch_compile))["results"].items():
            cells[(workload, "torch_compile")] = c
    check = json.load(open(args.check))
    for workload, why in check["static"].items():  # GRAPH_EXPLAIN's words over the timed run's
        if why and "na" in cells.get((workload, "cxxgraph_static"), {}):
            cells[(workload, "cxxgraph_static")]["na"] = why
    memory = check["memory"]
    build = json.load(open(args.build))
    rows = build_rows(cells)
    text = markdown(rows, memory, build, args.note)
    print(text, end="")
    if args.markdown:
        open(args.markdown, "w").write(text)
    if args.json:
        json.dump({"note": args.note, "torch": ts["torch"], "rows": rows, "memory": memory, "build": build},
                  open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
