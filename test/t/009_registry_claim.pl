# Shard IDs from an etcd registry: claiming.
#
# A real three-member etcd cluster on loopback ports (Debian's etcd-server).
#  (a) five servers with no snowflake.shard_id each claim a distinct shard;
#      concurrent pgbench inserts on all five, collected together: no
#      duplicate ID, every ID carries its server's shard;
#  (b) a full pool: a clear refusal naming the pool; a shard freed by a
#      clean stop of its holder is taken at once;
#  (c) a restart (clean, and after an immediate stop) keeps the shard;
#  (d) an explicit snowflake.shard_id held by a live server is refused,
#      naming the holder;
#  (e) bad registry settings stop the server with a message naming them;
#      no session can change them.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use EtcdCluster;
use RegistryTest;
use SnowflakeTest;

plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

my $etcd = EtcdCluster->new(3);
ok(1, 'a three-member etcd cluster is up at ' . $etcd->endpoints);

###########################################################################
# (a) five servers, five distinct shards, no duplicate under pgbench
###########################################################################

my $prefix_a = '/snowflake/a';
my @nodes;
for my $i (1 .. 5)
{
	my $node = registry_node("n$i", $etcd, prefix => $prefix_a, lease => 4);
	$node->start;
	$node->safe_psql('postgres',
		'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), c int)');
	push @nodes, $node;
}
wait_generating($_) for @nodes;

my %shard_of;
for my $node (@nodes)
{
	my $s = held_shard($node);
	like($s, qr/^\d+$/, $node->name . ": holds shard $s");
	$shard_of{ $node->name } = $s;
	is(registry_row($node, 'state'), 'held', $node->name . ': state is "held"');
	like(holder_in_etcd($etcd, $prefix_a, $s), qr/port ${\ $node->port}, data directory /,
		$node->name . ": etcd's holder key names this server");
}
my %distinct = map { $_ => 1 } values %shard_of;
is(scalar keys %distinct, 5, 'five servers hold five distinct shards');

# concurrent inserts on all five at once
is(pgbench_inserts('t', @nodes), 5, 'pgbench ran on all five servers');

my $all = $nodes[0]->basedir . '/all_ids';
open my $fh, '>', $all or die;
for my $node (@nodes)
{
	my $s = $shard_of{ $node->name };
	my $bad = $node->safe_psql('postgres',
		"SELECT count(*) FROM t WHERE snowflake_shard_id(id) <> $s");
	is($bad, 0, $node->name . ": every ID carries shard $s");
	print $fh $node->safe_psql('postgres', 'SELECT id FROM t'), "\n";
}
close $fh;
my (%seen, $dups, $total);
open $fh, '<', $all or die;
while (my $line = <$fh>)
{
	chomp $line;
	next if $line eq '';
	$total++;
	$dups++ if $seen{$line}++;
}
close $fh;
ok($total > 1000, "the five servers inserted $total rows");
is($dups // 0, 0, 'no ID appears twice across the five servers');

###########################################################################
# (b) a full pool, then a freed shard taken at once
#
# "At once" against "when the lease ran out": with a 30 s lease, renewed
# every 10 s, a shard whose lease were not revoked would stay taken for at
# least 20 s after its holder stopped, while a server waiting for a free
# shard tries again every second.  The time is read from the two servers'
# logs (the release, the claim), not from the test's clock, which also
# counts the stop's checkpoint and the test's own queries.  b1 issues no ID
# before it stops: its clean stop must still lower the shard's freshness mark
# (published up to its lease deadline while it held the shard, idle or not),
# or b3 would wait for it.
###########################################################################

my $prefix_b = '/snowflake/b';
my $lease_b = 30;
my $b1 = registry_node('b1', $etcd, prefix => $prefix_b, shards => '7-8', lease => $lease_b);
my $b2 = registry_node('b2', $etcd, prefix => $prefix_b, shards => '7-8', lease => $lease_b);
my $b3 = registry_node('b3', $etcd, prefix => $prefix_b, shards => '7-8', lease => $lease_b);
$_->start for ($b1, $b2);
$_->safe_psql('postgres', 'CREATE EXTENSION snowflake') for ($b1, $b2);
wait_generating($_) for ($b1, $b2);
is(join(',', sort (held_shard($b1), held_shard($b2))), '7,8', 'b1 and b2 hold the pool 7-8');
$b3->start;
$b3->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($b3->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
	'b3: the registry state is "pool full"');
my ($ret, $out, $err) = $b3->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
isnt($ret, 0, 'b3: snowflake_nextval() fails while the pool is full');
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: every shard of the pool "7-8" is held by another server/,
	'b3: SQLSTATE 55000, the message names the pool');
like($err, qr/DETAIL:  All 2 shards of the pool "7-8" are held by other servers/,
	'b3: the detail says how many shards the pool has');
is($b3->safe_psql('postgres', 'SELECT 1'), 1, 'b3: the database is usable for everything else');

my $freed = held_shard($b1);
my $b3_offset = -s $b3->logfile;
$b1->stop;
my $b1_port = $b1->port;
unlike(holder_in_etcd($etcd, $prefix_b, $freed), qr/port $b1_port,/,
	"b1's clean stop revoked its lease: b1 no longer holds shard $freed in etcd");
