# The SQL edition through pg_tle (managed/pg_tle.sql, issue 34), as on Amazon
# RDS, Aurora and Supabase: on a server that preloads pg_tle and never loads
# snowflake.so,
#  (a) the database owner, granted pgtle_admin, runs managed/pg_tle.sql, then
#      CREATE EXTENSION snowflake_sql CASCADE (pgcrypto comes with it) into a
#      schema of its own, and uses it: decoders, bounds, the text form, an
#      index range scan for snowflake_created_between, public IDs;
#  (b) running managed/pg_tle.sql again changes nothing and fails nothing;
#  (c) a next version built by managed/build.sh (a fake 1.3.1 with an update
#      script, made here) registers over the installed one, and ALTER
#      EXTENSION ... UPDATE takes the database to it along the update path;
#      what was there keeps working;
#  (d) a role without pgtle_admin cannot register extensions.
# Skipped, saying why, where pg_tle is not installed for this PostgreSQL (its
# source, ../shared/vendor/pg_tle-*.tar.gz, absent: scripts/lib.sh build_pg_tle).

use strict;
use warnings;

use File::Copy;
use IPC::Run;
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $root = "$FindBin::RealBin/../..";

my $node = node('tle', preload => 0, conf => "shared_preload_libraries = 'pg_tle'\n");
my $libdir = $node->config_data('--pkglibdir');
plan skip_all => "pg_tle is not installed for this PostgreSQL ($libdir/pg_tle.so is absent: "
  . "scripts/test.sh builds it from ../shared/vendor/pg_tle-*.tar.gz, which was absent or did not build)"
  unless -e "$libdir/pg_tle.so";
$node->start;

$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE ROLE other LOGIN;
	CREATE DATABASE appdb OWNER app;});
$node->safe_psql('appdb', q{
	CREATE EXTENSION pg_tle;
	GRANT pgtle_admin TO app;});
my $app = sub { $node->safe_psql('appdb', $_[0], extra_params => [ '-U', 'app' ]) };

