# Defects a hard review reproduced (issue 11), each checked on a real server:
#
#  (a) a batch in a cursor stops when a reload takes its shard away, whether a
#      logical shard (snowflake.shard_ids) or this server's own shard_id;
#  (b) a clock earlier than the epoch at start (libfaketime in the postmaster):
#      the server starts and logs why, generation refuses clearly without
#      recording the layout, and resumes by itself once the clock is right;
#  (c) a layout with 62 timestamp bits: decoded times stay within timestamptz
#      or fail with 22008, never wrap;
#  (d) the mark worker shows in pg_stat_activity; SIGTERM'd, it comes back and
#      the mark is not lowered; a clean stop lowers the mark to the last ID's
#      time, an immediate stop does not;
#  (e) group access (initdb -g): pg_snowflake/ and its files take the
#      cluster's modes, and a directory made 0700 before is corrected;
#  (f) an fsync failure on pg_snowflake/ (a preloaded shim makes fsync return
#      EIO) PANICs, as PostgreSQL does with data_sync_retry = off, and after
#      the crash restart IDs continue above the earlier ones;
#  (g) a misspelled snowflake.* line in postgresql.conf stops the server;
#  (h) a standby whose pg_snowflake/ is not writable stops replaying (the
#      startup process fails and the server shuts down), and once writable
#      starts again and catches up, with the mark replayed.
#
# No raw ID or time is compared with a constant: only relations, decoded
# fields, SQLSTATEs, messages and file modes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time sleep);
use Time::Local qw(timegm);

