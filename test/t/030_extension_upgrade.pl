# ALTER EXTENSION snowflake UPDATE gives exactly a fresh install.
#
# For every version older than the default one (pg_available_extension_versions),
# a database installs it, upgrades with ALTER EXTENSION snowflake UPDATE, and is
# compared with a database where the default version was installed fresh: the
# same member objects, and for each the same properties: a function's
# arguments, argument names and defaults, result type, language, body or C
# symbol, volatility, strictness, parallel safety, security definer, leakproof,
# cost, rows, settings and ACL; a relation's kind, columns (types, NOT NULL,
# defaults), view definition, ACL and options, constraints and indexes; every
# comment (objects and columns); the extension's configuration tables and the
# number of rows in its tables.  A function added to only one of the two
# scripts, a changed label, comment or grant all show up as a difference: the
# test checks that, too, by making such changes in a scratch database.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $node = node('upgrade', conf => "snowflake.shard_id = 7\n", start => 1);

my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'snowflake'");
my @older = split /\n/, $node->safe_psql('postgres', qq{
	SELECT version FROM pg_available_extension_versions
	WHERE name = 'snowflake' AND version <> '$default'
	ORDER BY string_to_array(version, '.')::int[]});
ok($default ne '', "default version is $default");
cmp_ok(scalar(@older), '>=', 1, 'there are older versions to upgrade from: ' . join(', ', @older));

# One line per property of every object that belongs to the extension,
# sorted; names only, never OIDs, so that two databases compare.
my $describe = q{
WITH ext AS (SELECT oid, extconfig FROM pg_extension WHERE extname = 'snowflake'),
members AS (
	SELECT d.classid, d.objid, d.objsubid
	FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
lines AS (
	-- every member object, by kind and identity
	SELECT 'member: ' || pg_describe_object(classid, objid, objsubid) AS line FROM members
	UNION ALL
	-- functions and procedures: everything that shapes a call
	SELECT format('function %s: result %s, kind %s, language %s, volatility %s, strict %s, '
	              'parallel %s, security definer %s, leakproof %s, cost %s, rows %s, '
	              'returns set %s, argument names %s, defaults %s, settings %s, acl %s, '
	              'body %s, comment %s',
	              p.oid::regprocedure, pg_get_function_result(p.oid), p.prokind, l.lanname,
	              p.provolatile, p.proisstrict, p.proparallel, p.prosecdef, p.proleakproof,
	              p.procost, p.prorows, p.proretset, p.proargnames,
	              pg_get_expr(p.proargdefaults, 0), p.proconfig, p.proacl,
	              md5(coalesce(p.prosrc, '') || '|' || coalesce(p.probin, '')),
	              obj_description(p.oid, 'pg_proc'))
	FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
	JOIN pg_language l ON l.oid = p.prolang
	UNION ALL
	-- tables, views, sequences, indexes
	SELECT format('relation %s: kind %s, persistence %s, options %s, acl %s, comment %s, '
	              'view %s, configuration table %s',
	              c.oid::regclass, c.relkind, c.relpersistence, c.reloptions, c.relacl,
	              obj_description(c.oid, 'pg_class'),
	              CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END,
	              c.oid = ANY ((SELECT extconfig FROM ext)::oid[]))
	FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
	UNION ALL
	SELECT format('column %s.%s: type %s, not null %s, default %s, acl %s, comment %s',
	              c.oid::regclass, a.attname, format_type(a.atttypid, a.atttypmod),
	              a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid), a.attacl,
	              col_description(c.oid, a.attnum))
	FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
	UNION ALL
	SELECT format('constraint %s on %s: %s', co.conname, co.conrelid::regclass,
	              pg_get_constraintdef(co.oid))
	FROM members m JOIN pg_constraint co ON m.classid = 'pg_class'::regclass
	  AND co.conrelid = m.objid
	UNION ALL
	SELECT format('index on %s: %s', i.indrelid::regclass,
	              regexp_replace(pg_get_indexdef(i.indexrelid), '^CREATE (UNIQUE )?INDEX \S+', ''))
	FROM members m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
	UNION ALL
	-- types (1.3: the snowflake type): how they are stored, read and written
	SELECT format('type %s: length %s, by value %s, align %s, storage %s, category %s, '
	              'preferred %s, input %s, output %s, receive %s, send %s',
	              t.oid::regtype, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
	              t.typispreferred, t.typinput, t.typoutput, t.typreceive, t.typsend)
	FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
	UNION ALL
	-- operators: everything the planner reads
	SELECT format('operator %s: function %s, commutator %s, negator %s, restrict %s, join %s, '
	              'merges %s, hashes %s',
	              o.oid::regoperator, o.oprcode, o.oprcom::regoperator, o.oprnegate::regoperator,
	              o.oprrest, o.oprjoin, o.oprcanmerge, o.oprcanhash)
	FROM members m JOIN pg_operator o ON m.classid = 'pg_operator'::regclass AND o.oid = m.objid
	UNION ALL
	-- operator families: their operators and support functions, by strategy
	SELECT format('family %s: operator %s (%s, %s) %s, purpose %s',
	              pg_describe_object(m.classid, m.objid, 0), a.amopstrategy,
	              a.amoplefttype::regtype, a.amoprighttype::regtype, a.amopopr::regoperator,
	              a.amoppurpose)
	FROM members m JOIN pg_amop a ON m.classid = 'pg_opfamily'::regclass AND a.amopfamily = m.objid
	UNION ALL
	SELECT format('family %s: function %s (%s, %s) %s',
	              pg_describe_object(m.classid, m.objid, 0), p.amprocnum,
	              p.amproclefttype::regtype, p.amprocrighttype::regtype, p.amproc::regprocedure)
	FROM members m JOIN pg_amproc p ON m.classid = 'pg_opfamily'::regclass AND p.amprocfamily = m.objid
	UNION ALL
	-- casts: when they apply and how
	SELECT format('cast %s -> %s: context %s, method %s, function %s',
	              c.castsource::regtype, c.casttarget::regtype, c.castcontext, c.castmethod,
	              c.castfunc::regprocedure)
	FROM members m JOIN pg_cast c ON m.classid = 'pg_cast'::regclass AND c.oid = m.objid
	UNION ALL
	-- types, operators and anything else: its comment
	SELECT format('comment on %s: %s', pg_describe_object(classid, objid, objsubid),
	              obj_description(objid, cl.relname::name))
	FROM members m JOIN pg_class cl ON cl.oid = m.classid
	WHERE cl.relname NOT IN ('pg_proc', 'pg_class')
)
SELECT line FROM lines ORDER BY line COLLATE "C";
};

