# The commit watermark (snowflake_commit_watermark(), issue 29): every ID
# below it that this server generated and that will ever be committed is
# committed.
#
#  (a) with no live shard it is NULL; the errors of the per-shard form;
#  (b) pgbench writers commit (or roll back) after random delays while a
#      poller reads [previous watermark, watermark) in a later statement
#      than the watermark: it sees every committed row exactly once; the same
#      poller with "id > last seen" and no watermark skips rows, under
#      pgbench and in a fixed interleaving;
#  (c) a transaction holds it from its first ID until its top level ends:
#      across ROLLBACK TO a savepoint, for snowflake_nextval_batch(), and per
#      logical shard (the per-shard form holds only its own shard);
#  (d) a prepared transaction holds it across a clean restart, an immediate
#      stop and a crash restart, until COMMIT PREPARED or ROLLBACK PREPARED,
#      and its record in pg_snowflake/ goes once it is finished;
#  (e) a backend terminated (pg_terminate_backend) or killed (kill -9) in a
#      transaction releases it.
#
# Run once per generator (scripts/test.sh).  Assertions compare IDs with
# each other and with the watermark, never with constants.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use IPC::Run;

my $node = node('watermark', start => 1, conf => q{
snowflake.import_shards = '9'
max_prepared_transactions = 5
restart_after_crash = on
max_connections = 40
});
check_generator($node);
$node->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE outbox (id bigint PRIMARY KEY, note text);
CREATE FUNCTION try_sql(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text; msg text;
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	RETURN st || '|' || msg;
END $$;
});

# The watermark of shard 1 (snowflake.shard_id, which the writers use), or
# of another shard, or with 'all' the server-wide one (the minimum over its
# live shards and its prepared transactions).
sub wm
{
	my ($shard) = @_;
	$shard //= 1;
	return $node->safe_psql('postgres',
		$shard eq 'all'
		? 'SELECT snowflake_commit_watermark()'
		: "SELECT snowflake_commit_watermark($shard)");
}

###########################################################################
# (a) no live shard: NULL; then shard 1 and logical shards 2-3
###########################################################################

is($node->safe_psql('postgres', 'SELECT snowflake_commit_watermark() IS NULL'),
	't', 'without a live shard the watermark is NULL');
$node->append_conf('postgresql.conf', "snowflake.shard_id = 1\nsnowflake.shard_ids = '2-3'\n");
$node->reload;
$node->poll_query_until('postgres', 'SELECT snowflake_commit_watermark() IS NOT NULL')
  or die 'the reload did not give the server a shard';

like($node->safe_psql('postgres', q{SELECT try_sql('SELECT snowflake_commit_watermark(5)')}),
	qr/^55000\|shard 5 is not generated on this server$/,
	'a shard this server does not hold is refused (55000)');
like($node->safe_psql('postgres', q{SELECT try_sql('SELECT snowflake_commit_watermark(9)')}),
	qr/^55000\|shard 9 is an import shard$/, 'an import shard is refused (55000)');
like($node->safe_psql('postgres', q{SELECT try_sql('SELECT snowflake_commit_watermark(-1)')}),
	qr/^22023\|shard ID -1 is out of range$/, 'a shard out of range is refused (22023)');
is($node->safe_psql('postgres', 'SELECT snowflake_commit_watermark(NULL) IS NULL'),
	't', 'the per-shard form is STRICT');
is( $node->safe_psql('postgres', q{
SELECT provolatile::text || proparallel::text FROM pg_proc WHERE proname = 'snowflake_commit_watermark'
GROUP BY 1}), 'vr', 'both forms are VOLATILE and PARALLEL RESTRICTED');

# with nothing open, the watermark is above every ID issued
my $id = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok(wm(), '>', $id, 'with no transaction open the watermark passes the last ID');
cmp_ok(wm('all'), '>', $id,
	'logical shards not used since the start do not hold the server-wide watermark back');
my $least = $node->safe_psql('postgres',
	'SELECT least(snowflake_nextval(1), snowflake_nextval(2), snowflake_nextval(3))');
cmp_ok(wm('all'), '>', $least,
	'once each shard issued an ID, the server-wide watermark is the minimum of theirs');

###########################################################################
# (b) a poller under pgbench writers with random commit delays
###########################################################################

my $script = $node->basedir . '/writer.sql';
PostgreSQL::Test::Utils::append_to_file(
	$script, q{
\set delay random(0, 300)
\set fate random(1, 10)
BEGIN;
INSERT INTO outbox VALUES (snowflake_nextval(), 'pgbench');
SELECT pg_sleep(:delay / 1000.0);
\if :fate = 1
ROLLBACK;
\else
COMMIT;
\endif
});

my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '8', '-j', '2', '-T', '10', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);

# One poll: the watermark in one statement, then the rows below it in the
# next (READ COMMITTED: each statement takes its own snapshot after the
# watermark was read); and the naive poller's "id > last seen".
my $prev = 0;
my $naive_last = 0;
my (%seen, %naive_seen, $dup, $went_down);
my ($polls, $rows_during) = (0, 0);

