# The wall clock moving backwards under a running server.
#
# libfaketime is preloaded into the postmaster only (so the backends see the
# faked clock, while psql and pgbench keep the real one).  Its offset is read
# from a file on every clock read (FAKETIME_NO_CACHE), so rewriting the file
# steps the server's CLOCK_REALTIME at once, the way an NTP step does.
# FAKETIME_DONT_FAKE_MONOTONIC keeps CLOCK_MONOTONIC real, as a real step
# would; the last part fakes the monotonic clock too.
#
# The small steps of (a) are made on a clock held still (freeze_clock_ms,
# libfaketime's absolute time), so that each is exact and seen by the next
# generating call however the backends are scheduled; the larger steps of
# (b) to (f) need a running clock, for the waits, and their bounds allow a
# descheduled backend.
#
# Two limits of this set-up.  (1) A statement that sleeps with pg_sleep()
# absorbs a backward step (pg_sleep waits until the wall clock reaches its
# end time) and never ends on a held clock, so the generating sessions here
# never sleep.  (2) PostgreSQL 15's postmaster forks background workers from
# signal handlers that interrupt select(), around which libfaketime stops
# faking; such children, the snowflake mark worker among them, read the real
# clock.  Here that only keeps the durable mark further ahead.
#
# What is checked:
#  (a) steps within snowflake.max_clock_lead are absorbed: no failure, no
#      wait, no duplicate, IDs strictly increase within each session, one
#      WARNING per step and the step counters in snowflake_stats;
#  (b) a step beyond the lead but within lead + wait: the call waits for
#      about (step - lead), then succeeds above every earlier ID;
#  (c) a step beyond lead + wait: SQLSTATE 58000 with the documented message,
#      no row, a refusal counted; after the clock is back, generation resumes
#      above the earlier IDs;
#  (d) max_clock_lead = 0: a small step makes a call wait for about the step;
#  (e) a waiting call answers query cancel and pg_terminate_backend promptly,
#      and shows as wait event type Extension;
#  (f) with the monotonic clock faked as well, waits stay bounded (a second
#      step during a wait stretches the budget by at most that step) and
#      nothing repeats.
#
# No raw ID or wall-clock value is compared with a constant: only relations
# between IDs, counters, error codes and loose bounds on durations.

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

my $shard   = 11;
my $timeout = 180;

my $node = node(
	'clock_steps', conf => qq{
snowflake.shard_id = $shard
max_connections = 30
log_statement = none
include_if_exists = 'snowflake_clock.conf'
});

# The WARNINGs about backward steps logged since $offset, as step sizes.
sub warned_steps
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	return ($log =~ /WARNING:  the system clock moved backwards by (\d+) ms/g);
}

# Checks that the WARNINGs logged since $offset report exactly @steps, in
# order: for steps made on a held clock (exact_step_back), which the first
# call after each sees whole.
sub check_exact_warned_steps
{
	my ($what, $offset, @steps) = @_;
	my @warned = warned_steps($offset);
	is("@warned", "@steps",
		"$what: one WARNING per backward step, each with its exact size (@steps ms)");
	return;
}

# Checks that the smallest new ID ($newsql) is above the largest old one.
sub all_above
{
	my ($what, $newsql, $oldsql) = @_;
	is( $node->safe_psql(
			'postgres', "SELECT ($newsql) > ($oldsql)"),
		't', $what);
	return;
}

set_clock_ms($node, 0);
clock_settings($node, 1000, 5000, 0);
start_faked($node);
check_generator($node);