# The description of the extension in one database, as a list of lines.
sub describe
{
	my ($db) = @_;
	return [ split /\n/, $node->safe_psql($db, $describe) ];
}

# The rows of each table of the extension, counted.
sub table_rows
{
	my ($db) = @_;
	my @tables = split /\n/, $node->safe_psql($db, q{
		SELECT c.oid::regclass FROM pg_depend d
		JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
		JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
		WHERE e.extname = 'snowflake' AND d.deptype = 'e' AND c.relkind IN ('r', 'p')
		ORDER BY 1::text});
	return [ map { "$_: " . $node->safe_psql($db, "SELECT count(*) FROM $_") } @tables ];
}

# Whether extension version $a is $b or later (MAJOR.MINOR).
sub version_at_least
{
	my ($a, $b) = @_;
	my @a = split /\./, $a;
	my @b = split /\./, $b;
	return $a[0] > $b[0] || ($a[0] == $b[0] && $a[1] >= $b[1]);
}

# Lines in one list and not the other, for the failure message.
sub differences
{
	my ($a, $b) = @_;
	my (%in_a, %in_b);
	$in_a{$_}++ for @$a;
	$in_b{$_}++ for @$b;
	my @d = ((map { "- $_" } grep { !$in_b{$_} } @$a), (map { "+ $_" } grep { !$in_a{$_} } @$b));
	return @d;
}

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION snowflake');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
	$default, "fresh: CREATE EXTENSION installs $default");
my $fresh = describe('fresh');
cmp_ok(scalar(@$fresh), '>', 20, 'fresh: the description lists the objects (' . scalar(@$fresh) . ' lines)');
ok((grep { /^function snowflake_shard_id\(bigint\): .*volatility i, strict t, parallel s/ } @$fresh),
	'fresh: the description carries labels (snowflake_shard_id is IMMUTABLE STRICT PARALLEL SAFE)');
