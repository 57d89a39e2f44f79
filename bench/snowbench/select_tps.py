"""pgbench TPS of `SELECT <generator>;` against `SELECT 1;` (part 3 of the standard run).

What it measures: `pgbench -n -c C -j C -T t` with C = 1 and 2, one run per
one-line script in turn (the order rotating by round), the ratio to `SELECT 1;`
of the same round; and per round one paired run mixing all scripts (each
transaction picks one at random), comparing their mean latencies from the
per-transaction log (each script's slowest 1% dropped).  `SELECT
clock_timestamp();` is a floor: what calling any function costs.  Uses the
sequence and next_id() that percall.SETUP_SQL creates.

What it may call: servers (a started Server, log, median, rotated,
trimmed_mean, pgbench_tps) and report (Results, fmt, plot_data).
"""
import glob
import os

from .report import fmt, plot_data
from .servers import log, median, pgbench_tps, rotated, trimmed_mean

SCRIPTS = [  # (label, pgbench script)
    ("SELECT 1 (reference)", "SELECT 1;"),
    ("clock_timestamp() (any function call: a floor)", "SELECT clock_timestamp();"),
    ("snowflake_nextval()", "SELECT snowflake_nextval();"),
    ("nextval() cache 1", "SELECT nextval('bench_seq_c1');"),
    ("gen_random_uuid()", "SELECT gen_random_uuid();"),
    ("PL/pgSQL next_id()", "SELECT next_id();"),
]


def run(srv, cfg, res, work):
    """3. pgbench TPS of SELECT <generator>; with 1 and 2 clients, against SELECT 1;."""
    t = cfg["pgbench_t"]
    d = os.path.join(work, "pgbench")
    os.makedirs(d, exist_ok=True)
    files = []
    for k, (label, script) in enumerate(SCRIPTS):
        path = os.path.join(d, f"select{k}.sql")
        with open(path, "w") as f:
            f.write(script + "\n")
        files.append((label, path))
    log(f"part 3: pgbench SELECT, -T {t}, clients 1 and 2, warm-up and {cfg['pgbench_rounds']} rounds")
    for _, path in files:                                                     # warm-up
        srv.pgbench(["-c", "1", "-t", "2000", "-f", path], d)
    tps = {(label, c): [] for label, _ in files for c in (1, 2)}
    paired = {(label, c): [] for label, _ in files for c in (1, 2)}
    ref = files[0][0]
    for r in range(cfg["pgbench_rounds"]):
        for c in (1, 2):
            # separate runs, one script each, in turn
            got = {}
            for label, path in rotated(files, r):
                got[label] = pgbench_tps(srv.pgbench(["-c", str(c), "-j", str(c), "-T", str(t), "-f", path], d))
                res.add("select", label, c, r + 1, "tps", got[label])
            for label, _ in files:
                tps[(label, c)].append(got[label])
            # a paired run: all scripts in one run, each transaction picks one at random,
            # mean latency per script from the per-transaction log
            for old in glob.glob(os.path.join(d, "log.*")):
                os.remove(old)
            args = ["-c", str(c), "-j", str(c), "-T", str(t), "-l", f"--log-prefix={d}/log"]
            for _, path in files:
                args += ["-f", path]
            srv.pgbench(args, d)
            latencies = [[] for _ in files]
            for logfile in glob.glob(os.path.join(d, "log.*")):
                with open(logfile) as f:
                    for line in f:
                        fields = line.split()
                        latencies[int(fields[3])].append(int(fields[2]))
            mean_us = [trimmed_mean(v) for v in latencies]
            for k, (label, _) in enumerate(files):
                paired[(label, c)].append(mean_us[0] / mean_us[k] if mean_us[k] else None)
                res.add("select", label, c, r + 1, "paired_mean_latency_us", mean_us[k])
            log(f"  round {r + 1}, {c} client(s): " +
                ", ".join(f"{label.split(' (')[0]} {got[label]:,.0f}" for label, _ in files))
    rows = []
    for label, _ in files:
        row = [label]
        for c in (1, 2):
            ratios = [a / b for a, b in zip(tps[(label, c)], tps[(ref, c)])]
            row += [median(tps[(label, c)]), median(ratios), median(paired[(label, c)])]
        rows.append(row)
    res.parts["select"] = dict(t=t, rows=rows)


