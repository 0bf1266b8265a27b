#!/usr/bin/env python3
"""bench/h3.sh's tables, from the records measure.py's `run` appended (JSON lines).

Three kinds of record, by their `kind` label: `server` (one server row against flint bench's
load: flint serve over HTTP/3, over HTTP/2 with TLS, Caddy over HTTP/3), `client` (a client
against flint serve over HTTP/3: flint bench, oha), `bw` (1 MiB files, HTTP/3 against HTTP/2
with TLS). Medians over rounds with min-max, ratios of medians and paired (within a round, then
the median), and the goals of the HTTP/3 brief checked against them: met or missed, by how much.
"""

import json
import statistics
import sys

MIB = 1 << 20


def med(values):
    return statistics.median(values) if values else None


def spread(values, fmt):
    if not values:
        return "-"
    m = format(statistics.median(values), fmt)
    if len(values) == 1:
        return m
    return f"{m} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                             for i, c in enumerate(r)))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def paired(recs, a, b, key):
    """Median over rounds of row a's `key` over row b's in the same round."""
    by_round = {}
    for r in recs:
        by_round.setdefault(r["round"], {})[r["row"]] = r
    vals = [rr[a][key] / rr[b][key] for rr in by_round.values()
            if a in rr and b in rr and rr[a].get(key) is not None and rr[b].get(key)]
    return med(vals)


def col(recs, row, key):
    return [r[key] for r in recs if r["row"] == row and r.get(key) is not None]


def goal(name, value, bound):
    if value is None:
        return f"{name}: not measured"
    verdict = "met" if value <= bound else f"MISSED by {(value / bound - 1) * 100:.0f}%"
    return f"{name}: {value:.3f} (goal <= {bound}): {verdict}"


def rows_of(recs):
    seen = []
    for r in recs:
        if r["row"] not in seen:
            seen.append(r["row"])
    return seen


def server_table(recs):
    rows = [["server", "runs", "requests/s", "server CPU us/req", "client CPU us/req",
             "server busy", "errors"]]
    for row in rows_of(recs):
        busy = [r["rps"] * r["server_cpu_us_per_req"] / 1e6 for r in recs if r["row"] == row]
        rows.append([row, str(len(col(recs, row, "rps"))), spread(col(recs, row, "rps"), ".0f"),
                     spread(col(recs, row, "server_cpu_us_per_req"), ".2f"),
                     spread(col(recs, row, "client_cpu_us_per_req"), ".2f"),
                     spread(busy, ".2f"), str(sum(r["errors"] for r in recs if r["row"] == row))])
    print(table(rows))
    print("(medians over rounds, min-max in parentheses; server busy: share of its core)")
    cpu = "server_cpu_us_per_req"
    h3, h2, caddy = "flint-h3", "flint-h2-tls", "caddy-h3"
    h3_h2 = paired(recs, h3, h2, cpu)
    h3_caddy = paired(recs, h3, caddy, cpu)
    print(f"flint h3 / flint h2+TLS requests/s (paired): {fmt(paired(recs, h3, h2, 'rps'))}")
    print(f"flint h3 / Caddy h3 requests/s (paired):     {fmt(paired(recs, h3, caddy, 'rps'))}")
    print(goal("serve's CPU/request, HTTP/3 over its own HTTP/2+TLS (paired)", h3_h2, 1.5))
    print(goal("serve's CPU/request, HTTP/3 over Caddy's HTTP/3 (paired)", h3_caddy, 1.0))
    return {"h3_over_h2_cpu": h3_h2, "h3_over_caddy_cpu": h3_caddy}


def client_table(recs):
    rows = [["client", "runs", "requests/s", "client CPU us/req", "max RSS KiB",
             "server CPU us/req", "errors"]]
    for row in rows_of(recs):
        rows.append([row, str(len(col(recs, row, "rps"))), spread(col(recs, row, "rps"), ".0f"),
                     spread(col(recs, row, "client_cpu_us_per_req"), ".2f"),
                     spread(col(recs, row, "client_maxrss_kib"), ".0f"),
                     spread(col(recs, row, "server_cpu_us_per_req"), ".2f"),
                     str(sum(r["errors"] for r in recs if r["row"] == row))])
    print(table(rows))
    print("(medians over rounds, min-max in parentheses)")
    r = paired(recs, "flint-bench", "oha", "client_cpu_us_per_req")
    print(f"flint/oha requests/s (paired): {fmt(paired(recs, 'flint-bench', 'oha', 'rps'))}")
    print(f"flint/oha server CPU/request (paired): "
          f"{fmt(paired(recs, 'flint-bench', 'oha', 'server_cpu_us_per_req'))}")
    print(goal("flint bench's CPU/request over oha's, both HTTP/3 (paired)", r, 1.0))
    return {"flint_over_oha_client_cpu": r}


def bw_table(recs):
    rows = [["transport", "runs", "MiB/s", "server CPU us/MiB", "client CPU us/MiB", "errors"]]
    for row in rows_of(recs):
        rs = [r for r in recs if r["row"] == row]
        size = int(rs[0]["size_bytes"])
        rows.append([row, str(len(rs)), spread([r["rps"] * size / MIB for r in rs], ".1f"),
                     spread([r["server_cpu_us_per_req"] * MIB / size for r in rs], ".0f"),
                     spread([r["client_cpu_us_per_req"] * MIB / size for r in rs], ".0f"),
                     str(sum(r["errors"] for r in rs))])
    print(table(rows))
    print(f"flint h3 / flint h2+TLS MiB/s (paired): {fmt(paired(recs, 'flint-h3', 'flint-h2-tls', 'rps'))}")
    print("flint h3 / flint h2+TLS server CPU/MiB (paired): "
          f"{fmt(paired(recs, 'flint-h3', 'flint-h2-tls', 'server_cpu_us_per_req'))}")


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def main():
    if len(sys.argv) < 2:
        print("usage: h3_summary.py RECORDS [JSON_OUT]", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    out = {}
    for kind, title, fn in (("server", "servers, 1 KiB, flint bench's load", server_table),
                            ("client", "clients against flint serve over HTTP/3, 1 KiB",
                             client_table),
                            ("bw", "1 MiB files, flint bench's load", bw_table)):
        rs = [r for r in recs if r.get("kind") == kind and r.get("purpose") != "warmup"]
        if rs:
            print(f"\n== {title}: {rs[0].get('title', '')}")
            out[kind] = fn(rs)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump({"goals": out, "runs": recs}, f, indent=2)
        print(f"\nresults written to {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
