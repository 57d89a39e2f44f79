# pg_dump and pg_restore of a database that uses everything, into a second
# server with another shard ID.
#
# The source ("origin", shard 1, logical shards 100-103) has its clock 55 s
# ahead (libfaketime in its postmaster), so the IDs it issued are ahead of the
# second server's real clock, as after a move from a server whose clock ran
# fast.  Its database has: DEFAULT snowflake_nextval(), a generated column and
# expression indexes over the decoders, a view over them, a table partitioned
# by ranges of IDs bounded with snowflake_min_id() (with historical rows in an
# older partition), and logical shards through snowflake_nextval(N), both as
# calls and as a column DEFAULT; and a key of the snowflake type (issue 28),
# range-partitioned, with rows whose IDs lie 10 s further ahead than the
# others (snowflake_adopt_database() must see columns of the type too).
#
# The second server ("target", shard 2, the same logical shards moved to it)
# restores the dump with pg_restore --exit-on-error: no error, no warning; the
# rows, generated values and partitions are identical; the expression indexes
# are consistent with the heap (amcheck).  Then, after
# snowflake_adopt_database() (what the README says to run when the source's
# IDs may be ahead of this server's clock), every new ID is above every
# restored ID: per table, per logical shard, and through the DEFAULTs, with
# the right shard decoded and the rows in the right partition.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

my $origin = node(
	'origin',
	clock_ms => 55_000,    # within the target's lead + wait (65 s)
	start    => 1,
	conf     => qq{
snowflake.shard_id = 1
snowflake.shard_ids = '100-103'
});

$origin->safe_psql('postgres', 'CREATE DATABASE app');
$origin->safe_psql('app', q{
CREATE EXTENSION snowflake;

CREATE TABLE events (
    id         bigint PRIMARY KEY DEFAULT snowflake_nextval(),
    payload    text NOT NULL,
    created_at timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id)) STORED,
    shard      integer GENERATED ALWAYS AS (snowflake_shard_id(id)) STORED
);
CREATE INDEX events_created ON events (snowflake_timestamp(id));
CREATE INDEX events_text ON events (snowflake_to_text(id));
CREATE VIEW events_per_second AS
    SELECT date_trunc('second', snowflake_timestamp(id)) AS second, count(*) AS n
    FROM events GROUP BY 1;

CREATE TABLE orders (
    id   bigint NOT NULL DEFAULT snowflake_nextval(),
    item text,
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE TABLE orders_2024 PARTITION OF orders
    FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00'))
                 TO (snowflake_min_id('2025-01-01 00:00:00+00'));
CREATE TABLE orders_later PARTITION OF orders
    FOR VALUES FROM (snowflake_min_id('2025-01-01 00:00:00+00')) TO (MAXVALUE);

CREATE TABLE tenant_items (
    tenant integer NOT NULL,
    id     bigint NOT NULL,
    note   text,
    PRIMARY KEY (tenant, id)
);
CREATE TABLE tenant_101_log (
    id   bigint PRIMARY KEY DEFAULT snowflake_nextval(101),
    line text
);

INSERT INTO events (payload) SELECT 'e' || g FROM generate_series(1, 3000) g;
-- historical rows of 2024 (IDs made from the bounds), and current ones
INSERT INTO orders (id, item)
    SELECT snowflake_min_id('2024-06-01 00:00:00+00', 1) + g, 'old ' || g
    FROM generate_series(0, 499) g;
INSERT INTO orders (item) SELECT 'new ' || g FROM generate_series(1, 1500) g;
INSERT INTO tenant_items
    SELECT t, snowflake_nextval(t), 'n' || g
    FROM generate_series(100, 103) t, generate_series(1, 500) g;
INSERT INTO tenant_101_log (line) SELECT 'l' || g FROM generate_series(1, 500) g;

CREATE TABLE posts (
    id   snowflake PRIMARY KEY DEFAULT snowflake_nextval(),
    body text
) PARTITION BY RANGE (id);
CREATE TABLE posts_2024 PARTITION OF posts
    FOR VALUES FROM (snowflake_min_id('2024-01-01 00:00:00+00'))
                 TO (snowflake_min_id('2025-01-01 00:00:00+00'));
CREATE TABLE posts_later PARTITION OF posts
    FOR VALUES FROM (snowflake_min_id('2025-01-01 00:00:00+00')) TO (MAXVALUE);
INSERT INTO posts (id, body)
    SELECT snowflake_min_id('2024-06-01 00:00:00+00', 1) + g, 'old' FROM generate_series(0, 99) g;
INSERT INTO posts (body) SELECT 'p' || g FROM generate_series(1, 1000) g;
INSERT INTO posts (id, body)
    SELECT snowflake_min_id(now() + interval '10 s', 1) + g, 'ahead' FROM generate_series(0, 99) g;
});

