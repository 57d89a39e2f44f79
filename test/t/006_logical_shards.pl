# Logical shards: one server generating for several shards at once
# (snowflake_nextval(shard_id), snowflake_nextval_batch(count, shard_id)).
#
#  (b) pgbench clients draw single IDs, batches and default-shard IDs from
#      shards 0-8 at once, with 64 IDs per millisecond per shard so that
#      milliseconds really fill up: no duplicates, every ID carries the shard
#      it was asked for, each session's IDs of a shard increase, statistics
#      count what was issued;
#  (c) a shard saturated by a huge batch does not slow down another shard or
#      eat into its sequence numbers;
#  (d) snowflake.max_shards caps the distinct shards of one run of the server;
#  (e) snowflake.shard_ids follows reloads, in both directions.
#
# Every assertion is about relations between IDs, decoded fields, counters
# or errors; no raw ID or wall-clock value is compared with a constant.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(usleep);

# Runs a statement and reports how it ended: 'ok', or
# "SQLSTATE|message|detail|hint" of the error it raised.
my $try_sql = q{
CREATE FUNCTION try_sql(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text; msg text; det text; hnt text;
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
		det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
	RETURN st || '|' || msg || '|' || det || '|' || hnt;
END $$;
};

###########################################################################
# (a) A server generating for shard 0 (snowflake.shard_id) and shards 1-8
#     (snowflake.shard_ids), 64 IDs per millisecond per shard.
###########################################################################

my $node = node(
	'shards', start => 1, conf => q{
snowflake.shard_id = 0
snowflake.shard_ids = '1-8'
snowflake.sequence_bits = 6
max_connections = 40
});
check_generator($node);

$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION snowflake;
	$try_sql
	-- client: the backend that inserted the row
	CREATE TABLE t (
		id bigint PRIMARY KEY,
		shard int NOT NULL,
		client int NOT NULL DEFAULT pg_backend_pid(),
		n bigserial);
	-- every ID as generated, committed before it goes into t; no key, so
	-- duplicates are counted here rather than refused.  n is the order of
	-- insertion, which within one backend is the order of generation.
	CREATE UNLOGGED TABLE u (
		id bigint NOT NULL,
		shard int NOT NULL,
		pid int NOT NULL DEFAULT pg_backend_pid(),
		kind text NOT NULL,
		n bigserial);
	CREATE INDEX ON u (n);
});

is( $node->safe_psql(
		'postgres',
		'SELECT sequence_bits, ids_per_ms_per_shard FROM snowflake_layout()'),
	'6|64',
	'layout: 6 sequence bits, 64 IDs per millisecond per shard');
is($node->safe_psql('postgres', 'SELECT count(*) FROM snowflake_stats'),
	0, 'no shard has been used yet');

###########################################################################
# (b) Concurrent clients, several shards, singles and batches at once.
###########################################################################

my ($clients, $jobs, $xacts, $batch) = (6, 3, 500, 500);

my %scripts = (
	# a single ID of a random shard 1-8
	'006_single.sql@4' => q{
\set s random(1, 8)
INSERT INTO u (shard, id, kind) VALUES (:s, snowflake_nextval(:s), 'single') RETURNING id AS gid
\gset
INSERT INTO t (shard, id) VALUES (:s, :gid);
},
	# a batch of a random shard 1-8
	'006_batch.sql@1' => qq{
\\set s random(1, 8)
WITH ins AS (
	INSERT INTO u (shard, id, kind)
	SELECT :s, id, 'batch' FROM snowflake_nextval_batch($batch, :s) AS id
	RETURNING n)
SELECT min(n) AS lo, max(n) AS hi FROM ins
\\gset
INSERT INTO t (shard, id)
SELECT shard, id FROM u WHERE n BETWEEN :lo AND :hi AND pid = pg_backend_pid();
},
	# the server's own shard (snowflake.shard_id = 0)
	'006_default.sql@2' => q{
INSERT INTO u (shard, id, kind) VALUES (0, snowflake_nextval(), 'default') RETURNING id AS gid
\gset
INSERT INTO t (shard, id) VALUES (0, :gid);
},);

my $total = $clients * $xacts;
$node->pgbench(
	"--no-vacuum --client=$clients --jobs=$jobs --transactions=$xacts",
	0,
	[
		qr{number of transactions actually processed: $total/$total},
		qr{number of failed transactions: 0 \(0\.000%\)}
	],
	[qr{^$}],
	'pgbench: singles, batches and default-shard IDs from shards 0-8 at once',
	\%scripts,
	'postgres');