ok((grep { /^relation snowflake_stats: kind v, .*acl \{.*=r\// } @$fresh),
	'fresh: the description carries grants and views (snowflake_stats, SELECT to PUBLIC)');

foreach my $old (@older)
{
	my $db = "from_" . ($old =~ s/\./_/gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION snowflake VERSION '$old'");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
		$old, "$db: installed $old");
	# from 1.2 on, an update leaves what users built on our views and
	# functions alone (README, "Views of yours over ours")
	my $keeps_views = version_at_least($old, '1.2');
	if ($keeps_views)
	{
		$node->safe_psql($db, q{
			CREATE VIEW my_registry AS SELECT * FROM snowflake_registry;
			CREATE VIEW my_layout AS SELECT * FROM snowflake_layout();
			CREATE VIEW my_stats AS SELECT * FROM snowflake_stats;});
	}
	my ($ret, $out, $err) = $node->psql($db, 'ALTER EXTENSION snowflake UPDATE');
	is($ret, 0, "$db: ALTER EXTENSION snowflake UPDATE succeeds") or diag($err);
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'snowflake'"),
		$default, "$db: now at $default");
	my $upgraded = describe($db);
	my @diff = differences($fresh, $upgraded);
	ok(!@diff, "$db: $old upgraded to $default has exactly the objects and properties of a fresh install")
	  or diag("fresh (-) and upgraded (+) differ:\n" . join("\n", @diff));
	is_deeply(table_rows($db), table_rows('fresh'), "$db: the extension's tables have the same number of rows");
	is($node->safe_psql($db, 'SELECT snowflake_shard_id(snowflake_nextval())'),
		7, "$db: the upgraded extension generates");
	is($node->safe_psql($db, q{
		CREATE TABLE typed (id snowflake PRIMARY KEY DEFAULT snowflake_nextval());
		INSERT INTO typed DEFAULT VALUES;
		SELECT json_typeof(to_json(id)) || ' ' || (id >= now() - interval '1 hour') FROM typed;
		DROP TABLE typed;}),
		'string true', "$db: the upgraded extension has the snowflake type (JSON string, time comparison)");
	if ($keeps_views)
	{
		is($node->safe_psql($db, q{
			SELECT (SELECT count(*) FROM my_registry) >= 0
			   AND (SELECT shard_id FROM my_layout) = 7
			   AND (SELECT count(*) FROM my_stats) >= 0}),
			't', "$db: users' views over snowflake_registry, snowflake_layout() and snowflake_stats survive the update");
		$node->safe_psql($db, 'DROP VIEW my_registry, my_layout, my_stats');
	}
}

# The comparison sees what a script missing from one path would cause: a
# function only in one script, a changed label, comment or grant.
$node->safe_psql('postgres', 'CREATE DATABASE scratch');
$node->safe_psql('scratch', 'CREATE EXTENSION snowflake');
my %changes = (
	'a function in only one script' => q{
		CREATE FUNCTION snowflake_extra() RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 1';
		ALTER EXTENSION snowflake ADD FUNCTION snowflake_extra();},
	'a changed volatility' => 'ALTER FUNCTION snowflake_shard_id(bigint) STABLE',
	'a changed parallel label' => 'ALTER FUNCTION snowflake_shard_id(bigint) PARALLEL RESTRICTED',
	'a changed comment' => q{COMMENT ON FUNCTION snowflake_shard_id(bigint) IS 'other'},
	'a changed grant' => 'GRANT EXECUTE ON FUNCTION snowflake_stats_reset() TO PUBLIC',
	'a changed view' => q{CREATE OR REPLACE VIEW snowflake_stats AS SELECT *, 1 AS extra FROM snowflake_stats()},
	'a dropped member' => 'ALTER EXTENSION snowflake DROP VIEW snowflake_stats',
	'a changed operator' => 'ALTER OPERATOR = (snowflake, bigint) SET (RESTRICT = neqsel)',
	'an operator family member less' => 'ALTER OPERATOR FAMILY snowflake_ops USING hash DROP OPERATOR 1 (integer, integer)',
);
foreach my $what (sort keys %changes)
{
	$node->safe_psql('scratch', $changes{$what});
	my @diff = differences($fresh, describe('scratch'));
	ok(scalar(@diff), "the comparison catches $what (" . scalar(@diff) . " lines differ)");
	$node->safe_psql('postgres', 'DROP DATABASE scratch');
	$node->safe_psql('postgres', 'CREATE DATABASE scratch');
	$node->safe_psql('scratch', 'CREATE EXTENSION snowflake');
}

$node->stop;
done_testing();
