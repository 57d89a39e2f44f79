# Shard IDs from an etcd registry: fencing and freshness.
#
#  (a) a frozen holder: kill -STOP on the postmaster and all its processes
#      for longer than the lease, while another server takes its shard from
#      a one-shard pool.  The new holder's IDs are all above every ID the
#      frozen one issued; thawed (kill -CONT), the old holder issues no ID
#      under the lost lease, logs the loss, and once the shard is free again
#      it reclaims it and resumes above the other server's IDs;
#  (b) etcd loses its quorum (two of three members killed): generation goes
#      on until the lease deadline, then refuses; quorum back: generation
#      resumes with no restart;
#  (c) a hot standby claims nothing; promoted, it claims a shard before it
#      generates, and its IDs collide with none of the old primary's.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use EtcdCluster;
use RegistryTest;

plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

my $etcd = EtcdCluster->new(3);
my $lease = 3;

my $create = q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
	                at timestamptz DEFAULT clock_timestamp(), c int);
};

###########################################################################
# (a) a frozen holder loses its shard to another server
###########################################################################

my $prefix = '/snowflake/frozen';
my $f1 = registry_node('f1', $etcd, prefix => $prefix, shards => '3', lease => $lease);
my $f2 = registry_node('f2', $etcd, prefix => $prefix, shards => '3', lease => $lease);
$f1->start;
$f1->safe_psql('postgres', $create);
wait_generating($f1);
is(held_shard($f1), 3, 'f1 holds shard 3, the whole pool');
$f2->start;
$f2->safe_psql('postgres', $create);
ok($f2->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
	'f2 waits: the pool is full');

# f1 generates without pause while it is frozen and thawed
my $script = $f1->basedir . '/insert.sql';
open my $fh, '>', $script or die;
print $fh "INSERT INTO t (c) VALUES (:client_id);\n";
close $fh;
my ($pgb_out, $pgb_err) = ('', '');
my $pgb = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client=2', '--jobs=1', '--time=25', '-f', $script,
		'-h', $f1->host, '-p', $f1->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
ok($f1->poll_query_until('postgres', 'SELECT count(*) > 500 FROM t'), 'f1 is inserting');

my @family = process_family($f1);
ok(@family > 5, 'f1 has a postmaster and ' . (@family - 1) . ' child processes');
kill 'STOP', @family;
my $frozen_at = time;
note 'f1 frozen';

wait_generating($f2, 'f2 while f1 is frozen');
my $taken_after = time - $frozen_at;
# f1's last renewal was at most TTL/3 before the freeze: its lease cannot
# expire in etcd sooner than 2/3 of the TTL after it
ok($taken_after >= $lease * 2 / 3,
	sprintf('f2 took shard 3 only once the lease could have expired (%.1f s, lease %d s)',
		$taken_after, $lease));
diag(sprintf('frozen holder: f2 took shard 3 %.1f s after f1 froze (lease %d s)', $taken_after, $lease));
is(held_shard($f2), 3, 'f2 holds shard 3');
$f2->safe_psql('postgres', 'INSERT INTO t (c) SELECT -1 FROM generate_series(1, 2000)');
$f2->safe_psql('postgres',
	'INSERT INTO t (id, c) SELECT id, -2 FROM snowflake_nextval_batch(5000) id');

# keep f1 frozen a little longer, then thaw it
sleep(1);
kill 'CONT', reverse @family;
my $thawed_at = time;
note 'f1 thawed';

my ($ret, $out, $err) = $f1->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
isnt($ret, 0, 'f1, thawed: snowflake_nextval() refuses at once');
like($err, qr/ERROR:  55000: cannot generate snowflake IDs/, 'f1: SQLSTATE 55000');
$pgb->finish;
note "pgbench on f1: $pgb_err";

is( $f1->safe_psql('postgres',
		"SELECT count(*) FROM t WHERE at >= to_timestamp($thawed_at)"),
	0, 'f1 committed no row whose ID was taken after the thaw');
ok($f1->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
	'f1 knows it lost the shard: the pool is full');
ok($f1->log_contains(qr/lost shard 3|lease deadline of shard 3 passed/),
	'f1 logs the loss of shard 3');

my $f1_max = $f1->safe_psql('postgres', 'SELECT max(id) FROM t');
my $f2_min = $f2->safe_psql('postgres', 'SELECT min(id) FROM t');
ok($f1->safe_psql('postgres', 'SELECT count(*) FROM t') > 500, 'f1 issued IDs before it froze');
ok($f2_min > $f1_max, 'every ID of the new holder f2 is above every ID the frozen f1 issued');
is($f2->safe_psql('postgres', "SELECT count(*) FROM t WHERE id <= $f1_max"), 0,
	'no ID of f2 lies at or below f1\'s highest');
my $fresh_ms = $etcd->ctl('get', '--print-value-only', "$prefix/shards/3/mark");
chomp $fresh_ms;
ok($fresh_ms =~ /^\d+$/, "etcd holds a freshness mark for shard 3");

