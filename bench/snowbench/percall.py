"""Per-call cost of each generator (part 1 of the standard run).

What it measures: `SELECT count(f) FROM (SELECT <gen> AS f FROM
generate_series(1, N) g) s`, timed by EXPLAIN (ANALYZE, TIMING OFF, SUMMARY
ON), minus the same query with `g` instead of a generator, divided by N: ns per
call of snowflake_nextval(), snowflake_nextval(shard), nextval() (cache 1 and
1000), gen_random_uuid(), Instagram's PL/pgSQL next_id() and clock_timestamp()
(a floor).  The generators take turns within each round; medians of the rounds.
SETUP_SQL creates the sequences and next_id() (part 3 uses them too).

What it may call: servers (a started Server, log, median, rotated) and report
(Results, fmt, plot_data).
"""
from .report import fmt, plot_data
from .servers import log, median, rotated

# Instagram's next_id() (instagram-engineering.com, "Sharding & IDs at Instagram"):
# 41 bits of ms since their epoch | 13 bits of shard | 10 bits of nextval() % 1024.
SETUP_SQL = """
CREATE SEQUENCE bench_seq_c1 CACHE 1;
CREATE SEQUENCE bench_seq_c1000 CACHE 1000;
CREATE SEQUENCE insta_seq;
CREATE FUNCTION next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('insta_seq') % 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE PLPGSQL;
"""

GENERATORS = [  # (label, SQL expression)
    ("no generator (baseline)", "g"),
    ("clock_timestamp() (floor)", "clock_timestamp()"),
    ("snowflake_nextval()", "snowflake_nextval()"),
    ("snowflake_nextval(shard)", "snowflake_nextval(2)"),
    ("nextval() cache 1", "nextval('bench_seq_c1')"),
    ("nextval() cache 1000", "nextval('bench_seq_c1000')"),
    ("gen_random_uuid()", "gen_random_uuid()"),
    ("PL/pgSQL next_id()", "next_id()"),
]


def run(srv, cfg, res):
    """1. Per-call cost: query time minus the same query without a generator, per call."""
    n = cfg["percall_n"]
    query = "SELECT count(f) FROM (SELECT {gen} AS f FROM generate_series(1, {n}) g) s"
    gens = GENERATORS
    log(f"part 1: per-call cost, N = {n:,}, warm-up and {cfg['rounds']} rounds")
    srv.explain_ms([query.format(gen=g, n=n // 4) for _, g in gens])          # warm-up, not kept
    times = {label: [] for label, _ in gens}
    per_call = {label: [] for label, _ in gens}
    for r in range(cfg["rounds"]):
        order = rotated(gens, r)
        ms = dict(zip([label for label, _ in order],
                      srv.explain_ms([query.format(gen=g, n=n) for _, g in order])))
        base = ms[gens[0][0]]
        for label, _ in gens:
            times[label].append(ms[label])
            per_call[label].append((ms[label] - base) * 1e6 / n)
            res.add("percall", label, 1, r + 1, "query_ms", ms[label])
        log(f"  round {r + 1}: " + ", ".join(f"{label.split(' (')[0]} {ms[label]:.0f} ms" for label, _ in gens))
    sf = "snowflake_nextval()"
    seq = "nextval() cache 1"
    ratios = [a / b for a, b in zip(per_call[sf], per_call[seq]) if b > 0]
    res.parts["percall"] = dict(
        n=n, rows=[(label, expr, median(times[label]), median(per_call[label])) for label, expr in gens],
        sf_vs_seq=median(ratios), per_call=per_call)


def targets(p):
    """(target, measured, met) rows."""
    v = p["percall"]["sf_vs_seq"]
    pc = p["percall"]["per_call"]
    return [("per-call cost of snowflake_nextval() at most 1/3 of nextval() (cache 1)",
             f"{fmt(median(pc['snowflake_nextval()']))} ns vs {fmt(median(pc['nextval() cache 1']))} ns: "
             f"{fmt(v, '.2f')}×", None if v is None else v <= 1 / 3)]


def section(p, cfg):
    """The Markdown lines of part 1."""
    pc = p["percall"]
    L = []
    add = L.append
    add("## 1. Per-call cost\n")
    add(f"`SELECT count(f) FROM (SELECT <gen> AS f FROM generate_series(1, {pc['n']:,}) g) s`, "
        "execution time from `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON)`, one warm-up round, then "
        f"{cfg['rounds']} rounds; per call = (time − baseline of the same round) / N. "
        "Server layout `shard_bits = 3`, `sequence_bits = 22` (4,194,304 IDs per ms: the ceiling never binds).\n")
    add("| generator | expression | query (median) | per call (median) | vs nextval() cache 1 |\n"
        "|---|---|---:|---:|---:|")
    seq = median(pc["per_call"]["nextval() cache 1"])
    for label, expr, ms, ns in pc["rows"]:
        rel = "" if label.startswith("no generator") or not seq else f"{ns / seq:.2f}×"
        add(f"| {label} | `{expr}` | {ms:,.1f} ms | "
            f"{'—' if label.startswith('no generator') else f'{ns:,.0f} ns'} | {rel} |")
    add("")
    return L


def panel(p, work):
    """The gnuplot panel of part 1."""
    fn = plot_data(work, "percall.dat", [(label.split(" (")[0], max(ns, 0.5)) for label, _, _, ns in p["percall"]["rows"]
                                         if not label.startswith("no generator")])
    return f"""
set title "1. Per-call cost above the baseline query (ns, log scale)"
set logscale y
set yrange [1:*]
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title '' lc rgb '#4472c4', '' using 0:2:(sprintf('%.0f',$2)) with labels offset 0,0.7 notitle
unset logscale y
set yrange [*:*]"""
