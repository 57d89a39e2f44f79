# The layout is recorded before anything computed with it can be stored
# (issue 33, defect 3).
#
# A server that has issued no ID holds IDs from elsewhere (composed with
# snowflake_min_id(), which issues nothing), in a snowflake key with a partial
# index "id >= t", and in a bigint key with a partial index over
# snowflake_created_after(), an expression index over snowflake_timestamp(),
# a generated column and a CHECK over the decoders.  Then snowflake.epoch and
# snowflake.sequence_bits change and the server restarts.  Before the fix
# nothing was recorded (only the first ID recorded the layout): the server
# started silently, and the partial index answered 6 rows where a sequential
# scan, decoding with the new layout, answered otherwise.  Now:
#   (a) CREATE EXTENSION records the layout; the restart logs the WARNING of
#       a changed layout, naming both settings; no plan answers anything but
#       what the recorded layout answers: a computation with the new layout
#       (every sequential scan here) is refused, in a database copied from a
#       template too; restored, every plan agrees again;
#   (b) in a data directory whose record is absent (the extension created
#       before the record existed), the first call of a decoder records it,
#       even in a CREATE INDEX that rolls back; a standby made while it was
#       absent decodes but records nothing itself, and gets the primary's
#       record through WAL;
#   (c) a dump restored into a fresh server: the restore's CREATE EXTENSION
#       records that server's layout, which a restart with another refuses;
#   (d) the extension created at 1.2 (whose script records nothing) records
#       the layout when updated to 1.3.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $changed = "snowflake.epoch = '2023-01-01'\nsnowflake.sequence_bits = 14\n";
my $layout_differs =
  qr/the snowflake ID layout differs from the one this data directory generated with/;

# Writes the layout settings of a node's included file (empty: the defaults).
sub set_layout
{
	my ($node, $text) = @_;
	my $file = $node->data_dir . '/snowflake_layout.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $text;
	close $fh or die "could not close $file: $!";
	return;
}

# Restarts a node with the given layout settings; returns what it logged.
sub restart_with
{
	my ($node, $text) = @_;
	$node->stop;
	set_layout($node, $text);
	my $offset = -s $node->logfile;
	$node->start;
	return slurp_file($node->logfile, $offset);
}

my %plans = (
	index => 'SET enable_seqscan = off; SET enable_bitmapscan = off;',
	seq   => 'SET enable_indexscan = off; SET enable_indexonlyscan = off; '
	  . 'SET enable_bitmapscan = off;');

# The time filters of the test, each with the index it can use.
my %queries = (
	snowflake_partial => [
		q{SELECT count(*) FROM s WHERE id >= timestamptz '2025-07-01'}, 's_recent'
	],
	bigint_partial => [
		q{SELECT count(*) FROM b WHERE snowflake_created_after(id, '2025-07-01')},
		'b_recent'
	],
	expression => [
		q{SELECT count(*) FROM b WHERE snowflake_timestamp(id) >= '2025-07-01'}, 'b_time'
	],
	generated => [
		q{SELECT count(*) FROM b WHERE created IS DISTINCT FROM snowflake_timestamp(id)},
		undef
	]);

# A query's answer under a plan: "rows N", "refused" (the changed layout's
# error), or the error itself.
sub answer
{
	my ($node, $db, $plan, $sql) = @_;
	my ($rc, $out, $err) = $node->psql($db, "$plans{$plan} $sql",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return "rows $out" if $rc == 0;
	return 'refused' if $err =~ /ERROR:  55000: $layout_differs/;
	return "error: $err";
}

# The tables of IDs from elsewhere, their indexes, a generated column and a CHECK.
my $schema = q{
CREATE TABLE s (id snowflake PRIMARY KEY, n int);
INSERT INTO s SELECT snowflake_min_id(timestamptz '2025-01-15' + g * interval '1 month', 5) + g, g
FROM generate_series(0, 11) g;
CREATE INDEX s_recent ON s (id) WHERE id >= timestamptz '2025-07-01';
CREATE TABLE b (id bigint PRIMARY KEY, n int,
  created timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id)) STORED,
  CHECK (snowflake_shard_id(id) = 5));
INSERT INTO b (id, n) SELECT id, n FROM s;
CREATE INDEX b_recent ON b (id) WHERE snowflake_created_after(id, '2025-07-01');
CREATE INDEX b_time ON b (snowflake_timestamp(id));
ANALYZE s; ANALYZE b;
};

