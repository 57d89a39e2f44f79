# A small sharded cluster: three servers generate IDs at the same time, each
# with its own shard ID, and a fourth server (the aggregator) collects every
# row through logical replication.
#
#  (a) three sources (shards 11, 22, 33; the last also owns logical shards
#      300-302 and 310) each publish a table `events` whose key defaults to
#      snowflake_nextval(); the aggregator (shard 44) subscribes to all three;
#  (b) pgbench runs on the three sources at once: single-row inserts and
#      batches from snowflake_nextval_batch(200); no transaction fails;
#  (c) once the aggregator has caught up: no replication conflict or apply
#      error, no duplicate ID, every ID decodes to the shard of the server it
#      came from, and IDs sorted by value follow creation time across servers
#      to within snowflake.max_clock_lead (plus a small tolerance), as the
#      decoded time of each ID does;
#  (d) a fifth server misconfigured with shard 22 generates rows that also
#      reach the aggregator: the documented detection query on the collected
#      data flags shard 22 with both origins, and the cross-server check of
#      the configured shards (snowflake_layout().shard_id plus
#      snowflake.shard_ids) finds the two servers that share it.
#
# Every assertion is about relations between IDs, decoded fields, counts or
# errors; no raw ID or wall-clock value is compared with a constant.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

# ID timestamps may run ahead of the wall clock by at most this (every server
# sets it explicitly), and created_at (clock_timestamp() in the same INSERT)
# is read a moment after the ID was generated: allow this much for that.
my $lead_ms      = 1000;
my $tolerance_ms = 200;
my $slack        = "interval '@{[$lead_ms + $tolerance_ms]} milliseconds'";

my $table_with_default = q{
	CREATE TABLE events (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		origin text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		payload int);
};

# A server that preloads snowflake with the given shard (and logical shards).
sub new_server
{
	my ($name, $shard, $shard_ids) = @_;
	return node(
		$name,
		allows_streaming => 'logical',
		conf             => qq{
snowflake.shard_id = $shard
snowflake.shard_ids = '$shard_ids'
snowflake.max_clock_lead = '${lead_ms}ms'
max_connections = 30
shared_buffers = 16MB
});
}

###########################################################################
# (a) Three sources, one aggregator.
###########################################################################

# origin (the node name) => shard ID, and each node's logical shards
my %shard_of  = (src11 => 11, src22 => 22, src33 => 33);
my %shard_ids = (src11 => '', src22 => '', src33 => '300-302,310');
my @sources;
for my $name (sort keys %shard_of)
{
	my $node = new_server($name, $shard_of{$name}, $shard_ids{$name});
	$node->start;
	$node->safe_psql(
		'postgres', qq{
		CREATE EXTENSION snowflake;
		$table_with_default
		CREATE PUBLICATION pub_events FOR TABLE events;
	});
	push @sources, $node;
}
is( join(',',
		map { $_->safe_psql('postgres',
				"SELECT current_setting('snowflake.max_clock_lead')::interval = interval '$lead_ms ms'") }
		  @sources),
	't,t,t',
	"every source runs with snowflake.max_clock_lead = $lead_ms ms");

my $agg = new_server('aggregator', 44, '');
# One apply worker per source (five in the end) plus table synchronisation
# workers.  No statement logging: the log is searched for apply errors.
$agg->append_conf(
	'postgresql.conf', q{
max_logical_replication_workers = 12
max_worker_processes = 20
log_statement = none
});
$agg->start;
$agg->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE events (
		id bigint PRIMARY KEY,
		origin text NOT NULL,
		created_at timestamptz NOT NULL,
		payload int);
});

for my $src (@sources)
{
	my ($name, $connstr) = ($src->name, connstr_of($src));
	$agg->safe_psql('postgres',
		"CREATE SUBSCRIPTION sub_$name CONNECTION '$connstr' PUBLICATION pub_events"
	);
}
$agg->wait_for_subscription_sync($_, 'sub_' . $_->name) for @sources;

