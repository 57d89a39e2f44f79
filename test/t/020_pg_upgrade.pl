# pg_upgrade and the generator's floor (issue 11, defect 1).
#
# pg_upgrade carries relation files, not pg_snowflake/.  The old cluster here
# generates with its clock 60 s ahead (libfaketime in its postmaster), so its
# IDs are ahead of the new cluster's real clock.  Then, with a real pg_upgrade
# (same major version, both modes):
#  (a) copy mode: the new cluster refuses to generate in the upgraded
#      database, naming the problem and the fix; after pg_snowflake/ is copied
#      from the old data directory, it generates strictly above every old ID;
#  (b) link mode, with the old state treated as lost: the refusal again, then
#      snowflake_adopt_database() resumes above the database's largest ID;
#  (c) a database created on the new cluster itself is never refused;
#  (d) a table keyed by the snowflake type (issue 28) comes through both modes
#      intact: the same rows, a consistent index, its time comparisons, and
#      new IDs above its old ones.
# Without the guard, the new cluster's first IDs are below the old maximum.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

# A lead of 90 s lets the new cluster continue above the old IDs at once
# instead of waiting a minute for its clock to catch up with them.
my $conf = "snowflake.shard_id = 4\nsnowflake.max_clock_lead = '90s'\n";

my $old = node('old', conf => $conf, clock_ms => 60_000, start => 1);
$old->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
	INSERT INTO t (n) SELECT g FROM generate_series(1, 20000) g;
	CREATE TABLE s (id snowflake PRIMARY KEY DEFAULT snowflake_nextval(), n int);
	CREATE INDEX s_brin ON s USING brin (id);
	INSERT INTO s (n) SELECT g FROM generate_series(1, 5000) g;});
my $old_max = $old->safe_psql('postgres', 'SELECT max(id) FROM t');
my $s_sql = q{SELECT count(*) || ' rows, ' || md5(string_agg(id || ':' || n, ',' ORDER BY id)) FROM s};
my $s_rows = $old->safe_psql('postgres', $s_sql);
my $s_max = $old->safe_psql('postgres', 'SELECT max(id) FROM s');
# the test's own clock is the real one (the old server's backends are faked)
cmp_ok(
	$old->safe_psql('postgres',
		'SELECT extract(epoch FROM snowflake_timestamp(max(id))) FROM t'),
	'>', time + 30,
	'old cluster: its IDs run ahead of the real clock');
$old->stop;

my $bindir = $old->config_data('--bindir');

# Upgrades "old" into a new cluster with pg_upgrade in the given mode.
sub upgrade
{
	my ($name, $mode) = @_;
	my $new = node($name, conf => $conf);
	chdir ${PostgreSQL::Test::Utils::tmp_check};
	command_ok(
		[
			'pg_upgrade', '--no-sync',
			'-d', $old->data_dir,
			'-D', $new->data_dir,
			'-b', $bindir,
			'-B', $bindir,
			'-s', $new->host,
			'-p', $old->port,
			'-P', $new->port,
			$mode eq 'copy' ? () : ("--$mode")
		],
		"pg_upgrade ($mode mode)");
	ok(!-e $new->data_dir . '/pg_snowflake/mark',
		"pg_upgrade ($mode mode): the new data directory has no durable mark");
	return $new;
}

# The refusal on an upgraded database, with its SQLSTATE, message and hint.
sub check_refusal
{
	my ($new, $what) = @_;
	my ($rc, $out, $err) = $new->psql('postgres', 'INSERT INTO t (n) VALUES (0)',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "$what: generation in the upgraded database is refused");
	like($err,
		qr/ERROR:  55000: database "postgres" comes from another cluster, whose snowflake state is not here/,
		"$what: the error says the database comes from another cluster");
	like($err, qr/HINT:  After pg_upgrade: stop this server, copy pg_snowflake\/ from the old data directory/,
		"$what: the hint says what to do");
	is($new->safe_psql('postgres', 'SELECT count(*) FROM t'),
		'20000', "$what: nothing was inserted");
	return;
}