def targets(p):
    """(target, measured, met) rows: snowflake_nextval() within 5% of SELECT 1, 1 and 2 clients."""
    rows = []
    for row in p["select"]["rows"]:
        if row[0] == "snowflake_nextval()":
            for c, ratio, pair in ((1, row[2], row[3]), (2, row[5], row[6])):
                rows.append((f"pgbench `SELECT snowflake_nextval()` TPS within 5% of `SELECT 1`, {c} client(s)",
                             f"{fmt(ratio, '.1%')} of it (paired: {fmt(pair, '.1%')})",
                             None if ratio is None else ratio >= 0.95))
    return rows


def notes(p):
    """Facts from the same runs that help read the targets (no judgement)."""
    out = []
    r = {row[0].split(" (")[0]: row for row in p["select"]["rows"]}
    sf, ct, one = r.get("snowflake_nextval()"), r.get("clock_timestamp()"), r.get("SELECT 1")
    if sf and ct and None not in (sf[2], sf[5], ct[2], ct[5]):
        out.append(f"`SELECT clock_timestamp();`, which calls a built-in function that only reads the clock, "
                   f"reached {ct[2]:.1%} (1 client) and {ct[5]:.1%} (2 clients) of `SELECT 1`'s TPS in the same "
                   f"rounds (paired: {fmt(ct[3], '.1%')}, {fmt(ct[6], '.1%')}); `snowflake_nextval()` reached "
                   f"{sf[2] / ct[2]:.1%} and {sf[5] / ct[5]:.1%} of `clock_timestamp()`'s (paired: "
                   f"{fmt(sf[3] and ct[3] and sf[3] / ct[3], '.1%')}, {fmt(sf[6] and ct[6] and sf[6] / ct[6], '.1%')}). "
                   "The difference between `SELECT 1` and a one-function `SELECT` is what PostgreSQL spends "
                   "on any function call in a statement (name lookup when parsing, planning, executor "
                   "set-up); part 1 gives the generator's own cost.")
    if one and one[1] and one[4]:
        out.append(f"`SELECT 1` made {one[1]:,.0f} TPS with 1 client and {one[4]:,.0f} with 2 clients"
                   + (": with 1 client the wake-up of the other process on the other CPU, not the query, "
                      "sets the pace, and small differences in service time can change it disproportionately "
                      "(the paired figures share those wake-ups)." if one[4] > 3 * one[1] else "."))
    return out


def section(p, cfg):
    """The Markdown lines of part 3."""
    sp = p["select"]
    L = []
    add = L.append
    add("## 3. pgbench `SELECT <gen>;`\n")
    add(f"`pgbench -n -c C -j C -T {sp['t']}` with a one-line script, one run per script in turn, "
        f"{cfg['pgbench_rounds']} rounds after a warm-up; the ratio is to `SELECT 1` of the same round. "
        "**Paired**: one more run per round with all the scripts (each transaction picks one at random), "
        "ratio of the mean latency of `SELECT 1` to that of the script, from pgbench's per-transaction log "
        "(each script's slowest 1% dropped: stalls of the host): the same ratio, with the noise of this "
        "machine shared by all scripts. `SELECT clock_timestamp();` is not a generator: it shows what "
        "calling any function costs over `SELECT 1` (parse-time function lookup, planning, executor set-up).\n")
    add("| script | TPS, 1 client | vs SELECT 1 | paired | TPS, 2 clients | vs SELECT 1 | paired |\n"
        "|---|---:|---:|---:|---:|---:|---:|")
    for label, t1, r1, p1, t2, r2, p2 in sp["rows"]:
        add(f"| {label} | {fmt(t1)} | {fmt(r1, '.1%')} | {fmt(p1, '.1%')} | {fmt(t2)} | {fmt(r2, '.1%')} | "
            f"{fmt(p2, '.1%')} |")
    add("")
    return L


def panel(p, work):
    """The gnuplot panel of part 3."""
    fn = plot_data(work, "select.dat", [(row[0].split(" (")[0], row[2] and row[2] * 100, row[3] and row[3] * 100,
                                         row[5] and row[5] * 100, row[6] and row[6] * 100)
                                        for row in p["select"]["rows"]])
    return f"""
set title "3. pgbench SELECT <gen>: TPS as % of SELECT 1"
set yrange [0:150]
set key top center horizontal maxrows 2 samplen 2
set style histogram clustered gap 1
plot '{fn}' using 2:xtic(1) title '1 client' lc rgb '#4472c4', '' using 3 title '1 client, paired' lc rgb '#9dc3e6', \\
     '' using 4 title '2 clients' lc rgb '#ed7d31', '' using 5 title '2 clients, paired' lc rgb '#f8cbad', \\
     95 with lines dt 2 lc rgb 'red' title '95% target'"""