is( $agg->safe_psql(
		'postgres',
		q{SELECT string_agg(subname, ',' ORDER BY subname)
		  FROM pg_stat_subscription WHERE pid IS NOT NULL AND relid IS NULL}),
	'sub_src11,sub_src22,sub_src33',
	'the aggregator runs one apply worker per source');

###########################################################################
# (b) The three sources generate at the same time.
###########################################################################

# One pgbench thread per run: pgbench adds up its per-script counts without
# a lock ("XXX could use a mutex here, but we choose not to"), so with several
# threads they can miss a transaction, and they are used to count rows below.
my ($clients, $jobs, $xacts, $batch) = (4, 1, 2500, 200);
my @runs;
for my $src (@sources)
{
	my $name = $src->name;
	my $single = $src->basedir . '/007_single.sql';
	my $multi  = $src->basedir . '/007_batch.sql';
	append_to_file($single,
		"INSERT INTO events (origin, payload) VALUES ('$name', :client_id);\n");
	append_to_file($multi,
		    "INSERT INTO events (id, origin, payload) "
		  . "SELECT id, '$name', 0 FROM snowflake_nextval_batch($batch) AS id;\n");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			$src->installed_command('pgbench'), '--no-vacuum',
			"--client=$clients", "--jobs=$jobs",
			"--transactions=$xacts", '-f',
			"$single\@19", '-f',
			"$multi\@1", '-h',
			$src->host, '-p',
			$src->port, 'postgres'
		],
		'>',
		\$out,
		'2>',
		\$err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @runs, { node => $src, h => $h, out => \$out, err => \$err };
}

my $total = $clients * $xacts;
for my $run (@runs)
{
	my $name = $run->{node}->name;
	my $ok   = eval { $run->{h}->finish; };
	ok($ok && $run->{h}->result == 0, "$name: pgbench exited successfully")
	  or diag("pgbench on $name: $@\n${$run->{out}}\n${$run->{err}}");
	like(
		${ $run->{out} },
		qr{number of transactions actually processed: $total/$total},
		"$name: pgbench ran every transaction");
	like(
		${ $run->{out} },
		qr{number of failed transactions: 0 \(0\.000%\)},
		"$name: pgbench reported zero failed transactions");
	is(${ $run->{err} }, '', "$name: pgbench wrote nothing to stderr");

	# Per-script counts: rows in the source = singles + batch size * batches.
	my @per_script = ${ $run->{out} } =~ /^ - (\d+) transactions/mg;
	is(scalar(@per_script), 2, "$name: pgbench reported both scripts")
	  or diag(${ $run->{out} });
	my ($n_single, $n_batch) = @per_script;
	ok($n_single > 0 && $n_batch > 0, "$name: both scripts ran");
	$run->{expected_rows} = $n_single + $batch * $n_batch;
	note("$name: $n_single single inserts, $n_batch batches");
	is($run->{node}->safe_psql('postgres', 'SELECT count(*) FROM events'),
		$run->{expected_rows}, "$name: one row per single insert, $batch per batch");
}

###########################################################################
# (c) The aggregator catches up; the collected rows are checked.
###########################################################################

my %rows_at;    # origin => row count at its source
for my $src (@sources)
{
	my $name = $src->name;
	$rows_at{$name} =
	  $src->safe_psql('postgres',
		"SELECT count(*) FROM events WHERE origin = '$name'");
	$src->wait_for_catchup("sub_$name");
	ok( $agg->poll_query_until(
			'postgres',
			"SELECT count(*) = $rows_at{$name} FROM events WHERE origin = '$name'"),
		"aggregator has every row of $name");
}
my $sum = 0;
$sum += $_ for values %rows_at;

# No apply error: neither in the statistics nor in the log.  PostgreSQL 19
# counts the errors of table and of sequence synchronisation apart
# (sync_table_error_count, sync_seq_error_count) where older versions have
# one sync_error_count; no error is both being 0.
my $sync_errors =
  $agg->safe_psql('postgres',
	q{SELECT current_setting('server_version_num')::int >= 190000}) eq 't'
  ? '(sync_table_error_count + sync_seq_error_count)'
  : 'sync_error_count';
