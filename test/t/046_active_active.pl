# Active-active: primaries that replicate to each other with PostgreSQL's
# native bidirectional logical replication (16+: CREATE SUBSCRIPTION ... WITH
# (origin = none)), one shard ID per node, as docs/operations.md describes.
#
#  (a) two primaries, shards 1 and 2, each publishing `items` (key DEFAULT
#      snowflake_nextval()) and subscribing to the other with origin = none
#      and copy_data = false;
#  (b) pgbench inserts on both at once (single rows and batches from
#      snowflake_nextval_batch()), bounded by transaction counts;
#  (c) convergence: once each has applied the other's changes, both hold the
#      same set of IDs, as many as the two pgbench runs inserted, with no
#      duplicate; every ID carries the shard of the node that made it; no
#      apply error, no conflict (PostgreSQL 18 counts and logs them; the
#      logs of every version are searched for "conflict", "duplicate key"
#      and ERROR);
#  (d) a third node (shard 3) joins later, by the documented procedure: with
#      writes paused and the two nodes caught up, it copies the table from
#      one node (copy_data = true), subscribes to the other without a copy,
#      and both subscribe to it; then inserts on all three at once converge
#      the same way;
#  (e) what IDs do not solve, shown for real: an UPDATE of one row on two
#      nodes at once leaves them disagreeing (the last change each applies
#      wins, and they apply each other's), and a table keyed by a bigserial
#      makes the same key on two nodes: a duplicate key error that stops
#      replication, found by the same log search as in (c), which shows that
#      search can fail.
#
# Assertions are about sets, counts, decoded shards and errors; no raw ID.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my %shard_of = (node_a => 1, node_b => 2, node_c => 3);

# A primary that preloads snowflake with its own shard and can publish.
sub new_node
{
	my ($name) = @_;
	# track_commit_timestamp lets PostgreSQL 18 detect and log UPDATE and
	# DELETE conflicts (update_origin_differs ...); no statement logging,
	# since the logs are searched for errors
	return node(
		$name,
		allows_streaming => 'logical',
		conf             => qq{
snowflake.shard_id = $shard_of{$name}
track_commit_timestamp = on
max_connections = 30
shared_buffers = 16MB
log_statement = none
# apply workers restart soon after ALTER SUBSCRIPTION ... ENABLE
wal_retrieve_retry_interval = 200ms
});
}

my $node_a = new_node('node_a');
if ($node_a->pg_version < 16)
{
	plan skip_all =>
	  'CREATE SUBSCRIPTION ... WITH (origin = none) needs PostgreSQL 16 or later, this is '
	  . $node_a->pg_version;
}
my $node_b = new_node('node_b');

my $schema = q{
	CREATE EXTENSION snowflake;
	CREATE TABLE items (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		node text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		qty int NOT NULL DEFAULT 0);
	-- what IDs do not solve (e): a key from a sequence of each node's own
	CREATE TABLE notes (id bigserial PRIMARY KEY, body text);
	CREATE PUBLICATION pub_all FOR TABLE items, notes;
};

# $to subscribes to $from's changes that originated on $from only.
sub subscribe
{
	my ($to, $from, $copy) = @_;
	my $sub = $to->name . '_from_' . $from->name;
	my ($ret, $out, $err) = $to->psql('postgres',
		    "CREATE SUBSCRIPTION $sub CONNECTION '"
		  . connstr_of($from)
		  . "' PUBLICATION pub_all WITH (origin = none, copy_data = $copy)");
	is($ret, 0, "$sub: created (origin = none, copy_data = $copy)") or diag($err);
	$to->wait_for_subscription_sync($from, $sub);
	return $err;
}

# Waits until every node has applied every other node's changes.
sub catch_up
{
	my @nodes = @_;
	for my $from (@nodes)
	{
		for my $to (@nodes)
		{
			next if $to == $from;
			$from->wait_for_catchup($to->name . '_from_' . $from->name);
		}
	}
	return;
}

