# RegistryTest.pm
#	Servers that take their shard from a registry, for the registry TAP
#	tests: an etcd cluster (EtcdCluster), or a PostgreSQL server
#	(a PostgreSQL::Test::Cluster node; the database is "registry" unless
#	dbname => ... says otherwise).
#
#	my $node = registry_node('a', $etcd, prefix => '/t1', lease => 3,
#	                         shards => '0-4', shard_id => 7, init => {...});
#	my $node = registry_node('b', $registry_node, dbname => 'reg', user => 'r');
#	wait_generating($node);   # until snowflake_registry says generating
#	reconfigure($node, $other, prefix => '/t2');   # new registry settings (restart to apply)
#
#	The registry settings live in registry.conf in the data directory,
#	included where registry_node added them: lines appended later still win.

package RegistryTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

our @EXPORT = qw(registry_node registry_conf registry_target reconfigure wait_generating
  registry_row held_shard holder_in_etcd);

# snowflake.registry for a registry: etcd's endpoints, or a connection
# string to a PostgreSQL node's database (by its Unix socket).
sub registry_target
{
	my ($registry, %o) = @_;
	return $o{endpoints} if defined $o{endpoints};
	return $registry->endpoints if $registry->can('endpoints');
	my $target = 'host=' . $registry->host . ' port=' . $registry->port
	  . ' dbname=' . ($o{dbname} // 'registry');
	$target .= " user=$o{user}" if defined $o{user};
	return $target;
}

# The registry settings for a node.
sub registry_conf
{
	my ($registry, %o) = @_;
	my $conf = "snowflake.registry = '" . registry_target($registry, %o) . "'\n"
	  . "snowflake.registry_prefix = '" . ($o{prefix} // '/snowflake/test') . "'\n"
	  . "snowflake.registry_lease = '" . ($o{lease} // 3) . "s'\n";
	$conf .= "snowflake.registry_shards = '$o{shards}'\n" if defined $o{shards};
	$conf .= "snowflake.shard_id = $o{shard_id}\n"        if defined $o{shard_id};
	return $conf;
}

# A server with the library preloaded and the registry set (not started).
sub registry_node
{
	my ($name, $etcd, %o) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $o{init} // {} });
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'snowflake'\n"
		  . "max_connections = 30\nlog_statement = none\n"
		  . "log_min_messages = log\n"
		  . "include 'registry.conf'\n");
	reconfigure($node, $etcd, %o);
	return $node;
}

# Writes a node's registry settings (registry.conf); a restart applies them.
sub reconfigure
{
	my ($node, $registry, %o) = @_;
	my $file = $node->data_dir . '/registry.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh registry_conf($registry, %o);
	close $fh or die "could not close $file: $!";
	return;
}

# One column of the snowflake_registry view.
sub registry_row
{
	my ($node, $col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM snowflake_registry");
}

sub held_shard { my ($node) = @_; return registry_row($node, 'shard_id'); }

# Waits until the node may generate (it holds a shard under a valid lease).
sub wait_generating
{
	my ($node, $what) = @_;
	return ok($node->poll_query_until('postgres',
			'SELECT generating FROM snowflake_registry'),
		($what // $node->name) . ': holds a shard and may generate');
}

# The holder key of a shard as etcdctl shows it ('' when absent).
sub holder_in_etcd
{
	my ($etcd, $prefix, $shard) = @_;
	my $out = $etcd->ctl('get', '--print-value-only', "$prefix/shards/$shard/holder");
	chomp $out;
	return $out;
}

1;