is( $agg->safe_psql(
		'postgres',
		qq{SELECT string_agg(subname || ':' || apply_error_count || ':' || $sync_errors,
		                    ',' ORDER BY subname)
		  FROM pg_stat_subscription_stats}),
	'sub_src11:0:0,sub_src22:0:0,sub_src33:0:0',
	'no apply or sync error in any subscription');
my $log_before_rogue = -s $agg->logfile;
my @bad_lines = grep { /ERROR:|duplicate key|conflict/i }
  split /\n/, slurp_file($agg->logfile);
is(scalar(@bad_lines), 0,
	'no error, duplicate key or conflict in the aggregator log')
  or diag(join("\n", @bad_lines));

# No duplicate, nothing lost, nothing extra.
is( $agg->safe_psql('postgres',
		'SELECT count(*) = count(DISTINCT id), count(*) FROM events'),
	"t|$sum",
	'aggregator: every ID distinct, and as many rows as the sources together');
is( $agg->safe_psql(
		'postgres',
		q{SELECT string_agg(origin, ',' ORDER BY origin) FROM
		  (SELECT DISTINCT origin FROM events) o}),
	'src11,src22,src33',
	'aggregator: rows of all three sources');

# Each ID carries the shard of the server it came from.
my $mapping = join(', ', map { "('$_', $shard_of{$_})" } sort keys %shard_of);
is( $agg->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM events e
	LEFT JOIN (VALUES $mapping) AS m(origin, shard) USING (origin)
	WHERE m.shard IS NULL OR snowflake_shard_id(e.id) <> m.shard}),
	0,
	'every ID decodes to the shard of its origin');

# The sources really generated at the same time: their creation-time windows
# overlap, and so do their ID ranges (IDs of the three shards interleave).
is( $agg->safe_psql(
		'postgres', q{
	SELECT max(lo_t) < min(hi_t), max(lo_id) < min(hi_id) FROM (
		SELECT min(created_at) AS lo_t, max(created_at) AS hi_t,
		       min(id) AS lo_id, max(id) AS hi_id
		FROM events GROUP BY origin) s}),
	't|t',
	'the three sources generated concurrently; their IDs interleave');

# Sorted by ID, rows follow creation time across servers: nothing was created
# more than the clock lead (+ tolerance) before a row with a smaller ID.
my $order_sql = q{
	SELECT created_at,
	       max(created_at) OVER (ORDER BY id
	           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_max
	FROM events};
my $worst = $agg->safe_psql('postgres',
	"SELECT coalesce(max(before_max - created_at), '0') FROM ($order_sql) s");
note("largest step back in created_at along ID order: $worst");
is( $agg->safe_psql(
		'postgres',
		"SELECT count(*) FROM ($order_sql) s WHERE created_at < before_max - $slack"
	),
	0,
	'IDs in order of value are in order of creation to within the clock lead');

# The time carried by each ID is within the lead of its row's creation time.
is( $agg->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM events
	WHERE snowflake_timestamp(id) > created_at + $slack
	   OR snowflake_timestamp(id) < created_at - $slack}),
	0,
	'decoded ID times are within the clock lead of the creation times');

# The documented detection query finds no shared shard yet.
my $detect = q{
	SELECT snowflake_shard_id(id) AS shard, array_agg(DISTINCT origin) AS origins
	FROM events GROUP BY 1 HAVING count(DISTINCT origin) > 1};
is($agg->safe_psql('postgres', $detect),
	'', 'detection query: no shard shared by two origins');