# pgbench on each node at once: single-row inserts and batches of $batch;
# returns node name => rows inserted there, from pgbench's own counts.
sub load
{
	my ($xacts, $batch, @nodes) = @_;
	my @runs;
	for my $node (@nodes)
	{
		my $name   = $node->name;
		my $single = $node->basedir . '/046_single.sql';
		my $multi  = $node->basedir . '/046_batch.sql';
		unlink $single, $multi;
		append_to_file($single, "INSERT INTO items (node, qty) VALUES ('$name', :client_id);\n");
		append_to_file($multi,
			"INSERT INTO items (id, node) SELECT id, '$name' FROM snowflake_nextval_batch($batch) AS id;\n");
		my ($out, $err) = ('', '');
		# one thread: pgbench's per-script counts are exact only then
		my $h = IPC::Run::start(
			[
				$node->installed_command('pgbench'), '--no-vacuum',
				'--client=3', '--jobs=1',
				"--transactions=$xacts", '-f', "$single\@9", '-f', "$multi\@1",
				'-h', $node->host, '-p', $node->port, 'postgres'
			],
			'>', \$out, '2>', \$err,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @runs, { node => $node, h => $h, out => \$out, err => \$err };
	}
	my %rows;
	for my $run (@runs)
	{
		my $name = $run->{node}->name;
		my $ok   = eval { $run->{h}->finish; };
		ok($ok && $run->{h}->result == 0, "$name: pgbench exited successfully")
		  or diag("pgbench on $name: $@\n${$run->{out}}\n${$run->{err}}");
		my $total = 3 * $xacts;
		like(${ $run->{out} }, qr{number of transactions actually processed: $total/$total},
			"$name: pgbench ran all $total transactions");
		my ($n_single, $n_batch) = ${ $run->{out} } =~ /^ - (\d+) transactions/mg;
		ok(defined $n_batch && $n_single > 0 && $n_batch > 0, "$name: both scripts ran")
		  or diag(${ $run->{out} });
		$rows{$name} = ($n_single // 0) + $batch * ($n_batch // 0);
	}
	return %rows;
}

# Checks that the nodes hold the same rows of items: $expected in all, rows
# of each origin as many as it inserted, every ID distinct and of its origin's
# shard.
sub converged
{
	my ($what, $expected, $by_node, @nodes) = @_;
	my $fingerprint = q{
		SELECT count(*), count(DISTINCT id), md5(string_agg(id::text || ':' || node || ':' || qty, ',' ORDER BY id))
		FROM items};
	my $first = $nodes[0]->safe_psql('postgres', $fingerprint);
	my ($count, $distinct) = split /\|/, $first;
	is($count, $expected, "$what: " . $nodes[0]->name . " holds the $expected rows inserted on all nodes");
	is($distinct, $count, "$what: no ID appears twice");
	for my $node (@nodes[ 1 .. $#nodes ])
	{
		is($node->safe_psql('postgres', $fingerprint), $first,
			"$what: " . $node->name . ' holds exactly the same rows (count, IDs and contents)');
	}
	my $mapping = join(', ', map { "('$_', $shard_of{$_}, $by_node->{$_})" } sort keys %$by_node);
	for my $node (@nodes)
	{
		is( $node->safe_psql(
				'postgres', qq{
			SELECT count(*) FROM (VALUES $mapping) AS m(node, shard, inserted)
			WHERE inserted <> (SELECT count(*) FROM items i WHERE i.node = m.node)
			   OR EXISTS (SELECT 1 FROM items i WHERE i.node = m.node AND snowflake_shard_id(i.id) <> m.shard)}),
			0,
			"$what: on " . $node->name . ', each node\'s rows are as many as it inserted and carry its shard');
	}
	return;
}

# No apply or sync error, and no conflict counted (the confl_* columns of
# PostgreSQL 18); then the logs from $offset->{name} on.  PostgreSQL 19 counts
# the errors of table and of sequence synchronisation apart
# (sync_table_error_count, sync_seq_error_count) where older versions have one
# sync_error_count: every sync_*error_count column is summed.
sub no_conflicts
{
	my ($what, $offset, @nodes) = @_;
	for my $node (@nodes)
	{
		my ($confl, $sync) = split /\|/, $node->safe_psql(
			'postgres', q{
			SELECT coalesce(string_agg(format('s.%I', attname), ' + ') FILTER (WHERE attname LIKE 'confl\_%'), '0'),
			       string_agg(format('s.%I', attname), ' + ') FILTER (WHERE attname ~ '^sync_.*error_count$')
			FROM pg_attribute
			WHERE attrelid = 'pg_catalog.pg_stat_subscription_stats'::regclass});
		is( $node->safe_psql(
				'postgres',
				"SELECT count(*) FROM pg_stat_subscription_stats s
				 WHERE apply_error_count + $sync + $confl > 0"),
			0,
			"$what: " . $node->name . ': no apply error, sync error or counted conflict');
		my $log = slurp_file($node->logfile, $offset->{ $node->name } // 0);
		my @bad = grep { /conflict|duplicate key|ERROR:/i } split /\n/, $log;
		is(scalar(@bad), 0, "$what: " . $node->name . ': no conflict, duplicate key or error in the log')
		  or diag(join("\n", @bad));
	}
	return;
}

###########################################################################
# (a) Two primaries subscribed to each other.
###########################################################################

for my $node ($node_a, $node_b)
{
	$node->start;
	$node->safe_psql('postgres', $schema);
}
subscribe($node_a, $node_b, 'false');
subscribe($node_b, $node_a, 'false');
for my $node ($node_a, $node_b)
{
	is( $node->safe_psql('postgres',
			"SELECT string_agg(subname || ':' || suborigin, ',') FROM pg_subscription"),
		($node == $node_a ? 'node_a_from_node_b' : 'node_b_from_node_a') . ':none',
		$node->name . ': one subscription, origin = none');
}

###########################################################################
# (b), (c) Inserts on both at once converge.
###########################################################################

my %inserted = load(1000, 20, $node_a, $node_b);
catch_up($node_a, $node_b);
my $total = $inserted{node_a} + $inserted{node_b};
converged('two nodes', $total, \%inserted, $node_a, $node_b);
no_conflicts('two nodes', {}, $node_a, $node_b);

# the loads overlapped in time: each node's first ID is older than the
# other's last (IDs of the two shards interleave)
is( $node_a->safe_psql(
		'postgres', q{
		SELECT bool_and(first_id < (SELECT max(id) FROM items o WHERE o.node <> n.node))
		FROM (SELECT node, min(id) AS first_id FROM items GROUP BY node) n}),
	't',
	'the two nodes inserted at the same time (their ID ranges interleave)');

###########################################################################
# (d) A third node joins later.
###########################################################################

my %log_at;
my $node_c = new_node('node_c');
$node_c->start;
$node_c->safe_psql('postgres', $schema);
$log_at{$_->name} = -s $_->logfile for ($node_a, $node_b, $node_c);

# writes are paused (no load runs) and A and B have applied each other's
# changes: copy A's table, which holds B's rows too, then stream from both
catch_up($node_a, $node_b);
my $warning = subscribe($node_c, $node_a, 'true');
like($warning, qr/might copy data that had a different origin/,
	'node_c: PostgreSQL warns that the copy from node_a holds rows of other origins (expected: they are copied once)');
subscribe($node_c, $node_b, 'false');
subscribe($node_a, $node_c, 'false');
subscribe($node_b, $node_c, 'false');
converged('after the join', $total, \%inserted, $node_a, $node_b, $node_c);

my %more = load(600, 20, $node_a, $node_b, $node_c);
catch_up($node_a, $node_b, $node_c);
$inserted{$_} += $more{$_} for keys %more;
$total = 0;
$total += $_ for values %inserted;
converged('three nodes', $total, \%inserted, $node_a, $node_b, $node_c);
no_conflicts('three nodes', \%log_at, $node_a, $node_b, $node_c);

###########################################################################
# (e) What IDs do not solve.
###########################################################################

# Stops A's and B's apply of each other's changes (and waits until the apply
# workers are gone), or starts it again.
sub pause_ab
{
	for my $node ($node_a, $node_b)
	{
		my $sub = $node->name . ($node == $node_a ? '_from_node_b' : '_from_node_a');
		$node->safe_psql('postgres', "ALTER SUBSCRIPTION $sub DISABLE");
		$node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_subscription WHERE subname = '$sub' AND pid IS NOT NULL")
		  or die "$sub: the apply worker did not stop";
	}
	return;
}

sub resume_ab
{
	$node_a->safe_psql('postgres', 'ALTER SUBSCRIPTION node_a_from_node_b ENABLE');
	$node_b->safe_psql('postgres', 'ALTER SUBSCRIPTION node_b_from_node_a ENABLE');
	return;
}

# One row updated on two nodes at once (replication paused so that neither
# sees the other's change first): each applies the other's, and they end
# up disagreeing.
my $row = $node_a->safe_psql('postgres',
	"SELECT id FROM items WHERE node = 'node_a' ORDER BY id LIMIT 1");
pause_ab();
$node_a->safe_psql('postgres', "UPDATE items SET qty = -1 WHERE id = $row");
$node_b->safe_psql('postgres', "UPDATE items SET qty = -2 WHERE id = $row");
resume_ab();
catch_up($node_a, $node_b);
is( $node_a->safe_psql('postgres', "SELECT qty FROM items WHERE id = $row") . ' '
	  . $node_b->safe_psql('postgres', "SELECT qty FROM items WHERE id = $row"),
	'-2 -1',
	'an UPDATE of one row on two nodes at once: each ends with the other\'s value (IDs do not resolve it)');
if ($node_a->pg_version >= 18)
{
	ok( $node_a->wait_for_log(qr/conflict detected on relation "public\.items": conflict=update_origin_differs/,
			$log_at{node_a}),
		'PostgreSQL 18 logs the UPDATE conflict (update_origin_differs)');
}

# A bigserial key: both nodes make key 1 (replication paused again, so that
# neither sees the other's row first); the copy of each is refused on the
# other, and replication of the whole subscription stops on the error.
$log_at{$_->name} = -s $_->logfile for ($node_a, $node_b);
pause_ab();
$node_a->safe_psql('postgres', "INSERT INTO notes (body) VALUES ('from a')");
$node_b->safe_psql('postgres', "INSERT INTO notes (body) VALUES ('from b')");
resume_ab();
for my $node ($node_a, $node_b)
{
	my $sub = $node->name . ($node == $node_a ? '_from_node_b' : '_from_node_a');
	ok( $node->poll_query_until('postgres',
			"SELECT apply_error_count > 0 FROM pg_stat_subscription_stats WHERE subname = '$sub'"),
		$node->name . ': the other node\'s bigserial key 1 is refused, and its apply fails');
	my @found = grep { /conflict|duplicate key/i } split /\n/, slurp_file($node->logfile, $log_at{ $node->name });
	ok(scalar(@found) > 0,
		$node->name . ': the log search of (c) finds it: ' . ($found[0] // 'nothing'));
}

$_->stop for ($node_a, $node_b, $node_c);
done_testing();
