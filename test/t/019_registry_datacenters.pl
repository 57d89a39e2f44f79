# Datacenters with a registry (snowflake.datacenter_bits = 3: the 10-bit
# shard field is datacenter | worker, 8 datacenters of 128 workers), for both
# backends: each server claims a worker within its own datacenter; the
# registry's rows (PostgreSQL) and keys (etcd) carry the datacenter and the
# worker; the view and the decoders show both; the settings that cannot work
# stop the server at start, saying why.
#  (a) PostgreSQL registry: two servers of datacenter 1 and one of
#      datacenter 2 claim shards 128..255 and 256..383; the rows say
#      datacenter 1 or 2 and the worker; IDs decode to the same;
#  (b) a pool within the datacenter is claimed from; one reaching outside
#      it, and a registry with datacenter bits but no datacenter_id, are
#      refused at start;
#  (c) etcd: the same servers claim within their datacenters, under
#      <prefix>/dc/<datacenter>/shards/<worker>/holder.

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

my $reg = node('registry', preload => 0, conf => "fsync = on\n", start => 1);
$reg->safe_psql('postgres', 'CREATE DATABASE registry');

my %dc = (a => 1, b => 1, c => 2);
my %node;
for my $name (qw(a b c))
{
	my $n = registry_node($name, $reg, prefix => '/dc', lease => 3);
	$n->append_conf('postgresql.conf',
		"snowflake.datacenter_bits = 3\nsnowflake.datacenter_id = $dc{$name}\n"
		  . "log_min_messages = warning\n");
	$node{$name} = $n;
}

# Checks that each server holds a worker of its own datacenter, and what it shows.
sub check_claims
{
	my ($what) = @_;
	my %held;
	for my $name (qw(a b c))
	{
		my $n = $node{$name};
		wait_generating($n, "$what: $name");
		my ($shard, $d, $w) = split /\|/,
		  $n->safe_psql('postgres', 'SELECT shard_id, datacenter, worker FROM snowflake_registry');
		$held{$name} = $shard;
		is($d, $dc{$name}, "$what: $name holds a shard of its datacenter $dc{$name} (shard $shard)");
		is($shard, $d * 128 + $w, "$what: $name: shard = datacenter << 7 | worker ($d, $w)");
		my $id = $n->safe_psql('postgres', 'SELECT snowflake_nextval()');
		is($n->safe_psql('postgres',
				"SELECT snowflake_datacenter($id) || '|' || snowflake_worker($id) || '|' || snowflake_shard_id($id)"),
			"$d|$w|$shard", "$what: ${name}'s IDs decode to its datacenter and worker");
		is($n->safe_psql('postgres', 'SELECT datacenter_id, shard_id FROM snowflake_layout()'),
			"$dc{$name}|$shard", "$what: snowflake_layout() shows the datacenter and the shard held");
	}
	isnt($held{a}, $held{b}, "$what: the two servers of datacenter 1 hold different workers");
	return %held;
}

###########################################################################
# (a) PostgreSQL registry
###########################################################################

$_->start for values %node;
$_->safe_psql('postgres', 'CREATE EXTENSION snowflake') for values %node;
my %held = check_claims('PostgreSQL');
for my $name (qw(a b c))
{
	my $w = $held{$name} - $dc{$name} * 128;
	my $port = $node{$name}->port;
	is( $reg->safe_psql('registry',
			qq{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/dc'
			   AND datacenter = $dc{$name} AND worker = $w AND status = 'active'
			   AND holder LIKE '%port $port,%'}),
		'1', "PostgreSQL: ${name}'s row carries datacenter $dc{$name} and worker $w");
}
$_->stop for values %node;

###########################################################################
# (b) pools and datacenters
###########################################################################

my $a = $node{a};
reconfigure($a, $reg, prefix => '/dc2', lease => 3, shards => '130-131');
$a->start;
wait_generating($a, 'a pool of two shards of datacenter 1');
like(held_shard($a), qr/^13[01]$/, 'the server claimed from its pool');
$a->stop;

reconfigure($a, $reg, prefix => '/dc2', lease => 3, shards => '100-131');
my $offset = -s $a->logfile;
ok(!$a->start(fail_ok => 1), 'a pool reaching outside the datacenter: the server does not start');
my $log = slurp_file($a->logfile, $offset);
like($log, qr/FATAL:  snowflake\.registry_shards "100-131" reaches outside datacenter 1/,
	'  FATAL names the pool and the datacenter');
like($log, qr/datacenter 1 has shards 128 to 255 \(workers 0 to 127\)/, '  and says which shards are its');

reconfigure($a, $reg, prefix => '/dc2', lease => 3);
$a->append_conf('postgresql.conf', "snowflake.datacenter_id = -1\n");
$offset = -s $a->logfile;
ok(!$a->start(fail_ok => 1), 'datacenter bits without a datacenter_id: the server does not start');
$log = slurp_file($a->logfile, $offset);
like($log, qr/FATAL:  snowflake\.registry with snowflake\.datacenter_bits 3 needs snowflake\.datacenter_id/,
	'  FATAL says what is missing');
$a->append_conf('postgresql.conf', "snowflake.datacenter_id = 1\n");
$reg->stop;

###########################################################################
# (c) etcd
###########################################################################

SKIP:
{
	skip 'etcd is not installed', 16 unless -x $EtcdCluster::etcd;
	my $etcd = EtcdCluster->new(1);
	reconfigure($_, $etcd, prefix => '/dc', lease => 3) for values %node;
	$_->start for values %node;
	%held = check_claims('etcd');
	for my $name (qw(a b c))
	{
		my $w = $held{$name} - $dc{$name} * 128;
		like($etcd->ctl('get', '--print-value-only', "/dc/dc/$dc{$name}/shards/$w/holder"),
			qr/port ${\ $node{$name}->port },/,
			"etcd: $name holds /dc/dc/$dc{$name}/shards/$w/holder");
	}
	$_->stop for values %node;
	$etcd->stop;
}

done_testing();
