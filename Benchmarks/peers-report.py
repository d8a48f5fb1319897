#!/usr/bin/env python3
"""peers-report.py — turns the raw numbers of Benchmarks/peers.sh into the comparison table.

Inputs (written by peers.sh into its temp dir):
  --runs  TSV, one line per wrk run: round target scenario conns requests duration_us bytes
          p50_us p90_us p99_us socket_errors non2xx proxy_ticks backend_ticks wrk_cpu_s other_pct
  --facts TSV: kind target value (idle_rss_kib, conn_rss_kib, syscalls_100, syscalls_1m,
          instructions, tls_resume_metric "resumed handshakes"|missing, tls_resume_backend "reused seen")
  --tmp   the temp dir (per-syscall breakdowns calls-TARGET-KIND.json)
  --meta  key=value (repeatable): date, arch, cpu, nproc, command, ...
Outputs: --md (header + table + notes; also printed), --json (everything), --chart-data (gnuplot
data for Benchmarks/peers-chart.gp: one line per metric, values relative to the best peer) and
chart.subtitle next to it.
Of the rounds, each figure takes the best: highest req/s, lowest p50, lowest CPU per request.
Re-render a saved run (e.g. after changing this script) without measuring again:
  peers-report.py --from-json Benchmarks/results/peers-latest.json --md M --json J --chart-data D
  (--meta key=value overrides the saved meta), then gnuplot as peers.sh does.
"""

import argparse
import json
import math
import os
import sys

PEERS = ("nginx", "haproxy")
COLS = ("direct", "nginx", "haproxy", "sidecar")
HEAD = ("", "direct", "nginx", "HAProxy (absolute-form)", "token-sidecar", "sidecar ÷ best peer")
DASH = "–"


def parse_args():
    ap = argparse.ArgumentParser()
    for k in ("md", "json", "chart-data"):
        ap.add_argument("--" + k, required=True)
    for k in ("runs", "facts", "tmp", "from-json"):
        ap.add_argument("--" + k)
    ap.add_argument("--meta", action="append", default=[])
    return ap.parse_args()


def load_runs(path):
    names = ("round", "target", "scenario", "conns", "requests", "duration_us", "bytes", "p50_us",
             "p90_us", "p99_us", "socket_errors", "non2xx", "proxy_ticks", "backend_ticks",
             "wrk_cpu_s", "other_pct")
    runs = []
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) != len(names):
            continue
        r = dict(zip(names, f))
        for k in names[3:]:
            r[k] = None if r[k] in ("-", "") else float(r[k])
        r["round"] = int(r["round"])
        if not r["requests"]:
            continue
        r["req_per_s"] = r["requests"] / (r["duration_us"] / 1e6)
        if r["scenario"] == "upload":   # wrk counts received bytes: each request carried 1 MiB up
            r["mib_per_s"] = r["req_per_s"]
        else:
            r["mib_per_s"] = r["bytes"] / (r["duration_us"] / 1e6) / 1048576
        runs.append(r)
    return runs


def best(runs, clk_tck):
    """(target, scenario) -> best-of-rounds figures."""
    out = {}
    for r in runs:
        key = (r["target"], r["scenario"])
        b = out.setdefault(key, {"rounds": 0, "req_per_s": 0.0, "mib_per_s": 0.0, "p50_us": math.inf,
                                 "p99_us": math.inf, "cpu_us_per_req": math.inf, "req_per_s_rounds": [],
                                 "errors": 0, "other_pct_max": 0.0})
        b["rounds"] += 1
        b["req_per_s"] = max(b["req_per_s"], r["req_per_s"])
        b["mib_per_s"] = max(b["mib_per_s"], r["mib_per_s"])
        b["p50_us"] = min(b["p50_us"], r["p50_us"])
        b["p99_us"] = min(b["p99_us"], r["p99_us"])
        b["req_per_s_rounds"].append(round(r["req_per_s"]))
        b["errors"] += int(r["socket_errors"] + r["non2xx"])
        b["other_pct_max"] = max(b["other_pct_max"], r["other_pct"])
        if r["proxy_ticks"] is not None:
            b["cpu_us_per_req"] = min(b["cpu_us_per_req"], r["proxy_ticks"] * 1e6 / clk_tck / r["requests"])
    for b in out.values():
        for k in ("p50_us", "p99_us", "cpu_us_per_req"):
            if b[k] == math.inf:
                b[k] = None
    return out


def load_facts(path):
    facts = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) == 3:
            facts.setdefault(f[0], {})[f[1]] = f[2]
    return facts