###########################################################################
# (a) Recorded at CREATE EXTENSION; a changed layout refused at start.
###########################################################################

my $node = node('main', allows_streaming => 1,
	conf => "snowflake.shard_id = 1\ninclude_if_exists = 'snowflake_layout.conf'\n",
	start => 1);
my $layout_file = $node->data_dir . '/pg_snowflake/layout';
ok(!-e $layout_file, 'a fresh data directory has no layout record');
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok(-f $layout_file, 'CREATE EXTENSION recorded the layout');
my $recorded = -f $layout_file ? slurp_file($layout_file) : '';

$node->safe_psql('postgres', $schema);
$node->safe_psql('postgres', 'CREATE DATABASE tmpl');
$node->safe_psql('tmpl', "CREATE EXTENSION snowflake; $schema");
$node->safe_psql('postgres', 'CREATE DATABASE copy TEMPLATE tmpl');
is($node->safe_psql('postgres', 'SELECT ids_issued FROM snowflake_stats()'),
	'', 'no ID was issued on this server');

my %want;
foreach my $q (sort keys %queries)
{
	my ($sql, $index) = @{ $queries{$q} };
	$want{$q} = answer($node, 'postgres', 'seq', $sql);
	like($want{$q}, qr/^rows \d+$/, "$q: answers under the recorded layout");
	is(answer($node, 'postgres', 'index', $sql),
		$want{$q}, "$q: the index plan answers as the sequential scan");
	next unless defined $index;
	like($node->safe_psql('postgres', "$plans{index} EXPLAIN $sql"),
		qr/\b$index\b/, "$q: the index plan uses $index");
	unlike($node->safe_psql('postgres', "$plans{seq} EXPLAIN $sql"),
		qr/\b$index\b/, "$q: the sequential plan does not");
}
is($want{snowflake_partial}, 'rows 6', 'six rows from July on');
is($want{generated}, 'rows 0', 'the generated column agrees with the decoder');

my $log = restart_with($node, $changed);
like($log, qr/WARNING:  $layout_differs/,
	'changed layout: the start logs the WARNING of a recorded layout');
like($log, qr/DETAIL:  snowflake\.epoch was 2024-01-01 00:00:00\.000\+00 and is now 2023-01-01 00:00:00\.000\+00; snowflake\.sequence_bits was 12 and is now 14\./,
	'changed layout: the WARNING names both settings, was and is');
like($log, qr/HINT:  snowflake_nextval\(\), the decoding functions and the time comparisons will refuse to run: restore the settings named and restart the server\. To change the layout deliberately, see "Changing the layout"/,
	'changed layout: the WARNING says what refuses and what to do');
foreach my $q (sort keys %queries)
{
	my ($sql) = @{ $queries{$q} };
	foreach my $plan (sort keys %plans)
	{
		my $got = answer($node, 'postgres', $plan, $sql);
		ok($got eq $want{$q} || $got eq 'refused',
			"changed layout, $q, $plan plan: the recorded layout's answer or a refusal")
		  or diag("got $got, the recorded layout answers $want{$q}");
	}
	is(answer($node, 'postgres', 'seq', $sql),
		'refused', "changed layout, $q: a computation with the new layout is refused");
}
is(answer($node, 'copy', 'seq', $queries{snowflake_partial}[0]),
	'refused', 'changed layout: refused in a database copied from a template too');
my $err = check_refused($node, "INSERT INTO b (id, n) VALUES (1, 99)",
	qr/ERROR:  55000: $layout_differs/,
	'changed layout: a row whose generated column needs a decoder');
like($err, qr/HINT:  Restore the previous settings and restart the server\./,
	'changed layout: the hint says what to do');