my @tables = qw(events orders orders_2024 orders_later tenant_items tenant_101_log posts posts_2024 posts_later);
my $rows_sql = {
	events         => 'SELECT id, payload, created_at, shard FROM events ORDER BY id',
	orders         => 'SELECT id, item FROM orders ORDER BY id',
	orders_2024    => 'SELECT id, item FROM orders_2024 ORDER BY id',
	orders_later   => 'SELECT id, item FROM orders_later ORDER BY id',
	tenant_items   => 'SELECT tenant, id, note FROM tenant_items ORDER BY tenant, id',
	tenant_101_log => 'SELECT id, line FROM tenant_101_log ORDER BY id',
	posts          => 'SELECT id, body, to_json(id) FROM posts ORDER BY id',
	posts_2024     => 'SELECT id, body FROM posts_2024 ORDER BY id',
	posts_later    => 'SELECT id, body FROM posts_later ORDER BY id',
};

# A digest and a count of a table's rows.
sub digest
{
	my ($node, $table) = @_;
	return $node->safe_psql('app',
		"SELECT count(*) || ' rows, ' || md5(coalesce(string_agg(r::text, ';'), '')) "
		  . "FROM ($rows_sql->{$table}) r");
}
my %before = map { $_ => digest($origin, $_) } @tables;
is($origin->safe_psql('app', 'SELECT count(*) FROM orders_2024'), 500,
	'origin: the historical rows are in the 2024 partition');

# pg_dump (custom format) with the origin's own tools
my $dump = $origin->basedir . '/app.dump';
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $origin->connstr('app') ],
	'>', \$out, '2>', \$err);
ok($ok, 'pg_dump of the database succeeds') or diag($err);
is($err, '', 'pg_dump prints no warning');
$origin->stop;

my $target = node(
	'target', start => 1, conf => qq{
snowflake.shard_id = 2
snowflake.shard_ids = '100-103'
snowflake.max_clock_lead = '60s'
});
$target->safe_psql('postgres', 'CREATE DATABASE app');

($out, $err) = ('', '');
$ok = IPC::Run::run(
	[ 'pg_restore', '--exit-on-error', '-d', $target->connstr('app'), $dump ],
	'>', \$out, '2>', \$err);
ok($ok, 'pg_restore into the second server succeeds') or diag($err);
is($err, '', 'pg_restore prints no error and no warning');
# (checked at once: the origin's lead of 40 s, 50 s for the rows of posts
# made 10 s ahead, shrinks as the test runs, slowly on a loaded machine)
is($target->safe_psql('app',
		q{SELECT snowflake_timestamp(max(id)) > clock_timestamp() + interval '10 s' FROM posts}),
	't', 'the restored IDs are ahead of the second server\'s clock');

foreach my $t (@tables)
{
	is(digest($target, $t), $before{$t}, "restored $t: the same rows (ids, payloads, generated columns)");
}
is($target->safe_psql('app', q{
	SELECT count(*) FROM events
	WHERE created_at IS DISTINCT FROM snowflake_timestamp(id) OR shard <> 1}),
	0, 'restored events: the generated columns match the decoders');
is($target->safe_psql('app', q{
	SELECT count(*) FROM pg_inherits WHERE inhparent = 'orders'::regclass}),
	2, 'restored orders: both partitions are attached');
is($target->safe_psql('app', q{
	SELECT (SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = 'orders_2024')
	     = format('FOR VALUES FROM (''%s'') TO (''%s'')',
	              snowflake_min_id('2024-01-01 00:00:00+00'),
	              snowflake_min_id('2025-01-01 00:00:00+00'))}),
	't', 'restored orders_2024: bounded by snowflake_min_id of its dates');
is($target->safe_psql('app', q{
	SELECT format_type(atttypid, atttypmod) FROM pg_attribute
	WHERE attrelid = 'posts'::regclass AND attname = 'id'}),
	'snowflake', 'restored posts: the key is of type snowflake');
is($target->safe_psql('app', q{
	SELECT (SELECT count(*) FROM posts WHERE id >= timestamptz '2025-01-01')
	     = (SELECT count(*) FROM posts WHERE snowflake_timestamp(id) >= '2025-01-01')
	   AND (SELECT json_typeof(to_json(max(id))) FROM posts) = 'string'}),
	't', 'restored posts: time comparisons and JSON strings work');