# First, make sure the faked clock really moves the server's clock.  The
# server reads its clock between the moments psql is started and returns,
# however long that takes on a loaded machine: within those two real times
# plus the offset (1 ms either side for rounding to milliseconds).
{
	my $q = q{SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint};
	my $check = sub {
		my ($offset_ms, $what) = @_;
		my $before = time * 1000;
		my $server = $node->safe_psql('postgres', $q);
		my $after  = time * 1000;
		ok( $server >= $before + $offset_ms - 1 && $server <= $after + $offset_ms + 1,
			sprintf('%s (server %d ms from the real time; psql took %d ms)',
				$what, $server - ($before + $after) / 2, $after - $before));
	};
	$check->(0, 'offset +0: server clock agrees with the real clock');
	set_clock_ms($node, -2000);
	$check->(-2000, 'offset -2 s: server clock is 2 s behind');
	set_clock_ms($node, -500);
	$check->(-500, 'offset -0.5 s: fractional offsets work');
	my $at = int(time * 1000) - 5250;
	freeze_clock_ms($node, $at);
	my $qfloor = q{SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint};
	is( $node->safe_psql('postgres', "$qfloor UNION ALL $qfloor"),
		"$at\n$at", 'held clock: every reading is the held instant, to the millisecond');
	thaw_clock_ms($node, $at);
	ok($node->safe_psql('postgres', $q) >= $at, 'thawed clock: runs on from the held instant');
	set_clock_ms($node, 0);
	$check->(0, 'offset +0 again: server clock back to real time');
}

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		payload int,
		inserted_at timestamptz DEFAULT clock_timestamp(),
		n bigserial);
	-- no primary key: duplicates are counted, not refused
	CREATE UNLOGGED TABLE s (n int, id bigint);
	-- a2: generates IDs into s one at a time, in one statement, until a
	-- row appears in a2_stop (each statement of a VOLATILE function sees
	-- other sessions' commits), at most 2000000
	CREATE TABLE a2_stop ();
	CREATE FUNCTION a2_batch() RETURNS bigint
	LANGUAGE plpgsql VOLATILE AS $$
	DECLARE i bigint := 0;
	BEGIN
		LOOP
			i := i + 1;
			INSERT INTO s (n, id) VALUES (i, snowflake_nextval());
			EXIT WHEN i % 100 = 0 AND EXISTS (SELECT FROM a2_stop);
			EXIT WHEN i >= 2000000;
		END LOOP;
		RETURN i;
	END $$;
});

###########################################################################
# (a) Small backward steps, within max_clock_lead (1 s), under load.
#
# Each step is made on a clock held still (freeze_clock_ms) and waited for,
# so that it is exact whatever the scheduling.  On a running clock a backend
# that reads no clock for longer than a step (descheduled on a loaded
# machine) sees no step at all, only a clock that moved on less than the
# real time did: the test would assert what scheduling decides.  So each
# step holds the clock at a base past every reading and every ID so far (a
# forward jump, which is no step), waits until a generating call has read
# it (the shard's last ID carries it), then holds it at base - step and
# waits until a generating call has counted the step.  That call compares
# base - step with base: it sees exactly the step, and only it warns.
###########################################################################

# The shard's last ID's timestamp in ms since 1970 (0 before the first).
sub last_id_ms
{
	return $node->safe_psql(
		'postgres', qq{
		SELECT coalesce(max((extract(epoch FROM last_timestamp) * 1000)::bigint), 0)
		FROM snowflake_stats WHERE shard_id = $shard});
}

# A base for the next step: past the clock as the server reads it now and
# past every ID, by 250 ms (more than the IDs a batch can borrow ahead of a
# held clock meanwhile) from a held clock ($held), by 1 s from a running one
# (the real time plus $offset_ms, read after the query, just before the
# clock file is written: a base behind the running clock would be a step).
sub next_base
{
	my ($held, $offset_ms) = @_;
	my $last = last_id_ms();
	my $now = $held // int(time * 1000) + $offset_ms + 750;
	return ($now > $last ? $now : $last) + 250;
}

# Steps the clock back by exactly $step ms from $base while some session
# generates; $counted is clock_steps_back before the step.  Returns the
# instant the clock is held at afterwards.
sub exact_step_back
{
	my ($what, $base, $step, $counted) = @_;
	freeze_clock_ms($node, $base);
	ok( $node->poll_query_until(
			'postgres', qq{
			SELECT (extract(epoch FROM last_timestamp) * 1000)::bigint >= $base
			FROM snowflake_stats WHERE shard_id = $shard}),
		"$what: a generating call read the clock held at the base of the $step ms step");
	freeze_clock_ms($node, $base - $step);
	ok( $node->poll_query_until(
			'postgres', qq{
			SELECT clock_steps_back > $counted
			FROM snowflake_stats WHERE shard_id = $shard}),
		"$what: a generating call saw the $step ms step");
	return $base - $step;
}

