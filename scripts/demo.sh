#!/usr/bin/env bash
# Builds and installs snowflake, starts a scratch PostgreSQL 15 server with it
# preloaded (data in ./demo/, port 5440 on localhost), creates a demo table
# whose primary key defaults to snowflake_nextval(), inserts rows, decodes them
# and prints how to connect.  Run as root on Debian 12 (it installs packages).
#
#   bash scripts/demo.sh           # set up (or restart) and show it working
#   bash scripts/demo.sh stop      # stop the demo server
#   DEMO_PORT=5441 DEMO_DIR=/var/tmp/sf bash scripts/demo.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

DEMO_DIR=${DEMO_DIR:-$REPO/demo}
DEMO_PORT=${DEMO_PORT:-5440}
DATA=$DEMO_DIR/data

if [ "${1:-}" = stop ]; then
  as_pg pg_ctl -D "$DATA" -m fast stop
  exit 0
fi

bash "$REPO/scripts/install-deps.sh"
build_and_install

mkdir -p "$DEMO_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$DEMO_DIR"
if ! as_pg test -w "$DEMO_DIR"; then
  echo "the postgres user cannot write to $DEMO_DIR; set DEMO_DIR to a folder it can use" >&2
  exit 1
fi

if [ ! -f "$DATA/PG_VERSION" ]; then
  as_pg initdb -D "$DATA" -A trust -U postgres >/dev/null
  cat >> "$DATA/postgresql.conf" <<CONF

# --- snowflake demo ---
port = $DEMO_PORT
listen_addresses = 'localhost'
unix_socket_directories = '$DEMO_DIR'
shared_preload_libraries = 'snowflake'
snowflake.shard_id = 1          # this server's shard: unique per server
CONF
fi

as_pg pg_ctl -D "$DATA" status >/dev/null 2>&1 && as_pg pg_ctl -D "$DATA" -m fast stop >/dev/null
as_pg pg_ctl -D "$DATA" -l "$DEMO_DIR/server.log" -w start >/dev/null

psql_demo() { as_pg psql -X -q -h "$DEMO_DIR" -p "$DEMO_PORT" -U postgres -d postgres "$@"; }

psql_demo -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS snowflake;
CREATE TABLE IF NOT EXISTS demo_orders (
    id       bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    customer text NOT NULL,
    amount   numeric(10,2) NOT NULL
);
INSERT INTO demo_orders (customer, amount)
SELECT 'customer ' || g, round((random() * 100)::numeric, 2)
FROM generate_series(1, 5) AS g;

\echo
\echo '== the layout of this server'
SELECT * FROM snowflake_layout();
\echo '== the last rows inserted, with their IDs decoded'
SELECT o.id, d.created_at, d.shard_id, d.sequence, o.customer
FROM (SELECT * FROM demo_orders ORDER BY id DESC LIMIT 5) o,
     snowflake_decode(o.id) d
ORDER BY o.id;
SQL

cat <<MSG
The demo server is running with snowflake loaded (data in $DATA).
Connect with:
    runuser -u postgres -- psql -h $DEMO_DIR -p $DEMO_PORT -d postgres
    psql "host=localhost port=$DEMO_PORT user=postgres dbname=postgres"
Stop it with:
    bash scripts/demo.sh stop
MSG
