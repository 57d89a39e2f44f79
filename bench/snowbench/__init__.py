"""The snowflake benchmark, one module per thing measured (run it through bench/run.sh).

servers: scratch servers and the helpers every measurement uses (psql and
pgbench runners, interleaved rounds, medians); report: result files.  The
measurements build on those two only; the entry points (standard, contention,
sequence_start, uuidv7) put measurements together and write bench/results/.
Each module's docstring says what it measures and what it may call.
"""
