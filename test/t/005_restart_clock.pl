# Restarts and crashes with the clock set back.
#
# The durable high-water mark ($PGDATA/pg_snowflake/mark) must make every
# restart, clean or crash, resume strictly above every ID issued before, even
# when the server comes back with its clock behind: the first calls then wait
# (bounded by snowflake.max_clock_wait) or fail with SQLSTATE 58000, and never
# issue a lower ID.
#
# The server's clock is faked with libfaketime, preloaded into the postmaster
# only; its offset is read from a file on every clock read.
#
# What is checked:
#  - steady generation does not write the mark on every call, and a clean
#    stop leaves a mark file holding the last timestamp used;
#  (a) clean stop, clock back 3 s: the next call waits and returns an ID
#      above every earlier one, decoding to a time not before theirs;
#  (b) immediate stop in the middle of a pgbench run, clock back 3 s: every
#      new ID is above every committed one;
#  (c) clean stop, clock back 60 s, max_clock_wait 2 s: calls fail with
#      SQLSTATE 58000 and a clear message, nothing lower is ever issued, and
#      with the clock restored generation continues above the old IDs;
#  (d) a backend killed with SIGKILL (shared memory reinitialised) after the
#      clock went back 2 s: IDs still increase;
#  (e) the same kind of restarts with CLOCK_MONOTONIC faked too: no duplicate,
#      no decrease.
#
# A limit of this set-up: PostgreSQL 15's postmaster forks background
# workers from inside signal handlers that interrupt select(), and
# libfaketime turns faking off around select(); children forked there (the
# snowflake mark worker among them) keep reading the real clock.  The mark
# worker therefore keeps the durable mark ahead of the real time, not of the
# faked one: crashes happen here with the clock at the real time, and the
# clock is set back only for the restart (as after a crash and a clock step).
#
# No raw ID or wall-clock value is compared with a constant.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time sleep usleep);

plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

my $shard   = 9;
my $timeout = 180;

# restart_after_crash: the backend-kill case needs the postmaster to
# reinitialise instead of shutting down (the framework turns it off).
my $node = node(
	'restart_clock', conf => qq{
snowflake.shard_id = $shard
restart_after_crash = on
max_connections = 30
log_statement = none
include_if_exists = 'snowflake_clock.conf'
});


# Unix ms of the last timestamp the generator used.
sub last_used_ms
{
	return $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM last_timestamp) * 1000)::bigint FROM snowflake_stats WHERE shard_id = $shard"
	);
}

# The mark file's text and its mark_unix_ms (undef if missing).
sub read_mark
{
	my $f = $node->data_dir . '/pg_snowflake/mark';
	return (undef, undef) unless -f $f;
	my $text = slurp_file($f);
	my ($mark) = $text =~ /^mark_unix_ms (\d+)$/m;
	return ($text, $mark);
}

# A call that succeeds has waited less than snowflake.max_clock_wait (else it
# is refused), and one refused has waited at least that long: the code
# guarantees those.  How long psql takes around the call is the machine's
# business (over a second to start on a loaded one), so the upper bound on
# a call's duration only tells a bounded wait from a hang.
my $hang_s = 30;

sub max_id
{
	my ($where) = @_;
	return $node->safe_psql('postgres', "SELECT max(id) FROM ids WHERE $where");
}

# Every ID of $phase is above $old (an ID issued before).
sub check_above
{
	my ($what, $phase, $old) = @_;
	is( $node->safe_psql('postgres',
			"SELECT count(*) > 0 AND min(id) > $old FROM ids WHERE phase = $phase"),
		't',
		"$what: every new ID is greater than every earlier ID");
	return;
}

# The IDs of a single-session phase increase in generation order.
sub check_increasing
{
	my ($what, $phase) = @_;
	is( $node->safe_psql(
			'postgres', qq{
			SELECT count(*) FROM (
				SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids WHERE phase = $phase) x
			WHERE id <= prev}),
		0,
		"$what: IDs strictly increase in generation order");
	return;
}

