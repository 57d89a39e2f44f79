# RegistryTest.pm
#	Servers that take their shard from a registry, for the registry TAP
#	tests: an etcd cluster (EtcdCluster), or a PostgreSQL server
#	(a PostgreSQL::Test::Cluster node; the database is "registry" unless
#	dbname => ... says otherwise).
#
#	my $node = registry_node('a', $etcd, prefix => '/t1', lease => 3,
#	                         shards => '0-4', shard_id => 7, init => {...});
#	         (made by SnowflakeTest::node; init => {...} holds node()'s options)
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
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest ();
use Test::More;
use Time::HiRes qw(time sleep);

our @EXPORT = qw(registry_node processes_named start_loader stop_loaders registry_conf registry_target reconfigure wait_generating
  registry_row held_shard holder_in_etcd process_family
  citus_stand_in REFUSAL_PROBE pgbench_inserts);

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

# A server with the library preloaded and the registry set (not started):
# SnowflakeTest::node with the options in $o{init}, then registry.conf.
sub registry_node
{
	my ($name, $etcd, %o) = @_;
	my $node = SnowflakeTest::node($name, %{ $o{init} // {} },
		conf => "max_connections = 30\nlog_statement = none\n"
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

# Starts a session on $node that inserts IDs into its table t (id bigint)
# until stop_loaders() tells it to stop, through every refusal (55000: no
# shard held yet, or past the lease).  Returns [ harness, \stdout, \stderr ].
sub start_loader
{
	my ($node) = @_;
	my $sql = qq{
DO \$\$
DECLARE
	i int := 0;
BEGIN
	LOOP
		BEGIN
			INSERT INTO t SELECT snowflake_nextval() FROM generate_series(1, 10);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			PERFORM pg_sleep(0.02);
		END;
		i := i + 1;
		IF i % 50 = 0 THEN
			COMMIT;
			EXIT WHEN (SELECT count(*) FROM pg_ls_dir('.') d WHERE d = 'stop-loader') > 0;
		END IF;
		PERFORM pg_sleep(0.002);
	END LOOP;
END \$\$;
};
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
		  '-d', 'postgres', '-c', $sql ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

# Tells the loaders on @$nodes to stop and checks that each of @loaders ran to
# its end (one check each).
sub stop_loaders
{
	my ($nodes, @loaders) = @_;
	for my $n (@$nodes)
	{
		open my $fh, '>', $n->data_dir . '/stop-loader' or die;
		close $fh;
	}
	for my $l (@loaders)
	{
		$l->[0]->finish;
		ok(!$l->[0]->result, 'a loader ran to its end') or diag(${ $l->[2] });
	}
	return;
}

# The PIDs of @pids whose command line matches $re (a process that ended
# meanwhile matches nothing).
sub processes_named
{
	my ($re, @pids) = @_;
	return grep {
		my $c = '';
		if (open my $fh, '<', "/proc/$_/cmdline") { $c = <$fh> // ''; close $fh; }
		$c =~ $re;
	} @pids;
}

# The postmaster of a node and every process it started (to SIGSTOP a
# whole server, or to find its registry worker).
sub process_family
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	my @kids;
	opendir my $dh, '/proc' or die;
	for my $pid (grep { /^\d+$/ } readdir $dh)
	{
		open my $fh, '<', "/proc/$pid/stat" or next;
		my $stat = <$fh>;
		close $fh;
		next unless defined $stat;
		my ($ppid) = substr($stat, rindex($stat, ')') + 2) =~ /^\S+ (\d+)/;
		push @kids, $pid if defined $ppid && $ppid == $pm;
	}
	closedir $dh;
	return ($pm, @kids);
}

# A stand-in for Citus's catalog on $coord (pg_dist_node listing @nodes, in
# order) and for its run_command_on_all_nodes() (through dblink), enough for
# the node check in docs/operations.md to run as it would on a Citus
# coordinator.
sub citus_stand_in
{
	my ($coord, @nodes) = @_;
	$coord->safe_psql('postgres', q{
	CREATE EXTENSION dblink;
	CREATE TABLE pg_dist_node (nodeid int PRIMARY KEY, nodename text, nodeport int);
	CREATE FUNCTION run_command_on_all_nodes(command text,
		OUT nodeid int, OUT success boolean, OUT result text)
	RETURNS SETOF record LANGUAGE plpgsql AS $$
	DECLARE
		n record;
	BEGIN
		FOR n IN SELECT * FROM pg_dist_node ORDER BY 1 LOOP
			nodeid := n.nodeid;
			BEGIN
				SELECT r INTO result FROM dblink(format('host=%s port=%s dbname=postgres',
				                                        n.nodename, n.nodeport), command) AS t(r text);
				success := true;
			EXCEPTION WHEN OTHERS THEN
				success := false;
				result := SQLERRM;
			END;
			RETURN NEXT;
		END LOOP;
	END $$;
});
	my $id = 1;
	for my $n (@nodes)
	{
		$coord->safe_psql('postgres',
			sprintf(q{INSERT INTO pg_dist_node VALUES (%d, '%s', %d)}, $id++, $n->host, $n->port));
	}
	return;
}

# A client that calls snowflake_nextval() every 50 ms and notes when it is
# first refused (NOTICE "refused after N s: ..."), or "never refused" after 20 s.
use constant REFUSAL_PROBE => q{
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	LOOP
		BEGIN
			PERFORM snowflake_nextval();
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			RAISE NOTICE 'refused after % s: %',
				round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2), SQLERRM;
			RETURN;
		END;
		IF clock_timestamp() - t0 > interval '20 s' THEN
			RAISE NOTICE 'never refused';
			RETURN;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
};

# pgbench on every node at once for 3 seconds, two clients each, inserting
# into $table (c); returns how many of the runs succeeded.
sub pgbench_inserts
{
	my ($table, @nodes) = @_;
	my @runs;
	for my $node (@nodes)
	{
		my $script = $node->basedir . '/insert.sql';
		open my $fh, '>', $script or die;
		print $fh "INSERT INTO $table (c) VALUES (:client_id);\n";
		close $fh;
		push @runs,
		  IPC::Run::start(
			[
				'pgbench', '--no-vacuum', '--client=2', '--jobs=1', '--time=3', '-f', $script,
				'-h', $node->host, '-p', $node->port, 'postgres'
			],
			'>', \my $out, '2>', \my $err);
	}
	$_->finish for @runs;
	return scalar(grep { $_->result == 0 } @runs);
}

1;
