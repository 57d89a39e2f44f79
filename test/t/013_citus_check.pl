# The node check of docs/operations.md ("Citus"), run exactly as written
# there (issue 17, defect 7).
#
# Citus is not packaged in Debian, so a stand-in provides what the query
# uses: a table pg_dist_node and a function run_command_on_all_nodes() that
# runs the command on each node with dblink.  The nodes are real preloaded
# servers: one with snowflake.shard_id = 1, one that takes its shard from an
# etcd registry, one that shares shard 1 with the first, and one with no
# shard at all.  The check must flag the two that share shard 1 and the one
# without a shard, and must not flag the registry node (before 1.2 it flagged
# every registry node as "snowflake.shard_id is not set").

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use EtcdCluster;
use RegistryTest;

plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

# the query, from the documentation
my $doc = slurp_file("$FindBin::RealBin/../../docs/operations.md");
my ($query) = $doc =~ /<!-- citus-node-check[^>]*-->\s*```sql\n(.*?)```/s;
ok(defined $query, 'docs/operations.md has the marked node check');
$query //= 'SELECT 1';

my $etcd = EtcdCluster->new(1);

my $coord = node('coordinator', conf => "snowflake.shard_id = 0\n", start => 1);

my %conf = (
	fixed    => "snowflake.shard_id = 1\n",
	same     => "snowflake.shard_id = 1\n",
	unset    => '',
	registry => undef,
);
my @nodes;
foreach my $name (qw(fixed registry same unset))
{
	my $n;
	if ($name eq 'registry')
	{
		$n = registry_node('registry', $etcd, prefix => '/snowflake/citus', lease => 3,
			shards => '5-6');
	}
	else
	{
		$n = node($name, conf => $conf{$name});
	}
	$n->start;
	$n->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	push @nodes, $n;
}
wait_generating($nodes[1], 'the registry node');

# the stand-in for Citus's catalog and its function
$coord->safe_psql('postgres', 'CREATE EXTENSION snowflake');
citus_stand_in($coord, @nodes);

my $out = $coord->safe_psql('postgres', $query);
my %flagged;
foreach my $line (split /\n/, $out)
{
	my @f = split /\|/, $line;
	$flagged{ $f[1] } = $f[-1];    # the layout column holds '|' too
}
my %port = map { $_->name => $_->port } @nodes;
like($flagged{ $port{fixed} } // '', qr/shard ID used by another node too/,
	'the node with shard 1 is flagged: another node has shard 1');
like($flagged{ $port{same} } // '', qr/shard ID used by another node too/,
	'the other node with shard 1 is flagged');
is($flagged{ $port{unset} } // '', 'snowflake.shard_id is not set',
	'the node without a shard ID is flagged');
ok(!exists $flagged{ $port{registry} },
	'the registry node, which holds shard ' . held_shard($nodes[1]) . ', is not flagged')
  or diag($out);
is(scalar(keys %flagged), 3, 'exactly three nodes are flagged') or diag($out);

# a registry node that holds no shard yet is flagged for that
$nodes[1]->stop;
$etcd->stop;
$nodes[1]->start;
$out = $coord->safe_psql('postgres', $query);
like($out, qr/\|\Q$port{registry}\E\|.*holds no shard in the registry yet/,
	'a registry node without a shard is flagged as such');

$_->stop for ($coord, @nodes);
done_testing();
