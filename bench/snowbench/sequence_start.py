"""snowflake.sequence_start: 'zero' against 'random' (run it through bench/sequence_start.sh).

What it measures, on two scratch servers of its own configuration (CONF):

- "wide" (snowflake.shard_bits = 3, sequence_bits = 22, as the per-call part of
  the standard run, so the per-shard ceiling never binds): per-call cost of
  snowflake_nextval() under each setting, measured as percall.py does (the
  streaming query between two readings of the backend's CPU time, minus the
  same query with `g`, divided by N); settings alternate round by round,
  median [min-max] and the paired difference reported.
- "default" (the default layout, 12 sequence bits): low traffic, one ID every
  ~2 ms from one session (pg_sleep between calls), under each setting; the
  distribution of id % 4096 (distinct residues, multiples of 4096) and of id % n
  for small n (smallest and largest bucket against the uniform share).

Writes sequence_start.md (and .csv); asserts nothing.

What it may call: servers (Server), percall (measure_script), stats, provenance.

    python3 -m snowbench.sequence_start --work DIR --results DIR [--quick] [--command C]
"""
import argparse
import math
import os
import sys
import time

from . import provenance
from .percall import measure_script
from .servers import Server
from .stats import fmt_range

CONF = """
listen_addresses = ''
port = {port}
unix_socket_directories = '{sockdir}'
shared_preload_libraries = 'snowflake'
snowflake.shard_id = 1
jit = off
autovacuum = off
max_parallel_workers_per_gather = 0
"""
WIDE = "snowflake.shard_bits = 3\nsnowflake.sequence_bits = 22\n"


def log(msg):
    print(f"[sequence_start] {msg}", file=sys.stderr, flush=True)


def set_start(srv, value):
    """Reloads snowflake.sequence_start; returns once new sessions see it."""
    srv.psql(f"ALTER SYSTEM SET snowflake.sequence_start = '{value}'; SELECT pg_reload_conf();")
    for _ in range(100):
        if srv.psql("SHOW snowflake.sequence_start").strip() == value:
            return
        time.sleep(0.05)
    raise RuntimeError(f"snowflake.sequence_start did not become {value}")


def server(work, name, extra=""):
    """A scratch server with this benchmark's own configuration (CONF)."""
    return Server(work, name, extra, conf=CONF, header="")