# (a1) pgbench: several clients insert single rows while the clock steps
# back by 100, 300, 800, 100 and 300 ms.  pgbench runs until it is told to
# stop (SIGALRM ends a --time run early, with its report), so that it is
# still inserting after the last step however long the steps took.
$node->safe_psql('postgres', 'SELECT snowflake_stats_reset()');
my $log_offset = -s $node->logfile;
my $script     = $node->basedir . '/insert_t.sql';
append_to_file($script, "INSERT INTO t (payload) VALUES (:client_id);\n");
my ($pb_out, $pb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client=4', '--jobs=2',
		'--time=' . ($timeout - 30),
		"--file=$script", '--host=' . $node->host, '--port=' . $node->port,
		'postgres'
	],
	'>', \$pb_out, '2>', \$pb_err,
	IPC::Run::timeout($timeout));

ok($node->poll_query_until('postgres', 'SELECT count(*) > 500 FROM t'),
	'a1: pgbench is inserting');

my @a1_steps  = (100, 300, 800, 100, 300);
my $offset_ms = 0;
my $held;
foreach my $i (0 .. $#a1_steps)
{
	$held = exact_step_back('a1', next_base($held, $offset_ms), $a1_steps[$i], $i);
}
my $rows_after_last_step = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) > $rows_after_last_step + 100 FROM t"),
	'a1: pgbench was still inserting after the last step');

$pgbench->signal('ALRM');
$pgbench->finish;
is($? >> 8, 0, 'a1: pgbench exited successfully');
like($pb_out, qr/number of failed transactions: 0 \(0\.000%\)/,
	'a1: pgbench reports zero failed transactions');
unlike($pb_out . $pb_err, qr/ERROR|aborted/, 'a1: no client saw an error');
is(scalar(() = $pb_err =~ /WARNING:  the system clock moved backwards by/g),
	scalar @a1_steps, 'a1: each step was reported to exactly one client');

is( $node->safe_psql('postgres', 'SELECT count(DISTINCT id) = count(*) FROM t'),
	't', 'a1: no duplicate IDs');
is($node->safe_psql('postgres', 'SELECT count(DISTINCT payload) FROM t'),
	4, 'a1: every client inserted rows');
# Each client's inserts ran one after the other, so in n order its IDs must
# strictly increase (across clients n and id are drawn at different moments).
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY payload ORDER BY n) AS prev FROM t) x
	WHERE id <= prev}),
	0,
	'a1: within each client, IDs strictly increase');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM t WHERE snowflake_shard_id(id) <> $shard"),
	0, "a1: every ID carries shard $shard");

my $st = shard_stats($node, $shard);
is($st->{clock_steps_back}, scalar @a1_steps,
	'a1: snowflake_stats counts each backward step once');
is($st->{largest_step_back_ms}, 800,
	'a1: largest_step_back_ms is the 800 ms step');
is($st->{waits},    0, 'a1: steps within the lead made no call wait');
is($st->{refusals}, 0, 'a1: no call was refused');
check_exact_warned_steps('a1', $log_offset, @a1_steps);

# (a2) One session generates IDs in one statement (a2_batch(), until told to
# stop) while the clock steps back by 100, 300 and 800 ms: in generation
# order (n) the IDs must strictly increase.  The clock stays held from a1.
$st         = shard_stats($node, $shard);
$log_offset = -s $node->logfile;
my ($b_in, $b_out, $b_err) = ('', '', '');
my $batch = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') ],
	'<', \$b_in, '>', \$b_out, '2>', \$b_err,
	IPC::Run::timeout($timeout));
$b_in .= q{
SET max_parallel_workers_per_gather = 0;
\echo batch-started
SELECT a2_batch() > 0;
\echo batch-finished
};
ok( pump_until($batch, IPC::Run::timeout($timeout), \$b_out, qr/batch-started/),
	'a2: batch session started');
