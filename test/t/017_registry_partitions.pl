# Real network partitions between a holder and its registry, for both
# backends: network namespaces with veth pairs, made by the test through the
# root helper scripts/test.sh installs (test/perl/NetNs.pm); nft rules inside
# a namespace drop its packets both ways while connections stay open.  The
# holder runs inside a namespace; its clients reach it by its Unix socket all
# along, only its TCP path to the registry is cut.  In each case:
#  - the cut-off holder stops generating within the lease (its last ID comes
#    no later than the lease after the cut), while its clients still reach it;
#  - another server claims the shard (a one-shard pool) and issues IDs above
#    every ID the cut-off holder issued;
#  - after the partition heals, the old holder issues nothing under the lost
#    lease (it finds its lease gone and the shard held: "pool full");
#  - no ID appears twice.
# The cases:
#  (a) PostgreSQL registry, the holder's namespace cut off;
#  (b) etcd (three members), the holder's namespace cut off from all three;
#  (c) etcd, the minority side: one member and the holder that talks only to
#      it, in one namespace, cut off from the two others.

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
use NetNs;
use RegistryTest;

my $why = NetNs::unavailable();
plan skip_all => $why if $why;
plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

my $lease = 3;

# Two servers serve every case: "old" (in the case's namespace), "new"
# (outside); each case gives them its registry settings and a fresh table.
my $old = registry_node('old', undef, endpoints => 'http://127.0.0.1:1', lease => $lease);
my $new = registry_node('new', undef, endpoints => 'http://127.0.0.1:1', lease => $lease);
my $fresh = 'DROP TABLE IF EXISTS t; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
	at timestamptz DEFAULT clock_timestamp(), c int)';

# Starts old in the namespace and new outside, with these registry settings.
sub start_pair
{
	my ($ns, $old_target, $new_target, %o) = @_;
	reconfigure($old, undef, endpoints => $old_target, lease => $lease, %o);
	reconfigure($new, undef, endpoints => $new_target, lease => $lease, %o);
	$ns->start_node($old);
	$old->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS snowflake; ' . $fresh);
	wait_generating($old, 'the holder in the namespace');
	$new->start;
	$new->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS snowflake; ' . $fresh);
	return;
}