$node->safe_psql('postgres', 'CREATE DATABASE other');
my ($rc, $ce_out, $ce_err) = $node->psql('other', 'CREATE EXTENSION snowflake',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($ce_err, qr/ERROR:  55000: $layout_differs/,
	'changed layout: CREATE EXTENSION in another database is refused (a restore fails there)');
is(slurp_file($layout_file), $recorded, 'changed layout: the record is left alone');

restart_with($node, '');
foreach my $q (sort keys %queries)
{
	my ($sql) = @{ $queries{$q} };
	is(answer($node, 'postgres', $_, $sql), $want{$q},
		"restored layout, $q, $_ plan: the recorded layout's answer")
	  foreach sort keys %plans;
}

###########################################################################
# (b) A data directory whose record is absent: the first call records it.
###########################################################################

$node->stop;
unlink $layout_file or die "could not remove $layout_file: $!";
$node->start;
$node->backup('unrecorded');
my $standby = node('standby', standby => [ $node, 'unrecorded' ], start => 1);
is( $standby->safe_psql(
		'postgres', "$plans{seq} $queries{expression}[0]"),
	$want{expression} =~ s/^rows //r,
	'standby without a record: decodes with its settings');
ok(!-e $standby->data_dir . '/pg_snowflake/layout',
	'standby without a record: records nothing itself');
ok(!-e $layout_file, 'primary: nothing recorded before the first call');

# the first call: the bound of a partial index, in a CREATE INDEX rolled back
$node->safe_psql('postgres', q{BEGIN;
CREATE INDEX b_late ON b (id) WHERE snowflake_created_after(id, '2025-10-01');
ROLLBACK});
ok(-f $layout_file, 'the first call records the layout, though its transaction rolled back');
is(-f $layout_file ? slurp_file($layout_file) : '',
	$recorded, 'the same record as CREATE EXTENSION wrote');
$node->wait_for_catchup($standby);
is( -f $standby->data_dir . '/pg_snowflake/layout'
	? slurp_file($standby->data_dir . '/pg_snowflake/layout')
	: '',
	$recorded,
	'the standby replayed the primary\'s record from WAL');
$standby->stop;

$log = restart_with($node, $changed);
like($log, qr/WARNING:  $layout_differs/,
	'recorded by the first call: a changed layout is refused at start');
is(answer($node, 'postgres', 'seq', $queries{bigint_partial}[0]),
	'refused', 'recorded by the first call: the changed layout computes nothing');
restart_with($node, '');

###########################################################################
# (c) A dump restored into a fresh server records that server's layout.
###########################################################################

my $dump = $node->basedir . '/postgres.dump';
my ($out, $dump_err) = ('', '');
ok( IPC::Run::run(
		[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
		'>', \$out, '2>', \$dump_err),
	'pg_dump') or diag($dump_err);
$node->stop;

my $fresh = node('fresh',
	conf => "snowflake.shard_id = 2\ninclude_if_exists = 'snowflake_layout.conf'\n",
	start => 1);
ok(!-e $fresh->data_dir . '/pg_snowflake/layout', 'fresh server: no record yet');
ok( IPC::Run::run(
		[ 'pg_restore', '--exit-on-error', '-d', $fresh->connstr('postgres'), $dump ],
		'>', \$out, '2>', \$dump_err),
	'pg_restore into the fresh server') or diag($dump_err);
ok(-f $fresh->data_dir . '/pg_snowflake/layout', 'the restore recorded the layout');
is(answer($fresh, 'postgres', 'index', $queries{snowflake_partial}[0]),
	$want{snowflake_partial}, 'restored: the partial index answers as at the origin');
$log = restart_with($fresh, $changed);
like($log, qr/WARNING:  $layout_differs/,
	'restored, then a changed layout: refused at start');
is(answer($fresh, 'postgres', $_, $queries{snowflake_partial}[0]),
	'refused', "restored, then a changed layout: the $_ plan is refused")
  foreach sort keys %plans;
$fresh->stop;

###########################################################################
# (d) ALTER EXTENSION UPDATE records the layout.
###########################################################################

my $upd = node('update', conf => "snowflake.shard_id = 3\n", start => 1);
$upd->safe_psql('postgres', "CREATE EXTENSION snowflake VERSION '1.2'");
ok(!-e $upd->data_dir . '/pg_snowflake/layout', 'created at 1.2: no layout recorded');
$upd->safe_psql('postgres', 'ALTER EXTENSION snowflake UPDATE');
ok(-f $upd->data_dir . '/pg_snowflake/layout', 'the update to 1.3 recorded the layout');
is(slurp_file($upd->data_dir . '/pg_snowflake/layout'),
	$recorded, 'the same record as a fresh CREATE EXTENSION writes');
$upd->stop;

done_testing();
