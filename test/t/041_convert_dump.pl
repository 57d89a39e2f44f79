# snowflake_convert_column() with real tools: converted tables survive
# pg_dump/pg_restore into another server, and a (simulated) Citus
# distribution column is refused.
#
#  (a) server "origin" (shard 1): a bigserial table, an identity table
#      (ALWAYS), a table fed by an explicit DEFAULT nextval() of a sequence it
#      does not own, a partitioned bigserial table and a logical-shard
#      conversion; rows before and after the conversion;
#  (b) pg_dump -Fc of the database, pg_restore into a fresh database on
#      server "copy" (shard 2): pg_restore succeeds without errors, every row
#      is there, every converted column defaults to snowflake_nextval() with
#      no identity and no sequence of its own left, and new rows on the copy
#      carry shard 2 and sort above every restored ID;
#  (c) the same dump as plain SQL through psql (ON_ERROR_STOP) works too;
#  (d) a table registered as distributed in a pg_catalog.pg_dist_partition
#      made to look like Citus's (Citus is not in Debian) is refused for its
#      distribution column with SQLSTATE 0A000, and nothing changes.
#
# No raw ID or time is compared with a constant: only counts, relations,
# decoded fields and SQLSTATEs.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

sub new_server
{
	my ($name, $shard) = @_;
	return node(
		$name, start => 1, conf => qq{
snowflake.shard_id = $shard
snowflake.shard_ids = '100'
});
}

my $origin = new_server('origin', 1);
my $copy   = new_server('copy',   2);

###########################################################################
# (a) convert every kind of column on the origin
###########################################################################

$origin->safe_psql('postgres', 'CREATE DATABASE app');
$origin->safe_psql(
	'app', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t_serial (id bigserial PRIMARY KEY, v text);
	CREATE TABLE t_ident (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
	CREATE SEQUENCE order_numbers;
	CREATE TABLE t_explicit (id bigint PRIMARY KEY DEFAULT nextval('order_numbers'), v text);
	CREATE TABLE t_part (id bigserial, region int NOT NULL, PRIMARY KEY (id, region))
		PARTITION BY LIST (region);
	CREATE TABLE t_part_1 PARTITION OF t_part FOR VALUES IN (1);
	CREATE TABLE t_part_2 PARTITION OF t_part FOR VALUES IN (2);
	CREATE TABLE t_logical (id bigserial PRIMARY KEY, v text);
	INSERT INTO t_serial (v) SELECT 'old' FROM generate_series(1, 100);
	INSERT INTO t_ident (v) SELECT 'old' FROM generate_series(1, 100);
	INSERT INTO t_explicit (v) SELECT 'old' FROM generate_series(1, 100);
	INSERT INTO t_part (region) SELECT 1 + g % 2 FROM generate_series(1, 100) g;
	INSERT INTO t_logical (v) SELECT 'old' FROM generate_series(1, 100);
});

my ($ret, $out, $err) = $origin->psql(
	'app', q{
	BEGIN;
	SELECT snowflake_convert_column('t_serial', 'id');
	SELECT snowflake_convert_column('t_ident', 'id');
	SELECT snowflake_convert_column('t_explicit', 'id');
	SELECT snowflake_convert_column('t_part', 'id');
	SELECT snowflake_convert_column('t_logical', 'id', 100);
	COMMIT;
});
is($ret, 0, 'origin: five conversions in one transaction');
is(scalar(() = $err =~ /NOTICE:  column "id" of public\.\w+ now defaults to/g),
	5, 'origin: one NOTICE per conversion');

$origin->safe_psql(
	'app', q{
	INSERT INTO t_serial (v) SELECT 'new' FROM generate_series(1, 50);
	INSERT INTO t_ident (v) SELECT 'new' FROM generate_series(1, 50);
	INSERT INTO t_explicit (v) SELECT 'new' FROM generate_series(1, 50);
	INSERT INTO t_part (region) SELECT 1 + g % 2 FROM generate_series(1, 50) g;
	INSERT INTO t_logical (v) SELECT 'new' FROM generate_series(1, 50);
});