is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(DISTINCT kind, ',' ORDER BY kind),
		         string_agg(DISTINCT shard::text, ',' ORDER BY shard::text)
		  FROM u}),
	'batch,default,single|0,1,2,3,4,5,6,7,8',
	'all three scripts ran, and every shard 0-8 was used');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FILTER (WHERE kind = 'batch') % 500 FROM u}),
	0,
	'every batch returned its full count');
is( $node->safe_psql(
		'postgres',
		q{SELECT (SELECT count(*) FROM u) = (SELECT count(*) FROM t),
		         (SELECT count(*) FROM u LEFT JOIN t USING (id)
		          WHERE t.id IS NULL OR t.shard <> u.shard)}),
	't|0',
	'every generated ID is in t, with its shard');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM (SELECT id FROM u GROUP BY id HAVING count(*) > 1) d'),
	0,
	'no ID was issued twice (table without a key)');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM u WHERE snowflake_shard_id(id) <> shard'),
	0,
	'every ID decodes to the shard it was asked for');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM t WHERE snowflake_shard_id(id) <> shard'),
	0,
	'every row of t decodes to the shard it was asked for');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM u
	WHERE snowflake_timestamp(id) NOT BETWEEN now() - interval '5 minutes'
	                                      AND now() + interval '5 minutes'}),
	0,
	'timestamps decode to within 5 minutes of now()');

# Within one session, a shard's IDs increase in the order they were obtained
# (singles, batches and their rows alike).
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY pid, shard ORDER BY n) AS prev FROM u) s
	WHERE id <= prev}),
	0,
	'per session and shard, IDs strictly increase in the order obtained');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) > 0 FROM (
		SELECT 1 FROM u GROUP BY pid, shard HAVING count(*) > 1) s}),
	't',
	'sessions drew several IDs of the same shard');

is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM u WHERE snowflake_sequence(id) NOT BETWEEN 0 AND 63'),
	0,
	'no decoded sequence exceeds 63');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT shard, snowflake_timestamp(id), snowflake_sequence(id) FROM u
		GROUP BY 1, 2, 3 HAVING count(*) > 1) d}),
	0,
	'no (shard, timestamp, sequence) triple repeats');

# The layout really was the limit: milliseconds filled up, and several
# sessions shared milliseconds of the same shard.
my ($full_ms, $shared_ms, $all_ms) = split /\|/, $node->safe_psql(
	'postgres', q{
	SELECT count(*) FILTER (WHERE c = 64), count(*) FILTER (WHERE p > 1), count(*)
	FROM (SELECT count(*) AS c, count(DISTINCT pid) AS p
	      FROM u GROUP BY shard, snowflake_timestamp(id)) f});
note "(shard, millisecond) pairs: $all_ms, full: $full_ms, shared by sessions: $shared_ms";
cmp_ok($full_ms, '>', 0,
	'some milliseconds of a shard used all 64 sequence numbers');
cmp_ok($shared_ms, '>', 0,
	'some milliseconds of a shard were shared by several sessions');

# Statistics: one row per shard used, counting at least what was stored.
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*), count(DISTINCT shard_id),
	       string_agg(shard_id::text, ',' ORDER BY shard_id)
	FROM snowflake_stats}),
	'9|9|0,1,2,3,4,5,6,7,8',
	'snowflake_stats: one row per shard used (0-8)');
is( $node->safe_psql(
		'postgres', q{
	SELECT (SELECT sum(ids_issued) FROM snowflake_stats WHERE shard_id BETWEEN 1 AND 8)
	    >= (SELECT count(*) FROM u WHERE shard BETWEEN 1 AND 8),
	       (SELECT ids_issued FROM snowflake_stats WHERE shard_id = 0)
	    >= (SELECT count(*) FROM u WHERE shard = 0)}),
	't|t',
	'snowflake_stats: ids_issued covers every stored ID');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM snowflake_stats s
	WHERE ids_issued < (SELECT count(*) FROM u WHERE u.shard = s.shard_id)}),
	0,
	'snowflake_stats: each shard counted at least the IDs stored for it');

###########################################################################
# (c) Shard independence: while a batch of 2,000,000 saturates shard 1
#     (64 IDs per ms: it runs max_clock_lead ahead and waits for the clock),
#     single calls on shard 2 are served at once, and within each
#     millisecond their sequence counts 0, 1, 2, ... without gaps.
###########################################################################

