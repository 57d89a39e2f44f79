"""The snowflake benchmark, one module per thing measured (run it through bench/run.sh).

servers: scratch servers and the helpers every measurement uses (psql and
pgbench runners, interleaved rounds); stats: medians with their range, per-round
ratios, distributions; provenance: the commit, machine and load a result comes
from; report: raw results and CSV.  The measurements (percall, contention,
inserts) build on those; the entry points (standard, uuidv7, sequence_start)
put measurements together and write bench/results/.  Each module's docstring
says what it measures and what it may call.
"""
