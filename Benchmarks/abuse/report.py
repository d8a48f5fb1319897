#!/usr/bin/env python3
"""report.py TMP "SCENARIOS" SIDECAR_LOG — the tables of Benchmarks/abuse/run.sh.

Reads the per-phase JSON files attack.py wrote into TMP (NAME.canary.json, NAME.attack.json,
NAME.watch.json, NAME.settle.json, NAME.m0/m1.json, NAME.log0/log1 byte offsets into the
proxy's log). Verdict per scenario: PASS when the canary's p99 (successful requests) is below
2 x the baseline p99 AND no canary request failed. Exit 1 when any scenario fails.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import proxyclient  # noqa: E402  (Benchmarks/proxyclient.py)

RATIO_LIMIT = 2.0


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


pct = proxyclient.percentile


def canary_stats(d):
    if not d:
        return None
    samples = d["samples"]
    ok = [s[1] for s in samples if s[2]]
    fails = [s for s in samples if not s[2]]
    return {"n": len(samples), "p50": pct(ok, 50), "p99": pct(ok, 99), "fails": fails}


def fmt_ms(v):
    return "-" if v is None else "%.2f" % v


def label(k):
    m = re.match(r"([a-z_]+)\{(.*)\}$", k)
    return (m.group(1), m.group(2)) if m else (k, "")


def deltas(m0, m1):
    out = []
    for k, v in sorted(m1.items()):
        d = v - m0.get(k, 0)
        if d:
            name, labels = label(k)
            name = name.replace("token_sidecar_", "")
            out.append("%s{%s} +%d" % (name, labels, d) if labels else "%s +%d" % (name, d))
    return out


def log_slice(path, a, b):
    """Warning-or-worse log messages in bytes [a, b) of the proxy's log, counted."""
    c = collections.Counter()
    try:
        with open(path, "rb") as f:
            f.seek(a)
            data = f.read(max(0, b - a))
    except OSError:
        return c
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            c["(non-JSON) " + line[:100]] += 1
            continue
        if e.get("level") in ("warning", "error", "critical"):
            c["%s: %s" % (e["level"], e.get("msg", "?"))] += 1
    return c


def offset(path):
    try:
        return int(open(path).read().strip())
    except (OSError, ValueError):
        return 0