# Every table: 150 rows, 50 of them snowflake IDs of the expected shard, all
# above the 100 old ones.
my $summary = q{
	SELECT string_agg(format('%s:%s:%s:%s', t, n, new_ok, above), ' ' ORDER BY t)
	FROM (
		SELECT 't_serial' AS t, count(*) AS n,
		       count(*) FILTER (WHERE id > 100 AND snowflake_shard_id(id) = %SHARD%) AS new_ok,
		       min(id) FILTER (WHERE id > 100) > max(id) FILTER (WHERE id <= 100) AS above
		FROM t_serial
		UNION ALL
		SELECT 't_ident', count(*),
		       count(*) FILTER (WHERE id > 100 AND snowflake_shard_id(id) = %SHARD%),
		       min(id) FILTER (WHERE id > 100) > max(id) FILTER (WHERE id <= 100) FROM t_ident
		UNION ALL
		SELECT 't_explicit', count(*),
		       count(*) FILTER (WHERE id > 100 AND snowflake_shard_id(id) = %SHARD%),
		       min(id) FILTER (WHERE id > 100) > max(id) FILTER (WHERE id <= 100) FROM t_explicit
		UNION ALL
		SELECT 't_part', count(*),
		       count(*) FILTER (WHERE id > 100 AND snowflake_shard_id(id) = %SHARD%),
		       min(id) FILTER (WHERE id > 100) > max(id) FILTER (WHERE id <= 100) FROM t_part
		UNION ALL
		SELECT 't_logical', count(*),
		       count(*) FILTER (WHERE id > 100 AND snowflake_shard_id(id) = 100),
		       min(id) FILTER (WHERE id > 100) > max(id) FILTER (WHERE id <= 100) FROM t_logical) s};
(my $origin_summary = $summary) =~ s/%SHARD%/1/g;
is( $origin->safe_psql('app', $origin_summary),
	't_explicit:150:50:t t_ident:150:50:t t_logical:150:50:t t_part:150:50:t t_serial:150:50:t',
	'origin: old rows kept, new rows carry snowflake IDs of the right shard');

# How each converted column is fed, on any server: default, identity, and
# sequences left (owned by any table, or the kept order_numbers).
my $feed = q{
	SELECT string_agg(format('%s=%s/%s', c.relname, pg_get_expr(d.adbin, d.adrelid),
	                         coalesce(nullif(a.attidentity, ''), '-')), ' ' ORDER BY c.relname)
	FROM pg_class c
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'id'
	LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
	WHERE c.relname IN ('t_serial', 't_ident', 't_explicit', 't_part', 't_part_1', 't_part_2', 't_logical')};
my $feed_expected =
  't_explicit=snowflake_nextval()/- t_ident=snowflake_nextval()/- '
  . 't_logical=snowflake_nextval(100)/- t_part=snowflake_nextval()/- '
  . 't_part_1=snowflake_nextval()/- t_part_2=snowflake_nextval()/- '
  . 't_serial=snowflake_nextval()/-';
my $sequences = q{SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relkind = 'S'};
is($origin->safe_psql('app', $feed), $feed_expected,
	'origin: every converted column defaults to snowflake_nextval(), no identity left');
is($origin->safe_psql('app', $sequences), 'order_numbers',
	'origin: owned sequences dropped, the shared standalone one kept');

###########################################################################
# (b) pg_dump -Fc and pg_restore into another server
###########################################################################

my $dump = $origin->basedir . '/app.dump';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $origin->connstr('app') ],
	'pg_dump -Fc of the converted database');
$copy->safe_psql('postgres', 'CREATE DATABASE app');
($ret, $out, $err) = (0, '', '');
my $restore_ok = IPC::Run::run(
	[ 'pg_restore', '--exit-on-error', '-d', $copy->connstr('app'), $dump ],
	'>', \$out, '2>', \$err);
ok($restore_ok, 'pg_restore into a fresh database on another server succeeds');
is($err, '', 'pg_restore reports no error or warning');

(my $copy_summary = $summary) =~ s/%SHARD%/1/g;
is( $copy->safe_psql('app', $copy_summary),
	't_explicit:150:50:t t_ident:150:50:t t_logical:150:50:t t_part:150:50:t t_serial:150:50:t',
	'copy: every row restored with its ID');
