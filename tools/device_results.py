#!/usr/bin/env python3
"""Turns tools/device_check.sh's log into results.md and summary.txt.

Usage: device_results.py LOG RESULTS_MD SUMMARY_TXT GPU(0|1)

The log holds, per step, a "---- <kind> <name> (timeout ...)" header, the
step's output, and a "STEP\t<kind>\t<name>\t<rc>\t<seconds>" line; the
benchmarks print "RESULT\t<workload>\t<impl>\t<us>\t<note>" and
"CHECK\t<workload>\t<rel error>\t<verdict>\t<note>" lines (device_bench.cpp,
device_torch.py). Every figure comes from the log: nothing is filled in here.
"""
import datetime
import re
import sys

# The example checks of examples/CMakeLists.txt, applied to the output.
EXAMPLE_FAIL = re.compile(r"TOO LARGE|NO COMPILED GRAPH RAN|DID NOT|NOT ONCE")
SEED_FAIL = re.compile(r"\| = [^0]|\| = 0[^\n]")  # model, rnn: exactly equal
IMPLS = ["cuda_memcpy_d2d", "torch_copy", "cxxgraph_eager", "cxxgraph_static", "cxxgraph_static_graphs",
         "torch_eager", "torch_compile", "torch_compile_reduce_overhead"]


def parse(path):
    steps, results, checks, info = [], {}, [], []
    body, section = [], None
    in_info = True
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("== tests"):
            in_info = False
        if in_info and line.startswith("   "):
            info.append(line.strip())
        if line.startswith("---- "):
            body, section = [], line
            continue
        if line.startswith("STEP\t"):
            _, kind, name, rc, secs = (line.split("\t") + [""] * 5)[:5]
            steps.append({"kind": kind, "name": name, "rc": rc, "s": secs, "out": "\n".join(body)})
            body, section = [], None
            continue
        if line.startswith("RESULT\t"):
            f = (line.split("\t") + [""] * 5)[1:5]
            results.setdefault(f[0], {})[f[1]] = (float(f[2]) if f[2] not in ("", "nan") else None, f[3])
        elif line.startswith("CHECK\t"):
            checks.append((line.split("\t") + [""] * 5)[1:5])
        if section is not None:
            body.append(line)
    return steps, results, checks, info


def gtest_counts(out):
    def n(pat):
        m = re.findall(pat, out)
        return int(m[-1]) if m else 0
    return (n(r"\[  PASSED  \] (\d+) test"), n(r"\[  FAILED  \] (\d+) test"), n(r"\[  SKIPPED \] (\d+) test"))


def verdict(step):
    rc, out, kind = step["rc"], step["out"], step["kind"]
    if rc.startswith("skipped"):
        return rc
    if rc == "timeout":
        return "TIMEOUT"
    if kind == "example":
        bad = EXAMPLE_FAIL.search(out) or (step["name"].split()[0] in ("example_model", "example_rnn")
                                           and SEED_FAIL.search(out))
        return "ok" if rc == "0" and not bad else f"FAIL (rc {rc})"
    if kind == "sanitizer":
        # memcheck ends with "ERROR SUMMARY: N errors", racecheck with
        # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
        m = re.findall(r"ERROR SUMMARY: (\d+) error", out) or re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", out)
        errors = m[-1] if m else "?"
        return f"ok ({errors} errors)" if rc == "0" else f"FAIL (rc {rc}, {errors} errors)"
    return "ok" if rc == "0" else f"FAIL (rc {rc})"