my @a2_steps = (100, 300, 800);
foreach my $i (0 .. $#a2_steps)
{
	$held = exact_step_back('a2', next_base($held, $offset_ms), $a2_steps[$i],
		$st->{clock_steps_back} + $i);
}
$batch->pump_nb;
unlike($b_out, qr/batch-finished/, 'a2: the batch was still running after the last step');
$node->safe_psql('postgres', 'INSERT INTO a2_stop DEFAULT VALUES');
$b_in .= "\\q\n";
$batch->finish;
is($? >> 8, 0, 'a2: batch session succeeded');
unlike($b_err, qr/ERROR/, 'a2: no error in the batch session');
like($b_out, qr/^t$/m, 'a2: the batch generated IDs and stopped when told');

is( $node->safe_psql('postgres', 'SELECT count(*) > 0 AND count(*) = count(DISTINCT id) FROM s'),
	't', 'a2: every ID distinct');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM s) x
	WHERE id <= prev}),
	0,
	'a2: in generation order, every ID is greater than the one before');
my $st2 = shard_stats($node, $shard);
is($st2->{clock_steps_back} - $st->{clock_steps_back},
	scalar @a2_steps, 'a2: each backward step counted once');
is($st2->{waits} - $st->{waits}, 0, 'a2: no call waited');
check_exact_warned_steps('a2', $log_offset, @a2_steps);

# back to the real time: a forward step (no warning) once the real time has
# passed the held clock and every ID (at most a few hundred ms to wait)
my $until_ms = ($held > last_id_ms() ? $held : last_id_ms()) + 10;
sleep(($until_ms - time * 1000) / 1000) while time * 1000 < $until_ms;
$offset_ms = 0;
set_clock_ms($node, 0);

###########################################################################
# (b) A step beyond the lead but within lead + wait: lead 1 s, wait 5 s,
#     step back 3 s.  The next call waits about 2 s, then succeeds.
#
# The call sees the step less the real time between the clock readings
# around it (the WARNING's size, w): at most 3 s, and more than the lead
# unless a loaded machine kept psql from starting for 2 s.  It then waits
# until the clock has made up w - lead: at least that long, which is what
# is checked; how much longer depends on scheduling.
###########################################################################

$st         = shard_stats($node, $shard);
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-1)');
set_clock_ms($node, -3000);
my ($ret, $out, $err, $elapsed) =
  timed_psql($node, 'INSERT INTO t (payload) VALUES (-2) RETURNING id', $timeout);
is($ret, 0, 'b: the call after a 3 s step succeeds');
like($out, qr/^\d+$/, 'b: it returned an ID');
all_above('b: the new ID is greater than every earlier ID',
	"SELECT min(id) FROM t WHERE payload = -2",
	"SELECT max(id) FROM t WHERE payload <> -2");
my @b_warned = warned_steps($log_offset);
is(scalar @b_warned, 1, 'b: one WARNING for the step');
my $b_w = $b_warned[0] // 0;
ok($b_w > 1000 && $b_w <= 3001,
	"b: it reports the step, less the time between the readings around it ($b_w ms, 1000 .. 3000)");
ok($elapsed >= ($b_w - 1000) / 1000,
	sprintf('b: the call waited at least step - lead (%.2f s for %d ms)', $elapsed, $b_w - 1000));
$st2 = shard_stats($node, $shard);
ok($st2->{waits} > $st->{waits}, 'b: snowflake_stats.waits increased');
my $b_wait_ms = $st2->{wait_time_ms} - $st->{wait_time_ms};
ok($b_wait_ms > 0 && $b_wait_ms <= $elapsed * 1000 + 1,
	sprintf('b: snowflake_stats.wait_time_ms grew by the wait (%.0f ms in a call of %.0f ms)',
		$b_wait_ms, $elapsed * 1000));
is($st2->{refusals} - $st->{refusals}, 0, 'b: no refusal');
like($err, qr/WARNING:  the system clock moved backwards by \d+ ms/,
	'b: the calling session got the WARNING');
is( $node->safe_psql(
		'postgres',
		q{SELECT snowflake_timestamp(id) <= clock_timestamp() + interval '1 second' FROM t WHERE payload = -2}),
	't',
	'b: the new ID runs ahead of the (stepped) clock by at most max_clock_lead');
set_clock_ms($node, 0);

###########################################################################
# (c) A step beyond lead + wait: wait 1 s, step back 30 s.  The call fails
#     with SQLSTATE 58000 after about 1 s and inserts nothing.
###########################################################################

