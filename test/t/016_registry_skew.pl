# The clock-skew guard (snowflake.registry_max_skew), for both backends: a
# holder whose wall clock is 5 s ahead (libfaketime preloaded into its
# postmaster only; CLOCK_MONOTONIC stays real, as after an NTP step).
#  (a) PostgreSQL registry (its now() against this server's clock, bounded
#      by the round trip): the server refuses to claim, logs it and shows
#      the skew (state "clock skew", clock_skew_ms); a larger
#      registry_max_skew (a reload) lets it claim; a holder whose clock is
#      beyond the limit keeps its shard and generates, but warns; back in
#      step, it says so;
#  (b) etcd (the Date header of its answers, whole seconds): the server
#      refuses to claim while its clock is 5 s ahead, and claims once it is
#      right, with no restart.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use EtcdCluster;
use RegistryTest;
use SnowflakeTest;

plan skip_all => "libfaketime is not installed ($libfaketime)" unless -f $libfaketime;

sub wait_log
{
	my ($node, $re, $what) = @_;
	my $seen = 0;
	for (1 .. 300)
	{
		last if ($seen = $node->log_contains($re));
		sleep 0.1;
	}
	return ok($seen, $what);
}

###########################################################################
# (a) PostgreSQL registry
###########################################################################

my $reg = node('registry', preload => 0, conf => "fsync = on\n", start => 1);
$reg->safe_psql('postgres', 'CREATE DATABASE registry');

# Does libfaketime reach the registry worker of this start?  Bookworm's
# libfaketime (0.9.10-2.1, the host's, so PostgreSQL 15's run) fakes a
# server's backends but, for a worker that PostgreSQL 15's postmaster forks
# from a signal handler (its usual way), not the worker; trixie's and later
# fake both.  Which way a worker was forked varies from start to start, so
# each start is checked on its own, independently of the guard under test:
# the time PostgreSQL prints in the worker's first log line, against the
# real time.  A line printed on the real clock is never later than the real
# time at which it is read; one printed 5 s ahead is, when read within 4.5 s
# (the log is polled every 0.1 s).  Where the worker's clock stays real, the
# checks of that part could only fail for the harness's sake: they are
# skipped, saying why (at the first start, before anything was checked, the
# whole test; at (b)'s own start, (b)).
sub worker_clock_faked
{
	my ($node, $started, $offset) = @_;
	for (1 .. 300)
	{
		my ($printed) = log_times($node, qr/\] LOG:  snowflake registry: /, $offset);
		my $now = time;    # after the read
		if (defined $printed)
		{
			my $faked = $printed > $now + 0.5;
			my $say = $faked ? \&note : \&diag;
			$say->(sprintf('the registry worker printed its first line %.1f s from the real '
				  . 'time (%.1f s after the start)%s',
					$printed - $now, $printed - $started,
					$faked ? '' : ': its clock is not faked'));
			return $faked;
		}
		sleep 0.1;
	}
	die 'the registry worker logged nothing';
}

my $unfaked = "libfaketime did not fake the registry worker's clock in this start "
  . '(bookworm\'s libfaketime and PostgreSQL 15: the worker forked from a signal handler)';

my $a = registry_node('a', $reg, prefix => '/skew', lease => 3, shard_id => 4);
# a holder's warning must reach the log (registry_node logs from LOG up)
$a->append_conf('postgresql.conf', "log_min_messages = warning\n");
set_clock_ms($a, 5000);
my $started = time;
my $offset = -s $a->logfile // 0;
start_faked($a);
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
# nothing was checked yet: where this first start's worker keeps the real
# clock (the rule with bookworm's libfaketime), the whole test is skipped
unless (worker_clock_faked($a, $started, $offset))
{
	$a->stop;
	$reg->stop;
	plan skip_all => $unfaked;
}
ok($a->poll_query_until('postgres', q{SELECT state = 'clock skew' FROM snowflake_registry}),
	'a clock 5 s ahead: state "clock skew"');
my ($skew, $error) = split /\|/,
  $a->safe_psql('postgres', 'SELECT clock_skew_ms, clock_skew_error_ms FROM snowflake_registry');
