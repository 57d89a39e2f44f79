"""Contention: the two generators (atomic and lwlock) under 1, 2, 4 and 8 backends
(`bash bench/run.sh --contention`).

What it measures: backends call a generator in tight loops, all on one shard
(one sequence) or each on its own, for snowflake.generator = 'atomic' and
'lwlock' and for nextval() with cache 1; the same query without a generator is
the baseline and clock_timestamp() a floor.  Each run is `pgbench -n -c N -j N
-T t` of a one-query script (`SELECT count(f) FROM (SELECT <gen> AS f FROM
(SELECT generate_series(1, n) AS g) x) s`) that also stores the backend's own
CPU time for the query (/proc/self/schedstat); interleaved rounds (every
configuration once per round, the order rotating), medians.  Then the
throughput module on the atomic generator, default layout.  Writes
contention.{md,csv,png}.  Nothing is asserted.

What it may call: servers, report, throughput.

    python3 -m snowbench.contention --work DIR --results DIR [--quick] [--replot]
"""
import argparse
import csv
import os
import signal
import sys
import time

from . import throughput
from .report import Results, fmt, have_gnuplot, machine_info, run_gnuplot, utc_now, verdict, write_csv
from .servers import Server, log, median, pgbench_tps, rotated

MODES = {
    "full": dict(rounds=5, t=2, n=200_000, tput_ids=28_000_000, tput_rounds=3),
    "quick": dict(rounds=2, t=1, n=100_000, tput_ids=12_000_000, tput_rounds=1),
}
BACKENDS = (1, 2, 4, 8)

# Wide layout: 4 million IDs per ms per shard, so the ceiling never binds and
# the figures are the code's cost; shards 0-7 for "each on its own shard".
CONF = """
snowflake.shard_bits = 3
snowflake.sequence_bits = 22
snowflake.shard_id = 0
snowflake.shard_ids = '0-7'
snowflake.generator = '{generator}'
max_connections = 40
"""
# the default-layout server: the sampler of the throughput part
DEFAULT_SETUP = "CREATE EXTENSION IF NOT EXISTS snowflake;\n" + throughput.SETUP_SQL
SETUP = ("CREATE EXTENSION IF NOT EXISTS snowflake;\n"
         "CREATE UNLOGGED TABLE bench_cpu (ns bigint);\n" +
         "".join(f"CREATE SEQUENCE bench_c1_{i} CACHE 1;\n" for i in range(8)))

# (label, server, expression on one shard, expression each on its own shard)
GENERATORS = [
    ("snowflake atomic", "atomic", "snowflake_nextval(0)", "snowflake_nextval(:client_id)"),
    ("snowflake lwlock", "lwlock", "snowflake_nextval(0)", "snowflake_nextval(:client_id)"),
    ("nextval() cache 1", "atomic", "nextval('bench_c1_0')", "nextval('bench_c1_:client_id')"),
]
BASELINE = ("no generator", "atomic", "g", "g")
FLOOR = ("clock_timestamp() (a floor)", "atomic", "clock_timestamp()")
# The backend's own CPU time for the query (from /proc/self/schedstat, in ns)
# goes into bench_cpu: a figure that time-sharing the 2 cores with other work
# does not inflate.  generate_series in the select list streams its rows.
CPU_NOW = "split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint"
QUERY = (f"SELECT {CPU_NOW} AS t0 \\gset\n"
         "SELECT count(f) FROM (SELECT {expr} AS f FROM (SELECT generate_series(1, {n}) AS g) x) s;\n"
         f"INSERT INTO bench_cpu SELECT {CPU_NOW} - :t0;\n")


def configs():
    """(label, server, placement, backends, expression); N = 1 is measured once."""
    out = [(FLOOR[0], FLOOR[1], "one", 1, FLOOR[2])]
    for n in BACKENDS:
        out.append((BASELINE[0], BASELINE[1], "-", n, BASELINE[2]))
        for label, srv, one, own in GENERATORS:
            out.append((label, srv, "one", n, one))
            if n > 1:
                out.append((label, srv, "own", n, own))
    return out


