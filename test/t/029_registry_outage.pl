# A registry outage as an idle holder meets it, the settings that hold a
# password, and the registry's messages (issue 25, defects 5, 6, 7 and 9):
#  (a) an idle holder, both backends (etcd frozen with SIGSTOP; the PostgreSQL
#      registry stopped): it issued nothing for longer than a lease, yet its
#      freshness mark reaches its lease deadline, and in the outage it
#      generates up to that deadline, then refuses with the lease's error;
#      generating (view) and registry_generating (metrics) are false once
#      calls refuse.  Before issue 25 a holder published ahead only while IDs
#      were issued in the last 60 s, and one that had issued nothing since its
#      claim was as idle as one quiet for a minute;
#  (b) calls refused while the lease is still valid (the wall clock stepped
#      past the published mark, the registry down): generating is false
#      before any call, and the call then refuses (libfaketime);
#  (c) snowflake.registry refused while it holds a password (etcd URL with
#      user:password@, libpq URI with a percent-encoded password keyword,
#      key=value password=): at start, at a reload and by ALTER SYSTEM; the
#      password appears neither in the server log nor in the client's error;
#  (d) messages: the pool-full error names each backend's own namespace, the
#      DETAIL of a server trying to reach its registry names it once, and
#      last_error is empty after a successful claim.

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

my $have_etcd = -x $EtcdCluster::etcd;

# Generates every 20 ms until refused; says how many IDs it got, when (Unix
# time) the last one came, and the refusal's message.
use constant OUTAGE_PROBE => q{
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
	n bigint := 0;
	last_ok float8 := 0;
BEGIN
	LOOP
		BEGIN
			PERFORM snowflake_nextval();
			n := n + 1;
			last_ok := extract(epoch FROM clock_timestamp());
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			RAISE NOTICE 'issued % last ok % : %', n, round(last_ok::numeric, 3), SQLERRM;
			RETURN;
		END;
		IF clock_timestamp() - t0 > interval '30 s' THEN
			RAISE NOTICE 'never refused';
			RETURN;
		END IF;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;
};