# Inserts into t through the node's Unix socket until stopped; returns the run.
sub load
{
	my ($node) = @_;
	my $script = $node->basedir . '/insert.sql';
	open my $fh, '>', $script or die;
	print $fh "INSERT INTO t (c) VALUES (:client_id);\n";
	close $fh;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--client=2', '--jobs=1', '--time=60', '-f', $script,
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

# The whole story for one holder cut off ($old, in $ns) and its successor $new.
sub partition_case
{
	my ($what, $ns, $shard, $grace) = @_;
	$grace //= 0;

	is(held_shard($old), $shard, "$what: the holder in the namespace holds shard $shard");
	ok($new->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
		"$what: the other server waits, the pool is full");
	my $run = load($old);
	ok($old->poll_query_until('postgres', 'SELECT count(*) > 300 FROM t'),
		"$what: the holder is inserting");

	$ns->cut;
	my $cut_at = time;
	note "$what: cut";

	wait_generating($new, "$what: the other server, during the partition");
	my $taken = time - $cut_at;
	is(held_shard($new), $shard, "$what: the other server took shard $shard");
	ok($taken >= $lease * 2 / 3,
		sprintf('%s: only once the lease could have expired (%.1f s after the cut, lease %d s)',
			$what, $taken, $lease));
	$new->safe_psql('postgres', 'INSERT INTO t (c) SELECT -1 FROM generate_series(1, 3000)');

	# the cut-off holder, still reached by its clients
	my ($ret, $out, $err) = $old->psql('postgres', 'SELECT snowflake_nextval()');
	isnt($ret, 0, "$what: the cut-off holder, reached by its clients, refuses to generate");
	like($err, qr/cannot generate snowflake IDs/, "$what: with the registry's refusal");
	my $last = $old->safe_psql('postgres', 'SELECT extract(epoch FROM max(at)) FROM t');
	ok($last - $cut_at <= $lease + $grace,
		sprintf('%s: its last ID came %.2f s after the cut, within the lease (%d s)%s',
			$what, $last - $cut_at, $lease, $grace ? " and the $grace s a cut-off leader still renews" : ''));
	$run->finish;

	$ns->heal;
	my $healed_at = time;
	note "$what: healed";
	ok($old->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
		"$what: healed, the old holder finds its lease gone and the shard held");
	($ret, $out, $err) = $old->psql('postgres', 'SELECT snowflake_nextval()');
	isnt($ret, 0, "$what: and still refuses to generate");
	is($old->safe_psql('postgres', "SELECT count(*) FROM t WHERE at >= to_timestamp($cut_at + $lease + $grace)"),
		'0', "$what: it issued nothing under the lost lease (no row after the lease)");
	ok($old->log_contains(qr/lost shard $shard|lease deadline of shard $shard passed/),
		"$what: its log says it lost the shard");

	my $old_max = $old->safe_psql('postgres', 'SELECT max(id) FROM t');
	is($new->safe_psql('postgres', "SELECT count(*) FROM t WHERE id <= $old_max"), '0',
		"$what: every ID of the new holder is above every ID of the cut-off one");
	my (%seen, $dups);
	for my $n ($old, $new)
	{
		$dups += $seen{$_}++ ? 1 : 0 for split /\n/, $n->safe_psql('postgres', 'SELECT id FROM t');
	}
	is($dups // 0, 0, "$what: no ID appears twice (" . scalar(keys %seen) . ' IDs)');
	diag(sprintf('%s: the other server claimed %.1f s after the cut (lease %d s)', $what, $taken, $lease));
	$_->stop for ($old, $new);
	return;
}

###########################################################################
# (a) PostgreSQL registry
###########################################################################

{
	my $ns = NetNs->new;
	my $reg = node('registry', preload => 0, conf => "fsync = on\nlisten_addresses = '" . $ns->outer . "'\n");
	$reg->append_conf('pg_hba.conf', "host all all 198.18.0.0/16 trust\n");
	$reg->start;
	$reg->safe_psql('postgres', 'CREATE DATABASE registry');

	my $tcp = 'host=' . $ns->outer . ' port=' . $reg->port . ' dbname=registry';
	start_pair($ns, $tcp, registry_target($reg), prefix => '/part/pg', shards => '5');
	partition_case('PostgreSQL registry', $ns, 5);
	is($reg->safe_psql('registry',
			q{SELECT string_agg(status, ',' ORDER BY claim_id) FROM snowflake_registry.claims}),
		'expired,released', 'PostgreSQL registry: the cut-off claim is marked expired (not deleted), its successor\'s released at its clean stop');
	$reg->stop;
	$ns->delete;
}

###########################################################################
# (b) etcd, the holder cut off from every member
###########################################################################

{
	my $ns = NetNs->new;
	my $etcd = EtcdCluster->new(3,
		client_hosts => [ map { [ '127.0.0.1', $ns->outer ] } 1 .. 3 ], pre_vote => 1);
	my $eps = join(',', map { $etcd->endpoint($_, $ns->outer) } 1 .. 3);
	start_pair($ns, $eps, $etcd->endpoints, prefix => '/part/etcd', shards => '6');
	partition_case('etcd, holder cut off', $ns, 6);
	$etcd->stop;
	$ns->delete;
}

###########################################################################
# (c) etcd, the minority side of a three-member cluster
###########################################################################

{
	my $ns = NetNs->new;
	my $etcd = EtcdCluster->new(3,
		peer_hosts   => [ $ns->outer, $ns->outer, $ns->inner ],
		client_hosts => [ [ '127.0.0.1' ], [ '127.0.0.1' ], [ $ns->inner ] ],
		netns        => [ undef, undef, $ns ],
		pre_vote     => 1);
	start_pair($ns, $etcd->endpoint(3), join(',', $etcd->endpoint(1), $etcd->endpoint(2)),
		prefix => '/part/minority', shards => '7');
	# the member on the minority side may be the leader: until it steps down
	# (check-quorum, one election timeout: 1 s in EtcdCluster) it still
	# renews leases, so the holder's deadline can come that much later; the
	# majority's new leader extends every lease by its TTL, so the successor
	# still claims after it
	partition_case('etcd, minority side', $ns, 7, 1);
	like($etcd->ctl('member', 'list'), qr/e3/, 'the minority member is back in the cluster');
	$etcd->stop;
	$ns->delete;
}

done_testing();