# the expression indexes were rebuilt over the restored rows, and agree with them
$target->safe_psql('app', 'CREATE EXTENSION amcheck');
foreach my $index (qw(events_created events_text events_pkey orders_2024_pkey orders_later_pkey
	posts_2024_pkey posts_later_pkey))
{
	my ($ret, $stdout, $stderr) = $target->psql('app',
		"SELECT bt_index_check('$index'::regclass, true)");
	is($ret, 0, "restored index $index is consistent with its table (amcheck)") or diag($stderr);
}
is($target->safe_psql('app', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '2024-01-01'}),
	3000, 'restored events: the timestamp index finds every row');

# The origin's IDs are ahead of this server's clock: without help it would
# start below them.  snowflake_adopt_database() raises its floor above them.
my %max_before;
$max_before{$_} = $target->safe_psql('app', "SELECT max(id) FROM $_") for @tables;
my $top = $target->safe_psql('app', q{
	SELECT max(m) FROM (SELECT max(id) AS m FROM events UNION ALL SELECT max(id) FROM orders
	                    UNION ALL SELECT max(id) FROM tenant_items
	                    UNION ALL SELECT max(id) FROM tenant_101_log
	                    UNION ALL SELECT max(id)::bigint FROM posts) s});
is($target->safe_psql('app', qq{
	SELECT snowflake_adopt_database() >= snowflake_timestamp($top)}),
	't', 'snowflake_adopt_database() resumes at or above the newest restored ID');

$target->safe_psql('app', q{
INSERT INTO events (payload) SELECT 'after ' || g FROM generate_series(1, 2000) g;
INSERT INTO orders (item) SELECT 'after ' || g FROM generate_series(1, 1000) g;
INSERT INTO tenant_items
    SELECT t, snowflake_nextval(t), 'after'
    FROM generate_series(100, 103) t, generate_series(1, 300) g;
INSERT INTO tenant_101_log (line) SELECT 'after' FROM generate_series(1, 300) g;
INSERT INTO posts (body) SELECT 'after' FROM generate_series(1, 300) g;
});

is($target->safe_psql('app', qq{
	SELECT min(id) > $max_before{events} AND count(*) = 2000 AND bool_and(shard = 2)
	       AND bool_and(created_at = snowflake_timestamp(id))
	FROM events WHERE payload LIKE 'after %'}),
	't', 'events: every new ID (shard 2, from the DEFAULT) is above every restored one');
is($target->safe_psql('app', qq{
	SELECT min(id) > $max_before{orders} AND bool_and(snowflake_shard_id(id) = 2)
	FROM orders WHERE item LIKE 'after %'}),
	't', 'orders: every new ID is above every restored one');
is($target->safe_psql('app', q{SELECT count(*) FROM orders_later WHERE item LIKE 'after %'}),
	1000, 'orders: the new rows are in the current partition');
is($target->safe_psql('app', q{
	SELECT count(*) FROM generate_series(100, 103) t
	WHERE (SELECT min(id) FROM tenant_items WHERE tenant = t AND note = 'after')
	    > (SELECT max(id) FROM tenant_items WHERE tenant = t AND note <> 'after')
	  AND (SELECT bool_and(snowflake_shard_id(id) = t) FROM tenant_items WHERE tenant = t)}),
	4, 'logical shards 100-103: each shard\'s new IDs are above its restored ones, with its shard');
is($target->safe_psql('app', qq{
	SELECT min(id) > $max_before{tenant_101_log} AND bool_and(snowflake_shard_id(id) = 101)
	FROM tenant_101_log WHERE line = 'after'}),
	't', 'tenant_101_log: DEFAULT snowflake_nextval(101) continues above the restored IDs');
is($target->safe_psql('app', qq{
	SELECT min(id) > $max_before{posts} AND bool_and(snowflake_shard_id(id) = 2)
	FROM posts WHERE body = 'after'}),
	't', 'posts (a key of type snowflake): every new ID is above every restored one');
is($target->safe_psql('app', q{
	SELECT (SELECT count(*) FROM events) = (SELECT count(DISTINCT id) FROM events)
	   AND (SELECT count(*) FROM tenant_items) = (SELECT count(DISTINCT id) FROM tenant_items)}),
	't', 'no ID appears twice');
is($target->safe_psql('app', 'SELECT sum(n) FROM events_per_second'),
	5000, 'the view over the decoders counts restored and new rows');

$target->stop;
done_testing();