# Waits until a query returns the expected value; false on timeout.
sub wait_for
{
	my ($node, $sql, $want, $seconds) = @_;
	my $deadline = time + ($seconds // 30);
	while (time < $deadline)
	{
		# psql may lose a server that is restarting: IPC::Run then dies
		my ($rc, $out) = eval { $node->psql('postgres', $sql) };
		return 1 if defined $rc && $rc == 0 && $out eq $want;
		sleep 0.1;
	}
	return 0;
}

###########################################################################
# (a) a batch in a cursor re-checks its right to the shard at every run
###########################################################################

my $node = node('hardening', conf => "snowflake.shard_id = 5\ninclude_if_exists = 'shards.conf'\n");
my $shards_conf = $node->data_dir . '/shards.conf';
append_to_file($shards_conf, "snowflake.shard_ids = '1-3'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');

# The session fetches a few IDs, then the configuration file loses shard 3
# and the session itself asks for a reload (so that no other session is
# needed): the next run of the batch must be refused.
sub cursor_after_reload
{
	my ($batch, $new_conf) = @_;
	open my $fh, '>', $shards_conf or die $!;
	print $fh $new_conf;
	close $fh;
	my ($rc, $out, $err) = $node->psql(
		'postgres', qq{
BEGIN;
DECLARE c CURSOR FOR SELECT $batch;
FETCH 2 FROM c;
SELECT pg_reload_conf();
SELECT pg_sleep(1);
FETCH 20000 FROM c;
COMMIT;},
		extra_params => [ '-v', 'VERBOSITY=verbose', '-v', 'ON_ERROR_STOP=1' ]);
	return ($rc, $err);
}

my ($rc, $err) =
  cursor_after_reload('snowflake_nextval_batch(1000000, 3)', "snowflake.shard_ids = '1-2'\n");
isnt($rc, 0, 'cursor: a batch for shard 3 fails once a reload removed shard 3');
like($err, qr/ERROR:  55000: shard 3 is not assigned to this server/,
	'cursor: the error names the shard (SQLSTATE 55000)');

# this server's own shard: shard_id changes from 5 to 6 under the cursor
($rc, $err) =
  cursor_after_reload('snowflake_nextval_batch(1000000)', "snowflake.shard_id = 6\n");
isnt($rc, 0, 'cursor: a batch of the own shard fails once a reload changed snowflake.shard_id');
like(
	$err,
	qr/ERROR:  55000: snowflake\.shard_id changed from 5 to 6 while a batch was generating/,
	'cursor: the error says the shard ID changed');
unlink $shards_conf;
$node->reload;

###########################################################################
# (c) 62 timestamp bits: decoded times within timestamptz, or 22008
###########################################################################

my $wide = node('wide', extension => 1,
	conf => "snowflake.shard_id = 0\nsnowflake.shard_bits = 0\nsnowflake.sequence_bits = 1\n");
is( $wide->safe_psql(
		'postgres', q{
	SELECT timestamp_bits, last_timestamp > epoch,
	       last_timestamp > '100000-01-01'::timestamptz,
	       last_timestamp < 'infinity'::timestamptz
	FROM snowflake_layout()}),
	'62|t|t|t',
	'wide layout: last_timestamp is after the epoch, bounded by what timestamptz holds');
is( $wide->safe_psql(
		'postgres', q{
	SELECT abs(extract(epoch FROM snowflake_timestamp(x) - now())) < 300,
	       snowflake_sequence(x) <= 1, snowflake_shard_id(x) = 0
	FROM snowflake_nextval() x}),
	't|t|t',
	'wide layout: a new ID decodes to about now');
($rc, undef, $err) = $wide->psql(
	'postgres', 'SELECT snowflake_timestamp(9223372036854775807)',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22008: timestamp out of range for snowflake ID 9223372036854775807/,
	'wide layout: an ID beyond timestamptz fails with 22008 instead of wrapping');
($rc, undef, $err) = $wide->psql(
	'postgres', 'SELECT * FROM snowflake_decode(9223372036854775807)',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22008: timestamp out of range/,
	'wide layout: snowflake_decode() fails the same way');
is( $wide->safe_psql(
		'postgres', q{
	SELECT snowflake_min_id(last_timestamp) <= snowflake_max_id(last_timestamp),
	       snowflake_timestamp(snowflake_max_id(last_timestamp)) = date_trunc('milliseconds', last_timestamp)
	FROM snowflake_layout()}),
	't|t',
	'wide layout: the bounds of the last usable millisecond decode back to it');
$wide->stop;

###########################################################################
# (d) the mark worker: visible, restarted after SIGTERM, mark not lowered
###########################################################################

my $worker_sql = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake mark worker'};
$node->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
my $worker = $node->safe_psql('postgres', $worker_sql);
like($worker, qr/^\d+$/, 'worker: the mark worker shows in pg_stat_activity');
my $before = mark_ms($node);
ok(defined $before, 'worker: the mark is on disk after generating');
kill 'TERM', $worker;
my $back = 0;
for (1 .. 100)
{
	my $pid = $node->safe_psql('postgres', $worker_sql);
	if ($pid =~ /^\d+$/ && $pid ne $worker) { $back = 1; last; }
	sleep 0.1;
}
ok($back, 'worker: a SIGTERM\'d worker is started again');
cmp_ok(mark_ms($node), '>=', $before, 'worker: its SIGTERM did not lower the mark');
is($node->safe_psql('postgres', 'SELECT snowflake_nextval() > 0'),
	't', 'worker: generation goes on');

# a clean stop lowers the mark to the last ID's time; an immediate one does not
my $last = $node->safe_psql('postgres',
	q{SELECT (extract(epoch FROM snowflake_timestamp(max(x))) * 1000)::bigint
	  FROM (SELECT snowflake_nextval() x FROM generate_series(1, 100)) s});
$node->stop;
is(mark_ms($node), $last, 'clean stop: the mark is lowered to the last ID\'s time');
$node->start;
$last = $node->safe_psql('postgres',
	q{SELECT (extract(epoch FROM snowflake_timestamp(snowflake_nextval())) * 1000)::bigint});
$node->stop('immediate');
cmp_ok(mark_ms($node), '>', $last, 'immediate stop: the mark stays ahead of the last ID');

###########################################################################
# (g) a misspelled snowflake.* line stops the server
###########################################################################

$node->append_conf('postgresql.conf', "snowflake.shardid = 3\n");
my $offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1), 'misspelled setting: the server refuses to start');
like(
	slurp_file($node->logfile, $offset),
	qr/FATAL:  unrecognized configuration parameter "snowflake\.shardid"/,
	'misspelled setting: the FATAL line names it');
my $conf = slurp_file($node->data_dir . '/postgresql.conf');
$conf =~ s/^snowflake\.shardid = 3\n//m;
open my $cfh, '>', $node->data_dir . '/postgresql.conf' or die $!;
print $cfh $conf;
close $cfh;
ok($node->start(fail_ok => 1), 'misspelled setting: fixed, the server starts');
$node->stop;

###########################################################################
# (e) group access: the cluster's modes
###########################################################################

my $group = node('group', extra => ['-g'], conf => "snowflake.shard_id = 1\n", start => 1);
$group->safe_psql('postgres',
	'CREATE EXTENSION snowflake; SELECT snowflake_nextval()');