is($copy->safe_psql('app', $feed), $feed_expected,
	'copy: the restored columns default to snowflake_nextval(), no identity');
is($copy->safe_psql('app', $sequences), 'order_numbers', 'copy: no sequence came back');

# New rows on the copy: shard 2 (its own), above every restored ID.
$copy->safe_psql(
	'app', q{
	INSERT INTO t_serial (v) VALUES ('copy');
	INSERT INTO t_ident (v) VALUES ('copy');
	INSERT INTO t_part (region) VALUES (2);
});
is( $copy->safe_psql(
		'app', q{
	SELECT (SELECT snowflake_shard_id(id) FROM t_serial WHERE v = 'copy') || ',' ||
	       (SELECT snowflake_shard_id(id) FROM t_ident WHERE v = 'copy') || ',' ||
	       ((SELECT id FROM t_serial WHERE v = 'copy') = (SELECT max(id) FROM t_serial)) || ',' ||
	       ((SELECT max(id) FROM t_part) > (SELECT max(id) FROM t_serial WHERE v = 'new'))}),
	'2,2,true,true',
	'copy: new rows carry the copy\'s shard and sort above the restored IDs');

###########################################################################
# (c) plain SQL dump through psql
###########################################################################

my $sql = $origin->basedir . '/app.sql';
command_ok([ 'pg_dump', '-f', $sql, '-d', $origin->connstr('app') ],
	'pg_dump as plain SQL');
$copy->safe_psql('postgres', 'CREATE DATABASE app_sql');
command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $sql, '-d', $copy->connstr('app_sql') ],
	'the plain dump loads with ON_ERROR_STOP');
is($copy->safe_psql('app_sql', $feed), $feed_expected,
	'plain dump: the columns default to snowflake_nextval()');

###########################################################################
# (d) a Citus distribution column is refused
###########################################################################

# pg_dist_partition as Citus 13 defines the columns we read: the distributed
# table, its method and its distribution column as a serialized Var node.
$origin->safe_psql(
	'app', q{
	SET allow_system_table_mods = on;
	CREATE TABLE pg_catalog.pg_dist_partition (
		logicalrelid regclass, partmethod "char", partkey text);
	CREATE TABLE t_dist (tenant int NOT NULL, id bigserial, PRIMARY KEY (tenant, id));
	CREATE TABLE t_dist_by_tenant (tenant bigserial, id bigserial, PRIMARY KEY (tenant, id));
	INSERT INTO pg_catalog.pg_dist_partition VALUES
		('t_dist', 'h', '{VAR :varno 1 :varattno 2 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varnosyn 1 :varattnosyn 2 :location -1}'),
		('t_dist_by_tenant', 'h', '{VAR :varno 1 :varattno 1 :vartype 20 :vartypmod -1 :varcollid 0 :varnullingrels (b) :varlevelsup 0 :varnosyn 1 :varattnosyn 1 :location -1}');
});
($ret, $out, $err) = $origin->psql(
	'app', q{
	\set VERBOSITY verbose
	SELECT snowflake_convert_column('t_dist', 'id')});
like($err, qr/ERROR:  0A000: cannot convert the distribution column "id" of public\.t_dist/,
	'citus: the distribution column is refused with SQLSTATE 0A000');
like($err, qr/HINT:  Create a new table with DEFAULT snowflake_nextval\(\) in CREATE TABLE/,
	'citus: the hint says to create the table with the default');
is( $origin->safe_psql(
		'app', q{SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
		 WHERE adrelid = 't_dist'::regclass AND adnum = 2}),
	q{nextval('t_dist_id_seq'::regclass)},
	'citus: the refused column is unchanged');
($ret, $out, $err) = $origin->psql('app',
	q{SELECT snowflake_convert_column('t_dist_by_tenant', 'id')});
is($ret, 0, 'citus: a column that is not the distribution key converts');
$origin->safe_psql(
	'app', q{
	SET allow_system_table_mods = on;
	DROP TABLE pg_catalog.pg_dist_partition;
});

$origin->stop;
$copy->stop;
done_testing();