# The IDs of a pgbench phase increase within each client.
sub check_per_client
{
	my ($what, $phase) = @_;
	is( $node->safe_psql(
			'postgres', qq{
			SELECT count(*) FROM (
				SELECT id, lag(id) OVER (PARTITION BY client ORDER BY n) AS prev
				FROM ids WHERE phase = $phase) x
			WHERE id <= prev}),
		0,
		"$what: within each client, IDs strictly increase");
	return;
}

# Starts pgbench inserting rows of $phase (client = pgbench client id).
sub start_pgbench
{
	my ($phase, $seconds) = @_;
	my $script = $node->basedir . "/insert_phase_$phase.sql";
	append_to_file($script,
		"INSERT INTO ids (phase, client) VALUES ($phase, :client_id);\n");
	my %pb = (out => '', err => '');
	$pb{run} = IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--client=4', '--jobs=2',
			"--time=$seconds", "--file=$script",
			'--host=' . $node->host, '--port=' . $node->port, 'postgres'
		],
		'>', \$pb{out}, '2>', \$pb{err},
		IPC::Run::timeout($timeout));
	return \%pb;
}

set_clock_ms($node, 0);
clock_settings($node, 1000, 5000, 0);
start_faked($node);
check_generator($node);

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	-- n records generation order within one session
	CREATE TABLE ids (
		n bigserial,
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		phase int NOT NULL,
		client int);
	-- returns n, sleeping every "every" calls: spreads a batch over time
	CREATE FUNCTION pace(n int, every int, secs float8) RETURNS int
	LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		IF n % every = 0 THEN PERFORM pg_sleep(secs); END IF;
		RETURN n;
	END $$;
});

###########################################################################
# Steady generation: 100000 IDs over about 2 s.  The mark worker keeps the
# durable mark ahead, so generating calls (almost) never write it.
###########################################################################

$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node->safe_psql('postgres', 'SELECT snowflake_stats_reset()');
my $t0 = time;
$node->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 1 FROM generate_series(1, 100000) g WHERE pace(g, 5000, 0.1) > 0'
);
my $steady_s  = time - $t0;
my $t_phase1  = time;
my $st        = shard_stats($node, $shard);
ok($steady_s > 1.5, sprintf('steady: generation took %.1f s', $steady_s));
is($st->{ids_issued}, 100000, 'steady: ids_issued grew by 100000');
ok($st->{inline_mark_writes} <= 3,
	"steady: generating calls wrote the mark at most 3 times ($st->{inline_mark_writes})"
);
ok( $st->{mark_writes} - $st->{inline_mark_writes} >= 1,
	'steady: the mark worker moved the mark ahead ('
	  . ($st->{mark_writes} - $st->{inline_mark_writes})
	  . ' writes)');
my ($mark_text, $mark) = read_mark();
my $last_ms = last_used_ms();
ok(defined $mark && $mark > $last_ms,
	'steady: while generating, the mark on disk is ahead of the last timestamp used');
check_increasing('steady', 1);

###########################################################################
# (a) Clean stop, clock back 4 s, start: the next call waits (lead 1 s,
#     wait 5 s) and returns an ID above every earlier one.
###########################################################################