def main():
    tmp, scenarios, log = sys.argv[1], sys.argv[2].split(), sys.argv[3]
    base = canary_stats(load(os.path.join(tmp, "baseline.canary.json")))
    failed = []
    print()
    hdr = "%-11s %6s %8s %8s %6s %9s  %s" % ("scenario", "canary", "p50 ms", "p99 ms", "fails", "p99/base", "result")
    print(hdr)
    print("-" * len(hdr))
    if base is None or base["p99"] is None:
        print("baseline: no canary data")
        return 1
    base_ok = not base["fails"]
    print("%-11s %6d %8s %8s %6d %9s  %s" % ("baseline", base["n"], fmt_ms(base["p50"]), fmt_ms(base["p99"]),
                                             len(base["fails"]), "1.00", "ok" if base_ok else "FAIL (baseline failures)"))
    if not base_ok:
        failed.append("baseline")
    rows = {}
    for s in scenarios:
        st = canary_stats(load(os.path.join(tmp, s + ".canary.json")))
        rows[s] = st
        if st is None:
            print("%-11s  no canary data  FAIL" % s)
            failed.append(s)
            continue
        ratio = None if st["p99"] is None else st["p99"] / base["p99"]
        ok = ratio is not None and ratio < RATIO_LIMIT and not st["fails"]
        why = []
        if ratio is None or ratio >= RATIO_LIMIT:
            why.append("p99")
        if st["fails"]:
            why.append("failures")
        print("%-11s %6d %8s %8s %6d %9s  %s" % (s, st["n"], fmt_ms(st["p50"]), fmt_ms(st["p99"]), len(st["fails"]),
                                                 "-" if ratio is None else "%.2f" % ratio,
                                                 "PASS" if ok else "FAIL (%s)" % ", ".join(why)))
        if not ok:
            failed.append(s)
    print("rule: PASS = p99 < %.0f x baseline p99 (%.2f ms) and no canary failure; "
          "p50/p99 over successful canaries" % (RATIO_LIMIT, base["p99"]))

    print("\nWhat the proxy did (attackers' view, then the proxy's own counters and state):")
    for s in ["baseline"] + scenarios:
        att = load(os.path.join(tmp, s + ".attack.json"), {})
        w = load(os.path.join(tmp, s + ".watch.json"), {})
        se = load(os.path.join(tmp, s + ".settle.json"), {})
        m0 = load(os.path.join(tmp, s + ".m0.json"), {})
        m1 = load(os.path.join(tmp, s + ".m1.json"), {})
        print("\n[%s]" % s)
        if att:
            line = "  attacker: %d connections opened (at most %d open at once)" % (att["opened"], att["max_open"])
            if att.get("connect_errors"):
                line += "; connect errors %s" % att["connect_errors"]
            print(line)
            if "dropped" in att:
                print("  dropped: %s" % ", ".join("%s x%d" % kv for kv in sorted(att["dropped"].items())))
            for st, t in sorted(att.get("time_to_response", {}).items()):
                print("  answered %s x%d, %.3f s after connect (p50; max %.3f s)" % (st, t["n"], t["p50_s"], t["max_s"]))
            if att.get("ends"):
                print("  connections ended: " + "; ".join("%s x%d" % (k, v) for k, v in
                                                         sorted(att["ends"].items(), key=lambda kv: -kv[1])))
            if att.get("request_bytes"):
                print("  each request: %d bytes of head" % att["request_bytes"])
            if s == "slowread":
                print("  bytes delivered to all slow readers: %d" % att.get("bytes_received", 0))
        d = deltas(m0, m1)
        if d:
            print("  proxy counters: " + ", ".join(d))
        if w.get("peak"):
            p = w["peak"]
            f = w.get("first") or {}
            print("  proxy peak: RSS %.1f MiB (start %.1f), %d fds (start %s), %d client connections, %d active upstream;"
                  " CPU %s%%"
                  % (p["rss_kib"] / 1024, (f.get("rss_kib") or 0) / 1024, p["fds"], f.get("fds", "?"),
                     p["client_connections"], p["upstream_active"], p.get("cpu_percent", "?"))
                  + ("  PROXY DIED" if p.get("died") else ""))
        if se:
            if se.get("died"):
                print("  PROXY DIED during this phase")
                if s not in failed:
                    failed.append(s)
            else:
                print("  after the attack: connections gone after %s s, descriptors <= %s after %.1f s: %s"
                      " (client connections %s, active upstream %s, %s fds, RSS %.1f MiB)"
                      % (se.get("conns_seconds"), se.get("max_fds"), se.get("seconds", 0),
                         "settled" if se.get("settled") else "NOT settled",
                         se.get("client_connections"), se.get("upstream_active"), se.get("fds"),
                         (se.get("rss_kib") or 0) / 1024))
                if se.get("rested_rss_kib") is not None:
                    print("  %.0f s later: RSS %.1f MiB" % (se.get("rest_seconds", 0), se["rested_rss_kib"] / 1024))
        logs = log_slice(log, offset(os.path.join(tmp, s + ".log0")), offset(os.path.join(tmp, s + ".log1")))
        if logs:
            print("  proxy log: " + "; ".join("%s x%d" % kv for kv in logs.most_common(6)))
        st = rows.get(s) if s != "baseline" else base
        if st and st["fails"]:
            kinds = collections.Counter(f[3] for f in st["fails"])
            print("  canary failures (t = seconds into the phase %.1f..%.1f): %s"
                  % (st["fails"][0][0], st["fails"][-1][0],
                     "; ".join("%s x%d" % kv for kv in kinds.most_common(4))))
    print()
    if failed:
        print("abuse: FAILED: %s" % " ".join(failed))
        return 1
    print("abuse: all scenarios passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