my $dir = $group->data_dir . '/pg_snowflake';
is(sprintf('%04o', (stat $dir)[2] & 07777), '0750', 'group access: pg_snowflake/ is 0750');
is(sprintf('%04o', (stat "$dir/mark")[2] & 07777), '0640', 'group access: the mark is 0640');
is(sprintf('%04o', (stat "$dir/layout")[2] & 07777), '0640', 'group access: the layout is 0640');
$group->stop;
chmod 0700, $dir;
chmod 0600, "$dir/mark";
$group->start;
is(sprintf('%04o', (stat $dir)[2] & 07777), '0750', 'group access: a 0700 directory is corrected at start');
is(sprintf('%04o', (stat "$dir/mark")[2] & 07777), '0640', 'group access: and its files');
$group->stop;

###########################################################################
# (f) an fsync failure PANICs (data_sync_retry = off)
###########################################################################

SKIP:
{
	my $cc = `which cc 2>/dev/null`;
	skip 'no C compiler for the fsync shim', 5 unless $cc;
	my $tmp  = PostgreSQL::Test::Utils::tempdir;
	my $shim = "$tmp/failfsync.so";
	open my $sfh, '>', "$tmp/failfsync.c" or die $!;
	print $sfh <<'C';
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* fsync fails with EIO for files in pg_snowflake/ while $SF_FAIL_FSYNC exists */
int fsync(int fd)
{
	static int (*real)(int);
	const char *trigger = getenv("SF_FAIL_FSYNC");
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (!real)
		real = (int (*)(int)) dlsym(RTLD_NEXT, "fsync");
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0 && trigger && access(trigger, F_OK) == 0)
	{
		path[n] = '\0';
		if (strstr(path, "/pg_snowflake"))
		{
			errno = EIO;
			return -1;
		}
	}
	return real(fd);
}
C
	close $sfh;
	system("cc -shared -fPIC -O1 -o $shim $tmp/failfsync.c -ldl") == 0
	  or skip 'could not build the fsync shim', 5;

	my $fs = node('fsync', conf => "snowflake.shard_id = 2\nrestart_after_crash = on\n");
	my $trigger = "$tmp/fail-now";
	{
		local $ENV{LD_PRELOAD}    = $shim;
		local $ENV{SF_FAIL_FSYNC} = $trigger;
		$fs->start;
	}
	$fs->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	my $first = $fs->safe_psql('postgres',
		'SELECT max(x) FROM (SELECT snowflake_nextval() x FROM generate_series(1, 1000)) s');
	$offset = -s $fs->logfile;
	append_to_file($trigger, "1");
	# keep generating until a mark write meets the failing fsync
	my $panicked = 0;
	for (1 .. 100)
	{
		# psql may lose its server mid-call (the PANIC): IPC::Run then dies
		eval {
			$fs->psql('postgres',
				'SELECT count(snowflake_nextval()) FROM generate_series(1, 20000)');
		};
		if (slurp_file($fs->logfile, $offset) =~ /PANIC:/) { $panicked = 1; last; }
		sleep 0.1;
	}
	ok($panicked, 'fsync failure: the server PANICs instead of retrying');
	my $log = slurp_file($fs->logfile, $offset);
	like($log,
		qr/PANIC:  could not (?:record|move) the snowflake high-water mark.*could not fsync "pg_snowflake\//,
		'fsync failure: the PANIC names the mark and the fsync');
	unlink $trigger;
	# The crash restart replays the mark record and may meet the failing
	# fsync again before the trigger was removed: then the startup process
	# PANICs as well and the postmaster gives up.  Either way, once the
	# trigger is gone the server comes back (by itself, or started).
	sleep 2;
	if (!-e $fs->data_dir . '/postmaster.pid')
	{
		$fs->_update_pid(0);
		$fs->start;
	}
	ok( wait_for($fs, 'SELECT 1', '1', 60),
		'fsync failure: the server is back after the crash');
	my $after = $fs->safe_psql('postgres', 'SELECT snowflake_nextval()');
	cmp_ok($after, '>', $first, 'fsync failure: IDs continue above the earlier ones');
	like($log, qr/terminating any other active server processes|all server processes terminated/,
		'fsync failure: the postmaster reinitialised');
	$fs->stop;
}

###########################################################################
# (b) the clock before the epoch at start
###########################################################################

