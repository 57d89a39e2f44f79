# The extension is trusted (snowflake.control): a role that owns its
# database, and is not a superuser, can create it there, and gains nothing
# beyond what every role has in a database where a superuser created it.
# docs/clients.md, "Who may create the extension: trusted", gives the
# argument; this test checks each of its steps on a running server:
#
# - the owner creates it; every member belongs to the bootstrap superuser;
# - a role without CREATE on the database cannot create it;
# - the owner cannot call, grant, take over, make SECURITY DEFINER, detach
#   or move what is revoked from PUBLIC (the logical-shard generators,
#   snowflake_raise_floor, snowflake_adopt_database, snowflake_stats_reset,
#   snowflake_registry), nor write snowflake_origin;
# - version 1.0 (logical shards open to PUBLIC) stays superuser-only;
# - a temporary table named like a member does not capture the install
#   script's statements, and a function planted under a member's name in the
#   target schema makes the install fail instead of being adopted.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $node = node(
	'trusted', start => 1, conf => qq{
snowflake.shard_id = 3
snowflake.shard_ids = '10-12'
});
$node->safe_psql('postgres', q{
CREATE ROLE owner LOGIN;
CREATE ROLE visitor LOGIN;
CREATE DATABASE owned OWNER owner;
CREATE DATABASE other OWNER owner;
CREATE DATABASE planted OWNER owner;
});

# Runs SQL as a role; returns (exit code, stdout, stderr).
sub as
{
	my ($role, $db, $sql) = @_;
	my ($out, $err);
	my $ret = $node->psql($db, $sql, stdout => \$out, stderr => \$err,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

# Checks that SQL run as a role fails with an SQLSTATE and a message.
sub refused
{
	my ($role, $db, $sql, $sqlstate, $message, $what) = @_;
	my ($ret, $out, $err) = as($role, $db, $sql);
	ok($ret != 0 && $err =~ /ERROR:  $sqlstate: / && $err =~ $message, $what)
	  or diag("exit $ret\n$err");
	return;
}

# a role without CREATE on the database
refused('visitor', 'owned', 'CREATE EXTENSION snowflake', '42501',
	qr/permission denied to create extension "snowflake"/,
	'a role without CREATE on the database cannot create the extension');

# the owner, not a superuser, creates it
my ($ret, $out, $err) = as('owner', 'owned', 'CREATE EXTENSION snowflake');
is($ret, 0, 'the owner of a database, not a superuser, creates the extension') or diag($err);
my ($default_version) = slurp_file("$FindBin::RealBin/../../snowflake.control") =~ /^default_version = '([^']+)'/m;
is( $node->safe_psql('owned', q{
		SELECT e.extowner::regrole || ',' || e.extversion FROM pg_extension e WHERE extname = 'snowflake'}),
	"owner,$default_version", "the extension ($default_version) belongs to the role that created it");
is( $node->safe_psql('owned', q{
		SELECT count(*) FILTER (WHERE owner <> 10), count(*) > 25 FROM (
		    SELECT p.proowner AS owner FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
		    WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
		    UNION ALL
		    SELECT c.relowner FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
		    WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass) m}),
	'0|t', 'every one of its functions, views and tables belongs to the bootstrap superuser');
is( $node->safe_psql('owned', 'SELECT count(*) FROM snowflake_origin'),
	'1', 'the install recorded this cluster in snowflake_origin');

# what every role has: generation for the server's own shard, decoding
($ret, $out, $err) = as('owner', 'owned', q{
	SELECT snowflake_shard_id(snowflake_nextval()), count(*) FROM snowflake_nextval_batch(10)});
is($out, '3|10', 'the owner draws IDs of the server\'s shard, singly and in batches') or diag($err);
($ret, $out, $err) = as('visitor', 'owned', 'SELECT snowflake_shard_id(snowflake_nextval())');
is($out, '3', 'so does any other role, as in a database where a superuser created it');

# what stays closed
my @closed = (
	[ 'SELECT snowflake_nextval(10)',                 'snowflake_nextval' ],
	[ 'SELECT count(*) FROM snowflake_nextval_batch(5, 10)', 'snowflake_nextval_batch' ],
	[ q{SELECT snowflake_raise_floor(now() + interval '1 day')}, 'snowflake_raise_floor' ],
	[ 'SELECT snowflake_adopt_database()',            'snowflake_adopt_database' ],
	[ 'SELECT snowflake_stats_reset()',               'snowflake_stats_reset' ],
	[ 'SELECT * FROM snowflake_registry()',           'snowflake_registry' ]);
for my $c (@closed)
{
	refused('owner', 'owned', $c->[0], '42501', qr/permission denied for function $c->[1]/,
		"the owner cannot call $c->[1]: $c->[0]");
}
refused('owner', 'owned', 'SELECT * FROM snowflake_registry', '42501',
	qr/permission denied for view snowflake_registry/, 'nor read the snowflake_registry view');
refused('owner', 'owned', 'DELETE FROM snowflake_origin', '42501',
	qr/permission denied for table snowflake_origin/, 'nor change snowflake_origin');

my %signature = (
	snowflake_nextval        => 'snowflake_nextval(integer)',
	snowflake_nextval_batch  => 'snowflake_nextval_batch(integer, integer)',
	snowflake_raise_floor    => 'snowflake_raise_floor(timestamptz, boolean)',
	snowflake_adopt_database => 'snowflake_adopt_database(timestamptz, boolean)',
	snowflake_stats_reset    => 'snowflake_stats_reset()',
	snowflake_registry       => 'snowflake_registry()');