# New IDs: all above the old maximum, and no duplicate.
sub check_above
{
	my ($new, $what) = @_;
	$new->safe_psql('postgres',
		'INSERT INTO t (n) SELECT 100000 + g FROM generate_series(1, 5000) g');
	is( $new->safe_psql(
			'postgres',
			"SELECT count(*) FILTER (WHERE id <= $old_max), count(*) FROM t WHERE n > 100000"),
		'0|5000',
		"$what: every new ID is above every old one");
	is($new->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM t'),
		'0', "$what: no duplicate");
	$new->safe_psql('postgres', 'INSERT INTO s (n) SELECT 100000 + g FROM generate_series(1, 1000) g');
	is($new->safe_psql('postgres',
			"SELECT count(*) FILTER (WHERE id <= $s_max), count(*) FROM s WHERE n > 100000"),
		'0|1000', "$what: every new ID of the snowflake-typed key is above every old one");
	return;
}

# The table keyed by the snowflake type: the same rows, a consistent index
# (amcheck), the time comparisons and JSON strings.
sub check_typed
{
	my ($new, $what) = @_;
	is($new->safe_psql('postgres', $s_sql), $s_rows, "$what: the snowflake-typed table has the same rows");
	$new->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS amcheck');
	my ($rc, $out, $err) = $new->psql('postgres', q{SELECT bt_index_check('s_pkey', true)});
	is($rc, 0, "$what: its primary key is consistent with the table (amcheck)") or diag($err);
	is($new->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT (SELECT count(*) FROM s WHERE id >= timestamptz '2024-01-01')
		     = (SELECT count(*) FROM s WHERE snowflake_timestamp(id) >= '2024-01-01')
		   AND (SELECT count(*) FROM s WHERE id < now() - interval '1 hour') = 0
		   AND (SELECT json_typeof(to_json(max(id))) FROM s) = 'string'}),
		't', "$what: its time comparisons (through the index) and JSON strings work");
	return;
}

# (a) copy mode, then pg_snowflake/ copied from the old data directory
my $copied = upgrade('copied', 'copy');
$copied->start;
check_refusal($copied, 'copy mode');
check_typed($copied, 'copy mode');

# (c) a database made on the new cluster itself generates at once
$copied->safe_psql('postgres', 'CREATE DATABASE fresh');
is( $copied->safe_psql(
		'fresh', 'CREATE EXTENSION snowflake; SELECT snowflake_nextval() > 0'),
	't',
	'a database created on the new cluster is not refused');

$copied->stop;
system('cp', '-a', $old->data_dir . '/pg_snowflake', $copied->data_dir . '/') == 0
  or die 'could not copy pg_snowflake/';
$copied->start;
like(slurp_file($copied->data_dir . '/pg_snowflake/lineage'),
	qr/system_identifier \d+\nsystem_identifier \d+\n/,
	'copied state: the lineage now names both clusters');
check_above($copied, 'copied state');
$copied->stop;

# (b) link mode; the old state is lost: adopt the database instead
my $linked = upgrade('linked', 'link');
$linked->start;
check_refusal($linked, 'link mode');
check_typed($linked, 'link mode');
my ($rc, $out, $err) = $linked->psql('postgres', 'SELECT snowflake_adopt_database() IS NOT NULL');
is($out, 't', 'adopt: snowflake_adopt_database() finds a floor');
like($err, qr/NOTICE:  snowflake: checked 2 column\(s\); this server now generates above /,
	'adopt: it reports what it checked');
check_above($linked, 'adopted');

# only superusers may adopt or raise the floor
$linked->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
($rc, $out, $err) = $linked->psql('postgres', 'SELECT snowflake_adopt_database()',
	extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for function snowflake_adopt_database/,
	'adopt: refused to a non-superuser');
$linked->stop;

done_testing();