my $max1 = max_id('phase = 1');
$last_ms = last_used_ms();
$node->stop('fast');
($mark_text, $mark) = read_mark();
ok(defined $mark_text, 'a: after a clean stop pg_snowflake/mark exists');
like($mark_text // '', qr/^mark_unix_ms \d+$/m, 'a: it holds a mark_unix_ms line');
like($mark_text // '', qr/^format 1$/m, 'a: and a format line');
is($mark, $last_ms, 'a: the clean stop lowered the mark to the last timestamp used');

set_clock_ms($node, -4000);
start_faked($node);
my $gap = time - $t_phase1;
my ($ret, $out, $err, $elapsed) =
  timed_psql($node, 'INSERT INTO ids (phase) VALUES (2) RETURNING id', $timeout);
is($ret, 0, 'a: the first call after the restart succeeds');
check_above('a', 2, $max1);
is( $node->safe_psql('postgres',
		"SELECT snowflake_timestamp($out) >= snowflake_timestamp($max1)"),
	't',
	'a: the new ID decodes to a time not before the earlier maximum');
is( $node->safe_psql('postgres',
		"SELECT snowflake_timestamp($out) <= clock_timestamp() + interval '1 second'"),
	't',
	'a: and runs ahead of the (set back) clock by at most max_clock_lead');
ok($elapsed < $hang_s,
	sprintf('a: the call returned within max_clock_wait (%.2f s)', $elapsed));
$st = shard_stats($node, $shard);
SKIP:
{
	# The IDs' last timestamp is about $gap s old; with the clock 4 s back
	# and a 1 s lead, a wait is due only if the call comes under 3 s after
	# them.  $gap is measured before psql connects, which may take a while
	# on a loaded machine: leave it a second.
	skip sprintf('restart took %.1f s, no wait expected', $gap), 1
	  if $gap > 2.0;
	ok($st->{waits} >= 1,
		sprintf('a: the first call waited for the clock (%.2f s, restart gap %.1f s)',
			$elapsed, $gap));
}
is($st->{refusals}, 0, 'a: no call was refused');
$node->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 2 FROM generate_series(1, 5000)');
check_increasing('a', 2);

###########################################################################
# (b) Immediate stop (a crash) in the middle of a pgbench run, clock back
#     3 s: every new ID is above every committed ID.
###########################################################################

set_clock_ms($node, 0);
my $pb = start_pgbench(3, 60);
ok($node->poll_query_until('postgres', 'SELECT count(*) > 2000 FROM ids WHERE phase = 3'),
	'b: pgbench is inserting');
sleep(0.5);
$node->stop('immediate');
$pb->{run}->finish;
note "pgbench after the crash: exit code " . ($? >> 8);
unlike($pb->{out} . $pb->{err}, qr/duplicate key/, 'b: pgbench saw no duplicate key');

set_clock_ms($node, -3000);
my $log_offset = -s $node->logfile;
start_faked($node);
ok( $node->log_contains(
		qr/database system was not properly shut down; automatic recovery in progress/,
		$log_offset),
	'b: the immediate stop led to crash recovery');
my $committed_max = max_id('true');
ok($node->safe_psql('postgres', 'SELECT count(*) > 2000 FROM ids WHERE phase = 3') eq 't',
	'b: pgbench rows were committed before the crash');
($ret, $out, $err, $elapsed) = timed_psql($node,
	'INSERT INTO ids (phase) SELECT 4 FROM generate_series(1, 5000)', $timeout);
is($ret, 0, 'b: generation after the crash succeeds');
ok($elapsed < $hang_s,
	sprintf('b: the first calls returned within max_clock_wait (%.2f s)', $elapsed));
check_above('b', 4, $committed_max);
check_increasing('b', 4);
check_per_client('b: the crashed pgbench run', 3);

###########################################################################
# (c) Clean stop, clock back 60 s, max_clock_wait 2 s: the first calls fail
#     with SQLSTATE 58000 and nothing lower is ever issued; with the clock
#     restored generation continues above the old IDs.
###########################################################################

set_clock_ms($node, 0);
$node->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 5 FROM generate_series(1, 1000)');
check_above('c: before the stop', 5, max_id('phase < 5'));
my $old_max = max_id('true');
$node->stop('fast');
clock_settings($node, 1000, 2000, 0);
set_clock_ms($node, -60000);
start_faked($node);

($ret, $out, $err, $elapsed) = timed_psql($node,
	"\\set VERBOSITY verbose\nINSERT INTO ids (phase) VALUES (6) RETURNING id", $timeout);
isnt($ret, 0, 'c: the first call after a restart 60 s in the past fails');
like(
	$err,
	qr/ERROR:  58000: could not generate a snowflake ID: IDs are \d+ ms ahead of the clock/,
	'c: with SQLSTATE 58000 and "IDs are N ms ahead of the clock"');
my ($ahead) = $err =~ /IDs are (\d+) ms ahead of the clock/;
ok(defined $ahead && $ahead > 50000 && $ahead <= 61000,
	'c: the error says how far the IDs are ahead (' . ($ahead // 'none') . ' ms)');
like(
	$err,
	qr/DETAIL:  [^\n]*snowflake\.max_clock_lead \(1000 ms\)[^\n]*snowflake\.max_clock_wait \(2000 ms\)[^\n]*restarted with its clock behind/,
	'c: the detail names the settings and the restart with the clock behind');
ok($elapsed >= 2.0 && $elapsed < $hang_s,
	sprintf('c: it failed after waiting max_clock_wait (%.2f s)', $elapsed));

($ret, $out, $err) = timed_psql($node, 'SELECT snowflake_nextval()', $timeout);
isnt($ret, 0, 'c: a second call fails too');
like($err, qr/could not generate a snowflake ID/, 'c: with the same error');

$st = shard_stats($node, $shard);
is($st->{ids_issued}, 0, 'c: no ID was issued');
ok($st->{refusals} >= 2, "c: the refusals were counted ($st->{refusals})");
is( $node->safe_psql('postgres',
		"SELECT last_timestamp >= snowflake_timestamp($old_max) FROM snowflake_stats WHERE shard_id = $shard"
	),
	't',
	'c: the generator resumed at or above the timestamp of the old maximum');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE phase = 6'),
	0, 'c: no row was inserted');

set_clock_ms($node, 0);
($ret, $out, $err, $elapsed) = timed_psql($node,
	'INSERT INTO ids (phase) SELECT 6 FROM generate_series(1, 1000)', $timeout);
is($ret, 0, 'c: with the clock restored, generation works');
check_above('c: after restoring the clock', 6, $old_max);
check_increasing('c', 6);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase > 5 AND id <= $old_max"),
	0, 'c: no ID at or below the old maximum was issued after the restart');

###########################################################################
# (d) A backend killed with SIGKILL while generating, after the clock went
#     back 2 s: the postmaster reinitialises shared memory; IDs still
#     increase, above what the killed backend had issued.
###########################################################################

clock_settings($node, 1000, 5000, 1);

my ($v_in, $v_out, $v_err) = ('', '', '');
my $victim = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d',
		$node->connstr('postgres') . ' application_name=victim'
	],
	'<', \$v_in, '>', \$v_out, '2>', \$v_err,
	IPC::Run::timeout($timeout));