def percall(srv, n, rounds):
    """Per round and setting, in one session: the baseline and the generator queries
    alternated 3 times, each between two readings of the backend's CPU time; the
    smallest of each kept (other work only ever adds to CPU time, through caches),
    per call = (generator - baseline) / N."""
    exprs = [(i % 2, ("g", "snowflake_nextval()")[i % 2], n) for i in range(6)]
    out = {"zero": [], "random": []}
    for r in range(rounds):
        for setting in (("zero", "random") if r % 2 == 0 else ("random", "zero")):
            set_start(srv, setting)
            rows = srv.tagged(srv.psql(measure_script(exprs, max(n // 20, 1000))))
            base = min(int(v) for i, v in rows if i == "0")
            gen = min(int(v) for i, v in rows if i == "1")
            out[setting].append((gen - base) / n)
        log(f"  round {r + 1}: zero {out['zero'][-1]:.1f} ns, random {out['random'][-1]:.1f} ns")
    return out


LOW_TRAFFIC = """
CREATE TEMP TABLE ids (k int, id bigint);
DO $$
BEGIN
    FOR i IN 1 .. 50 LOOP   -- let any borrowed lead drain first
        EXIT WHEN coalesce((SELECT current_lead_ms FROM snowflake_stats WHERE shard_id = 1), 0) = 0;
        PERFORM pg_sleep(0.1);
    END LOOP;
    FOR i IN 1 .. {n} LOOP
        PERFORM pg_sleep(0.002);
        INSERT INTO ids VALUES (i, snowflake_nextval());
    END LOOP;
END $$;
SELECT id FROM ids ORDER BY k;
"""


def low_traffic(srv, setting, n):
    set_start(srv, setting)
    ids = [int(x) for x in srv.psql(LOW_TRAFFIC.format(n=n)).split()]
    assert all(b > a for a, b in zip(ids, ids[1:])), "IDs not strictly increasing"
    res = [i % 4096 for i in ids]
    counts = {}
    for v in res:
        counts[v] = counts.get(v, 0) + 1
    entropy = max(0.0, -sum(c / len(res) * math.log2(c / len(res)) for c in counts.values()))
    buckets = {}
    for m in (16, 64, 256):
        b = [0] * m
        for i in ids:
            b[i % m] += 1
        buckets[m] = (min(b), max(b), len(ids) / m)
    return dict(n=len(ids), distinct=len(counts), zeros=counts.get(0, 0),
                max_residue=max(res), entropy=entropy, buckets=buckets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--command", default=" ".join(sys.argv))
    a = ap.parse_args()
    n, rounds, low_n = (500_000, 11, 1000) if a.quick else (2_000_000, 21, 3000)
    info = provenance.collect(a.command)
    servers = []
    try:
        wide = server(a.work, "wide", WIDE)
        default = server(a.work, "default")
        servers = [wide, default]
        for s in servers:
            s.start()
            s.psql("CREATE EXTENSION snowflake;")
        wide.psql("CREATE EXTENSION snowbench;")
        provenance.add_server(info, wide)
        log(f"per-call cost, N = {n:,}, {rounds} rounds, settings alternating")
        pc = percall(wide, n, rounds)
        dist = {}
        for setting in ("zero", "random"):
            log(f"low traffic, {low_n} IDs about 2 ms apart, sequence_start = {setting}")
            dist[setting] = low_traffic(default, setting, low_n)
    finally:
        for s in servers:
            s.stop()
    provenance.finish(info)

    lines = provenance.header(info, "snowflake.sequence_start: zero against random")
    lines += [f"## Per-call cost of `snowflake_nextval()` (backend CPU time, N = {n:,}, {rounds} rounds; "
              "each round the smallest of 3 runs; median [min-max])", "",
              "| setting | per call (ns) | rounds (ns) |", "|---|---|---|"]
    for s in ("zero", "random"):
        lines.append(f"| {s} | {fmt_range(pc[s], '.1f')} | "
                     + ", ".join(f"{v:.1f}" for v in pc[s]) + " |")
    diffs = [r - z for z, r in zip(pc["zero"], pc["random"])]
    lines += ["", f"Paired difference random − zero, per round: {fmt_range(diffs, '+.1f')} ns.",
              "", f"## Low traffic: `id % 4096` of {low_n:,} IDs issued about 2 ms apart (default layout)", "",
              "| setting | distinct `id % 4096` | IDs with `id % 4096 = 0` | largest `id % 4096` "
              "| entropy (bits, max 12) | `id % 16` buckets min / max (uniform) "
              "| `id % 256` buckets min / max (uniform) |",
              "|---|---|---|---|---|---|---|"]
    for s in ("zero", "random"):
        d = dist[s]
        b16, b256 = d["buckets"][16], d["buckets"][256]
        lines.append(f"| {s} | {d['distinct']} | {d['zeros']} ({100 * d['zeros'] / d['n']:.1f}%) | "
                     f"{d['max_residue']} | {d['entropy']:.2f} | {b16[0]} / {b16[1]} ({b16[2]:.0f}) | "
                     f"{b256[0]} / {b256[1]} ({b256[2]:.1f}) |")
    text = "\n".join(lines) + "\n"
    os.makedirs(a.results, exist_ok=True)
    with open(os.path.join(a.results, "sequence_start.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.results, "sequence_start.csv"), "w") as f:
        f.write("part,setting,round,metric,value\n")
        for s in ("zero", "random"):
            for i, v in enumerate(pc[s]):
                f.write(f"percall,{s},{i + 1},ns_per_call,{v:.3f}\n")
            d = dist[s]
            for k in ("n", "distinct", "zeros", "max_residue"):
                f.write(f"low_traffic,{s},,{k},{d[k]}\n")
            f.write(f"low_traffic,{s},,entropy_bits,{d['entropy']:.4f}\n")
    print(text)


if __name__ == "__main__":
    main()