sub poll
{
	my $out = $node->safe_psql(
		'postgres', qq{
SELECT snowflake_commit_watermark(1) AS w \\gset
SELECT 'W ' || :w;
SELECT 'A ' || coalesce(string_agg(id::text, ',' ORDER BY id), '')
  FROM outbox WHERE id >= $prev AND id < :w;
SELECT 'N ' || coalesce(string_agg(id::text, ',' ORDER BY id), '')
  FROM outbox WHERE id > $naive_last;
});
	my ($w) = $out =~ /^W (\d+)$/m;
	my ($a) = $out =~ /^A ([\d,]*)$/m;
	my ($n) = $out =~ /^N ([\d,]*)$/m;
	my $got = 0;
	$went_down++ if $w < $prev;
	for my $row (split /,/, $a)
	{
		$dup++ if $seen{$row}++;
		$got++;
	}
	$prev = $w if $w > $prev;
	for my $row (split /,/, $n)
	{
		$naive_seen{$row} = 1;
		$naive_last = $row if $row > $naive_last;
	}
	$polls++;
	return $got;
}

while ($pgbench->pumpable)
{
	$rows_during += poll();
	$pgbench->pump_nb;
}
$pgbench->finish;
is($pgbench->result(0), 0, 'pgbench writers ran') or diag($pgb_err);
poll();

my @committed = split /\n/,
  $node->safe_psql('postgres', q{SELECT id FROM outbox WHERE note = 'pgbench' ORDER BY id});
my @missed = grep { !$seen{$_} } @committed;
my @naive_missed = grep { !$naive_seen{$_} } @committed;
note(scalar(@committed) . " rows committed, $polls polls, "
	  . scalar(@naive_missed) . ' skipped by the naive poller');