# The cross-server check of the configuration: what each server claims
# (snowflake.shard_id and the logical shards of snowflake.shard_ids),
# expanded and grouped by shard on the aggregator.
sub shared_shards
{
	my @servers = @_;
	my @claims;
	for my $node (@servers)
	{
		my ($id, $list) = split /\|/,
		  $node->safe_psql('postgres',
			"SELECT shard_id, current_setting('snowflake.shard_ids') FROM snowflake_layout()"
		  ),
		  -1;
		push @claims, sprintf("('%s', %s, '%s')", $node->name,
			$id eq '' ? 'NULL' : $id, $list);
	}
	my $values = join(",\n\t\t", @claims);
	return $agg->safe_psql(
		'postgres', qq{
	WITH claims(server, shard_id, shard_ids) AS (VALUES
		$values),
	expanded AS (
		SELECT server, shard_id AS shard FROM claims WHERE shard_id IS NOT NULL
		UNION
		SELECT server, generate_series(split_part(r, '-', 1)::int,
		           coalesce(nullif(split_part(r, '-', 2), ''), split_part(r, '-', 1))::int)
		FROM claims,
		     unnest(string_to_array(nullif(replace(shard_ids, ' ', ''), ''), ',')) AS r)
	SELECT shard, string_agg(server, ',' ORDER BY server) FROM expanded
	GROUP BY shard HAVING count(*) > 1 ORDER BY shard});
}

is(shared_shards(@sources, $agg), '',
	'configuration check: the four servers claim disjoint shards');

###########################################################################
# (d) A fifth server, misconfigured with shard 22.
###########################################################################

my $rogue = new_server('rogue', 22, '');
$rogue->start;
$rogue->safe_psql(
	'postgres', qq{
	CREATE EXTENSION snowflake;
	$table_with_default
	CREATE PUBLICATION pub_events FOR TABLE events;
});
$agg->safe_psql('postgres',
	"CREATE SUBSCRIPTION sub_rogue CONNECTION '@{[connstr_of($rogue)]}' PUBLICATION pub_events"
);
$agg->wait_for_subscription_sync($rogue, 'sub_rogue');

# Several transactions, so that whatever an apply error might stop, rows of
# the first ones arrive.
$rogue->safe_psql('postgres',
	"INSERT INTO events (origin, payload) VALUES ('rogue', 1)");
$rogue->safe_psql('postgres',
	"INSERT INTO events (origin, payload) SELECT 'rogue', g FROM generate_series(1, 100) g"
);
$rogue->safe_psql('postgres',
	"INSERT INTO events (id, origin, payload) SELECT id, 'rogue', 0 FROM snowflake_nextval_batch($batch) AS id"
);
my $rogue_rows = $rogue->safe_psql('postgres', 'SELECT count(*) FROM events');
is( $rogue->safe_psql(
		'postgres', 'SELECT count(*) FROM events WHERE snowflake_shard_id(id) <> 22'),
	0,
	'rogue: its IDs carry shard 22, like those of src22');

# Every row arrives, unless an exact repeat of an ID stopped the apply worker
# (possible with a shared shard, not required): then what did arrive is used.
ok( $agg->poll_query_until(
		'postgres', qq{
	SELECT n = $rogue_rows OR (n > 0 AND errors > 0) FROM
	  (SELECT count(*) AS n FROM events WHERE origin = 'rogue') r,
	  (SELECT sum(apply_error_count) AS errors FROM pg_stat_subscription_stats) e}),
	'aggregator received the rogue server\'s rows');
note(
	'rogue rows at the aggregator: ',
	$agg->safe_psql(
		'postgres', "SELECT count(*) FROM events WHERE origin = 'rogue'"),
	" of $rogue_rows; apply errors since: ",
	$agg->safe_psql(
		'postgres', 'SELECT sum(apply_error_count) FROM pg_stat_subscription_stats'
	));

is($agg->safe_psql('postgres', $detect),
	'22|{rogue,src22}',
	'detection query: shard 22 is shared by src22 and rogue, and only it');

is(shared_shards(@sources, $agg, $rogue),
	'22|rogue,src22',
	'configuration check: src22 and rogue both claim shard 22, nothing else is shared');

$_->stop for ($agg, $rogue, @sources);

done_testing();
