# Citus with the PostgreSQL registry on its coordinator (docs/operations.md,
# "Citus"): no service besides the database servers themselves.  Citus is
# not packaged in Debian, so plain servers stand in for its nodes, and a
# stand-in for pg_dist_node and run_command_on_all_nodes() (over dblink)
# lets the guide's node check run as written.
#  - the coordinator's database holds the registry's tables, made by the
#    first server that connects; the coordinator itself and three workers
#    (real preloaded servers) each claim a distinct shard from it;
#  - the guide's node check flags no node;
#  - rows inserted on every node at once: no ID twice, each node's IDs carry
#    its own shard;
#  - a worker restarted keeps its shard; the coordinator's registry lists
#    every claim.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use RegistryTest;

my $doc = slurp_file("$FindBin::RealBin/../../docs/operations.md");
my ($query) = $doc =~ /<!-- citus-node-check[^>]*-->\s*```sql\n(.*?)```/s;
ok(defined $query, 'docs/operations.md has the marked node check');
my ($recipe) = $doc =~ /<!-- citus-registry[^>]*-->\s*```\n(.*?)```/s;
ok(defined $recipe, 'docs/operations.md has the marked registry settings for Citus nodes');

# Every node's settings, the coordinator's included: the guide's snowflake.*
# lines, with this coordinator's address and database (and a short lease).
my $coord = node('coordinator', conf => "fsync = on\nmax_connections = 40\ninclude 'registry.conf'\n");
sub guide_settings
{
	my ($node) = @_;
	my $conf = join('', grep { /^snowflake\./ } split /^/m, $recipe // '');
	$conf =~ s/host=coordinator\.example\.com/'host=' . $coord->host . ' port=' . $coord->port/e;
	$conf =~ s/dbname=app/dbname=postgres/;
	$conf =~ s/ user=snowflake_holder//;
	open my $fh, '>', $node->data_dir . '/registry.conf' or die;
	print $fh $conf, "snowflake.registry_lease = '3s'\n";
	close $fh;
	return;
}

# the coordinator takes its own shard from its own database
guide_settings($coord);
$coord->start;
$coord->safe_psql('postgres', 'CREATE EXTENSION snowflake');

my @workers;
for my $i (1 .. 3)
{
	my $w = registry_node("worker$i", $coord);
	guide_settings($w);
	$w->start;
	$w->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	push @workers, $w;
}
like(slurp_file($workers[0]->data_dir . '/registry.conf'),
	qr/^snowflake\.registry = 'host=\S+ port=\d+ dbname=postgres'\nsnowflake\.registry_prefix = '\/snowflake\/app'$/m,
	'the nodes use the guide\'s settings');
wait_generating($_) for ($coord, @workers);

my %shard;
$shard{ $_->name } = held_shard($_) for ($coord, @workers);
is(scalar(keys %{ { map { $_ => 1 } values %shard } }), 4,
	'the coordinator and three workers hold four distinct shards: ' . join(',', sort { $a <=> $b } values %shard));
is($coord->safe_psql('postgres',
		q{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/snowflake/app' AND status = 'active'}),
	'4', 'the coordinator\'s registry has four active claims');
is($coord->safe_psql('postgres', 'SELECT version FROM snowflake_registry.schema_version'), '1',
	'its tables were made by the first server that connected');

# the stand-in for Citus's catalog and function, then the guide's check
citus_stand_in($coord, $coord, @workers);
is($coord->safe_psql('postgres', $query // 'SELECT 1'), '', 'the guide\'s node check flags no node');

# every node inserts at once
$_->safe_psql('postgres', 'CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), c int)')
  for ($coord, @workers);
is(pgbench_inserts('events', $coord, @workers), 1 + @workers, 'pgbench ran on every node');
my (%seen, $dups, $total);
for my $n ($coord, @workers)
{
	is($n->safe_psql('postgres',
			"SELECT count(*) FROM events WHERE snowflake_shard_id(id) <> $shard{ $n->name }"),
		'0', $n->name . "'s IDs all carry its shard $shard{ $n->name }");
	for my $v (split /\n/, $n->safe_psql('postgres', 'SELECT id FROM events'))
	{
		$total++;
		$dups++ if $seen{$v}++;
	}
}
ok($total > 1000, "$total rows on four nodes");
is($dups // 0, 0, 'no ID appears twice');

# a worker restarted keeps its shard; the coordinator keeps the history
$workers[0]->restart;
wait_generating($workers[0], 'worker1 after a restart');
is(held_shard($workers[0]), $shard{worker1}, 'worker1 holds the same shard after a restart');
is($coord->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE status = 'active') || '/' || count(*) FROM snowflake_registry.claims}),
	'4/5', 'the registry: four active claims among five rows');

$_->stop for (@workers, $coord);
done_testing();