def run(args):
    cfg = MODES["quick" if args.quick else "full"]
    ncpu = os.cpu_count() or 1
    started = time.time()
    servers = {g: Server(args.work, g, CONF.format(generator=g)) for g in ("atomic", "lwlock")}
    default = Server(args.work, "default", "snowflake.generator = 'atomic'\n")
    res = Results()
    d = os.path.join(args.work, "scripts")
    os.makedirs(d, exist_ok=True)
    try:
        for s in list(servers.values()) + [default]:
            s.start()
        for s in servers.values():
            s.psql(SETUP)
        default.psql(DEFAULT_SETUP)
        info = machine_info(default)
        info["date"] = utc_now()
        for s in servers.values():
            log(f"{s.name}: snowflake.generator = {s.value('SHOW snowflake.generator')}")

        runs = configs()
        paths = {}
        for k, (_, _, _, _, expr) in enumerate(runs):
            path = paths.setdefault(expr, os.path.join(d, f"q{len(paths)}.sql"))
            with open(path, "w") as f:
                f.write(QUERY.format(expr=expr, n=cfg["n"]))
        log(f"contention: {len(runs)} configurations, pgbench -T {cfg['t']}, n = {cfg['n']:,} a query, "
            f"warm-up and {cfg['rounds']} rounds")
        for label, srv, place, n, expr in runs:                                  # warm-up
            servers[srv].pgbench(["-c", str(n), "-j", str(n), "-t", "1", "-f", paths[expr]], d)
        tps = {(label, place, n): [] for label, _, place, n, _ in runs}
        cpu = {(label, place, n): [] for label, _, place, n, _ in runs}
        for r in range(cfg["rounds"]):
            for label, srv, place, n, expr in rotated(runs, r):
                s = servers[srv]
                s.psql("TRUNCATE bench_cpu;")
                out = s.pgbench(["-c", str(n), "-j", str(n), "-T", str(cfg["t"]), "-f", paths[expr]], d)
                v = pgbench_tps(out)
                queries, ns = s.value("SELECT count(*) || ' ' || coalesce(sum(ns), 0) FROM bench_cpu").split()
                per_row = int(ns) / (int(queries) * cfg["n"]) if int(queries) else None
                tps[(label, place, n)].append(v)
                cpu[(label, place, n)].append(per_row)
                res.add("contention", f"{label} / {place}", n, r + 1, "tps", v)
                res.add("contention", f"{label} / {place}", n, r + 1, "cpu_ns_per_row", per_row)
            log(f"  round {r + 1} done")

        # per round: IDs/s, and the CPU time per call above the baseline's per row
        rows = []
        for label, _, place, n, _ in runs:
            if label == BASELINE[0]:
                continue
            ids, cost, wall = [], [], []
            for r in range(cfg["rounds"]):
                t, tb = tps[(label, place, n)][r], tps[(BASELINE[0], "-", n)][r]
                ids.append(t * cfg["n"])
                c, b = cpu[(label, place, n)][r], cpu[(BASELINE[0], "-", n)][r]
                cost.append(None if c is None or b is None else c - b)
                # elapsed time per call in each backend, above the baseline's per row
                wall.append((n / (t * cfg["n"]) - n / (tb * cfg["n"])) * 1e9)
            rows.append((label, place, n, median(ids), median(cost), median(wall)))
        base_rows = [(n, median([t * cfg["n"] for t in tps[(BASELINE[0], "-", n)]]),
                      median(cpu[(BASELINE[0], "-", n)])) for n in BACKENDS]
        res.parts["contention"] = dict(rows=rows, base=base_rows, n=cfg["n"], t=cfg["t"], ncpu=ncpu)

        # the layout's ceiling, one backend, atomic generator, default layout
        try:
            throughput.run(default, dict(tput_ids=cfg["tput_ids"], rounds=cfg["tput_rounds"]), res)
        except Exception as e:          # report it and go on
            res.errors["throughput"] = str(e)[-400:]
            log(f"throughput failed: {e}")
    finally:
        for s in list(servers.values()) + [default]:
            s.stop()
    elapsed = time.time() - started
    os.makedirs(args.results, exist_ok=True)
    write_csv(os.path.join(args.results, "contention.csv"), res)
    write_plot(os.path.join(args.results, "contention.png"), res, args.work)
    text = write_markdown(os.path.join(args.results, "contention.md"), res, info, cfg, elapsed)
    print()
    print(text)
    log(f"done in {elapsed:.0f} s: {args.results}/contention.md, contention.csv, contention.png")


def lookup(rows, label, place, n):
    for row in rows:
        if row[0] == label and row[2] == n and (row[1] == place or n == 1):
            return row
    return None