def num(x):
    try:
        v = float(x)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def kfmt(v):
    if v is None:
        return DASH
    if v >= 100000:
        return "%.0fk" % (v / 1000)
    if v >= 1000:
        return "%.1fk" % (v / 1000)
    return "%.0f" % v


def ratio_fmt(v):
    return DASH if v is None else "%.2f×" % v


def main():
    a = parse_args()
    calls = {}
    if a.from_json:
        saved = json.load(open(a.from_json))
        meta, runs, facts, calls = saved["meta"], saved["runs"], saved["facts"], saved.get("syscalls", {})
        meta.update(dict(m.split("=", 1) for m in a.meta))
    else:
        meta = dict(m.split("=", 1) for m in a.meta)
        runs, facts = load_runs(a.runs), load_facts(a.facts)
        for t in ("nginx", "haproxy", "sidecar"):
            for kind in ("100", "1m"):
                p = os.path.join(a.tmp, "calls-%s-%s.json" % (t, kind))
                if os.path.exists(p):
                    calls.setdefault(t, {})[kind] = json.load(open(p))
    clk = float(meta.get("clk_tck", 100))
    B = best(runs, clk)

    def g(t, s, k):
        b = B.get((t, s))
        return None if b is None else b.get(k)

    rows = []  # dicts: label, kind (throughput|cost|info), values {col: number}, cells {col: text}, chart label

    def add(label, kind, values, fmt, chart=None, cells=None, ratio=None):
        c = {col: (fmt(values[col]) if values.get(col) is not None else DASH) for col in COLS}
        if cells:
            c.update(cells)
        if ratio is None and kind in ("throughput", "cost"):
            s = values.get("sidecar")
            peers = [values.get(p) for p in PEERS if values.get(p) is not None]
            if s is not None and peers:
                ref = max(peers) if kind == "throughput" else min(peers)
                ratio = s / ref if ref > 0 else None
        rows.append({"label": label, "kind": kind, "values": values, "cells": c, "ratio": ratio, "chart": chart})

    # c50 req/s
    add("c50 req/s", "throughput", {t: g(t, "c50", "req_per_s") for t in COLS}, kfmt, chart="c50 req/s")
    # c1 added p50 latency
    d50 = g("direct", "c1", "p50_us")
    lat = {t: (g(t, "c1", "p50_us") - d50 if g(t, "c1", "p50_us") is not None and d50 is not None else None)
           for t in COLS if t != "direct"}
    add("c1 added p50 latency", "cost", lat, lambda v: "%+.0f µs" % v, chart="c1 added\\nlatency",
        cells={"direct": ("(p50 %.0f µs)" % d50) if d50 is not None else DASH})
    # CPU per request
    add("CPU per request (c50)", "cost", {t: g(t, "c50", "cpu_us_per_req") for t in COLS if t != "direct"},
        lambda v: "%.1f µs" % v, chart="CPU per\\nrequest")
    # 1 MiB responses and uploads vs direct
    for s, label, chart in (("big", "1 MiB responses ÷ direct", "1 MiB\\nresponses"),
                            ("upload", "1 MiB uploads ÷ direct", "1 MiB\\nuploads")):
        dv = g("direct", s, "mib_per_s")
        vals = {t: (g(t, s, "mib_per_s") / dv if dv and g(t, s, "mib_per_s") is not None else None) for t in COLS}
        cells = {"direct": "1.00 (%.0f MiB/s)" % dv} if dv else None
        add(label, "throughput", vals, lambda v: "%.2f" % v, chart=chart, cells=cells)

    def fact_vals(kind):
        return {t: num(facts.get(kind, {}).get(t)) for t in COLS if t != "direct"}

    add("syscalls per request (100 B)", "cost", fact_vals("syscalls_100"), lambda v: "%.1f" % v,
        chart="syscalls\\n100 B")
    add("syscalls per 1 MiB response", "cost", fact_vals("syscalls_1m"), lambda v: "%.0f" % v,
        chart="syscalls\\n1 MiB")
    add("user-space instructions/request", "cost", fact_vals("instructions"), kfmt, chart="instructions")
    rss = {t: (v / 1024 if v is not None else None) for t, v in fact_vals("idle_rss_kib").items()}
    add("idle RSS", "cost", rss, lambda v: "%.1f MiB" % v, chart="idle RSS")
    add("RSS per idle keep-alive connection", "cost", fact_vals("conn_rss_kib"), lambda v: "%.1f KiB" % v,
        chart="RSS per\\nconnection")
    add("c50 req/s, access log on", "throughput",
        {"nginx": g("nginx-log", "log", "req_per_s"), "haproxy": g("haproxy-log", "log", "req_per_s"),
         "sidecar": g("sidecar-log", "log", "req_per_s")}, kfmt, chart="c50 req/s\\nlog on")

    w1, w2 = g("sidecar-w1", "workers", "req_per_s"), g("sidecar-w2", "workers", "req_per_s")
    wv = w2 / w1 if w1 and w2 else None
    cpus = meta.get("workers_cpus")
    add("`workers: 2` ÷ `workers: 1`, c50 req/s (%s)" % (("CPUs " + cpus) if cpus else "not pinned"), "info", {"sidecar": wv}, lambda v: "%.2f" % v,
        cells={"sidecar": ("%.2f (%s ÷ %s)" % (wv, kfmt(w2), kfmt(w1))) if wv else DASH})
    tls, plain = g("sidecar-tls", "tls", "req_per_s"), g("sidecar", "c50", "req_per_s")
    tv = tls / plain if tls and plain else None
    add("TLS upstream: c50 req/s ÷ plain HTTP", "info", {"sidecar": tv}, lambda v: "%.2f" % v,
        cells={"sidecar": ("%.2f (%s ÷ %s)" % (tv, kfmt(tls), kfmt(plain))) if tv else DASH})
    m = facts.get("tls_resume_metric", {}).get("sidecar")
    if m is None:
        cell, mv = DASH, None
    elif m == "missing":
        cell, mv = "n/a (metric missing)", None
    else:
        res, hs = (int(x) for x in m.split())
        mv = res / hs if hs else None
        cell = ("%.0f%% (%d of %d handshakes)" % (100 * mv, res, hs)) if hs else "0 handshakes"
    add("TLS sessions resumed, backend closes every connection (sidecar metrics)", "info", {"sidecar": mv},
        lambda v: v, cells={"sidecar": cell})
    bk = facts.get("tls_resume_backend", {}).get("sidecar")
    if bk:
        reused, seen = (int(x) for x in bk.split())
        bv = reused / seen if seen else None
        add("… the same, seen by the backend (`$ssl_session_reused`)", "info", {"sidecar": bv}, lambda v: v,
            cells={"sidecar": ("%.0f%% (%d of %d connections)" % (100 * bv, reused, seen)) if seen else DASH})

    # ---- markdown
    lines = []
    hdr = "%s · `uname -m` %s · %s · nproc %s · `%s`" % (meta.get("date", "?"), meta.get("arch", "?"),
                                                       meta.get("cpu", "?"), meta.get("nproc", "?"),
                                                       meta.get("command", "?"))
    if meta.get("elapsed_s"):
        hdr += " · run time %s s" % meta["elapsed_s"]
    lines.append("## token-sidecar vs peers")
    lines.append("")
    lines.append(hdr)
    lines.append("")
    lines.append("| " + " | ".join(HEAD) + " |")
    lines.append("|---|---|---|---|---|---|")
    for r in rows:
        c = r["cells"]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (r["label"], c["direct"], c["nginx"], c["haproxy"],
                                                         c["sidecar"], ratio_fmt(r["ratio"])))
    rounds = meta.get("rounds", "?")
    mode = meta.get("cpu_mode", "shared")
    pin = {"shared": "every process (backend, proxy, wrk) pinned to CPU %s" % meta.get("sut_cpu"),
           "split": "backend and proxies pinned to CPU %s, wrk to CPU %s" % (meta.get("sut_cpu"), meta.get("load_cpu")),
           "none": "no CPU pinning"}.get(mode, mode)
    others = [r["other_pct"] for r in runs]
    noisy = sum(1 for o in others if o > 20)
    lines += [
        "",
        "- wrk -t1, %s s runs after %s s warm-up, rounds: %s (round-robin); each figure is the **best of the rounds** "
        "(highest req/s, lowest p50, lowest CPU per request). %s; 100-byte responses, keep-alive; "
        "token-sidecar as forward proxy (absolute-form) with a static token, `workers: 1`, `accessLog: false`; "
        "nginx (1 worker, upstream `keepalive %s` — with fewer idle upstream connections than the 50 clients nginx "
        "reconnects to the backend for the rest —, `proxy_request_buffering off`) and HAProxy (`nbthread 1`, "
        "absolute-form, destination from the URI) inject the same header. Versions: %s; token-sidecar binary `%s`, checkout %s."
        % (meta.get("duration"), meta.get("warmup"), rounds, pin[0].upper() + pin[1:], meta.get("nginx_keepalive", "?"),
           meta.get("versions", "?"), os.path.basename(meta.get("binary", "?")), meta.get("rev", "?")),
        "- Ratio column: throughput rows sidecar ÷ max(nginx, HAProxy); cost rows (latency, CPU, syscalls, "
        "instructions, RSS) sidecar ÷ min(nginx, HAProxy). c1 added latency = p50 at -c1 minus direct's p50. "
        "CPU per request = utime+stime of all the proxy's processes and threads (/proc/PID/stat) over the c50 run ÷ requests.",
        "- 1 MiB rows: wrk -c8, GET /1m (static file) and POST /up of a 1 MiB body (the backend reads all of it "
        "into memory before answering), throughput ÷ the same straight to the backend.",
        "- Syscalls: `strace -c -f -p PID` (nginx: its worker) over %s sequential keep-alive requests of 100 B and "
        "%s of 1 MiB on one connection (counts include idle wake-ups). Instructions: callgrind, user space, runs "
        "with %s and %s+%s requests, difference ÷ %s (nginx with `master_process off`, HAProxy with `-db`; token-sidecar from a copy "
        "made with `objcopy --strip-debug`)."
        % (meta.get("count_n"), max(int(meta.get("count_n", 2000)) // 10, 20), meta.get("warm", "WARM"),
           meta.get("warm", "WARM"), meta.get("count_n"), meta.get("count_n")),
        "- Idle RSS: VmRSS summed over the proxy's processes right after start, before any request. RSS per "
        "connection: %s keep-alive client connections, one request each, left idle; RSS growth ÷ %s."
        % (meta.get("hold_n"), meta.get("hold_n")),
        "- Access log row: nginx `access_log` to a file, HAProxy `option httplog` to stdout (a file), "
        "token-sidecar `accessLog: true` (JSON lines on stderr, to a file).",
        ("- `workers` row: token-sidecar only; both instances, the backend and wrk pinned to CPUs %s (not one CPU)."
         % cpus) if cpus else "- `workers` row: token-sidecar only, not pinned.",
        "- TLS rows: the backend nginx also listens with TLS (CA and certificate made with openssl at run time, "
        "route `upstream: https://127.0.0.1:PORT` with `caFile`); the plain-HTTP figure is the c50 row above. "
        "Resumption: %s sequential requests to a TLS server with `keepalive_requests 1`; counters "
        "`token_sidecar_upstream_tls_handshakes_total{resumed}` from the admin "
        "`/metrics`, and the backend's own log of `$ssl_session_reused`." % meta.get("resume_n"),
    ]
    if others:
        lines.append("- Noise: machine %s%% busy before the start; load of other processes on the measured CPUs "
                     "during the runs: max %.0f%%, %d of %d runs above 20%%."
                     % (meta.get("start_busy", "?"), max(others), noisy, len(others)))
    warnings = [w for w in meta.get("warnings", "").split("\n") if w.strip()]
    errs = ["%s/%s: %d errors" % (t, s, b["errors"]) for (t, s), b in sorted(B.items()) if b["errors"]]
    for w in warnings + errs:
        lines.append("- **Warning:** " + w)
    if meta.get("skip"):
        lines.append("- Skipped sections: %s" % meta["skip"].strip(","))
    md = "\n".join(lines) + "\n"
    sys.stdout.write("\n" + md)
    with open(a.md, "w") as f:
        f.write(md)

    # ---- json
    out = {
        "meta": meta,
        "table": [{"label": r["label"], "kind": r["kind"], "values": r["values"], "cells": r["cells"],
                   "ratio": r["ratio"]} for r in rows],
        "best": {"%s/%s" % k: v for k, v in sorted(B.items())},
        "runs": runs,
        "facts": facts,
        "syscalls": calls,
    }
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")

    # ---- chart data: relative to the best peer (= 1.0), higher is better
    with open(a.chart_data, "w") as f:
        f.write("# metric nginx haproxy sidecar (relative to the best peer; cost rows inverted)\n")
        for r in rows:
            if not r["chart"]:
                continue
            v = r["values"]
            peers = [v.get(p) for p in PEERS if v.get(p) is not None and v.get(p) > 0]
            if not peers:
                continue
            ref = max(peers) if r["kind"] == "throughput" else min(peers)
            rel = []
            for t in ("nginx", "haproxy", "sidecar"):
                x = v.get(t)
                if x is None or x <= 0:
                    rel.append("?")
                else:
                    rel.append("%.3f" % (x / ref if r["kind"] == "throughput" else ref / x))
            f.write('"%s" %s\n' % (r["chart"], " ".join(rel)))
    with open(os.path.join(os.path.dirname(a.chart_data), "chart.subtitle"), "w") as f:
        f.write("%s, %s, %s CPUs (%s), best of %s rounds, %s" % (
            meta.get("date", "?"), meta.get("arch", "?"), meta.get("nproc", "?"), meta.get("cpu", "?"), rounds,
            pin))


if __name__ == "__main__":
    main()