ok($b1->log_contains(qr/released shard $freed/), 'b1 logs the release');
wait_generating($b3, 'b3 after b1 stopped');
is(held_shard($b3), $freed, "b3 took the freed shard $freed");
my ($released) = log_times($b1, qr/released shard $freed/);
my ($claimed) = log_times($b3, qr/claimed shard $freed under lease/, $b3_offset);
ok( defined $released && defined $claimed && $claimed - $released < $lease_b / 2,
	sprintf('b3 took it at once (%.1f s after b1 released it, as the logs say; lease %d s)',
		($claimed // 0) - ($released // 0), $lease_b));
like($b3->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/, 'b3 generates');

###########################################################################
# (c) a restart keeps the shard
###########################################################################

my $before = held_shard($b2);
my $id_before = $b2->safe_psql('postgres', 'SELECT snowflake_nextval()');
$b2->restart;
wait_generating($b2, 'b2 after a clean restart');
is(held_shard($b2), $before, 'b2 holds the same shard after a clean restart');
ok($b2->safe_psql('postgres', 'SELECT snowflake_nextval()') > $id_before,
	'b2: IDs after the restart are above the ones before');
like(slurp_file($b2->data_dir . '/pg_snowflake/registry'), qr/^shard $before$/m,
	'b2 remembers its shard in pg_snowflake/registry');

$b2->stop('immediate');
$b2->start;
wait_generating($b2, 'b2 after an immediate stop');
is(held_shard($b2), $before, 'b2 holds the same shard after a crash (its old lease was revoked)');
ok($b2->log_contains(qr/revoking lease \w+ of this server's previous run/),
	"b2's log shows it revoked its previous run's lease");

###########################################################################
# (d) an explicit shard held by a live server
###########################################################################

my $held_by_b2 = held_shard($b2);
my $d1 = registry_node('d1', $etcd, prefix => $prefix_b, shard_id => $held_by_b2, lease => 3);
$d1->start;
$d1->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($d1->poll_query_until('postgres', "SELECT last_error LIKE '%held by%' FROM snowflake_registry"),
	'd1 sees its shard held by another server');
($ret, $out, $err) = $d1->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
isnt($ret, 0, "d1: snowflake_nextval() refuses with snowflake.shard_id = $held_by_b2 held by b2");
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: shard $held_by_b2 is held by another server/,
	'd1: SQLSTATE 55000, "shard N is held by another server"');
my $b2_port = $b2->port;
like($err, qr/DETAIL:  Shard $held_by_b2 is held by host .*, port $b2_port, data directory \S+, system identifier \d+/,
	"d1: the detail names the holder (b2's port $b2_port, data directory, system identifier)");
$b2->stop;
wait_generating($d1, 'd1 once b2 stopped');
is(held_shard($d1), $held_by_b2, "d1 claims shard $held_by_b2 once b2 released it");
ok($d1->log_contains(qr/claimed shard $held_by_b2 under lease/), 'd1 logs the claim');
$d1->stop;
$b3->stop;

###########################################################################
# (e) bad settings
###########################################################################

my $e = node('e', conf => "include_if_exists = 'case.conf'\n");
my @bad = (
	# never the value of snowflake.registry: it may hold a password
	[ "snowflake.registry = 'etcd1:2379'", qr/invalid value for parameter "snowflake\.registry"$/m,
	  qr/endpoint 1 is not an http:\/\/ or https:\/\/ URL/ ],
	[ "snowflake.registry = '" . $etcd->endpoints . "'\nsnowflake.registry_lease = '1s'",
	  qr/invalid value for parameter "snowflake\.registry_lease": "1s"/,
	  qr/1 s is outside the valid range for parameter "snowflake\.registry_lease" \(2(?: s)? \.\. 3600(?: s)?\)/ ],
	[ "snowflake.registry = '" . $etcd->endpoints . "'\nsnowflake.registry_shards = '5-2000'",
	  qr/invalid value for parameter "snowflake\.registry_shards": "5-2000"/,
	  qr/Shard IDs go from 0 to 1023 because snowflake\.shard_bits is 10/ ],
	[ "snowflake.registry = '" . $etcd->endpoints . "'\nsnowflake.registry_prefix = 'snowflake/'",
	  qr/invalid value for parameter "snowflake\.registry_prefix": "snowflake\/"/,
	  qr/snowflake\.registry_prefix must start with "\/"/ ],
);
for my $case (@bad)
{
	my ($conf, $fatal, $reason) = @$case;
	open my $cf, '>', $e->data_dir . '/case.conf' or die;
	print $cf "$conf\n";
	close $cf;
	my $offset = -s $e->logfile;
	ok(!$e->start(fail_ok => 1), "refuses to start with: $conf");
	my $log = slurp_file($e->logfile, $offset);
	like($log, qr/FATAL:  $fatal/, '  FATAL names the setting and value');
	like($log, $reason, '  and says what is allowed');
}
open my $cf, '>', $e->data_dir . '/case.conf' or die;
print $cf "snowflake.registry = '" . $etcd->endpoints . "'\nsnowflake.registry_prefix = '/snowflake/e'\n";
close $cf;
$e->start;
$e->safe_psql('postgres', 'CREATE EXTENSION snowflake');
for my $set ("SET snowflake.registry = ''", "SET snowflake.registry_shards = '1'",
	"SET snowflake.registry_prefix = '/x'", "SET snowflake.registry_lease = '10s'",
	"ALTER SYSTEM SET snowflake.registry_lease = '1s'")
{
	($ret, $out, $err) = $e->psql('postgres', $set);
	isnt($ret, 0, "a session cannot: $set");
}
like($err, qr/1 s is outside the valid range/, 'ALTER SYSTEM checks the range first');
wait_generating($e, 'e with valid settings');
$e->stop;

$_->stop for @nodes;
$etcd->stop;
done_testing();