# (a) for one backend: $cut and $heal stop and restart the registry.
sub idle_outage
{
	my ($node, $what, $cut, $heal) = @_;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	wait_generating($node, "$what: the holder");
	my $shard = held_shard($node);
	# idle: no ID since the claim, for longer than the mark published at
	# the claim reached (lease 5 s: deadline 4 s + lead 1 s + 1 s)
	sleep 7.5;
	is($node->safe_psql('postgres', 'SELECT freshness_mark >= lease_deadline FROM snowflake_registry'),
		't', "$what: an idle holder's freshness mark reaches its lease deadline");
	$cut->();
	my $deadline = $node->safe_psql('postgres',
		'SELECT extract(epoch FROM lease_deadline) FROM snowflake_registry');
	my ($rc, $out, $err) = $node->psql('postgres', OUTAGE_PROBE);
	my ($n, $last_ok, $why) = $err =~ /issued (\d+) last ok ([\d.]+) : (.*)/;
	ok(defined $n, "$what: the outage ended generation") or diag($err);
	ok(($n // 0) > 0, "$what: the idle holder generated in the outage (" . ($n // 0) . ' IDs)');
	like($why // '', qr/the registry lease of shard $shard is not known to be valid/,
		"$what: it ended at the lease deadline, not for want of a freshness mark");
	ok(defined $last_ok && $last_ok > $deadline - 1.0,
		sprintf('%s: the last ID came %.2f s before the lease deadline', $what,
			$deadline - ($last_ok // 0)));
	is($node->safe_psql('postgres', 'SELECT generating FROM snowflake_registry'), 'f',
		"$what: generating = f once calls refuse");
	is($node->safe_psql('postgres', 'SELECT registry_generating FROM snowflake_server_metrics()'),
		'f', "$what: and so is the metric");
	$heal->();
	wait_generating($node, "$what: once the registry is back");
	$node->stop;
	return;
}

###########################################################################
# (a) an idle holder in an outage
###########################################################################

SKIP:
{
	skip 'etcd is not installed', 8 unless $have_etcd;
	my $etcd = EtcdCluster->new(3);
	my $e = registry_node('idle_etcd', $etcd, prefix => '/outage/idle', lease => 5, shard_id => 3);
	my @pids;
	idle_outage($e, 'etcd',
		sub { @pids = map { $etcd->member($_)->{pid} } 1 .. 3; kill 'STOP', @pids; },
		sub { kill 'CONT', @pids; $etcd->wait_healthy; });
	$etcd->stop;
}

my $reg = node('registry', preload => 0, conf => "fsync = on\n", start => 1);
$reg->safe_psql('postgres', 'CREATE DATABASE registry');

my $p = registry_node('idle_pg', $reg, prefix => '/outage/idle', lease => 5, shard_id => 4);
idle_outage($p, 'PostgreSQL registry', sub { $reg->stop('immediate'); }, sub { $reg->start; });

###########################################################################
# (b) a valid lease, but no freshness mark for the clock
###########################################################################

SKIP:
{
	skip "libfaketime is not installed ($libfaketime)", 5 unless -f $libfaketime;
	my $s = registry_node('stepped', $reg, prefix => '/outage/stepped', lease => 15, shard_id => 5);
	$s->append_conf('postgresql.conf', "snowflake.max_clock_wait = '1s'\n");
	start_faked($s);
	$s->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	wait_generating($s, 'the stepped server');
	$reg->stop('immediate');
	# the backends' wall clock 60 s ahead: beyond the mark (deadline + lead +
	# 1 s), and no worker in contact with the registry to move it (it knows
	# at its next renewal, TTL/3 = 5 s away at most, with 7 s of lease left)
	set_clock_ms($s, 60000);
	ok($s->poll_query_until('postgres',
			q{SELECT state = 'held' AND NOT generating FROM snowflake_registry}),
		'the lease is held, but generating = f before any call: no mark covers the clock')
	  or diag(registry_row($s, 'state, generating, last_error'));
	is($s->safe_psql('postgres', 'SELECT registry_generating FROM snowflake_server_metrics()'),
		'f', 'registry_generating = f too');
	my ($rc, $out, $err) = $s->psql('postgres', 'SELECT snowflake_nextval()');
	like($err, qr/the registry has not published a freshness mark far enough ahead/,
		'and a call refuses for want of a mark');
	is($s->safe_psql('postgres', q{SELECT generating FROM snowflake_registry}), 'f',
		'generating = f after the refusal');
	set_clock_ms($s, 0);
	$reg->start;
	wait_generating($s, 'the stepped server once the registry is back');
	$s->stop;
}

###########################################################################
# (c) a refused snowflake.registry never shows its password
###########################################################################

my $c = node('secrets',
	conf => "snowflake.shard_id = 1\nlog_statement = none\nlog_min_messages = info\n");
my @secrets = (
	[ 'an etcd URL with user:password@', 'http://snow:Hunter2Etcd@127.0.0.1:2379', 'Hunter2Etcd' ],
	[ 'a libpq URI with a percent-encoded password keyword',
		'postgresql://127.0.0.1/registry?pass%77ord=Hunter2Uri&bogus=1', 'Hunter2Uri' ],
	[ 'a key=value string with password=', 'host=127.0.0.1 password=Hunter2Kv port', 'Hunter2Kv' ]);
for my $case (@secrets)
{
	my ($what, $value, $secret) = @$case;
	my $offset = -s $c->logfile // 0;

	# at start
	$c->append_conf('postgresql.conf', "snowflake.registry = '$value'\n");
	ok(!$c->start(fail_ok => 1), "$what: the server refuses to start");
	my $log = slurp_file($c->logfile, $offset);
	like($log, qr/FATAL:  invalid value for parameter "snowflake\.registry"/,
		"$what: at start, FATAL names the setting");
	unlike($log, qr/$secret/, "$what: at start, the log does not show the password");

	# at a reload
	$c->append_conf('postgresql.conf', "snowflake.registry = ''\n");
	$c->start;
	$offset = -s $c->logfile;
	$c->append_conf('postgresql.conf', "snowflake.registry = '$value'\n");
	$c->reload;
	ok($c->poll_query_until('postgres',
			q{SELECT count(*) > 0 FROM pg_file_settings WHERE name = 'snowflake.registry' AND error IS NOT NULL}),
		"$what: a reload refuses it");
	# the postmaster logs the reload's outcome: wait for its line
	for (1 .. 100)
	{
		last if slurp_file($c->logfile, $offset) =~ /snowflake\.registry/;
		sleep 0.1;
	}
	$log = slurp_file($c->logfile, $offset);
	like($log, qr/snowflake\.registry/, "$what: at a reload, the log names the setting");
	unlike($log, qr/$secret/, "$what: at a reload, the log does not show the password");

	# by ALTER SYSTEM
	$offset = -s $c->logfile;
	my ($rc, $out, $err) = $c->psql('postgres', "ALTER SYSTEM SET snowflake.registry = '$value'");
	isnt($rc, 0, "$what: ALTER SYSTEM refuses it");
	like($err, qr/snowflake\.registry/, "$what: ALTER SYSTEM's error names the setting");
	unlike($err, qr/$secret/, "$what: ALTER SYSTEM's error does not show the password");
	$c->safe_psql('postgres', 'SELECT 1');
	unlike(slurp_file($c->logfile, $offset), qr/$secret/,
		"$what: ALTER SYSTEM: the log does not show the password");
	unlike(slurp_file($c->data_dir . '/postgresql.auto.conf'), qr/$secret/,
		"$what: ALTER SYSTEM wrote nothing");
	$c->stop;
	# the file ends with the empty setting again for the next case
	$c->append_conf('postgresql.conf', "snowflake.registry = ''\n");
}

###########################################################################
# (d) messages
###########################################################################

# pool full: each backend names its own namespace; last_error after a claim
sub pool_full
{
	my ($registry, $what, $namespace, %o) = @_;
	my $a = registry_node("full_a_$o{tag}", $registry, prefix => '/outage/full', lease => 3,
		shards => '6');
	my $b = registry_node("full_b_$o{tag}", $registry, prefix => '/outage/full', lease => 3,
		shards => '6');
	$a->start;
	$a->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	wait_generating($a, "$what: a holds the pool's one shard");
	$b->start;
	$b->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	ok($b->poll_query_until('postgres', q{SELECT state = 'pool full' FROM snowflake_registry}),
		"$what: b finds the pool full");
	my $error = registry_row($b, 'last_error');
	like($error, $namespace, "$what: the error names the registry's own namespace");
	unlike($error, $o{not}, "$what: and not the other backend's") if $o{not};
	my ($rc, $out, $err) = $b->psql('postgres', 'SELECT snowflake_nextval()');
	like($err, qr/every shard of the pool "6" is held by another server/, "$what: a call says so");
	$a->stop;
	wait_generating($b, "$what: b claims the freed shard");
	is(registry_row($b, 'last_error'), '', "$what: after the claim, last_error is empty");
	$b->stop;
	return;
}

pool_full($reg, 'PostgreSQL registry', qr/ID space "\/outage\/full"/, tag => 'pg', not => qr/etcd/);
SKIP:
{
	skip 'etcd is not installed', 7 unless $have_etcd;
	my $etcd = EtcdCluster->new(1);
	pool_full($etcd, 'etcd', qr/etcd prefix "\/outage\/full"/, tag => 'etcd');
	$etcd->stop;
}

# a server that cannot reach its registry: the DETAIL names the registry once
{
	my $u = registry_node('unreachable', $reg, prefix => '/outage/unreachable', lease => 3,
		shard_id => 7);
	$reg->stop('immediate');
	$u->start;
	$u->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	ok($u->poll_query_until('postgres', q{SELECT state = 'unreachable' FROM snowflake_registry}),
		'a server whose registry is down: state unreachable');
	my ($rc, $out, $err) = $u->psql('postgres', 'SELECT snowflake_nextval()');
	my ($detail) = $err =~ /DETAIL:  (.*)/;
	like($detail // '', qr/^The registry worker is trying to reach the PostgreSQL registry at "/,
		'the DETAIL says which registry it is trying to reach') or diag($err);
	my @named = ($detail // '') =~ /the PostgreSQL registry/g;
	is(scalar @named, 1, 'and names it once');
	$reg->start;
	wait_generating($u, 'the server once its registry is up');
	is(registry_row($u, 'last_error'), '', 'after the claim, last_error is empty');
	$u->stop;
}

done_testing();
