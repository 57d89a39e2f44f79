# Failover to a streaming standby.
#
# The primary's clock runs 60 s ahead (libfaketime, preloaded into its
# postmaster only), so the IDs a standby receives carry timestamps well
# ahead of the standby's own, correct clock, however long a loaded machine
# takes over the failover.  What keeps a promoted standby
# from reissuing them is the durable mark, which the primary writes to WAL
# (custom resource manager "snowflake", ID 128) before issuing any ID under
# it, and which the standby replays.
#
#  (a) planned failover: the old primary stops, the standby (which refuses to
#      generate while in recovery) is promoted; every ID it then issues, by
#      single calls, a column DEFAULT and a batch, is above every ID it
#      received, and its first call waited for its clock to pass the mark;
#  (b) the same after an immediate-mode crash of the primary in the middle
#      of a pgbench run;
#  (c) a standby started without the library: replay stops at the first
#      mark record with PostgreSQL's "resource manager with ID 128 not
#      registered" error, and the standby shuts down instead of carrying on
#      without the mark; with the library added it restarts, replays what it
#      had not, catches up, and once promoted issues IDs above everything it
#      received.
#
# No raw ID or wall-clock value is compared with a constant: only relations
# between IDs, counters and log messages, each server's clock against the
# real time around the query that read it, and the first call's wait, timed
# by the new primary's own clock, against what its received IDs required.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time sleep);

plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

my $shard   = 5;
# How far the primaries' clocks run ahead (s).  The received IDs must still
# be ahead of the new primary's clock, by more than max_clock_lead, when its
# first call comes: the failover (catching up, stopping, promoting and a
# dozen psql sessions) must take less than this.  On a loaded machine that
# took over 9 s; the first call then waits out the rest.
my $ahead_s = 60;
my $timeout = 180;

# A primary with the library preloaded and its clock $ahead_s seconds ahead.
sub make_primary
{
	my ($name) = @_;
	# libfaketime goes into this postmaster (and so into its children) only:
	# psql, pgbench and the standbys keep the real clock.
	return node(
		$name,
		allows_streaming => 1,
		clock_ms         => $ahead_s * 1000,
		start            => 1,
		conf             => qq{
snowflake.shard_id = $shard
max_connections = 20
log_statement = none
});
}

# A streaming standby from a new backup of $primary.  It inherits the
# primary's configuration (library and shard ID) but not its faked clock.
# $extra_conf is appended to its configuration.
sub make_standby
{
	my ($primary, $name, $extra_conf, %start_opts) = @_;
	$primary->backup("${name}_backup");
	my $node = node($name,
		standby => [ $primary, "${name}_backup" ],
		conf    => "snowflake.max_clock_wait = '" . ($ahead_s + 60) . "s'\nlog_statement = none\n"
		  . ($extra_conf // ''));
	my $started = $node->start(%start_opts);
	return ($node, $started);
}

# A server's clock less the real time: the server reads its clock between
# the moments psql is started and returns (however long that takes on a
# loaded machine), so its offset lies between the reading less the real
# time at each end, give or take 1 ms of rounding.  Returns (low, high) in s.
sub clock_offset
{
	my ($node) = @_;
	my $before = time;
	my $server = $node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())');
	my $after = time;
	return ($server - $after - 0.001, $server - $before + 0.001);
}

# The scenario is only real if the primary's clock is ahead of the standby's:
# the primary's clock runs $ahead_s ahead of the real time, the standby's on
# it.
sub check_clock_offset
{
	my ($primary, $standby, $what) = @_;
	my ($p_lo, $p_hi) = clock_offset($primary);
	my ($s_lo, $s_hi) = clock_offset($standby);
	ok($p_lo <= $ahead_s && $p_hi >= $ahead_s && $s_lo <= 0 && $s_hi >= 0,
		sprintf('%s: the primary\'s clock is %d s ahead of the real time (%.2f .. %.2f s), '
			  . 'the standby\'s on it (%.2f .. %.2f s)',
			$what, $ahead_s, $p_lo, $p_hi, $s_lo, $s_hi));
	return;
}

# Waits until the standby has replayed everything the primary has flushed,
# which includes every committed row.  Not the insert position: a mark
# record the mark worker writes after the last commit is not flushed on its
# own and stays in the primary's WAL buffers until something else flushes
# (observed: about 15 s on an idle primary).  Polled on the standby itself,
# so the wait ends as soon as replay gets there: the received IDs must still
# be ahead of the standby's clock at promotion.
sub catch_up
{
	my ($primary, $standby, $what) = @_;
	my $lsn = $primary->lsn('flush');
	ok( $standby->poll_query_until('postgres',
			"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn"),
		"$what: the standby caught up with the primary");
	return;
}

# Waits until the standby's replay position stops moving (bounded).
sub wait_replay_settled
{
	my ($standby) = @_;
	my ($prev, $same) = ('', 0);
	my $deadline = time + 60;
	while (time < $deadline)
	{
		my $lsn = $standby->safe_psql('postgres',
			q{SELECT pg_last_wal_replay_lsn() || ' ' ||
			         (pg_last_wal_replay_lsn() >= coalesce(pg_last_wal_receive_lsn(), '0/0'))});
		if ($lsn eq $prev && $lsn =~ / true$/)
		{
			return 1 if ++$same >= 3;
		}
		else
		{
			$same = 0;
		}
		$prev = $lsn;
		sleep(0.3);
	}
	return 0;
}

sub check_refuses_in_recovery
{
	my ($standby, $what) = @_;
	is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
		't', "$what: the standby is in recovery");
	foreach my $call ('snowflake_nextval()', 'snowflake_nextval_batch(10)')
	{
		my ($ret, $out, $err) = $standby->psql('postgres',
			"\\set VERBOSITY verbose\nSELECT $call");
		isnt($ret, 0, "$what: $call fails on the standby");
		like($err,
			qr/ERROR:  25006: cannot generate snowflake IDs on a standby server/,
			"$what: $call on the standby: SQLSTATE 25006, \"cannot generate snowflake IDs on a standby server\""
		);
	}
	return;
}

