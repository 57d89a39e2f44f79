# Snowflake IDs keep increasing across a clean restart, an immediate
# shutdown (crash) and a backend killed with SIGKILL (which makes the
# postmaster reinitialise shared memory, where the generator state lives).
#
# Every assertion is about relations between IDs or about decoded fields;
# no raw ID or wall-clock value is ever compared with a constant.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $shard = 7;
my $batch = 5000;

# The test framework turns restart_after_crash off; the backend-kill case
# needs the postmaster to reinitialise instead of shutting down.
my $node = node('restart',
	conf  => "snowflake.shard_id = $shard\nrestart_after_crash = on\n",
	start => 1);

$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	-- n records the order in which rows were inserted (one session at a time)
	CREATE TABLE ids (
		n bigserial,
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		phase int NOT NULL);
});

# Inserts $batch rows for $phase from a fresh session.
sub insert_batch
{
	my ($phase) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO ids (phase) SELECT $phase FROM generate_series(1, $batch)");
}

# Checks the rows of $phase against everything issued before it.
sub check_phase
{
	my ($phase, $what, %opts) = @_;

	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE phase = $phase"),
		$batch, "$what: $batch IDs generated");

	# The core property: every ID of this phase is above every earlier ID.
	if ($phase > 1)
	{
		my $above = $node->safe_psql(
			'postgres', qq{
			SELECT (SELECT min(id) FROM ids WHERE phase = $phase)
			     > (SELECT max(id) FROM ids WHERE phase < $phase)});
		is($above, 't', "$what: every new ID is greater than every earlier ID");
	}

	# Also above IDs that were issued but not stored (killed transaction).
	if (defined $opts{above})
	{
		is( $node->safe_psql('postgres',
				"SELECT min(id) > $opts{above} FROM ids WHERE phase = $phase"),
			't',
			"$what: every new ID is greater than the IDs issued by the killed backend"
		);
	}

	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE phase = $phase AND snowflake_shard_id(id) <> $shard"
		),
		0,
		"$what: every ID decodes to shard $shard");

	# Timestamps: close to now (IDs may run ahead by max_clock_lead only).
	is( $node->safe_psql(
			'postgres', qq{
		SELECT count(*) FROM ids WHERE phase = $phase
		   AND snowflake_timestamp(id) NOT BETWEEN now() - interval '5 minutes'
		                                        AND now() + interval '5 minutes'}),
		0,
		"$what: every timestamp decodes to within 5 minutes of now()");

	# Within one millisecond a single session gets consecutive sequence
	# numbers, and at least one millisecond holds more than one ID.
	my $seq = $node->safe_psql(
		'postgres', qq{
		SELECT count(*) FILTER (WHERE mx - mn <> c - 1), max(c) > 1
		FROM (SELECT snowflake_timestamp(id) AS ts,
		             min(snowflake_sequence(id)) AS mn,
		             max(snowflake_sequence(id)) AS mx, count(*) AS c
		      FROM ids WHERE phase = $phase GROUP BY 1) g});
	is($seq, '0|t',
		"$what: sequences within each millisecond are consecutive");

	# snowflake_decode agrees with the single-field decoders, and the fields
	# put back together with the layout give the ID again.
	is( $node->safe_psql(
			'postgres', qq{
		SELECT count(*) FROM ids, snowflake_decode(id) d, snowflake_layout() l
		WHERE phase = $phase AND NOT (
		      d.created_at = snowflake_timestamp(id)
		  AND d.shard_id = snowflake_shard_id(id)
		  AND d.sequence = snowflake_sequence(id)
		  AND d.sequence < l.ids_per_ms_per_shard
		  AND ((((extract(epoch FROM d.created_at) - extract(epoch FROM l.epoch)) * 1000)::bigint
		        << (l.shard_bits + l.sequence_bits))
		       | (d.shard_id::bigint << l.sequence_bits) | d.sequence) = id)}),
		0,
		"$what: decoded fields recompose to the ID");
}

# Phase 1: before any restart.
insert_batch(1);
check_phase(1, 'first start');

# Phase 2: clean restart.
$node->restart;
insert_batch(2);
check_phase(2, 'after clean restart');

# Phase 3: immediate shutdown (no shutdown checkpoint: crash recovery).
$node->stop('immediate');
my $crash_offset = -s $node->logfile;
$node->start;
ok( $node->log_contains(
		qr/database system was not properly shut down; automatic recovery in progress/,
		$crash_offset),
	'immediate stop led to crash recovery');
insert_batch(3);
check_phase(3, 'after immediate stop');

# Phase 4 and 5: a backend killed with SIGKILL in the middle of a
# transaction that is generating IDs.  The postmaster then kills every
# backend and reinitialises shared memory.
my $pm_pid_before = postmaster_pid($node);
my $log_offset    = -s $node->logfile;

my ($v_in, $v_out, $v_err) = ('', '', '');
my $victim = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d',
		$node->connstr('postgres') . ' application_name=victim'
	],
	'<', \$v_in, '>', \$v_out, '2>', \$v_err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
$v_in .= qq{
INSERT INTO ids (phase) SELECT 4 FROM generate_series(1, $batch);
BEGIN;
INSERT INTO ids (phase) SELECT 5 FROM generate_series(1, 1000);
SELECT 'inflight-max=' || max(id) FROM ids WHERE phase = 5;
-- keeps generating (slowly) until killed
SELECT count(*) FROM (SELECT snowflake_nextval(), pg_sleep(0.001)
                      FROM generate_series(1, 1000000)) s;
};
$victim->pump_nb;