clock_settings($node, 1000, 1000, 1);
my $rows_before = $node->safe_psql('postgres', 'SELECT count(*) FROM t') + 1;
$st         = shard_stats($node, $shard);
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-1)');
set_clock_ms($node, -30000);
($ret, $out, $err, $elapsed) = timed_psql($node,
	"\\set VERBOSITY verbose\nINSERT INTO t (payload) VALUES (-3) RETURNING id", $timeout);
isnt($ret, 0, 'c: the call after a 30 s step fails');
like(
	$err,
	qr/ERROR:  58000: could not generate a snowflake ID: the clock moved backwards by \d+ ms/,
	'c: SQLSTATE 58000 and "the clock moved backwards by N ms"');
my ($moved) = $err =~ /ERROR:  58000: [^\n]*moved backwards by (\d+) ms/;
# the step less the real time between the readings around it, which a
# loaded machine may stretch: beyond lead + wait (else no refusal), and
# exactly what the WARNING reported
ok(defined $moved && $moved > 2000 && $moved <= 30001,
	'c: the error reports the size of the step (' . ($moved // 'none') . ' ms)');
is(join(',', warned_steps($log_offset)), $moved // 'none',
	'c: one WARNING, for the same step as the error');
like(
	$err,
	qr/DETAIL:  [^\n]*snowflake\.max_clock_lead \(1000 ms\)[^\n]*snowflake\.max_clock_wait \(1000 ms\)/,
	'c: the detail names snowflake.max_clock_lead and snowflake.max_clock_wait');
# at least max_clock_wait (1 s); the upper bound only says "not forever"
ok($elapsed >= 1.0 && $elapsed < 30.0,
	sprintf('c: the call failed after waiting max_clock_wait (%.2f s)', $elapsed));
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$rows_before, 'c: no row was inserted');
$st2 = shard_stats($node, $shard);
is($st2->{refusals} - $st->{refusals}, 1, 'c: snowflake_stats.refusals increased by one');

set_clock_ms($node, 0);
($ret, $out, $err) = timed_psql($node, 'INSERT INTO t (payload) VALUES (-4) RETURNING id', $timeout);
is($ret, 0, 'c: with the clock restored, generation works again');
all_above('c: and continues above every earlier ID',
	"SELECT min(id) FROM t WHERE payload = -4",
	"SELECT max(id) FROM t WHERE payload <> -4");

###########################################################################
# (d) max_clock_lead = 0 (classic generator): a 1 s step makes the next
#     call wait until the clock is back where it was, then IDs continue to
#     increase.  The call sees the step less the real time between the
#     readings around it (w, the WARNING's size; 1 s leaves a loaded
#     machine room), and waits at least w, as the server's clock measures.
###########################################################################

clock_settings($node, 0, 5000, 1);
my $bg = $node->background_psql('postgres', on_error_stop => 1);
# the step WARNING goes to the log only, keeping stderr clean for query_safe
$bg->query_safe('SET client_min_messages = error');
$bg->query_safe('SET max_parallel_workers_per_gather = 0');
$bg->query_safe('SELECT snowflake_nextval() FROM generate_series(1, 10)');
$st         = shard_stats($node, $shard);
$log_offset = -s $node->logfile;
my $d_prev = $bg->query_safe('SELECT snowflake_nextval()');
set_clock_ms($node, -1000);
my $d_res = $bg->query_safe(
	q{SELECT id, round(extract(epoch FROM b - a) * 1000)::int FROM (
		SELECT clock_timestamp() AS a, snowflake_nextval() AS id,
		       clock_timestamp() AS b OFFSET 0) x});
my ($d_id, $d_ms) = split /\|/, $d_res;
ok($d_id > $d_prev, 'd: the ID after the step is greater than the one before');
my @d_warned = warned_steps($log_offset);
my $d_w = $d_warned[0] // 0;
ok(@d_warned == 1 && $d_w > 0 && $d_w <= 1001,
	"d: one WARNING, for at most the step (@d_warned ms)");
ok($d_ms >= $d_w - 1 && $d_ms < 5000 + 1000,
	"d: with max_clock_lead = 0 the call waited the step it saw ($d_ms ms for $d_w ms)");
$bg->query_safe(
	'CREATE TEMP TABLE d AS SELECT n, snowflake_nextval() AS id FROM generate_series(1, 20000) n');
is( $bg->query_safe(
		qq{SELECT count(*) FILTER (WHERE id <= prev), bool_and(id > $d_id) FROM (
			SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM d) x}),
	'0|t',
	'd: the following 20000 IDs keep increasing');
$bg->quit;
$st2 = shard_stats($node, $shard);
ok($st2->{waits} > $st->{waits}, 'd: snowflake_stats.waits increased');
is($st2->{refusals} - $st->{refusals}, 0, 'd: no refusal');
set_clock_ms($node, 0);

###########################################################################
# (e) A waiting call answers query cancel and pg_terminate_backend.
###########################################################################

clock_settings($node, 1000, 60000, 1);
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-1)');
set_clock_ms($node, -30000);

