# Concurrent generation with pgbench: many sessions drawing from the shared
# generator never get the same ID, every ID carries the configured shard, and
# each session sees its own IDs strictly increase.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $shard = 42;

my $node = node('concurrency',
	conf  => "snowflake.shard_id = $shard\nmax_connections = 40\n",
	start => 1);
check_generator($node);

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	-- n: insertion order within the table; payload: pgbench client id
	CREATE TABLE t (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		payload int,
		n bigserial);
	-- no primary key: uniqueness is checked by counting, not enforced
	CREATE UNLOGGED TABLE u (id bigint, client int, n bigserial);
});

###########################################################################
# 1. Single-row inserts with the ID as column default.
###########################################################################

my ($clients, $threads, $xacts) = (4, 2, 2000);
$node->pgbench(
	"--no-vacuum --client=$clients --jobs=$threads --transactions=$xacts",
	0,
	[
		qr{number of transactions actually processed: @{[$clients * $xacts]}/@{[$clients * $xacts]}},
		qr{number of failed transactions: 0 \(0\.000%\)}
	],
	[qr{^$}],
	'pgbench: concurrent inserts with snowflake_nextval() default',
	{ '002_insert.sql' => "INSERT INTO t (payload) VALUES (:client_id);\n" },
	'postgres');

is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$clients * $xacts, 'one row per pgbench transaction');
is($node->safe_psql('postgres', 'SELECT count(DISTINCT id) = count(*) FROM t'),
	't', 'all IDs are distinct');
is($node->safe_psql('postgres', 'SELECT count(DISTINCT payload) FROM t'),
	$clients, 'every client inserted rows');
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM t WHERE snowflake_shard_id(id) <> $shard"),
	0,
	"every ID decodes to shard $shard");
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM t, snowflake_layout() l
	WHERE snowflake_sequence(id) NOT BETWEEN 0 AND l.ids_per_ms_per_shard - 1
	   OR snowflake_timestamp(id) NOT BETWEEN now() - interval '5 minutes'
	                                      AND now() + interval '5 minutes'}),
	0,
	'sequences are within the field and timestamps close to now()');
# Each client's inserts ran one after the other: its IDs must increase.
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY payload ORDER BY n) AS prev FROM t) s
	WHERE id <= prev}),
	0,
	'within each client, IDs strictly increase in insertion order');

###########################################################################
# 2. Many IDs per transaction from several clients, into a table without a
#    primary key; duplicates are looked for explicitly.
###########################################################################

my ($clients2, $threads2, $xacts2, $per_xact) = (8, 4, 200, 250);
my $script2 = <<"EOS";
BEGIN;
INSERT INTO u (id, client) SELECT snowflake_nextval(), :client_id FROM generate_series(1, $per_xact);
INSERT INTO u (id, client) VALUES (snowflake_nextval(), :client_id), (snowflake_nextval(), :client_id);
COMMIT;
EOS
$node->pgbench(
	"--no-vacuum --client=$clients2 --jobs=$threads2 --transactions=$xacts2",
	0,
	[
		qr{number of transactions actually processed: @{[$clients2 * $xacts2]}/@{[$clients2 * $xacts2]}},
		qr{number of failed transactions: 0 \(0\.000%\)}
	],
	[qr{^$}],
	'pgbench: many snowflake_nextval() calls per transaction',
	{ '002_many.sql' => $script2 },
	'postgres');

my $expected2 = $clients2 * $xacts2 * ($per_xact + 2);
is($node->safe_psql('postgres', 'SELECT count(*) FROM u'),
	$expected2, 'all generated IDs were stored');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id FROM u GROUP BY id HAVING count(*) > 1) d'),
	0,
	'no ID appears twice');
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM u WHERE snowflake_shard_id(id) <> $shard"),
	0,
	"every ID decodes to shard $shard");
# (timestamp, sequence) pairs are what makes IDs of one shard unique.
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT snowflake_timestamp(id), snowflake_sequence(id) FROM u
		GROUP BY 1, 2 HAVING count(*) > 1) d}),
	0,
	'no two IDs share a timestamp and sequence number');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM u
	WHERE snowflake_timestamp(id) NOT BETWEEN now() - interval '5 minutes'
	                                      AND now() + interval '5 minutes'}),
	0,
	'timestamps are close to now()');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY client ORDER BY n) AS prev FROM u) s
	WHERE id <= prev}),
	0,
	'within each client, IDs strictly increase in generation order');
# IDs generated later than everything in t (run 1) are above all of them.
is( $node->safe_psql(
		'postgres', 'SELECT (SELECT min(id) FROM u) > (SELECT max(id) FROM t)'),
	't',
	'IDs of the second run are above all IDs of the first');

###########################################################################
# 3. More demand than one millisecond's sequence numbers can serve: with
#    4 sequence bits a shard issues 16 IDs per ms, so concurrent clients use
#    up every millisecond, IDs run ahead of the clock (up to
#    snowflake.max_clock_lead) and sessions wait for the clock.
###########################################################################

my $narrow = node(
	'narrow', start => 1, conf => qq{
snowflake.shard_id = $shard
snowflake.sequence_bits = 4
snowflake.max_clock_lead = '1s'
max_connections = 40
});
check_generator($narrow);
$narrow->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE UNLOGGED TABLE u (id bigint, client int, n bigserial);
});

my ($clients3, $xacts3, $per_xact3) = (8, 50, 100);
$narrow->pgbench(
	"--no-vacuum --client=$clients3 --jobs=4 --transactions=$xacts3",
	0,
	[
		qr{number of transactions actually processed: @{[$clients3 * $xacts3]}/@{[$clients3 * $xacts3]}},
		qr{number of failed transactions: 0 \(0\.000%\)}
	],
	[qr{^$}],
	'pgbench: demand beyond 16 IDs per ms',
	{
		'002_narrow.sql' =>
		  "INSERT INTO u (id, client) SELECT snowflake_nextval(), :client_id FROM generate_series(1, $per_xact3);\n"
	},
	'postgres');

is($narrow->safe_psql('postgres', 'SELECT count(*) FROM u'),
	$clients3 * $xacts3 * $per_xact3, 'narrow: all generated IDs were stored');
is( $narrow->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id FROM u GROUP BY id HAVING count(*) > 1) d'),
	0,
	'narrow: no ID appears twice');
is( $narrow->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM u
	WHERE snowflake_shard_id(id) <> $shard OR snowflake_sequence(id) NOT BETWEEN 0 AND 15}),
	0,
	"narrow: every ID decodes to shard $shard with a sequence below 16");
# The demand really exceeded the per-ms capacity: full milliseconds exist.
is( $narrow->safe_psql(
		'postgres', q{
	SELECT count(*) > 0 FROM (
		SELECT snowflake_timestamp(id) FROM u GROUP BY 1 HAVING count(*) = 16) f}),
	't',
	'narrow: some milliseconds used all 16 sequence numbers');
# IDs never run further ahead of the clock than max_clock_lead (1 s); the
# clock has only moved on since they were generated.
is( $narrow->safe_psql(
		'postgres',
		"SELECT max(snowflake_timestamp(id)) <= clock_timestamp() + interval '1 second' FROM u"
	),
	't',
	'narrow: no ID runs ahead of the clock by more than snowflake.max_clock_lead');
is( $narrow->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY client ORDER BY n) AS prev FROM u) s
	WHERE id <= prev}),
	0,
	'narrow: within each client, IDs strictly increase in generation order');

done_testing();