# f2 goes away cleanly: f1 reclaims shard 3 and resumes above f2's IDs
my $f2_max = $f2->safe_psql('postgres', 'SELECT max(id) FROM t');
$f2->stop;
wait_generating($f1, 'f1 once f2 released shard 3');
ok($f1->log_contains(qr/claimed shard 3 under lease/), 'f1 logs that it claimed shard 3 again');
my $f1_new = $f1->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok($f1_new > $f2_max, 'f1\'s first ID after reclaiming is above every ID of f2');
$f1->stop;

###########################################################################
# (b) etcd loses its quorum
###########################################################################

my $q = registry_node('q', $etcd, prefix => '/snowflake/quorum', lease => 4);
$q->start;
$q->safe_psql('postgres', 'CREATE EXTENSION snowflake');
wait_generating($q);
my $q_shard = held_shard($q);
my $q_before = $q->safe_psql('postgres', 'SELECT snowflake_nextval()');

$etcd->kill_member(2);
$etcd->kill_member(3);
my $killed_at = time;
($ret, $out, $err) = $q->psql('postgres', REFUSAL_PROBE);
my $refused_after = time - $killed_at;
like($err, qr/refused after [\d.]+ s: cannot generate snowflake IDs: the registry lease of shard $q_shard is not known to be valid/,
	'without quorum, generation stops with "the registry lease ... is not known to be valid"');
my ($after) = $err =~ /refused after ([\d.]+) s/;
diag(sprintf('quorum lost: generation went on for %s s, then refused (lease 4 s, deadline TTL - TTL/5 after the last renewal)',
	$after // '?'));
ok(defined $after && $after > 0.5,
	sprintf('generation went on after the quorum was lost (%.2f s)', $after // -1));
ok($refused_after <= 4 + 1,
	sprintf('and stopped before the lease (4 s) could expire (%.2f s)', $refused_after));
is(registry_row($q, 'state'), 'expired', 'the registry state is "expired"');
like(registry_row($q, 'last_error'), qr/renewing the lease|publishing the freshness mark/, 'last_error says which request to etcd failed');

$etcd->start_member(2);
$etcd->start_member(3);
wait_generating($q, 'q once the quorum is back');
is(held_shard($q), $q_shard, 'q holds the same shard, with no restart');
ok($q->safe_psql('postgres', 'SELECT snowflake_nextval()') > $q_before,
	'q generates again, above its earlier IDs');
ok($q->log_contains(qr/regained shard $q_shard|claimed shard $q_shard/),
	'q logs that it has the shard again');
$q->stop;

###########################################################################
# (c) a promoted standby claims before it generates
###########################################################################

my $p = registry_node('p', $etcd, prefix => '/snowflake/standby', shards => '10-11',
	lease => $lease, init => { allows_streaming => 1 });
$p->start;
$p->safe_psql('postgres', $create);
wait_generating($p);
my $p_shard = held_shard($p);
$p->safe_psql('postgres', 'INSERT INTO t (c) SELECT 1 FROM generate_series(1, 1000)');
$p->backup('b');
my $s = node('s', standby => [ $p, 'b' ], start => 1);
$p->safe_psql('postgres', 'INSERT INTO t (c) SELECT 2 FROM generate_series(1, 1000)');
$p->wait_for_catchup($s);
is($s->safe_psql('postgres', 'SELECT state, shard_id IS NULL, generating FROM snowflake_registry'),
	'off|t|f', 'the standby holds no shard: state "off", no shard, not generating');
is($etcd->ctl('get', '--prefix', '--keys-only', '/snowflake/standby/shards/') =~ tr/\n// > 0 ? 1 : 0,
	1, 'etcd has keys of the primary');
unlike(holder_in_etcd($etcd, '/snowflake/standby', 10 + 11 - $p_shard), qr/\S/,
	'the other shard of the pool is still free: the standby claimed nothing');
$s->promote;
wait_generating($s, 'the promoted standby');
my $s_shard = held_shard($s);
isnt($s_shard, $p_shard, "the promoted standby claimed shard $s_shard, not the primary's $p_shard");
$s->safe_psql('postgres', 'INSERT INTO t (c) SELECT 3 FROM generate_series(1, 1000)');
$p->safe_psql('postgres', 'INSERT INTO t (c) SELECT 4 FROM generate_series(1, 1000)');
is($s->safe_psql('postgres', "SELECT count(*) FROM t WHERE c = 3 AND snowflake_shard_id(id) <> $s_shard"),
	0, 'its IDs carry its own shard');
my $p_ids = $p->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM t WHERE c = 4');
is($s->safe_psql('postgres', "SELECT count(*) FROM t WHERE id IN ($p_ids)"), 0,
	'none of its IDs equals one the old primary issued after the promotion');
$s->stop;
$p->stop;

$etcd->stop;
done_testing();