# Starts a psql running one snowflake_nextval() call as $appname.
sub start_waiter
{
	my ($appname) = @_;
	my %w = (out => '', err => '');
	$w{run} = IPC::Run::start(
		[
			'psql', '-XAtq', '-d',
			$node->connstr('postgres') . " application_name=$appname",
			'-c', 'SELECT snowflake_nextval()'
		],
		'>', \$w{out}, '2>', \$w{err},
		IPC::Run::timeout($timeout));
	ok( $node->poll_query_until(
			'postgres', qq{
			SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity
			WHERE application_name = '$appname' AND state = 'active'},
			'Extension:Extension'),
		"e: $appname waits for the clock with wait event type Extension");
	$w{pid} = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = '$appname'");
	return \%w;
}

# "Promptly" is timed from the moment the signal was sent (psql's own start
# is not the backend's business) and bounded well below the 60 s the call
# would otherwise wait, generously for a loaded machine.
my $w = start_waiter('waiter');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($w->{pid})"),
	't', 'e: sent query cancel');
my $t0 = time;
$w->{run}->finish;
my $cancel_s = time - $t0;
isnt($? >> 8, 0, 'e: the cancelled call failed');
like($w->{err}, qr/ERROR:  canceling statement due to user request/,
	'e: with "canceling statement due to user request"');
ok($cancel_s < 15.0, sprintf('e: promptly (%.2f s after the cancel)', $cancel_s));
is($w->{out}, '', 'e: the cancelled call returned no ID');

$w = start_waiter('victim');
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($w->{pid})"),
	't', 'e: sent pg_terminate_backend');
$t0 = time;
$w->{run}->finish;
my $term_s = time - $t0;
like($w->{err}, qr/terminating connection due to administrator command/,
	'e: the waiting backend was terminated');
ok($term_s < 15.0, sprintf('e: promptly (%.2f s after the terminate)', $term_s));
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $w->{pid}"),
	'e: the terminated backend is gone');

set_clock_ms($node, 0);
($ret, $out, $err) = timed_psql($node, 'INSERT INTO t (payload) VALUES (-5) RETURNING id', $timeout);
is($ret, 0, 'e: with the clock restored, generation works');
all_above('e: above every earlier ID',
	"SELECT min(id) FROM t WHERE payload = -5",
	"SELECT max(id) FROM t WHERE payload <> -5");

###########################################################################
# (f) The monotonic clock faked too (steps move CLOCK_MONOTONIC as well,
#     unlike a real NTP step): waits stay bounded and nothing repeats.
###########################################################################

$node->stop;
clock_settings($node, 1000, 5000, 0);
start_faked($node, fake_monotonic => 1);

# as in (b): at least the step it saw (w) less the lead
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-6)');
set_clock_ms($node, -3000);
($ret, $out, $err, $elapsed) =
  timed_psql($node, 'INSERT INTO t (payload) VALUES (-7) RETURNING id', $timeout);
is($ret, 0, 'f: monotonic faked: the call after a 3 s step succeeds');
my ($f_w) = (warned_steps($log_offset), 0);
ok($f_w > 1000 && $f_w <= 3001 && $elapsed >= ($f_w - 1000) / 1000,
	sprintf('f: monotonic faked: it waited at least step - lead (%.2f s for %d ms)',
		$elapsed, $f_w - 1000));
