"""The standard run of bench/run.sh: snowflake side by side with what it replaces.

What it measures: nothing itself; it starts two scratch servers (one with the
wide layout, one with the default layout) and runs, in this order, percall
(part 1), throughput (part 2), select_tps (part 3) and inserts (part 4).  A part
that fails is reported and the others go on.  Writes latest.md (machine,
targets met or not met, a table per part), latest.csv (every raw measurement)
and latest.png.  Nothing is asserted.

What it may call: servers, report, percall, throughput, select_tps, inserts.

    python3 -m snowbench.standard --work DIR --results DIR [--quick]
"""
import argparse
import os
import signal
import sys
import time

from . import inserts, percall, select_tps, throughput
from .report import Results, have_gnuplot, machine_info, run_gnuplot, utc_now, verdict, write_csv
from .servers import Server, log

MODES = {
    # rounds: parts 1 and 2; pgbench_rounds: parts 3 and 4 (pgbench is the noisiest)
    "full":  dict(rounds=5, percall_n=2_000_000, tput_ids=28_000_000,
                  pgbench_rounds=7, pgbench_t=3, insert_t=20_000, prefill=600_000,
                  bulk_n=2_000_000, bulk_rounds=3),
    "quick": dict(rounds=3, percall_n=500_000, tput_ids=12_000_000,
                  pgbench_rounds=3, pgbench_t=1, insert_t=5_000, prefill=150_000,
                  bulk_n=500_000, bulk_rounds=1),
}
WIDE_LAYOUT_CONF = """
snowflake.shard_bits = 3        # wide sequence field: 2^22 IDs per ms, a ceiling that never binds
snowflake.sequence_bits = 22
snowflake.shard_ids = '2'       # a logical shard for snowflake_nextval(shard)
"""
SETUP_SQL = "\nCREATE EXTENSION IF NOT EXISTS snowflake;" + percall.SETUP_SQL + throughput.SETUP_SQL.lstrip("\n")


def targets(p):
    """(target, measured, met) rows of every part that ran."""
    rows = []
    if "percall" in p:
        rows += percall.targets(p)
    if "select" in p:
        rows += select_tps.targets(p)
    if "throughput" in p:
        rows += throughput.targets(p)
    if "insert" in p:
        rows += inserts.targets(p)
    return rows


def notes(p):
    out = []
    if "select" in p:
        out += select_tps.notes(p)
    if "insert" in p:
        out += inserts.notes(p)
    return out


def write_markdown(path, res, info, cfg, mode, elapsed):
    p = res.parts
    L = []
    add = L.append
    add("# snowflake benchmark results\n")
    add(f"Mode **{mode}**, {info['date']}, whole run {elapsed / 60:.1f} min. "
        "Every figure is a median over rounds in which the generators take turns; ratios are taken "
        "within a round and then the median is reported. See `bench/README.md` for the method.\n")
    add("| machine | |\n|---|---|")
    add(f"| CPUs (nproc) | {info['nproc']} |")
    add(f"| CPU model | {info['cpu']} |")
    add(f"| PostgreSQL | {info['pg']} |")
    add(f"| kernel | {info['kernel']} |")
    add(f"| extension | {info['so']}, repository at {info['git']} |")
    add(f"| date | {info['date']} |\n")
    add("Servers: scratch, `shared_buffers = 16MB`, `jit = off`, `autovacuum = off`, "
        "`max_parallel_workers_per_gather = 0`, `max_wal_size = 4GB`; otherwise defaults "
        "(`synchronous_commit = on` except in part 4, see there). Clients connect over the Unix socket.\n")

    add("## Targets\n")
    add("| target | measured | |\n|---|---|---|")
    for target, measured, ok in targets(p):
        add(f"| {target} | {measured} | {verdict(ok)} |")
    add("")
    for note in notes(p):
        add(f"- {note}")
    add("")

    if "percall" in p:
        L += percall.section(p, cfg)
    if "throughput" in p:
        L += throughput.section(p, cfg)
    if "select" in p:
        L += select_tps.section(p, cfg)
    if "insert" in p or "bulk" in p:
        L += inserts.section(p, cfg)
    if res.errors:
        add("## Errors\n")
        for part, err in res.errors.items():
            add(f"- part {part}: `{err}`")
        add("")
    add("![plot](latest.png)\n")
    text = "\n".join(L)
    with open(path, "w") as f:
        f.write(text)
    return text


def write_plot(path, res, work):
    if not have_gnuplot():
        log("gnuplot missing: no plot")
        return
    p = res.parts
    panels = []
    if "percall" in p:
        panels.append(percall.panel(p, work))
    if "throughput" in p:
        panels.append(throughput.panel(p, work))
    if "select" in p:
        panels.append(select_tps.panel(p, work))
    if "insert" in p:
        panels.append(inserts.panel(p, work))
    if not panels:
        return
    cols = 2
    rows_n = (len(panels) + 1) // 2
    script = f"""
set terminal pngcairo size 1400,{480 * rows_n} font 'sans,10' noenhanced
set output '{path}'
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics rotate by -20 scale 0
set multiplot layout {rows_n},{cols}
{''.join(panels)}
unset multiplot
"""
    run_gnuplot(work, "plot.gp", script)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds (under 2 minutes)")
    ap.add_argument("--work", required=True, help="empty temporary folder for the scratch servers")
    ap.add_argument("--results", required=True, help="folder for latest.md, latest.csv, latest.png")
    args = ap.parse_args()
    mode = "quick" if args.quick else "full"
    cfg = MODES[mode]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    res = Results()
    servers = []
    info = None
    try:
        log(f"{mode} run; scratch servers under {args.work}")
        wide = Server(args.work, "wide", WIDE_LAYOUT_CONF)
        servers.append(wide)
        default = Server(args.work, "default")
        servers.append(default)
        for s in servers:
            s.start()
            s.psql(SETUP_SQL)
        info = machine_info(default)
        info["date"] = utc_now()
        for name, fn in (("1", lambda: percall.run(wide, cfg, res)),
                         ("2", lambda: throughput.run(default, cfg, res)),
                         ("3", lambda: select_tps.run(default, cfg, res, args.work)),
                         ("4", lambda: inserts.run(default, cfg, res, args.work))):
            try:
                fn()
            except Exception as e:      # report it and go on with the other parts
                res.errors[name] = str(e)[-400:]
                log(f"part {name} failed: {e}")
    finally:
        for s in servers:
            s.stop()
    elapsed = time.time() - started
    os.makedirs(args.results, exist_ok=True)
    if info is None:
        info = machine_info(None)
        info["date"] = utc_now()
    write_csv(os.path.join(args.results, "latest.csv"), res)
    write_plot(os.path.join(args.results, "latest.png"), res, args.work)
    text = write_markdown(os.path.join(args.results, "latest.md"), res, info, cfg, mode, elapsed)
    print()
    print(text)
    log(f"done in {elapsed:.0f} s: {args.results}/latest.md, latest.csv, latest.png")


if __name__ == "__main__":
    main()