for my $f (sort keys %signature)
{
	my $sig = $signature{$f};
	refused('owner', 'owned', "GRANT EXECUTE ON FUNCTION $sig TO owner", '42501',
		qr/permission denied for function $f/, "the owner cannot grant $sig");
}
refused('owner', 'owned', 'ALTER FUNCTION snowflake_raise_floor(timestamptz, boolean) OWNER TO owner',
	'42501', qr/must be owner of function snowflake_raise_floor/,
	'nor take it over (ALTER FUNCTION ... OWNER)');
refused('owner', 'owned', 'ALTER FUNCTION snowflake_adopt_database(timestamptz, boolean) SECURITY DEFINER',
	'42501', qr/must be owner of function snowflake_adopt_database/,
	'nor make a member SECURITY DEFINER');
refused('owner', 'owned', 'ALTER EXTENSION snowflake DROP FUNCTION snowflake_raise_floor(timestamptz, boolean)',
	'42501', qr/must be owner of function snowflake_raise_floor/,
	'nor detach a member from the extension');
refused('owner', 'owned', 'CREATE SCHEMA mine; ALTER EXTENSION snowflake SET SCHEMA mine',
	'42501', qr/must be owner of function/, 'nor move the extension to a schema of its own');
is( $node->safe_psql('owned', q{
		SELECT count(*) FROM pg_proc
		WHERE proname IN ('snowflake_nextval', 'snowflake_nextval_batch', 'snowflake_raise_floor',
		                  'snowflake_adopt_database', 'snowflake_stats_reset', 'snowflake_registry')
		  AND (has_function_privilege('owner', oid, 'EXECUTE') OR prosecdef)}),
	'2', 'afterwards the owner still executes only snowflake_nextval() and snowflake_nextval_batch(count)');

# version 1.0 (logical shards open to PUBLIC) stays superuser-only
refused('owner', 'other', q{CREATE EXTENSION snowflake VERSION '1.0'}, '42501',
	qr/permission denied to create extension "snowflake".*\n.*HINT:  Must be superuser/,
	'the owner cannot install version 1.0 (extension/snowflake--1.0.control: not trusted)');

# a temporary table named like a member does not capture the install script
($ret, $out, $err) = as('owner', 'other', q{
CREATE TEMP TABLE snowflake_origin (system_identifier bigint, recorded_at timestamptz);
CREATE EXTENSION snowflake;
SELECT (SELECT count(*) FROM pg_temp.snowflake_origin) || ',' ||
       (SELECT count(*) FROM public.snowflake_origin) || ',' ||
       has_table_privilege('visitor', 'public.snowflake_origin', 'SELECT');
});
is($out, '0,1,true', 'a temporary table named snowflake_origin captures neither the INSERT nor the GRANT of the install')
  or diag($err);

# a function planted under a member's name makes the install fail
($ret, $out, $err) = as('owner', 'planted', q{
CREATE SCHEMA trap;
CREATE FUNCTION trap.snowflake_stats_reset() RETURNS void LANGUAGE sql AS 'SELECT';
CREATE EXTENSION snowflake SCHEMA trap;
});
ok($ret != 0 && $err =~ /function "snowflake_stats_reset" already exists/,
	'a function planted in the target schema makes CREATE EXTENSION fail, not adopt it')
  or diag($err);
is($node->safe_psql('planted', q{SELECT count(*) FROM pg_extension WHERE extname = 'snowflake'}),
	'0', 'and nothing was installed');

# what the scripts may not contain, in every script we ship: SECURITY
# DEFINER (code that runs later with the superuser's rights); CREATE OR
# REPLACE in an install script (it would take over an object planted under
# one of our names), and in an upgrade script only for objects the version it
# upgrades from already has as members (PostgreSQL 15 and later refuse CREATE
# OR REPLACE of an object that is not a member of the extension, so a planted
# one is never taken over); and every PL/pgSQL member fixes its
# search_path
my @scripts = (glob("$FindBin::RealBin/../../extension/snowflake--*.sql"), "$FindBin::RealBin/../../extension/snowflake.sql");
ok(scalar(@scripts) >= 3, 'the scripts are found (' . scalar(@scripts) . ')');
my @bad;
for my $f (@scripts)
{
	my $text = slurp_file($f);
	$text =~ s/--[^\n]*//g;    # comments may name them
	push @bad, "$f: SECURITY DEFINER" if $text =~ /SECURITY\s+DEFINER/i;
	my ($from) = $f =~ m{snowflake--([0-9.]+)--[0-9.]+\.sql$};
	my $previous = defined $from ? slurp_file("$FindBin::RealBin/../../extension/snowflake--$from.sql") : undef;
	while ($text =~ /CREATE\s+OR\s+REPLACE\s+(FUNCTION|VIEW)\s+(\w+)/gi)
	{
		my ($kind, $name) = ($1, $2);
		push @bad, "$f: CREATE OR REPLACE $kind $name"
		  unless defined $previous && $previous =~ /CREATE\s+$kind\s+\Q$name\E\b/i;
	}
}
ok(!@bad, 'no script has SECURITY DEFINER, and CREATE OR REPLACE only of members of the version upgraded from')
  or diag(join("\n", @bad));

is( $node->safe_psql('owned', q{
		SELECT count(*) FILTER (WHERE NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)),
		       count(*) > 0
		FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
		JOIN pg_language l ON l.oid = p.prolang AND l.lanname = 'plpgsql'
		WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass}),
	'0|t', 'every PL/pgSQL member runs with search_path = pg_catalog, pg_temp');

$node->stop;
done_testing();