def targets(p):
    c = p["contention"]
    rows = c["rows"]
    out = []
    a1 = lookup(rows, "snowflake atomic", "one", 1)
    a2 = lookup(rows, "snowflake atomic", "one", 2)
    a8 = lookup(rows, "snowflake atomic", "one", 8)
    if a1:
        out.append(("atomic, 1 backend: at most 45 ns per call (CPU time)", f"{fmt(a1[4])} ns", None if a1[4] is None else a1[4] <= 45))
    if a1 and a2:
        out.append(("atomic, 2 backends on one shard: at most 2× the 1-backend cost per call (CPU time)",
                    f"{fmt(a2[4])} ns vs {fmt(a1[4])} ns: {fmt(a2[4] and a1[4] and a2[4] / a1[4], '.2f')}×",
                    None if None in (a1[4], a2[4]) else a2[4] <= 2 * a1[4]))
    if a1 and a8:
        out.append((f"atomic, 8 backends on one shard ({c['ncpu']} cores): total IDs/s at least the 1-backend figure",
                    f"{fmt(a8[3])} vs {fmt(a1[3])} IDs/s: {a8[3] / a1[3]:.2f}×", a8[3] >= a1[3]))
    if "throughput" in p:
        tp = p["throughput"]
        for label, steady, *_ in tp["rows"]:
            frac = None if steady is None else steady / tp["ceiling"]
            out.append((f"default layout, atomic: one backend with {label} reaches 100% of {tp['ceiling']:,} IDs/s "
                        "(99.5% or more)", fmt(frac, ".1%"), None if frac is None else frac >= 0.995))
    return out


def write_markdown(path, res, info, cfg, elapsed):
    p = res.parts
    L = []
    add = L.append
    add("# snowflake contention benchmark\n")
    add(f"{info['date']}, whole run {elapsed / 60:.1f} min; {info['nproc']} CPUs ({info['cpu']}), "
        f"{info['pg'].split(' on ')[0]}, extension {info['git']}. Method: `bench/README.md`, "
        "\"Contention\".\n")
    if "contention" in p:
        c = p["contention"]
        add("## Targets\n")
        add("| target | measured | |\n|---|---|---|")
        for t, m, ok in targets(p):
            add(f"| {t} | {m} | {verdict(ok)} |")
        add("")
        add(f"`pgbench -n -c N -j N -T {c['t']}` of `SELECT count(f) FROM (SELECT <gen> AS f FROM "
            f"(SELECT generate_series(1, {c['n']:,}) AS g) x) s`, {cfg['rounds']} interleaved rounds, medians. "
            "**ns per call**: the CPU time the backends spent per ID (each query's own CPU time, from "
            "`/proc/self/schedstat`), minus the same per row for the baseline query (no generator) of the "
            "same round and N: what a call costs, spinning on a contended cache line included, sleeping "
            "on a lock not (that shows in the rate). **M/s**: million IDs per second, all backends "
            f"together (query rate × n, wall clock, {c['ncpu']} cores shared with whatever else runs).\n")
        add("| generator | placement | " + " | ".join(f"{n} backend{'s' if n > 1 else ''}" for n in BACKENDS)
            + " |\n|---|---|" + "---:|" * len(BACKENDS))
        for label, *_ in GENERATORS:
            for place in ("one", "own"):
                cells = []
                for n in BACKENDS:
                    row = lookup(c["rows"], label, place, n)
                    cells.append("" if row is None else f"{fmt(row[4])} ns, {row[3] / 1e6:,.1f} M/s")
                what = "one shard" if not label.startswith("nextval") else "one sequence"
                if place == "own":
                    what = "own shard each" if not label.startswith("nextval") else "own sequence each"
                add(f"| {label} | {what} | " + " | ".join(cells) + " |")
        fl = lookup(c["rows"], FLOOR[0], "one", 1)
        if fl:
            add(f"| `clock_timestamp()` (a function that only reads the clock: a floor) | | "
                f"{fmt(fl[4])} ns, {fl[3] / 1e6:,.1f} M/s | | | |")
        add("| no generator (baseline) | | " + " | ".join(f"{fmt(b)} ns per row, {r / 1e6:,.1f} M rows/s"
                                                      for _, r, b in c["base"]) + " |")
        add("")
        add(f"Elapsed time per call in each backend, above the baseline's per row (N / IDs/s, the same "
            f"for the baseline, subtracted): meaningful while every backend has a core (N ≤ {c['ncpu']}) "
            "and nothing else runs; it includes the time asleep on a lock.\n")
        add("| generator | placement | " + " | ".join(f"{n} backend{'s' if n > 1 else ''}"
                                                  for n in BACKENDS if n <= c["ncpu"])
            + " |\n|---|---|" + "---:|" * len([n for n in BACKENDS if n <= c["ncpu"]]))
        for label, *_ in GENERATORS:
            for place in ("one", "own"):
                cells = []
                for n in BACKENDS:
                    if n > c["ncpu"]:
                        continue
                    row = lookup(c["rows"], label, place, n)
                    cells.append("" if row is None else f"{fmt(row[5])} ns")
                add(f"| {label} | {place} | " + " | ".join(cells) + " |")
        add("")
    if "throughput" in p:
        tp = p["throughput"]
        add("## The layout's ceiling, atomic generator\n")
        add(f"Default layout ({tp['ceiling']:,} IDs/s per shard), one backend, {tp['n']:,} IDs a run "
            "(the standard run's part 2): the steady rate once the 1 s lead is used up.\n")
        add("| method | steady IDs/s | of ceiling | unthrottled IDs/s |\n|---|---:|---:|---:|")
        for label, steady, ramp, overall, net, window, lead_used in tp["rows"]:
            add(f"| `{label}` | {fmt(steady)} | {fmt(steady and steady / tp['ceiling'], '.1%')} | {fmt(ramp)} |")
        add("")
    if res.errors:
        add("## Errors\n")
        for part, err in res.errors.items():
            add(f"- {part}: `{err}`")
        add("")
    add("![contention](contention.png)\n")
    text = "\n".join(L)
    with open(path, "w") as f:
        f.write(text)
    return text