ok( $node->poll_query_until(
		'postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'victim' AND state = 'active'
		  AND query LIKE '%pg_sleep(0.001)%'}),
	'victim backend is generating IDs');
my $victim_pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'victim'");
like($victim_pid, qr/^\d+$/, 'found the victim backend pid');

# What the victim issued in its (doomed) transaction.
pump_until($victim, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default),
	\$v_out, qr/inflight-max=\d+/);
my ($inflight_max) = $v_out =~ /inflight-max=(\d+)/;
ok(defined $inflight_max, 'victim reported the IDs of its open transaction');

is(kill('KILL', $victim_pid), 1, 'sent SIGKILL to the victim backend');
$victim->finish;
isnt($?, 0, 'victim psql lost its connection');

ok(wait_after_backend_kill($node, $log_offset),
	'server accepts connections again after the backend crash');
is(postmaster_pid($node), $pm_pid_before,
	'same postmaster (crash reinitialisation, not a restart)');
ok( $node->log_contains(
		# PostgreSQL 18 names the backend type instead of "server process"
		qr/(?:server process|client backend) \(PID $victim_pid\) was terminated by signal 9/,
		$log_offset),
	'log shows the backend was killed by signal 9');
ok( $node->log_contains(
		qr/all server processes terminated; reinitializing/, $log_offset),
	'log shows the postmaster reinitialised shared memory');

is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE phase = 5'),
	0, 'the killed transaction left no rows');
check_phase(4, 'victim batch committed before the kill');

insert_batch(6);
check_phase(6, 'after backend SIGKILL', above => $inflight_max);

# Over the whole history, insertion order and ID order agree.
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s
	WHERE id <= prev}),
	0,
	'IDs increase in insertion order across all restarts and crashes');

###########################################################################
# IDs that ran ahead of the clock.  snowflake.max_clock_lead lets the IDs'
# timestamps run ahead of the wall clock when a millisecond's sequence
# numbers are used up.  After a restart (clean or not) new IDs must still be
# above those, or the shard issues duplicates.  A narrow sequence field
# (4 IDs per ms) and a 5 s lead make a short burst run about 4 s ahead,
# far longer than a restart takes.
###########################################################################

my $ahead = node(
	'ahead', start => 1, conf => qq{
snowflake.shard_id = $shard
snowflake.sequence_bits = 2
snowflake.max_clock_lead = '5s'
restart_after_crash = on
});
# no primary key: duplicates must be counted, not make the insert fail
$ahead->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE b (id bigint NOT NULL, phase int NOT NULL);
});

my $burst = 16000;    # 4000 ms worth of IDs at 4 per ms

sub burst
{
	my ($phase) = @_;
	$ahead->safe_psql('postgres',
		"INSERT INTO b SELECT snowflake_nextval(), $phase FROM generate_series(1, $burst)"
	);
	is( $ahead->safe_psql(
			'postgres',
			"SELECT max(snowflake_timestamp(id)) > clock_timestamp() + interval '2 seconds' FROM b WHERE phase = $phase"
		),
		't',
		"ahead phase $phase: the burst's IDs run more than 2 s ahead of the clock");
}

sub check_ahead
{
	my ($phase, $what) = @_;
	is( $ahead->safe_psql(
			'postgres', qq{
		SELECT (SELECT min(id) FROM b WHERE phase = $phase)
		     > (SELECT max(id) FROM b WHERE phase < $phase)}),
		't',
		"ahead of the clock, $what: every new ID is greater than every earlier ID"
	);
	is( $ahead->safe_psql(
			'postgres', qq{
		SELECT count(*) FROM (SELECT id FROM b WHERE phase <= $phase GROUP BY id
		                      HAVING count(*) > 1 AND bool_or(phase = $phase)) d}),
		0,
		"ahead of the clock, $what: no ID was issued twice");
}

burst(1);
$ahead->restart;
burst(2);
check_ahead(2, 'after clean restart');

$ahead->stop('immediate');
$ahead->start;
burst(3);
check_ahead(3, 'after immediate stop');

my $ahead_log_offset = -s $ahead->logfile;
# a session that is still connected when killed
my ($a_in, $a_out, $a_err) = ('', '', '');
my $a_victim = IPC::Run::start(
	[
		'psql', '-XAtq', '-d',
		$ahead->connstr('postgres') . ' application_name=victim'
	],
	'<', \$a_in, '>', \$a_out, '2>', \$a_err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
$a_in .=
  "INSERT INTO b SELECT snowflake_nextval(), 4 FROM generate_series(1, $burst);\n"
  . "SELECT 'burst-done';\nSELECT pg_sleep(600);\n";
pump_until($a_victim,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default),
	\$a_out, qr/burst-done/);
ok( $ahead->poll_query_until(
		'postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'victim' AND query LIKE '%pg_sleep(600)%'}),
	'ahead: victim backend is waiting');
my $a_victim_pid = $ahead->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'victim'");
is(kill('KILL', $a_victim_pid), 1, 'ahead: sent SIGKILL to a backend');
$a_victim->finish;
ok(wait_after_backend_kill($ahead, $ahead_log_offset),
	'ahead: server accepts connections again');
ok( $ahead->log_contains(
		qr/all server processes terminated; reinitializing/,
		$ahead_log_offset),
	'ahead: postmaster reinitialised shared memory');
burst(5);
check_ahead(5, 'after backend SIGKILL');

done_testing();