$v_in .= q{
INSERT INTO ids (phase) SELECT 7 FROM generate_series(1, 2000);
BEGIN;
INSERT INTO ids (phase) SELECT 8 FROM generate_series(1, 1000);
SELECT 'inflight-max=' || max(id) FROM ids WHERE phase = 8;
SELECT count(*) FROM (SELECT snowflake_nextval(), pg_sleep(0.001)
                      FROM generate_series(1, 1000000)) s;
};
ok( pump_until($victim, IPC::Run::timeout($timeout), \$v_out, qr/inflight-max=\d+/),
	'd: the victim reported the IDs of its open transaction');
my ($inflight_max) = $v_out =~ /inflight-max=(\d+)/;
ok( $node->poll_query_until(
		'postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'victim' AND query LIKE '%pg_sleep(0.001)%'}),
	'd: the victim is generating IDs');
my $victim_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'victim'");

set_clock_ms($node, -2000);
sleep(0.3);
my $pm_pid = postmaster_pid($node);
$log_offset = -s $node->logfile;
is(kill('KILL', $victim_pid), 1, 'd: sent SIGKILL to the generating backend');
$victim->finish;
ok(wait_after_backend_kill($node, $log_offset), 'd: the server accepts connections again');
is(postmaster_pid($node), $pm_pid, 'd: same postmaster (shared memory reinitialised)');
# PostgreSQL 18 names the backend type instead of "server process"
ok( $node->log_contains(
		qr/(?:server process|client backend) \(PID $victim_pid\) was terminated by signal 9/,
		$log_offset),
	'd: the log shows the backend was killed by signal 9');

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE phase = 8'),
	0, 'd: the killed transaction left no rows');
$committed_max = max_id('true');
($ret, $out, $err, $elapsed) = timed_psql($node,
	'INSERT INTO ids (phase) SELECT 9 FROM generate_series(1, 5000)', $timeout);