# Start from a shard 2 that is not ahead of the clock, so that its next
# millisecond starts at sequence 0.
ok( $node->poll_query_until(
		'postgres', q{
	SELECT last_timestamp < clock_timestamp() FROM snowflake_stats WHERE shard_id = 2}),
	'shard 2 is not ahead of the clock');

my $hammer = $node->background_psql('postgres', on_error_stop => 0);
$hammer->query_safe("SET application_name = 'hammer'");
my $hammer_pid = $hammer->query_safe('SELECT pg_backend_pid()');
like($hammer_pid, qr/^\d+$/, 'hammer session is connected');
$hammer->query_until(qr/hammer-start/,
	"\\echo hammer-start\nSELECT count(*) FROM snowflake_nextval_batch(2000000, 1);\n");

# Saturated: shard 1 runs (almost) max_clock_lead ahead of the clock.
ok( $node->poll_query_until(
		'postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	WHERE application_name = 'hammer' AND state = 'active'
	  AND query LIKE '%snowflake_nextval_batch(2000000, 1)%'
	  AND (SELECT current_lead_ms > 500 FROM snowflake_stats WHERE shard_id = 1)}),
	'the batch saturates shard 1 (it runs ahead of the clock)');

my $stats_sql = q{
	SELECT ids_issued, waits, sequence_exhausted FROM snowflake_stats
	WHERE shard_id = %d};
my ($s1_issued_0, $s1_waits_0, $s1_exh_0) = split /\|/,
  $node->safe_psql('postgres', sprintf($stats_sql, 1));
my ($s2_issued_0, $s2_waits_0) = split /\|/,
  $node->safe_psql('postgres', sprintf($stats_sql, 2));

# What the code guarantees is that no shard 2 call waits (checked below on
# snowflake_stats); the time, taken by the server's clock around the calls
# (psql's start is the loaded machine's business), is bounded far below the
# half minute of clock time the shard 1 batch needs, so that the calls were
# not held up behind it either.
my $singles = 3000;
my $elapsed = $node->safe_psql(
	'postgres', qq{
	CREATE TEMP TABLE c2_t0 AS SELECT clock_timestamp() AS t0;
	CREATE TABLE c2 AS
	SELECT g AS n, snowflake_nextval(2) AS id FROM generate_series(1, $singles) g;
	INSERT INTO c2 VALUES ($singles + 1, snowflake_nextval(2));
	INSERT INTO c2 VALUES ($singles + 2, snowflake_nextval(2));
	SELECT extract(epoch FROM clock_timestamp() - t0) FROM c2_t0;
});
cmp_ok($elapsed, '<', 10,
	"shard 2: $singles single calls returned promptly while shard 1 was saturated");

is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	WHERE pid = $hammer_pid AND state = 'active'}),
	't',
	'the shard 1 batch was still running throughout');
my ($s1_issued_1, $s1_waits_1, $s1_exh_1, $s1_lead_1) = split /\|/,
  $node->safe_psql('postgres',
	'SELECT ids_issued, waits, sequence_exhausted, current_lead_ms FROM snowflake_stats WHERE shard_id = 1'
  );
my ($s2_issued_1, $s2_waits_1) = split /\|/,
  $node->safe_psql('postgres', sprintf($stats_sql, 2));
cmp_ok($s1_issued_1, '>', $s1_issued_0,
	'shard 1 kept issuing IDs meanwhile');
cmp_ok($s1_exh_1, '>', $s1_exh_0,
	'shard 1 kept using up its milliseconds meanwhile');
cmp_ok($s1_waits_1, '>', $s1_waits_0,
	'shard 1 kept waiting for the clock meanwhile');
cmp_ok($s1_lead_1, '>', 0, 'shard 1 was still ahead of the clock afterwards');
is($s2_waits_1 - $s2_waits_0, 0, 'no shard 2 call waited for the clock');
is($s2_issued_1 - $s2_issued_0, $singles + 2,
	'shard 2 counted exactly its own IDs');

is( $node->safe_psql(
		'postgres', q{
	SELECT count(*), count(DISTINCT id),
	       count(*) FILTER (WHERE snowflake_shard_id(id) <> 2)
	FROM c2}),
	($singles + 2) . '|' . ($singles + 2) . '|0',
	'shard 2: distinct IDs, all of shard 2');
is( $node->safe_psql(
		'postgres',
		q{SELECT (SELECT min(id) FROM c2) > (SELECT max(id) FROM u WHERE shard = 2)}),
	't',
	'shard 2: new IDs are above its earlier ones');