ok(abs($skew - 5000) <= 500 && $error < 500,
	"the view shows the skew: $skew ms, give or take $error ms");
my ($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: this server's clock is too far from the registry's to claim a shard/,
	'generation refuses (55000), saying why');
like($err, qr/DETAIL:  This server's clock is \d+ ms ahead of the PostgreSQL registry's \(give or take \d+ ms\), more than snowflake\.registry_max_skew \(1000 ms\)/,
	'the detail gives the skew and the limit');
ok($a->log_contains(qr/LOG:  snowflake registry: not claiming a shard: this server's clock is \d+ ms ahead of the PostgreSQL registry's/),
	'and the log says so');
is($reg->safe_psql('registry', 'SELECT count(*) FROM snowflake_registry.claims'), '0',
	'it claimed nothing');

# a larger limit, by a reload: it claims
$a->safe_psql('postgres', "ALTER SYSTEM SET snowflake.registry_max_skew = '10s'");
$a->reload;
wait_generating($a, 'a with snowflake.registry_max_skew = 10s');
is(held_shard($a), '4', 'it claimed its shard');
like($reg->safe_psql('registry',
		q{SELECT round(extract(epoch FROM holder_clock - last_heartbeat)) FROM snowflake_registry.claims
		  WHERE status = 'active'}),
	qr/^[45]$/, 'the registry row carries the holder\'s own clock, about 5 s ahead of the registry\'s');

# the limit back at 1 s while it holds: it warns, and keeps its shard
$a->safe_psql('postgres', 'ALTER SYSTEM RESET snowflake.registry_max_skew');
$a->reload;
wait_log($a, qr/WARNING:  snowflake registry: this server's clock is \d+ ms ahead of the PostgreSQL registry's/,
	'a holder beyond the limit warns');
is($a->safe_psql('postgres', 'SELECT state, generating FROM snowflake_registry'), 'held|t',
	'and keeps its shard');
like($a->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/, 'and generates');
set_clock_ms($a, 0);
wait_log($a, qr/LOG:  snowflake registry: this server's clock is back within snowflake\.registry_max_skew/,
	'its clock back in step, it says so');
ok($a->poll_query_until('postgres', 'SELECT abs(clock_skew_ms) < 500 FROM snowflake_registry'),
	'and the view shows the small skew');
$a->stop;
$reg->stop;

###########################################################################
# (b) etcd
###########################################################################

SKIP:
{
	skip 'etcd is not installed', 6 unless -x $EtcdCluster::etcd;
	my $etcd = EtcdCluster->new(1);
	reconfigure($a, $etcd, prefix => '/skew', lease => 3, shard_id => 4);
	set_clock_ms($a, 5000);
	$started = time;
	$offset = -s $a->logfile;
	start_faked($a);
	unless (worker_clock_faked($a, $started, $offset))
	{
		$a->stop;
		$etcd->stop;
		skip $unfaked, 6;
	}
	ok($a->poll_query_until('postgres', q{SELECT state = 'clock skew' FROM snowflake_registry}),
		'etcd, a clock 5 s ahead: state "clock skew"');
	($skew, $error) = split /\|/,
	  $a->safe_psql('postgres', 'SELECT clock_skew_ms, clock_skew_error_ms FROM snowflake_registry');
	ok(abs($skew - 5000) <= 1000 && $error <= 1000,
		"the view shows the skew from etcd's Date header: $skew ms, give or take $error ms");
	($ret, $out, $err) = $a->psql('postgres', 'SELECT snowflake_nextval()');
	like($err, qr/This server's clock is \d+ ms ahead of etcd's/, 'generation says why it refuses');
	is($etcd->ctl('get', '--prefix', '--keys-only', '/skew/'), '', 'nothing claimed in etcd');
	set_clock_ms($a, 0);
	wait_generating($a, 'a once its clock is right');
	is(held_shard($a), '4', 'it claimed its shard, with no restart');
	$a->stop;
	$etcd->stop;
}

done_testing();