cmp_ok(scalar(@committed), '>', 50, 'the writers committed rows');
is(scalar(@missed), 0, 'the watermark poller saw every committed row');
is($dup // 0, 0, 'and none twice');
is(scalar(keys %seen), scalar(@committed), 'and nothing that was not committed');
is($went_down // 0, 0, 'the watermark never went down');
cmp_ok($rows_during, '>', 0, 'the watermark poller kept up while the writers ran');
cmp_ok(scalar(@naive_missed), '>', 0,
	'the naive poller (id > last seen) skipped rows committed out of ID order');

# the same skip in a fixed interleaving: an earlier ID commits after a later one
my $slow = $node->background_psql('postgres', on_error_stop => 1);
my $early = $slow->query_safe(
	q{BEGIN; INSERT INTO outbox VALUES (snowflake_nextval(), 'slow') RETURNING id;});
$early =~ s/\D//g;
my $late = $node->safe_psql('postgres',
	q{INSERT INTO outbox VALUES (snowflake_nextval(), 'fast') RETURNING id});
cmp_ok($late, '>', $early, 'the later transaction took the larger ID');
cmp_ok(wm(), '<=', $early, 'the open transaction holds the watermark at or below its ID');
my $naive = $node->safe_psql('postgres', "SELECT max(id) FROM outbox WHERE id > $early");
$slow->query_safe('COMMIT');
is($node->safe_psql('postgres', "SELECT count(*) FROM outbox WHERE id > $naive"),
	'0', 'a poller that read the later ID first never sees the earlier one');
cmp_ok(wm(), '>', $late, 'the commit released the watermark');
$slow->quit;

###########################################################################
# (c) subtransactions, batches, logical shards
###########################################################################

my $s = $node->background_psql('postgres', on_error_stop => 0);
my $sub = $s->query_safe(
	q{BEGIN; SAVEPOINT a; SELECT snowflake_nextval(); ROLLBACK TO a; SELECT 1;});
($sub) = $sub =~ /^(\d{6,})$/m;
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok(wm(), '<=', $sub, 'an ID of a rolled-back savepoint holds until the top level ends');
$s->query_safe('COMMIT');
cmp_ok(wm(), '>', $sub, 'and is released by its end');

my $f = $node->background_psql('postgres', on_error_stop => 0);
$f->query(q{BEGIN; SELECT snowflake_nextval() AS failing; SELECT 1/0;});
my ($fail) = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction (aborted)'});
is($fail, '1', 'a transaction failed after taking an ID');
$f->query('ROLLBACK');
$f->quit;
my $after = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok(wm(), '>', $after, 'the rollback released the watermark');

my $batch = $s->query_safe(
	q{BEGIN; SELECT min(i) || ' ' || max(i) FROM snowflake_nextval_batch(5000) i;});
my ($bmin, $bmax) = $batch =~ /(\d+) (\d+)/;
cmp_ok(wm(), '<=', $bmin, 'a batch holds the watermark at or below its first ID');
$s->query_safe('COMMIT');
cmp_ok(wm(), '>', $bmax, 'and releases it at commit');

# IDs taken by a parallel worker hold in its leader's transaction, which
# inserts them and commits after the worker has ended
my $fpm = $node->safe_psql('postgres', q{
SELECT name FROM pg_settings WHERE name IN ('debug_parallel_query', 'force_parallel_mode')});
my $plan = $s->query_safe(qq{BEGIN; SET LOCAL $fpm = on;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
CREATE TABLE par AS SELECT snowflake_nextval() AS id FROM generate_series(1, 10);});
like($plan, qr/Workers Launched: [1-9]/, 'a parallel worker took the IDs');
my ($pmin, $pmax) = $s->query_safe(q{SELECT min(id) || ' ' || max(id) FROM par;}) =~ /(\d+) (\d+)/;
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok(wm(), '<=', $pmin, "after the worker ended, its IDs hold in the leader's transaction");
$s->query_safe('COMMIT');
cmp_ok(wm(), '>', $pmax, "and are released when the leader's transaction ends");

my $two = $s->query_safe(q{BEGIN; SELECT snowflake_nextval(2);});
my $three = $node->safe_psql('postgres', 'SELECT snowflake_nextval(3)');
cmp_ok(wm(2), '<=', $two, 'a transaction on logical shard 2 holds shard 2');
cmp_ok(wm(3), '>', $three, 'but not shard 3');
cmp_ok(wm('all'), '<=', $two, 'and the server-wide watermark (the minimum over its shards)');
$s->query_safe('COMMIT');
cmp_ok(wm(2), '>', $two, 'shard 2 is released at commit');

###########################################################################
# (d) prepared transactions, across restarts
###########################################################################

sub prepared_files
{
	opendir(my $dh, $node->data_dir . '/pg_snowflake') or return 0;
	my @f = grep { /^prepared\./ } readdir($dh);
	closedir($dh);
	return scalar(@f);
}

my $p1 = $s->query_safe(
	q{BEGIN; INSERT INTO outbox VALUES (snowflake_nextval(), 'prepared') RETURNING id;});
$p1 =~ s/\D//g;
$s->query_safe(q{PREPARE TRANSACTION 'wm1'});
my $p2 = $s->query_safe(
	q{BEGIN; INSERT INTO outbox VALUES (snowflake_nextval(), 'rolled back') RETURNING id;});
$p2 =~ s/\D//g;
$s->query_safe(q{PREPARE TRANSACTION 'wm2'});
$s->quit;
my $later = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
cmp_ok(wm(), '<=', $p1, 'a prepared transaction holds the watermark');
is(prepared_files(), 2, 'each prepared transaction has its record in pg_snowflake/');

$node->restart;
cmp_ok(wm(), '<=', $p1, 'it holds across a clean restart');
$node->stop('immediate');
$node->start;
cmp_ok(wm(), '<=', $p1, 'and across an immediate stop');

$node->safe_psql('postgres', q{COMMIT PREPARED 'wm1'});
my $w = wm();
cmp_ok($w, '>', $p1, 'COMMIT PREPARED releases it');
cmp_ok($w, '<=', $p2, 'while the other prepared transaction still holds');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'wm2'});
cmp_ok(wm(), '>', $later, 'ROLLBACK PREPARED releases it');
is(prepared_files(), 0, 'the records of finished prepared transactions are gone');

###########################################################################
# (e) backends that end in a transaction
###########################################################################

my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $vid = $victim->query_safe(q{BEGIN; SELECT snowflake_nextval();});
$vid =~ s/\D//g;
my $vpid = $victim->query_safe('SELECT pg_backend_pid()');
cmp_ok(wm(), '<=', $vid, 'an open transaction holds the watermark');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($vpid)");
ok( $node->poll_query_until(
		'postgres', "SELECT snowflake_commit_watermark(1) > $vid"),
	'pg_terminate_backend releases it');
$victim->quit;

# a prepared transaction also survives the crash restart of kill -9
$s = $node->background_psql('postgres', on_error_stop => 1);
my $p3 = $s->query_safe(q{BEGIN; SELECT snowflake_nextval(); });
$p3 =~ s/\D//g;
$s->query_safe(q{PREPARE TRANSACTION 'wm3'});
$s->quit;
$victim = $node->background_psql('postgres', on_error_stop => 0);
$vid = $victim->query_safe(q{BEGIN; SELECT snowflake_nextval(2);});
$vid =~ s/\D//g;
$vpid = $victim->query_safe('SELECT pg_backend_pid()');
cmp_ok(wm(2), '<=', $vid, 'an open transaction holds shard 2');
kill 'KILL', $vpid;
$victim->quit;
ok( $node->poll_query_until(
		'postgres', "SELECT snowflake_commit_watermark(2) > $vid"),
	'kill -9 of its backend (a crash restart) releases it');
cmp_ok(wm(), '<=', $p3, 'the prepared transaction still holds after the crash restart');
$node->safe_psql('postgres', q{COMMIT PREPARED 'wm3'});
cmp_ok(wm(), '>', $p3, 'until COMMIT PREPARED');

$node->stop;
done_testing();