all_above('f: monotonic faked: the new ID is greater than every earlier ID',
	"SELECT min(id) FROM t WHERE payload = -7",
	"SELECT max(id) FROM t WHERE payload <> -7");
set_clock_ms($node, 0);

clock_settings($node, 1000, 1000, 1);
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-6)');
set_clock_ms($node, -30000);
($ret, $out, $err, $elapsed) = timed_psql($node,
	"\\set VERBOSITY verbose\nINSERT INTO t (payload) VALUES (-8) RETURNING id", $timeout);
isnt($ret, 0, 'f: monotonic faked: the call after a 30 s step fails');
like($err, qr/ERROR:  58000: could not generate a snowflake ID/,
	'f: monotonic faked: with SQLSTATE 58000');
ok($elapsed >= 1.0 && $elapsed < 30.0,
	sprintf('f: monotonic faked: after waiting max_clock_wait (%.2f s)', $elapsed));
set_clock_ms($node, 0);

# A second backward step while a call is already waiting: the monotonic
# clock the wait is measured with jumps back too, so the budget stretches by
# that step (a real NTP step leaves CLOCK_MONOTONIC alone).  The call must
# still end, by succeeding or with the 58000 error, and never repeat an ID.
clock_settings($node, 1000, 5000, 1);
$node->safe_psql('postgres', 'INSERT INTO t (payload) VALUES (-6)');
set_clock_ms($node, -3000);
# The second step comes once the call is seen waiting (unless a loaded
# machine let its whole wait pass first); from then on, it waits at most
# max_clock_wait stretched by the second step, 8 s: bounded generously.
my %m = (out => '', err => '');
$m{run} = IPC::Run::start(
	[
		'psql', '-XAtq', '-d',
		$node->connstr('postgres') . ' application_name=second_step', '-c',
		'INSERT INTO t (payload) VALUES (-10) RETURNING id'
	],
	'>', \$m{out}, '2>', \$m{err},
	IPC::Run::timeout($timeout));
my $m_waiting = 0;
my $m_deadline = time + $timeout;
while (time < $m_deadline)
{
	$m{run}->pump_nb;
	last unless $m{run}->pumpable;
	$m_waiting = $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'second_step' AND wait_event_type = 'Extension'});
	last if $m_waiting;
	sleep(0.05);
}
note $m_waiting
  ? 'f: the second step comes during the wait'
  : 'f: the call ended before it was seen waiting: no second step during the wait';
$t0 = time;
set_clock_ms($node, -6000);
$m{run}->finish;
my $m_rc = $? >> 8;
$elapsed = time - $t0;
ok($elapsed < 30.0,
	sprintf('f: monotonic faked, second step during the wait: the call ended (%.2f s)',
		$elapsed));
if ($m_rc == 0)
{
	all_above('f: second step during the wait: the call succeeded above every earlier ID',
		"SELECT min(id) FROM t WHERE payload = -10",
		"SELECT max(id) FROM t WHERE payload <> -10");
}
else
{
	like($m{err}, qr/could not generate a snowflake ID/,
		'f: second step during the wait: the call failed with the clock error');
}
set_clock_ms($node, 0);

($ret, $out, $err) = timed_psql($node,
	'INSERT INTO t (payload) SELECT -9 FROM generate_series(1, 1000) RETURNING id', $timeout);
is($ret, 0, 'f: monotonic faked: generation works with the clock restored');
all_above('f: monotonic faked: above every earlier ID',
	"SELECT min(id) FROM t WHERE payload = -9",
	"SELECT max(id) FROM t WHERE payload <> -9");

# Over the whole run: no ID was issued twice, and rows inserted one session
# at a time (negative payloads) increase in insertion order.
is( $node->safe_psql('postgres',
		'SELECT count(*) = count(DISTINCT id) FROM (SELECT id FROM t UNION ALL SELECT id FROM s) u'),
	't', 'no ID appears twice across all tables');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM t WHERE payload < 0) x
	WHERE id <= prev}),
	0,
	'single-session inserts increase in insertion order across all clock steps');

$node->stop;
done_testing();
