# The commit watermark across restarts, and idle shards (issue 33).
#
#  (a) snowflake.shard_ids = '0-1', a prepared transaction holding an ID of
#      shard 1, a clean restart: the server-wide watermark stays at or below
#      that ID (while shard 0 issues IDs) until COMMIT PREPARED;
#  (b) the same with the shards changed across the restart (the server no
#      longer generates for shard 1): the server-wide form holds, and the
#      per-shard form asked about shard 1 answers (held by the prepared
#      transaction) instead of refusing, until ROLLBACK PREPARED, after which
#      it refuses again (55000);
#  (c) a fresh server whose listed shards never issued an ID: the
#      server-wide watermark advances (polled, bounded generously); after a
#      backward clock step (libfaketime), and after a restart with the clock
#      set back, no ID of a shard that never issued, nor of one that issued
#      once and went idle, is below a watermark already returned;
#  (d) a streaming standby that replayed up to the primary's flush position
#      after a watermark read, promoted with its clock 5 s behind: its first
#      IDs of shards that never issued are not below that watermark.
#
# Run once per generator (scripts/test.sh).  Assertions compare IDs with
# each other and with watermarks, never with constants.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time sleep);

my $node = node('wm_restart', start => 1, conf => q{
snowflake.shard_ids = '0-1'
max_prepared_transactions = 5
});
check_generator($node);
$node->safe_psql('postgres', q{
CREATE EXTENSION snowflake;
CREATE TABLE outbox (id bigint PRIMARY KEY);
CREATE FUNCTION try_sql(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text;
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
	RETURN st;
END $$;
});

sub wm_all
{
	my ($n) = @_;
	return $n->safe_psql('postgres', 'SELECT snowflake_commit_watermark()');
}

# Prepares a transaction that inserted an ID of shard 1; returns the ID.
sub prepare_on_shard1
{
	my ($gid) = @_;
	return $node->safe_psql('postgres', qq{
BEGIN;
INSERT INTO outbox VALUES (snowflake_nextval(1)) RETURNING id;
PREPARE TRANSACTION '$gid';});
}

###########################################################################
# (a) shard_ids '0-1', prepared on shard 1, restart
###########################################################################

$node->safe_psql('postgres', 'SELECT snowflake_nextval(0)');
my $p1 = prepare_on_shard1('a1');
is($node->safe_psql('postgres', "SELECT snowflake_shard_id($p1)"), '1',
	'the prepared transaction holds an ID of shard 1');
cmp_ok(wm_all($node), '<=', $p1, 'before the restart the watermark holds at it');
$node->restart;
cmp_ok(wm_all($node), '<=', $p1, 'after a clean restart the server-wide watermark still holds');
my $later = $node->safe_psql('postgres', 'SELECT max(snowflake_nextval(0)) FROM generate_series(1, 3)');
cmp_ok($later, '>', $p1, 'shard 0 issues IDs above it');
cmp_ok(wm_all($node), '<=', $p1, 'and the watermark still holds while shard 0 moves on');
$node->safe_psql('postgres', q{COMMIT PREPARED 'a1'});
cmp_ok(wm_all($node), '>', $p1, 'COMMIT PREPARED releases it');

###########################################################################
# (b) the prepared transaction's shard no longer generated after the restart
###########################################################################

my $p2 = prepare_on_shard1('b1');
$node->append_conf('postgresql.conf', "snowflake.shard_ids = '0'\n");
$node->restart;
cmp_ok(wm_all($node), '<=', $p2,
	'shard 1 dropped across the restart: the server-wide watermark still holds at its prepared ID');
is($node->safe_psql('postgres', q{SELECT try_sql('SELECT snowflake_commit_watermark(1)')}),
	'ok', 'the per-shard form answers for a shard with a prepared transaction');
cmp_ok($node->safe_psql('postgres', 'SELECT snowflake_commit_watermark(1)'), '<=', $p2,
	'held by the prepared transaction');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'b1'});
cmp_ok(wm_all($node), '>', $p2, 'ROLLBACK PREPARED releases the server-wide watermark');
is($node->safe_psql('postgres', q{SELECT try_sql('SELECT snowflake_commit_watermark(1)')}),
	'55000', 'and the per-shard form refuses shard 1 again');