# Everything the standby holds, then promotion, then new IDs of every kind
# above everything it held.  Rows the promoted node inserts have payload < 0.
sub promote_and_check
{
	my ($standby, $what, $primary_rows) = @_;

	my $received = $standby->safe_psql('postgres', 'SELECT count(*), max(id) FROM t');
	my ($count, $received_max) = split /\|/, $received;
	is($count, $primary_rows, "$what: the standby holds every row the primary committed")
	  if defined $primary_rows;
	ok($count > 0, "$what: the standby received rows ($count)");

	# Replay raised the standby's own durable mark above every received ID.
	my $mark = mark_ms($standby);
	my $max_ms = $standby->safe_psql('postgres',
		"SELECT (extract(epoch FROM snowflake_timestamp($received_max)) * 1000)::bigint");
	ok(defined $mark && $mark >= $max_ms,
		"$what: the standby's pg_snowflake/mark, raised by replay, covers every received ID");

	$standby->promote;
	ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
		"$what: the standby was promoted");

	# The first call, timed by the new primary's clock (a, just before it;
	# b, just after): $ahead_ms is how far the newest received ID was ahead
	# of the clock (a) by more than max_clock_lead, $wait_ms how long the
	# call took.  With the received IDs that far ahead, from the clock alone
	# it would reissue them.  Its ID is above them, so at least as late, and
	# no more than max_clock_lead ahead of the clock when issued (before b):
	# it waited at least $ahead_ms.
	my ($ret, $out, $err) = $standby->psql(
		'postgres', qq{
		WITH x AS MATERIALIZED (
			SELECT clock_timestamp() AS a, snowflake_nextval() AS id,
			       clock_timestamp() AS b),
		i AS (INSERT INTO t (id, payload) SELECT id, -1 FROM x)
		SELECT id,
		       round(extract(epoch FROM b - a) * 1000, 3),
		       round(extract(epoch FROM snowflake_timestamp($received_max) - a
		             - current_setting('snowflake.max_clock_lead')::interval) * 1000, 3)
		FROM x},
		timeout => $timeout);
	is($ret, 0, "$what: the first call on the new primary succeeds") or diag($err);
	my ($first, $wait_ms, $ahead_ms) = split /\|/, $out;
	like($first // '', qr/^\d+$/, "$what: it returns an ID");
	ok(defined $ahead_ms && $ahead_ms > 0,
		sprintf('%s: the newest received ID was ahead of the new primary\'s clock by more '
			  . 'than max_clock_lead at its first call (by %s ms more)', $what, $ahead_ms // '?'));
	ok(defined $wait_ms && $wait_ms >= ($ahead_ms // 0) - 1,
		sprintf('%s: the first call waited for the clock to pass the received IDs (%s ms for %s ms)',
			$what, $wait_ms // '?', $ahead_ms // '?'));
	my $waits = $standby->safe_psql('postgres',
		"SELECT coalesce(sum(waits), 0) FROM snowflake_stats WHERE shard_id = $shard");
	ok($waits >= 1, "$what: snowflake_stats counts the wait (waits = $waits)");

	$standby->safe_psql(
		'postgres', qq{
		INSERT INTO t (id, payload) SELECT snowflake_nextval(), -2 FROM generate_series(1, 100);
		INSERT INTO t (payload) VALUES (-3);
		INSERT INTO t (payload) SELECT -3 FROM generate_series(1, 100);
		INSERT INTO t (id, payload) SELECT id, -4 FROM snowflake_nextval_batch(5000) AS id;
	});
	my %kinds = (
		-1 => 'first single call',
		-2 => 'single calls',
		-3 => 'DEFAULT inserts',
		-4 => 'batch');
	foreach my $p (sort { $b <=> $a } keys %kinds)
	{
		is( $standby->safe_psql(
				'postgres',
				"SELECT count(*) > 0 AND bool_and(id > $received_max) FROM t WHERE payload = $p"),
			't',
			"$what: every ID of the new primary's $kinds{$p} is greater than every received ID"
		);
	}
	is( $standby->safe_psql(
			'postgres', q{
		SELECT (SELECT min(id) FROM t WHERE payload < 0)
		     > (SELECT max(id) FROM t WHERE payload >= 0)}),
		't',
		"$what: the new primary's IDs are above every row it received");
	is( $standby->safe_psql(
			'postgres',
			"SELECT count(*) FROM t WHERE payload < 0 AND snowflake_shard_id(id) <> $shard"),
		0,
		"$what: the new primary's IDs carry shard $shard");
	is( $standby->safe_psql(
			'postgres', q{
		SELECT count(*) FROM (
			SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM t WHERE payload < 0) x
		WHERE id <= prev}),
		0,
		"$what: the new primary's IDs increase in insertion order");
	return;
}

my $create = q{
	CREATE EXTENSION snowflake;
	-- n: insertion order; payload >= 0 on the old primary, < 0 after promotion
	CREATE TABLE t (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		n bigserial,
		payload int);
};

###########################################################################
# (a) Planned failover.
###########################################################################

my $primary_a = make_primary('primary_a');
$primary_a->safe_psql('postgres', $create);
$primary_a->safe_psql('postgres', 'INSERT INTO t (payload) SELECT 1000 FROM generate_series(1, 10)');
my ($standby_a) = make_standby($primary_a, 'standby_a');
check_clock_offset($primary_a, $standby_a, 'a');

# single inserts, a batch and a pgbench run, all after the backup: the
# standby gets them, and the marks above them, by streaming.
$primary_a->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (1001)') for 1 .. 5;
$primary_a->safe_psql('postgres',
	'INSERT INTO t (id, payload) SELECT id, 1002 FROM snowflake_nextval_batch(5000) AS id');
$primary_a->pgbench(
	'--no-vacuum --client=4 --jobs=2 --time=2',
	0,
	[ qr{number of failed transactions: 0 \(0\.000%\)} ],
	[qr{^$}],
	'a: pgbench inserts on the primary',
	{ '008_insert.sql' => "INSERT INTO t (payload) VALUES (:client_id);\n" },
	'postgres');
$primary_a->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (1003)');
my $rows_a = $primary_a->safe_psql('postgres', 'SELECT count(*) FROM t');
ok($rows_a > 5016, "a: the primary committed rows ($rows_a)");

catch_up($primary_a, $standby_a, 'a');
check_refuses_in_recovery($standby_a, 'a');

# failover: the old primary goes away first
$primary_a->stop;
promote_and_check($standby_a, 'a', $rows_a);
$standby_a->stop;

###########################################################################
# (b) The primary crashes (immediate stop) under pgbench.
###########################################################################

my $primary_b = make_primary('primary_b');
$primary_b->safe_psql('postgres', $create);
my ($standby_b) = make_standby($primary_b, 'standby_b');
check_clock_offset($primary_b, $standby_b, 'b');

my $script_b = $primary_b->basedir . '/008_crash.sql';
open my $sfh, '>', $script_b or die "could not write $script_b: $!";
print $sfh "INSERT INTO t (payload) VALUES (:client_id);\n";
close $sfh;
my ($pgb_out, $pgb_err) = ('', '');
my $pgb = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client=4', '--jobs=2', '--time=60',
		'-f', $script_b, '-h', $primary_b->host, '-p', $primary_b->port,
		'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err,
	IPC::Run::timeout($timeout));
ok( $primary_b->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM t'),
	'b: pgbench is inserting on the primary');
ok($standby_b->poll_query_until('postgres', 'SELECT count(*) > 1000 FROM t'),
	'b: the standby is receiving the rows');
sleep(0.5);
$primary_b->stop('immediate');
$pgb->finish;
isnt($? >> 8, 0,
	'b: pgbench was still inserting at the crash (it lost its connections and failed)');

ok(wait_replay_settled($standby_b),
	'b: the standby replayed everything it received');
check_refuses_in_recovery($standby_b, 'b');
promote_and_check($standby_b, 'b after crash');
$standby_b->stop;

###########################################################################
# (c) A standby without the library.
###########################################################################

my $primary_c = make_primary('primary_c');
$primary_c->safe_psql('postgres', $create);
$primary_c->safe_psql('postgres',
	'INSERT INTO t (payload) SELECT 2000 FROM generate_series(1, 1000)');
my $before_c = $primary_c->safe_psql('postgres', 'SELECT count(*) FROM t');
# The mark worker may still write marks for a while after IDs were issued;
# after a clean restart nothing is written until the next ID, so the backup
# and the standby's start are free of mark records and the standby reaches
# hot standby (and replays some rows) before the first one arrives.
$primary_c->stop;
start_faked($primary_c);
my ($standby_c, $started_c) =
  make_standby($primary_c, 'standby_c', "shared_preload_libraries = ''\n");
ok($started_c, 'c: the standby without the library starts');
is($standby_c->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'c: the standby does not preload snowflake');
catch_up($primary_c, $standby_c, 'c, without the library');
is($standby_c->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$before_c, 'c: the standby replays WAL without mark records');
check_clock_offset($primary_c, $standby_c, 'c');

# New IDs on the primary: a mark record goes to WAL before them.
my $log_offset_c = -s $standby_c->logfile;
$primary_c->safe_psql('postgres',
	'INSERT INTO t (payload) SELECT 2001 FROM generate_series(1, 1000)');
$primary_c->safe_psql('postgres',
	'INSERT INTO t (id, payload) SELECT id, 2002 FROM snowflake_nextval_batch(3000) AS id');
my $rows_c = $primary_c->safe_psql('postgres', 'SELECT count(*) FROM t');

$standby_c->wait_for_log(qr/resource manager with ID 128 not registered/,
	$log_offset_c);
ok( $standby_c->log_contains(
		qr/FATAL:  resource manager with ID 128 not registered/, $log_offset_c),
	'c: replay stops with FATAL "resource manager with ID 128 not registered"');
ok( $standby_c->log_contains(
		# PostgreSQL 17 quotes the setting's name
		qr/HINT:  Include the extension module that implements this resource manager in "?shared_preload_libraries"?\./,
		$log_offset_c),
	'c: with the hint to add the module to shared_preload_libraries');

# The standby does not carry on without the mark: the whole server stops.
my $pidfile = $standby_c->data_dir . '/postmaster.pid';
my $deadline = time + 60;
sleep(0.2) while -e $pidfile && time < $deadline;
ok(!-e $pidfile, 'c: the standby\'s postmaster exited');
ok( $standby_c->log_contains(
		qr/startup process \(PID \d+\) exited with exit code 1/, $log_offset_c),
	'c: the log shows the startup process failed');
ok( $standby_c->log_contains(
		qr/shutting down due to startup process failure/, $log_offset_c),
	'c: the log shows the standby shut down because of it');
unlike(
	slurp_file($standby_c->logfile, $log_offset_c),
	# "server process (PID n)" up to 17, the process type from 18 on
	qr/PANIC|\(PID \d+\) was terminated by signal/,
	'c: no PANIC, no process killed by a signal');
# tell the framework the node is down
ok(!$standby_c->stop('fast', fail_ok => 1), 'c: there is no standby server left to stop');

# With the library it resumes where replay stopped.
$standby_c->append_conf('postgresql.conf', "shared_preload_libraries = 'snowflake'\n");
$log_offset_c = -s $standby_c->logfile;
$standby_c->start;
$primary_c->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (2003)') for 1 .. 5;
$rows_c = $primary_c->safe_psql('postgres', 'SELECT count(*) FROM t');
catch_up($primary_c, $standby_c, 'c, with the library');
ok(!$standby_c->log_contains(qr/not registered/, $log_offset_c),
	'c: with the library, replay passes the mark records');
is($standby_c->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$rows_c, 'c: the standby caught up: same row count as the primary');
is( $primary_c->safe_psql('postgres', 'SELECT sum(hashtext(id::text || n::text || payload::text)) FROM t'),
	$standby_c->safe_psql('postgres', 'SELECT sum(hashtext(id::text || n::text || payload::text)) FROM t'),
	'c: and the same rows');
check_refuses_in_recovery($standby_c, 'c');

$primary_c->stop;
promote_and_check($standby_c, 'c', $rows_c);
$standby_c->stop;

done_testing();