SKIP:
{
	skip "libfaketime is not installed ($libfaketime)", 6 unless -f $libfaketime;
	# 2023-12-01, a month before the default epoch
	my $back_ms = int(time * 1000) - timegm(0, 0, 0, 1, 11, 2023) * 1000;
	my $early = node('early', conf => "snowflake.shard_id = 3\n", clock_ms => -$back_ms);
	$offset = 0;
	start_faked($early);
	ok(1, 'clock before the epoch: the server starts');
	like(
		slurp_file($early->logfile),
		qr/WARNING:  the system clock reads earlier than snowflake\.epoch/,
		'clock before the epoch: the log says why');
	$early->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	($rc, undef, $err) = $early->psql('postgres', 'SELECT snowflake_nextval()',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like(
		$err,
		qr/ERROR:  58000: could not generate a snowflake ID: the clock reads earlier than snowflake\.epoch.*\nDETAIL:  snowflake\.epoch is 2024-01-01 00:00:00\.000\+00 and the clock reads 2023-/s,
		'clock before the epoch: generation refuses with 58000 and shows the clock');
	($rc, undef, $err) = $early->psql('postgres', 'SELECT snowflake_timestamp(1)',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like(
		$err,
		qr/ERROR:  58000: could not use the snowflake ID layout: the clock reads earlier than snowflake\.epoch.*\nDETAIL:  snowflake\.epoch is 2024-01-01 00:00:00\.000\+00 and the clock reads 2023-.*\nHINT:  Check the server's time synchronisation, or snowflake\.epoch/s,
		'clock before the epoch, no layout recorded: decoding refuses too (58000), never records it');
	ok(!-e $early->data_dir . '/pg_snowflake/layout',
		'clock before the epoch: no layout is recorded while refusing (CREATE EXTENSION and decoders included)');
	set_clock_ms($early, 0);
	is( $early->safe_psql(
			'postgres',
			q{SELECT abs(extract(epoch FROM snowflake_timestamp(snowflake_nextval()) - now())) < 300}),
		't',
		'clock before the epoch: once the clock is right, generation works without a restart');
	ok(-e $early->data_dir . '/pg_snowflake/layout',
		'clock before the epoch: the layout is recorded at the first ID');
	$early->stop;
}

###########################################################################
# (h) a standby that cannot write pg_snowflake/ stops replaying
###########################################################################

my $primary = node('wal_primary', allows_streaming => 1, conf => "snowflake.shard_id = 9\n",
	extension => 1);
$primary->backup('b');
my $standby = node('wal_standby', standby => [ $primary, 'b' ], start => 1);
$primary->wait_for_catchup($standby);
my $sdir = $standby->data_dir . '/pg_snowflake';
mkdir $sdir;
chmod 0500, $sdir;
$offset = -s $standby->logfile;
$primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
my $pidfile = $standby->data_dir . '/postmaster.pid';
my $gone = 0;
for (1 .. 300)
{
	if (!-e $pidfile) { $gone = 1; last; }
	sleep 0.1;
}
ok($gone, 'standby: replay stops and the server shuts down when pg_snowflake/ is not writable');
like(
	slurp_file($standby->logfile, $offset),
	qr/could not record the snowflake (?:high-water mark|ID layout|live shard) replayed from WAL: could not open "pg_snowflake\/(?:mark|layout|live)\.tmp".*\n.*HINT:  Make pg_snowflake\/ in the standby's data directory writable/,
	'standby: the log says what failed and what to do');
$standby->_update_pid(0);
chmod 0700, $sdir;
$standby->start;
my $primary_mark = mark_ms($primary);
# the mark's WAL record follows its file: a committed transaction after
# reading the file flushes it, and the catch-up waits for that flush
$primary->safe_psql('postgres', 'SELECT pg_current_xact_id()');
$primary->wait_for_catchup($standby);
# replayed past the mark's record, the standby has written its file; read
# again for a while only so that a failure can say what the standby did
my $standby_mark = mark_ms($standby) // 0;
for (1 .. 100)
{
	last if defined $primary_mark && $standby_mark >= $primary_mark;
	sleep 0.1;
	$standby_mark = mark_ms($standby) // 0;
}
cmp_ok($standby_mark, '>=', $primary_mark // 1, 'standby: once writable, it replays the mark')
  or diag(join "\n",
	'primary: ' . join(' ', sort map { s{.*/}{}r } glob($primary->data_dir . '/pg_snowflake/*')),
	'standby: ' . join(' ', sort map { s{.*/}{}r } glob($standby->data_dir . '/pg_snowflake/*')),
	'standby replay: ' . $standby->safe_psql('postgres', 'SELECT pg_last_wal_replay_lsn()'),
	'primary insert: ' . $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()'),
	'standby log since the primary issued its first ID:',
	slurp_file($standby->logfile, $offset));
$standby->stop;
$primary->stop;

done_testing();