$node->stop;

###########################################################################
# (c) idle shards: the watermark advances; clock steps never let an ID
#     come below one already returned
###########################################################################

SKIP:
{
	skip "libfaketime is not installed ($libfaketime)", 8 unless -f $libfaketime;

	my $f = node('wm_idle', clock_ms => 0, start => 1, conf => q{
snowflake.shard_ids = '2-5'
});
	$f->safe_psql('postgres', 'CREATE EXTENSION snowflake');

	my $w0 = wm_all($f);
	my $w = $w0;
	my $deadline = time + 60;
	while ($w <= $w0 && time < $deadline)
	{
		sleep 0.05;
		$w = wm_all($f);
	}
	cmp_ok($w, '>', $w0, 'on a fresh server whose shards never issued, the watermark advances');
	my $id2 = $f->safe_psql('postgres', 'SELECT snowflake_nextval(2)');
	cmp_ok($id2, '>=', $w, 'an ID issued after it is not below it');

	# shard 2 idle, 3-5 never used: the watermark still advances past shard 2's ID
	$w0 = wm_all($f);
	$w = $w0;
	$deadline = time + 60;
	while ($w <= $id2 && time < $deadline)
	{
		sleep 0.05;
		$w = wm_all($f);
	}
	cmp_ok($w, '>', $id2, 'an idle shard does not hold the watermark at its last ID');

	# a backward step of the clock: every ID after it is above every watermark
	my $high = $f->safe_psql('postgres',
		'SELECT max(snowflake_commit_watermark()) FROM generate_series(1, 3)');
	set_clock_ms($f, -3000);
	my $low = $f->safe_psql('postgres', q{
SELECT least(snowflake_nextval(2), snowflake_nextval(3))});
	cmp_ok($low, '>=', $high,
		'after the clock went back 3 s, the idle shard and a never-used one issue at or above the watermark');
	cmp_ok(wm_all($f), '>=', $high, 'the watermark does not go back with the clock');

	# a restart with the clock set back further: the same
	set_clock_ms($f, 0);
	$high = wm_all($f);
	$f->stop;
	set_clock_ms($f, -4000);
	start_faked($f);
	cmp_ok(wm_all($f), '>=', $high, 'after a restart with the clock back, the watermark is not lower');
	$low = $f->safe_psql('postgres', q{
SELECT least(snowflake_nextval(2), snowflake_nextval(3), snowflake_nextval(4))});
	cmp_ok($low, '>=', $high,
		'nor is any ID of a used shard or of one never used before');
	set_clock_ms($f, 0);
	my $id5 = $f->safe_psql('postgres', 'SELECT snowflake_nextval(5)');
	cmp_ok($id5, '>=', $high, 'nor of the last never-used shard once the clock is back');
	$f->stop;
}

###########################################################################
# (d) a promoted standby resumes above the watermark its primary returned
###########################################################################

SKIP:
{
	skip "libfaketime is not installed ($libfaketime)", 3 unless -f $libfaketime;

	my $p = node('wm_primary', allows_streaming => 1, start => 1, conf => q{
snowflake.shard_ids = '2-3'
snowflake.max_clock_wait = '60s'
});
	$p->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	$p->backup('wm_backup');
	my $s = node('wm_standby', standby => [ $p, 'wm_backup' ], clock_ms => -5000, start => 1);

	my $w = wm_all($p);
	my $lsn = $p->lsn('flush');
	ok($s->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"),
		'the standby replayed up to the primary\'s flush position after the read');
	$p->stop('immediate');
	$s->promote;
	$s->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'the standby was not promoted';
	my $ids = $s->safe_psql('postgres',
		'SELECT least(snowflake_nextval(2), snowflake_nextval(3))');
	cmp_ok($ids, '>=', $w,
		'promoted with its clock behind, it issues no ID of a never-used shard below the watermark');
	cmp_ok(wm_all($s), '>=', $w, 'and its own watermark is not below it');
	$s->stop;
}

done_testing();