is($ret, 0, 'd: generation after the reinitialisation succeeds');
ok($elapsed < $hang_s,
	sprintf('d: the first calls returned within max_clock_wait (%.2f s)', $elapsed));
check_above('d: above the committed IDs', 9, $committed_max);
check_above('d: above the IDs of the killed transaction', 9, $inflight_max);
check_increasing('d', 9);

###########################################################################
# (e) CLOCK_MONOTONIC faked as well (unlike a real NTP step): a clean
#     restart with the clock 3 s back, a 2.5 s step under pgbench, and a
#     crash restart with the clock 3 s back never repeat or decrease an ID.
###########################################################################

set_clock_ms($node, 0);
$node->safe_psql('postgres', 'INSERT INTO ids (phase) VALUES (10)');
my $max10 = max_id('true');
$node->stop('fast');
set_clock_ms($node, -3000);
start_faked($node, fake_monotonic => 1);
($ret, $out, $err, $elapsed) = timed_psql($node,
	'INSERT INTO ids (phase) SELECT 11 FROM generate_series(1, 1000)', $timeout);
is($ret, 0, 'e: monotonic faked: generation after a clean restart 3 s back works');
ok($elapsed < $hang_s,
	sprintf('e: monotonic faked: within max_clock_wait (%.2f s)', $elapsed));
check_above('e: monotonic faked, clean restart', 11, $max10);
check_increasing('e', 11);

my $max11 = max_id('true');
$log_offset = -s $node->logfile;
$pb = start_pgbench(12, 5);
ok($node->poll_query_until('postgres', 'SELECT count(*) > 500 FROM ids WHERE phase = 12'),
	'e: pgbench is inserting');
sleep(1.0);
set_clock_ms($node, -5500);    # 2.5 s further back: beyond the lead, within the wait
$pb->{run}->finish;
is($? >> 8, 0, 'e: monotonic faked: pgbench across a 2.5 s step succeeded');
like($pb->{out}, qr/number of failed transactions: 0 \(0\.000%\)/,
	'e: monotonic faked: no failed transaction');
ok( $node->log_contains(qr/WARNING:  the system clock moved backwards by \d+ ms/,
		$log_offset),
	'e: the step was seen');
check_above('e: monotonic faked, under pgbench', 12, $max11);
check_per_client('e: monotonic faked', 12);

# Crash with the clock back at the real time (see the note on the mark
# worker at the top), restart 3 s in the past.
set_clock_ms($node, 0);
$node->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 13 FROM generate_series(1, 1000)');
my $max12 = max_id('true');
$node->stop('immediate');
set_clock_ms($node, -3000);
start_faked($node, fake_monotonic => 1);
($ret, $out, $err, $elapsed) = timed_psql($node,
	'INSERT INTO ids (phase) SELECT 14 FROM generate_series(1, 1000)', $timeout);
is($ret, 0, 'e: monotonic faked: generation after a crash, clock 3 s back, works');
ok($elapsed < $hang_s,
	sprintf('e: monotonic faked: within max_clock_wait (%.2f s)', $elapsed));
check_above('e: monotonic faked, crash restart', 14, $max12);
check_increasing('e', 14);

###########################################################################
# Over the whole history.
###########################################################################

is($node->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM ids'),
	't', 'no ID was issued twice');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM (
			SELECT id, lag(id) OVER (ORDER BY n) AS prev
			FROM ids WHERE phase NOT IN (3, 12)) x
		WHERE id <= prev}),
	0,
	'single-session phases increase in insertion order across every restart');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM (
			SELECT phase, min(id) AS lo, max(id) AS hi FROM ids GROUP BY phase) p
		JOIN (SELECT phase, min(id) AS lo, max(id) AS hi FROM ids GROUP BY phase) q
		  ON q.phase < p.phase AND q.hi >= p.lo}),
	0,
	'every phase lies entirely above every earlier phase');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE snowflake_shard_id(id) <> $shard"),
	0, "every ID carries shard $shard");

$node->stop;
done_testing();