def progen_result(step, gpu):
    """(summary line, verdict) of the progen step: its own last "progen: ..."
    line (harness_device.cpp), or what the step's status says. "No CUDA
    device" is a skip in the dry run, a failure where nvidia-smi saw a GPU."""
    lines = [l for l in step["out"].splitlines() if l.startswith("progen: ")]
    findings = [l for l in step["out"].splitlines() if l.startswith("FINDING ")]
    if step["rc"].startswith("skipped"):
        return f"progen: {step['rc']}", "skipped"
    if step["rc"] == "timeout":
        return f"progen: TIMEOUT after {step['s']} s ({len(findings)} findings before it)", "TIMEOUT"
    line = lines[-1] if lines else "progen: no summary line"
    if "no CUDA device" in line and step["rc"] == "0":
        return line, "FAIL (no device, but nvidia-smi saw a GPU)" if gpu else "skipped"
    # "progen: cuda: N functions, M findings ..." and exit status 0 or 1.
    m = re.match(r"progen: cuda: (\d+) functions, (\d+) findings", line)
    if m and step["rc"] in ("0", "1") and (m.group(2) == "0") == (step["rc"] == "0"):
        return line.split(";")[0], "ok" if m.group(2) == "0" else "FINDINGS"
    return f"{line.split(';')[0]} (rc {step['rc']})", f"FAIL (rc {step['rc']})"


def fmt_us(v):
    if v is None:
        return "error"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.1f} us"


def targets(results):
    """The issue's speed targets, each as (what, measured, met) from the figures."""
    out = []
    def us(w, impl):
        return results.get(w, {}).get(impl, (None, ""))[0]
    for w in results:
        if w.startswith("chain8_"):
            copy = us("copy_" + w.split("_")[1], "cuda_memcpy_d2d")
            best = min([v for v in (us(w, "cxxgraph_static"), us(w, "cxxgraph_static_graphs")) if v] or [0])
            if copy and best:
                # chain8 moves 3 arrays, the copy 2: fraction of the copy's bytes/s.
                frac = (3 / best) / (2 / copy)
                out.append((f"{w} static >= 85% of the d2d copy bandwidth", f"{frac:.0%}", frac >= 0.85))
    lstm = "lstm_b1_h64_100steps"
    g, e, ro = us(lstm, "cxxgraph_static_graphs"), us(lstm, "torch_eager"), us(lstm, "torch_compile_reduce_overhead")
    if g and e:
        out.append((f"{lstm} with CUDA graphs >= 3x torch eager", f"{e / g:.2f}x", e / g >= 3))
    if g and ro:
        out.append((f"{lstm} with CUDA graphs >= reduce-overhead", f"{ro / g:.2f}x", ro / g >= 1))
    for w in ("mlp_infer_b64", "mlp_infer_b4096", "mlp_sgd_b64", "mlp_sgd_b4096", "transformer_b8_s64_d256"):
        s = min([v for v in (us(w, "cxxgraph_static"), us(w, "cxxgraph_static_graphs")) if v] or [0])
        e = us(w, "torch_eager")
        if s and e:
            out.append((f"{w} static >= torch eager", f"{e / s:.2f}x", e / s >= 1))
    return out