def write_plot(path, res, work):
    if not have_gnuplot() or "contention" not in res.parts:
        log("no plot (gnuplot missing or no data)")
        return
    c = res.parts["contention"]
    d = os.path.join(work, "plot")
    os.makedirs(d, exist_ok=True)
    series = []
    colours = {"snowflake atomic": "#4472c4", "snowflake lwlock": "#ed7d31", "nextval() cache 1": "#70ad47"}
    for label, *_ in GENERATORS:
        for place in ("one", "own"):
            fn = os.path.join(d, f"{label.split()[1] if label.startswith('snowflake') else 'nextval'}_{place}.dat")
            with open(fn, "w") as f:
                for n in BACKENDS:
                    row = lookup(c["rows"], label, place, n)
                    if row:
                        f.write(f"{n} {row[3] / 1e6} {max(row[4] or 1, 1)}\n")
            series.append((fn, f"{label}, {'one shard' if place == 'one' else 'own shard each'}"
                           if label.startswith("snowflake") else
                           f"{label}, {'one sequence' if place == 'one' else 'own sequence each'}",
                           colours[label], 1 if place == "one" else 2))

    def plot(col):
        return ", \\\n     ".join(f"'{fn}' using 1:{col} with linespoints lw 2 pt 7 dt {dt} lc rgb '{colour}' "
                                  f"title '{title}'" for fn, title, colour, dt in series)
    script = f"""
set terminal pngcairo size 1400,600 font 'sans,10' noenhanced
set output '{path}'
set multiplot layout 1,2
set grid
set key below maxrows 2
set xlabel 'backends (on {c['ncpu']} cores)'
set logscale x 2
set xrange [0.8:10]
set xtics (1, 2, 4, 8)
set title 'IDs per second, all backends together (millions)'
set yrange [0:*]
plot {plot(2)}
set title 'CPU time per call above the baseline (ns, log scale)'
set logscale y
set yrange [*:*]
plot {plot(3)}
unset multiplot
"""
    run_gnuplot(work, "contention.gp", script)


def replot(args):
    """Redraws the plot from the CSV of the last run (same computation as run())."""
    raw = {}
    with open(os.path.join(args.results, "contention.csv")) as f:
        for row in csv.DictReader(f):
            if row["part"] == "contention":
                raw[(row["item"], int(row["clients"]), int(row["round"]), row["metric"])] = \
                    float(row["value"]) if row["value"] not in ("", "None") else None
    rounds = max(k[2] for k in raw)
    n_ids = MODES["full"]["n"] if rounds >= MODES["full"]["rounds"] else MODES["quick"]["n"]
    rows = []
    for label, _, place, n, _ in configs():
        if label == BASELINE[0]:
            continue
        key, base = f"{label} / {place}", f"{BASELINE[0]} / -"
        ids = [raw[(key, n, r, "tps")] * n_ids for r in range(1, rounds + 1)]
        cost = [raw[(key, n, r, "cpu_ns_per_row")] - raw[(base, n, r, "cpu_ns_per_row")]
                for r in range(1, rounds + 1)]
        rows.append((label, place, n, median(ids), median(cost), None))
    res = Results()
    res.parts["contention"] = dict(rows=rows, ncpu=os.cpu_count() or 1)
    write_plot(os.path.join(args.results, "contention.png"), res, args.work)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer rounds, shorter runs")
    ap.add_argument("--work", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--replot", action="store_true", help="redraw contention.png from contention.csv")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.replot:
        replot(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