# n is the order of the calls; nobody else uses shard 2, so each millisecond
# counts up by one from its start: 0 when borrowed, below 64 / 16 = 4 when
# the clock opened it (snowflake.sequence_start = 'random', the default).
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, snowflake_timestamp(id) AS ts, snowflake_sequence(id) AS seq,
		       lag(snowflake_timestamp(id)) OVER (ORDER BY n) AS prev_ts,
		       lag(snowflake_sequence(id)) OVER (ORDER BY n) AS prev_seq
		FROM c2) s
	WHERE NOT ((prev_ts IS NULL AND seq < 4)
	        OR (ts = prev_ts AND seq = prev_seq + 1)
	        OR (ts > prev_ts AND seq < 4))}),
	0,
	'shard 2: within each millisecond the sequence counts up from its start without gaps');
my $c2_full = $node->safe_psql(
	'postgres', q{
	SELECT count(*) FROM (
		SELECT 1 FROM c2 GROUP BY snowflake_timestamp(id) HAVING count(*) = 64) f});
note "shard 2: $c2_full full milliseconds; $singles calls took $elapsed s";
cmp_ok($c2_full, '>', 0,
	'shard 2: some milliseconds used all 64 sequence numbers while shard 1 was saturated');

# Stop the batch (it would run for half a minute at 64 IDs per ms).
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($hammer_pid)"),
	't', 'cancel the shard 1 batch');
$hammer->query('SELECT 1');
like(
	$hammer->{stderr},
	qr/canceling statement due to user request/,
	'the shard 1 batch answered the cancel');
$hammer->quit;

###########################################################################
# (d) snowflake.max_shards: how many distinct shards one run of the server
#     can generate for.
###########################################################################

my $capped = node(
	'capped', start => 1, conf => q{
snowflake.shard_id = 0
snowflake.shard_ids = '0-10'
snowflake.max_shards = 3
});
check_generator($capped);
$capped->safe_psql('postgres', "CREATE EXTENSION snowflake;\n$try_sql");

# The refusal of a shard beyond the cap, SQLSTATE aside: message, detail
# naming the shard, hint.
sub too_many
{
	my ($s) = @_;
	return qr/^\d{5}\|too many shards: this server has generated IDs for 3 shards since it started\|Shard $s would need state of its own, and snowflake\.max_shards is 3\.\|Raise snowflake\.max_shards and restart the server\.$/;
}

foreach my $s (0, 1, 2)
{
	is( $capped->safe_psql(
			'postgres',
			"SELECT try_sql('SELECT snowflake_nextval($s)')"),
		'ok',
		"max_shards 3: shard $s works");
}
my $r = $capped->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval(3)')");
like($r, too_many(3),
	'max_shards 3: a fourth shard fails with "too many shards", naming it, with the hint to raise snowflake.max_shards');
is((split /\|/, $r)[0], '53400',
	'max_shards 3: the "too many shards" error has SQLSTATE 53400 (configuration_limit_exceeded)');
like(
	$capped->safe_psql(
		'postgres', "SELECT try_sql('SELECT count(*) FROM snowflake_nextval_batch(10, 4)')"),
	too_many(4),
	'max_shards 3: a batch of another shard fails the same way');
is( $capped->safe_psql(
		'postgres', q{
	SELECT snowflake_shard_id(snowflake_nextval(0)), snowflake_shard_id(snowflake_nextval(1)),
	       snowflake_shard_id(snowflake_nextval(2)),
	       (SELECT count(*) FROM snowflake_nextval_batch(100, 2))}),
	'0|1|2|100',
	'max_shards 3: the three shards in use keep working after a refusal');
is( $capped->safe_psql(
		'postgres',
		q{SELECT string_agg(shard_id::text, ',' ORDER BY shard_id) FROM snowflake_stats}),
	'0,1,2',
	'max_shards 3: snowflake_stats shows the three shards used');

# The capacity is per run of the server: after a restart, any three; but
# while snowflake.shard_id (0) has no slot, logical shards leave it the last
# one, so no role can starve this server's own shard.
$capped->restart;
is( $capped->safe_psql(
		'postgres', q{
	SELECT try_sql('SELECT snowflake_nextval(5)'),
	       try_sql('SELECT count(*) FROM snowflake_nextval_batch(10, 7)')}),
	'ok|ok',
	'after a restart: a different set of logical shards (5, 7) works');