def main():
    log, md_path, summary_path, gpu = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
    steps, results, checks, info = parse(log)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    card = next((l for l in info if "MiB" in l and "capability" in l), None) or \
        next((l for l in info if l.startswith("NVIDIA")), "no GPU")
    md = [f"# cxxgraph device check, {date}", "", f"Card: {card if gpu else 'none (NO GPU: dry run)'}", ""]
    md += ["```"] + info + ["```", ""]
    summary = [f"device_check {date}: {'GPU ' + card if gpu else 'NO GPU (dry run): device tests skip'}"]

    tests = [s for s in steps if s["kind"] == "test"]
    md += ["## Tests", "", "| binary | passed | failed | skipped | verdict | s |", "|---|---|---|---|---|---|"]
    tp = tf = ts = 0
    for s in tests:
        p, f, k = gtest_counts(s["out"])
        tp, tf, ts = tp + p, tf + f, ts + k
        md.append(f"| {s['name']} | {p} | {f} | {k} | {verdict(s)} | {s['s']} |")
    bad_tests = [s["name"] for s in tests if verdict(s) != "ok"]
    summary.append(f"tests: {tp} passed, {tf} failed, {ts} skipped" +
                   (f"; FAILING: {', '.join(bad_tests)}" if bad_tests else ""))

    for kind, title in (("example", "Examples"), ("sanitizer", "compute-sanitizer")):
        rows = [s for s in steps if s["kind"] == kind]
        md += ["", f"## {title}", "", "| run | verdict | s |", "|---|---|---|"]
        md += [f"| {s['name']} | {verdict(s)} | {s['s']} |" for s in rows]
        ok = sum(verdict(s).startswith("ok") for s in rows)
        skipped = [s["name"] for s in rows if s["rc"].startswith("skipped")]
        bad = [s["name"] for s in rows if not verdict(s).startswith("ok") and s["rc"][:7] != "skipped"]
        summary.append(f"{title}: {ok} ok, {len(bad)} failed, {len(skipped)} skipped" +
                       (f"; FAILING: {', '.join(bad)}" if bad else ""))

    for s in (s for s in steps if s["kind"] == "progen"):
        line, v = progen_result(s, gpu)
        findings = [l for l in s["out"].splitlines() if l.startswith(("FINDING ", "known finding "))]
        md += ["", "## Random programs (progen) on the device vs eager on the CPU", "", f"`{line}` ({v}, {s['s']} s)"]
        if findings:
            md += ["", "```"] + findings[:40] + (["..."] if len(findings) > 40 else []) + ["```"]
        summary.append(line + ("" if v in ("ok", "skipped") else f"; FAILING: progen {v}"))

    md += ["", "## Correctness of the benchmark workloads (static on the device vs eager on the CPU)", "",
           "| workload | relative L2 error | verdict | note |", "|---|---|---|---|"]
    md += [f"| {c[0]} | {c[1]} | {c[2]} | {c[3]} |" for c in checks]
    bad_checks = [c[0] for c in checks if c[2] != "OK"]
    summary.append(f"bench checks: {len(checks) - len(bad_checks)} ok, {len(bad_checks)} failed" +
                   (f"; FAILING: {', '.join(bad_checks)}" if bad_checks else ""))

    impls = [i for i in IMPLS if any(i in r for r in results.values())]
    impls += sorted({i for r in results.values() for i in r} - set(impls))
    md += ["", "## Benchmarks (median time per call)", ""]
    table = []
    if results:
        table += ["| workload | " + " | ".join(impls) + " |", "|---" * (len(impls) + 1) + "|"]
        for w, r in results.items():
            table.append(f"| {w} | " + " | ".join(fmt_us(r[i][0]) if i in r else "" for i in impls) + " |")
        md += table
        errors = [f"{w} {i}" for w, r in results.items() for i, (v, _) in r.items() if v is None]
        summary.append(f"bench figures: {sum(len(r) for r in results.values()) - len(errors)} measured, "
                       f"{len(errors)} errors" + (f"; FAILING: {', '.join(errors)}" if errors else ""))
        notes = [f"- {w} {i}: {n}" for w, r in results.items() for i, (_, n) in r.items() if n]
        md += ["", "Notes:"] + notes
    else:
        md.append("Nothing measured" + ("" if gpu else ": no GPU") + ".")
    t = targets(results)
    if t:
        md += ["", "## Targets (issue 21)", "", "| target | measured | met |", "|---|---|---|"]
        md += [f"| {a} | {b} | {'yes' if c else 'NO'} |" for a, b, c in t]
        summary.append(f"targets: {sum(c for _, _, c in t)} of {len(t)} met" +
                       "".join(f"\n  {'met' if c else 'NOT MET'}: {a}: {b}" for a, b, c in t))
    timeouts = [f"{s['kind']} {s['name']}" for s in steps if s["rc"] in ("timeout", "skipped-budget")]
    if timeouts:
        summary.append(f"out of time: {', '.join(timeouts)}")
    open(md_path, "w").write("\n".join(md) + "\n")
    open(summary_path, "w").write("\n".join(summary) + "\n")
    # The table last too: the device tool's reply holds the output's tail.
    if table:
        print("\n".join(table))


if __name__ == "__main__":
    main()