# (a) register, create, use
$app->(slurp_file("$root/managed/pg_tle.sql"));
$app->('CREATE SCHEMA ids; CREATE EXTENSION snowflake_sql SCHEMA ids CASCADE');
$app->('SELECT count(*) FROM ids.snowflake_configure()');
is($app->(q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake_sql'}),
	'1.3', '(a) CREATE EXTENSION snowflake_sql installs version 1.3');
is($app->(q{SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
            WHERE e.extname = 'pgcrypto'}),
	'ids', '(a) CASCADE created pgcrypto, which it requires');
is($app->(q{SELECT count(*) > 20 FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
            WHERE e.extname = 'snowflake_sql' AND d.deptype = 'e'}),
	't', '(a) the functions are members of the extension');
like($app->(q{SELECT extconfig::regclass[]::text FROM pg_extension WHERE extname = 'snowflake_sql'}),
	qr/snowflake__public_id_keys/, '(a) pg_dump writes the public ID keys (an extension configuration table)');
is($node->safe_psql('appdb', q{SELECT count(*) FROM pg_settings WHERE name LIKE 'snowflake.%'}),
	'0', '(a) no snowflake.so: no snowflake.* setting exists');

$app->(q{
	CREATE TABLE t (id bigint PRIMARY KEY);
	INSERT INTO t SELECT ids.snowflake_min_id(now() - g * interval '1 minute', g % 1024) + g % 4096
	FROM generate_series(1, 20000) g;
	ANALYZE t;});
is($app->(q{SELECT count(*) FROM t WHERE ids.snowflake_timestamp(id) > now() - interval '1 day'
              AND ids.snowflake_timestamp(id) <= now()
              AND ids.snowflake_shard_id(id) BETWEEN 0 AND 1023
              AND ids.snowflake_from_text(ids.snowflake_to_text(id)) = id}),
	'1439', '(a) decoders and the text form answer');
like($app->(q{EXPLAIN (COSTS OFF) SELECT * FROM t
              WHERE ids.snowflake_created_between(id, now() - interval '2 hours', now() - interval '1 hour')}),
	qr/Index Only Scan using t_pkey.*Index Cond: \(\(id >= .* AND \(id < /s,
	'(a) snowflake_created_between on the key is an index range scan');
is($app->(q{SELECT count(*) FROM t
            WHERE ids.snowflake_created_between(id, now() - interval '2 hours', now() - interval '1 hour')}),
	$app->(q{SELECT count(*) FROM t WHERE ids.snowflake_timestamp(id) >= now() - interval '2 hours'
	          AND ids.snowflake_timestamp(id) < now() - interval '1 hour'}),
	'(a) ... and finds the rows the decoder does');
$app->("SELECT ids.snowflake_set_public_id_keys('1:00112233445566778899aabbccddeeff')");
is($app->(q{SELECT count(*) FROM t WHERE ids.snowflake_from_public_id(ids.snowflake_public_id(id, 't'), 't') <> id}),
	'0', '(a) public IDs go both ways');

# (b) registering again changes nothing
$app->(slurp_file("$root/managed/pg_tle.sql"));
is($app->(q{SELECT string_agg(version, ',' ORDER BY version) FROM pgtle.available_extension_versions()
            WHERE name = 'snowflake_sql'}),
	'1.3', '(b) running pg_tle.sql again registers nothing new');

# (c) a fake next version, built by the build with an update script
my $tmp = PostgreSQL::Test::Utils::tempdir();
make_path("$tmp/src", "$tmp/updates", "$tmp/out");
copy($_, "$tmp/src/") or die "copy $_: $!" for glob("$root/managed/src/*.sql");
my $next = q{
CREATE FUNCTION snowflake__test_next() RETURNS text LANGUAGE sql IMMUTABLE RETURN 'next';
};
open my $fh, '>', "$tmp/src/99_test_next.sql" or die $!;
print $fh $next;
close $fh;
open $fh, '>', "$tmp/updates/snowflake_sql--1.3--1.3.1.sql" or die $!;
print $fh $next;
close $fh;
command_ok([ 'bash', "$root/managed/build.sh", '--src', "$tmp/src", '--updates', "$tmp/updates",
		'--out', "$tmp/out", '--version', '1.3.1' ],
	'(c) the build makes a next version 1.3.1 with an update path');
$app->(slurp_file("$tmp/out/pg_tle.sql"));
is($app->(q{SELECT string_agg(version, ',' ORDER BY version) FROM pgtle.available_extension_versions()
            WHERE name = 'snowflake_sql'}),
	'1.3,1.3.1', '(c) both versions are registered');
is($app->(q{SELECT default_version FROM pgtle.available_extensions() WHERE name = 'snowflake_sql'}),
	'1.3.1', '(c) the new version is the default');
$app->('ALTER EXTENSION snowflake_sql UPDATE');
is($app->(q{SELECT extversion FROM pg_extension WHERE extname = 'snowflake_sql'}),
	'1.3.1', '(c) ALTER EXTENSION ... UPDATE reaches 1.3.1');
is($app->('SELECT ids.snowflake__test_next()'), 'next', '(c) the update script ran');
is($app->(q{SELECT count(*) FROM t WHERE ids.snowflake_from_public_id(ids.snowflake_public_id(id)) = id
              AND ids.snowflake_sequence(id) = id & 4095}),
	'20000', '(c) what was there keeps working after the update (keys included)');

# (d) no pgtle_admin, no registering
my ($rc, $out, $err) = $node->psql('appdb',
	q{SELECT pgtle.install_extension('x', '1', 'x', 'SELECT 1')}, extra_params => [ '-U', 'other' ]);
like($err, qr/permission denied/, '(d) a role without pgtle_admin cannot register an extension');

# (e) a restore decodes with the configured layout, never the default: under
# pg_tle, the restore's CREATE EXTENSION makes the decoders afresh, and the
# configuration row comes back with the data; the trigger on it regenerates
# them before the post-data section builds the expression index.
$node->safe_psql('postgres', 'CREATE DATABASE src OWNER app; CREATE DATABASE dst OWNER app');
for my $db ('src', 'dst')
{
	$node->safe_psql($db, 'CREATE EXTENSION pg_tle');
	$node->safe_psql($db, slurp_file("$root/managed/pg_tle.sql"));
}
($rc, $out, $err) = $node->psql('src', q{CREATE SCHEMA ids; CREATE EXTENSION snowflake_sql SCHEMA ids CASCADE;
	SELECT ids.snowflake_timestamp(1)}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000: the snowflake SQL edition is not configured/,
	'(e) before the first snowflake_configure, a decoder raises 55000');
$node->safe_psql('src', q{
	SELECT count(*) FROM ids.snowflake_configure(preset => 'javascript', shard_id => 5);
	CREATE TABLE u (id bigint PRIMARY KEY);
	INSERT INTO u SELECT ids.snowflake_min_id(now() - g * interval '1 minute', g % 64) + g % 256
	FROM generate_series(1, 5000) g;
	INSERT INTO u SELECT ids.snowflake_nextval() FROM generate_series(1, 1000);
	CREATE INDEX u_ts ON u (ids.snowflake_timestamp(id));
	ANALYZE u;});
my $decoded = q{SELECT md5(string_agg(id || ':' || ids.snowflake_timestamp(id) || ':' || ids.snowflake_shard_id(id), ',' ORDER BY id)) FROM u};
my $src_sum = $node->safe_psql('src', $decoded);
my $dump = "$tmp/src.dump";
command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', $dump ], '(e) pg_dump of the source');
# the destination has pg_tle and the registration already (as on a managed
# service): the restore leaves out pg_tle's own schema and extension
my ($list_out, $list_err);
IPC::Run::run([ 'pg_restore', '-l', $dump ], '>', \$list_out, '2>', \$list_err) or die "pg_restore -l: $list_err";
my @entries = grep { !/ SCHEMA - pgtle | EXTENSION - pg_tle | EXTENSION pg_tle | pgtle / } split /\n/, $list_out;
open my $lfh, '>', "$tmp/restore.list" or die $!;
print $lfh join("\n", @entries), "\n";
close $lfh;
command_ok([ 'pg_restore', '--exit-on-error', '-L', "$tmp/restore.list", '-d', $node->connstr('dst'), $dump ],
	'(e) pg_restore into a fresh database with pg_tle');
is($node->safe_psql('dst', 'SELECT id_bits || \'/\' || time_unit_ms FROM ids.snowflake_layout()'), '53/10',
	'(e) the restored database decodes with the configured layout');
my $by_index = $node->safe_psql('dst', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM u WHERE ids.snowflake_timestamp(id) >= now() - interval '1 hour'});
like($node->safe_psql('dst', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	EXPLAIN (COSTS OFF) SELECT count(*) FROM u WHERE ids.snowflake_timestamp(id) >= now() - interval '1 hour'}),
	qr/Index (Only )?Scan using u_ts/, '(e) the expression index is used');
is($by_index, $node->safe_psql('dst', q{SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) FROM u WHERE ids.snowflake_timestamp(id) >= now() - interval '1 hour'}),
	'(e) the index scan and the sequential scan agree');
cmp_ok($by_index, '>=', 1000, '(e) ... and find the last hour\'s rows');
is($node->safe_psql('dst', $decoded), $src_sum, '(e) every ID decodes as in the source');

$node->stop;
done_testing();