like(
	$capped->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval(10)')"),
	qr/^53400\|too many shards: this server has generated IDs for 2 shards since it started\|Shard 10 would need state of its own, and snowflake\.max_shards is 3 \(one of them kept for snowflake\.shard_id\)\.\|/,
	'after a restart: a third logical shard is refused: the last slot is kept for snowflake.shard_id');
is($capped->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval()')"),
	'ok', 'after a restart: snowflake.shard_id gets the slot kept for it');
like(
	$capped->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval(1)')"),
	too_many(1),
	'after a restart: a fourth shard (one used before the restart) fails');
is( $capped->safe_psql(
		'postgres',
		q{SELECT string_agg(shard_id::text, ',' ORDER BY shard_id) FROM snowflake_stats}),
	'0,5,7',
	'after a restart: snowflake_stats shows only this run\'s shards');
$capped->stop;

###########################################################################
# (e) snowflake.shard_ids follows reloads (ALTER SYSTEM + pg_reload_conf()).
###########################################################################

my $not_assigned = sub {
	my ($s) = @_;
	return qr/^55000\|shard $s is not assigned to this server\|/;
};

like($node->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval(9)')"),
	$not_assigned->(9), 'reload: shard 9 is refused before it is added');

# a session that stays connected across the reloads
my $old = $node->background_psql('postgres');

$node->safe_psql('postgres',
	"ALTER SYSTEM SET snowflake.shard_ids = '1-9'; SELECT pg_reload_conf();");
ok( $node->poll_query_until(
		'postgres', "SELECT try_sql('SELECT snowflake_nextval(9)')", 'ok'),
	'reload: shard 9 works in a new session once added');
is( $node->safe_psql(
		'postgres', q{
	SHOW snowflake.shard_ids;
	SELECT snowflake_shard_id(snowflake_nextval(9)),
	       bool_and(snowflake_shard_id(id) = 9) FROM snowflake_nextval_batch(100, 9) AS id;}),
	"1-9\n9|t",
	'reload: shard_ids shows 1-9 and shard 9\'s IDs decode to 9');

# Waits, bounded, until the long-lived session gives $want for $sql.
sub old_session_sees
{
	my ($sql, $want) = @_;
	my $got = '';
	foreach my $i (1 .. 100)
	{
		$got = $old->query_safe($sql);
		return 1 if $got =~ $want;
		usleep(100_000);
	}
	diag "long-lived session still gives: $got";
	return 0;
}
ok(old_session_sees("SELECT try_sql('SELECT snowflake_nextval(9)')", qr/^ok$/),
	'reload: a session connected before the reload can use shard 9 too');

# The long-lived session generates for shard 1 just before the removal, so
# that its next call would find shard 1's slot remembered from this one (the
# ready test, src/sql/nextval.cpp): the reload must still take it away.
like($old->query_safe('SELECT snowflake_shard_id(snowflake_nextval(1))'),
	qr/^1$/, 'reload: the long-lived session generates for shard 1 before its removal');

# Remove shard 1 (it has been used: it has state of its own).
$node->safe_psql('postgres',
	"ALTER SYSTEM SET snowflake.shard_ids = '2-9'; SELECT pg_reload_conf();");
ok( $node->poll_query_until(
		'postgres',
		"SELECT try_sql('SELECT snowflake_nextval(1)') LIKE '55000|shard 1 is not assigned to this server|%'"
	),
	'reload: shard 1 is refused in a new session once removed');
like($node->safe_psql('postgres', "SELECT try_sql('SELECT snowflake_nextval(1)')"),
	qr/^55000\|shard 1 is not assigned to this server\|This server generates for snowflake\.shard_id \(0\) and snowflake\.shard_ids \("2-9"\)\.\|Add the shard to snowflake\.shard_ids/,
	'reload: the refusal names the settings and says what to do');
like(
	$node->safe_psql(
		'postgres', "SELECT try_sql('SELECT count(*) FROM snowflake_nextval_batch(10, 1)')"),
	$not_assigned->(1),
	'reload: a batch of the removed shard is refused too');
ok( old_session_sees(
		"SELECT try_sql('SELECT snowflake_nextval(1)')", $not_assigned->(1)),
	'reload: a session connected before the removal is refused too');
is( $node->safe_psql(
		'postgres', q{
	SELECT snowflake_shard_id(snowflake_nextval(2)), snowflake_shard_id(snowflake_nextval(9)),
	       snowflake_shard_id(snowflake_nextval(0)), snowflake_shard_id(snowflake_nextval())}),
	'2|9|0|0',
	'reload: the remaining shards and snowflake.shard_id keep working');
$old->quit;

done_testing();
