# Moving a database between the extension and the SQL edition (managed/),
# both ways, with pg_dump and pg_restore between real servers, as
# docs/moving.md says (issue 34, item 5).  No ID issued after a move is below
# one issued before it, including IDs that were issued but stored nowhere.
#
# Three servers:
#   ext1  the extension preloaded, shard 1, its clock 6 s ahead (libfaketime):
#         the source of the move to the SQL edition, whose IDs are ahead of
#         the target's clock;
#   plain no snowflake.so; the SQL edition installed by a non-superuser
#         database owner; its clock 3 s ahead: the target of that move, and
#         the source of the move to the extension;
#   ext2  the extension preloaded, shard 4, the real clock: the target of the
#         move from the SQL edition.
#
# (a) extension -> SQL edition: the SQL edition installed first, the dump
#     restored with its CREATE EXTENSION left out (pg_restore -l / -L), the
#     defaults resolve to the SQL edition's snowflake_nextval();
#     snowflake_adopt_database(at_least => the source's high-water mark) moves
#     every shard above; a table of another role with a far-future ID is
#     skipped with a NOTICE (not read as the owner); too far a floor is
#     refused (22023); other roles may not adopt (42501).
# (b) SQL edition -> extension: the dump restored as the owner, the
#     extension created in a schema of its own (the names collide), adopt
#     reads the SQL edition's caps (IDs issued and stored nowhere) and the
#     columns defaulting to its generators; a fake SQL edition of another
#     role is ignored with a NOTICE; the defaults re-pointed with the DO block
#     of docs/moving.md; a SQL edition of another layout is refused (55000)
#     once it issued an ID; a cap an hour ahead is refused (22023).

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

my $install_sql = managed_install_sql();

# Runs a command; returns (ok, stdout, stderr).
sub run_cmd
{
	my @cmd = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

sub conn_as
{
	my ($node, $db, $role) = @_;
	return $node->connstr($db) . " user=$role";
}

# psql as a role; (rc, out, err) with errors in verbose form
sub as
{
	my ($node, $db, $role, $sql) = @_;
	return $node->psql($db, $sql,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
}

sub ok_as
{
	my ($node, $db, $role, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', $role ]);
}

sub install_managed
{
	my ($node, $db) = @_;
	my ($rc, $out, $err) = as($node, $db, 'app', "\\set ON_ERROR_STOP 1\n" . $install_sql);
	is($rc, 0, "$db: the owner installs the SQL edition") or diag($err);
	return;
}

my $ext1 = node('ext1', clock_ms => 6000, start => 1,
	conf => "snowflake.shard_id = 1\n");
my $plain = node('plain', preload => 0, clock_ms => 3000, start => 1);
my $ext2 = node('ext2', start => 1, conf => "snowflake.shard_id = 4\n");
for my $n ($ext1, $plain, $ext2)
{
	$n->safe_psql('postgres', q{
		CREATE ROLE app LOGIN;
		CREATE ROLE mallory LOGIN;
	});
}

# ---------------------------------------------------------------------------
# (a) extension -> SQL edition
# ---------------------------------------------------------------------------
$ext1->safe_psql('postgres', 'CREATE DATABASE app OWNER app');
$ext1->safe_psql('app', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text);
	ALTER TABLE events OWNER TO app;
	INSERT INTO events (payload) SELECT 'e' || g FROM generate_series(1, 300) g;
});
# IDs issued and stored nowhere: only the source's high-water mark knows them
$ext1->safe_psql('app', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
$ext1->safe_psql('app', 'SELECT pg_sleep(0.05)');
$ext1->safe_psql('app', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 100)');
# docs/moving.md: with writes stopped, one more ID: above every ID issued
my ($src_max, $src_hw_ts) = split /\|/, $ext1->safe_psql('app',
	q{SELECT id, snowflake_timestamp(id) FROM (SELECT snowflake_nextval() AS id) s});
cmp_ok($src_max, '>', $ext1->safe_psql('app', 'SELECT max(id) FROM events'),
	'(a) the high-water mark is above every stored ID');

my $dump_a = $ext1->basedir . '/ext.dump';
my ($ok, $out, $err) = run_cmd('pg_dump', '-Fc', '-f', $dump_a, '-d', $ext1->connstr('app'));
ok($ok, '(a) pg_dump of the extension\'s database') or diag($err);

$plain->safe_psql('postgres', 'CREATE DATABASE app OWNER app');
install_managed($plain, 'app');
ok_as($plain, 'app', 'app', 'SELECT snowflake_configure(shard_id => 2)');
# the dump's list without the extension itself (docs/moving.md)
($ok, $out, $err) = run_cmd('pg_restore', '-l', $dump_a);
ok($ok, '(a) pg_restore -l lists the dump') or diag($err);
like($out, qr/ EXTENSION - snowflake\b/, '(a) the dump creates the extension');
my $list = join '', grep { !/ EXTENSION - snowflake\b/ && !/ COMMENT - EXTENSION snowflake\b/ }
  split /^/, $out;
my $list_file = $plain->basedir . '/restore.list';
open my $fh, '>', $list_file or die $!;
print $fh $list;
close $fh;
($ok, $out, $err) = run_cmd('pg_restore', '--exit-on-error', '--no-owner', '-L', $list_file,
	'-d', conn_as($plain, 'app', 'app'), $dump_a);
ok($ok, '(a) pg_restore -L of the filtered list as the owner, no error') or diag($err);
is( $plain->safe_psql('app', q{
		SELECT p.pronamespace::regnamespace || '.' || p.proname
		  FROM pg_attrdef ad JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
		  JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND p.oid = d.refobjid
		 WHERE ad.adrelid = 'events'::regclass}),
	'public.snowflake_nextval',
	'(a) the restored default calls the SQL edition\'s snowflake_nextval()');
is($plain->safe_psql('app', 'SELECT count(*) FROM events'), '300', '(a) the rows are restored');

# docs/moving.md: a plain pg_restore (no list) reports the extension's two
# statements as errors, goes on, and exits with status 1; the rest is there
$plain->safe_psql('postgres', 'CREATE DATABASE app2 OWNER app');
install_managed($plain, 'app2');
($ok, $out, $err) = run_cmd('pg_restore', '--no-owner', '-d', conn_as($plain, 'app2', 'app'), $dump_a);
ok(!$ok, '(a) pg_restore without the list exits with an error status');
like($err, qr/errors ignored on restore: 2/, '(a) ... for two statements');
like($err, qr/CREATE EXTENSION.*COMMENT ON EXTENSION/s, '(a) ... the extension and its comment');
is($plain->safe_psql('app2', 'SELECT count(*) FROM events'), '300', '(a) ... and the rows are restored');
# configured after the restore: the first configure of a shard adopts what
# the database holds (here an ID 4 s ahead of this server's clock, within
# its lead + wait), so the new IDs start above it
ok_as($plain, 'app2', 'app', q{INSERT INTO events (id, payload)
	VALUES (((extract(epoch FROM clock_timestamp()) * 1000)::bigint + 4000 - 1704067200000) << 22, 'ahead')});
(my $rc0, $out, $err) = as($plain, 'app2', 'app', 'SELECT count(*) FROM snowflake_configure(shard_id => 2)');
like($err, qr/checked 1 column\(s\)/, '(a) configuring a shard after the restore adopts the stored IDs');
is(ok_as($plain, 'app2', 'app', q{INSERT INTO events (payload) VALUES ('new') RETURNING id > (SELECT max(id) FROM events WHERE payload <> 'new')}),
	't', '(a) ... so the first new ID is above every restored one');
# an ID stored further ahead than the lead and the wait allow: the first
# configure refuses (nothing configured), and passes with allow_future, the
# adopt step's own argument
$plain->safe_psql('postgres', 'CREATE DATABASE app3 OWNER app');
install_managed($plain, 'app3');
run_cmd('pg_restore', '--no-owner', '-d', conn_as($plain, 'app3', 'app'), $dump_a);
ok_as($plain, 'app3', 'app', q{INSERT INTO events (id, payload)
	VALUES (((extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000 - 1704067200000) << 22, 'far')});
($rc0, $out, $err) = as($plain, 'app3', 'app', 'SELECT count(*) FROM snowflake_configure(shard_id => 2)');
like($err, qr/22023/, '(a) an ID stored an hour ahead: the first configure refuses (22023)');
is(ok_as($plain, 'app3', 'app', 'SELECT count(*) FROM snowflake__config'), '0', '(a) ... and configures nothing');
ok_as($plain, 'app3', 'app', 'SELECT count(*) FROM snowflake_configure(shard_id => 2, allow_future => true)');
is(ok_as($plain, 'app3', 'app', q{INSERT INTO events (payload) VALUES ('new') RETURNING id > (SELECT max(id) FROM events WHERE payload <> 'new')}),
	't', '(a) ... with allow_future it configures, and the first new ID is above the far one');

# a hostile role's table defaulting to the SQL edition's generator, with a
# far-future ID: adopt must not plan over it as the owner, nor read it
$plain->safe_psql('app', 'CREATE SCHEMA m AUTHORIZATION mallory');
ok_as($plain, 'app', 'mallory', q{
	CREATE TABLE m.t (id bigint DEFAULT public.snowflake_nextval());
	INSERT INTO m.t VALUES (4000000000000000000);
});

# a partitioned table of the owner with a partition of another role: planning
# over the parent would run that partition's index expressions as the owner
ok_as($plain, 'app', 'app', q{
	CREATE TABLE orders (id bigint DEFAULT snowflake_nextval(), x int) PARTITION BY RANGE (id);
	CREATE TABLE orders_all PARTITION OF orders FOR VALUES FROM (0) TO (MAXVALUE);
});
$plain->safe_psql('app', q{
	ALTER TABLE orders_all OWNER TO mallory;
	INSERT INTO orders (id) VALUES (4000000000000000000);
});

# others may not adopt
my ($rc);
($rc, $out, $err) = as($plain, 'app', 'mallory', 'SELECT snowflake_adopt_database()');
like($err, qr/42501/, '(a) another role may not adopt (42501)');
# a floor beyond the clock + lead + wait is refused, and changes nothing
my $before = ok_as($plain, 'app', 'app', q{SELECT pg_sequence_last_value(cap) FROM snowflake__shard WHERE shard_id = 2});
($rc, $out, $err) = as($plain, 'app', 'app',
	q{SELECT snowflake_adopt_database(at_least => now() + interval '1 hour')});
like($err, qr/22023.*too far ahead of the clock/s, '(a) a floor an hour ahead: 22023');
is(ok_as($plain, 'app', 'app', q{SELECT pg_sequence_last_value(cap) FROM snowflake__shard WHERE shard_id = 2}),
	$before, '(a) the refused adopt moved nothing');

($rc, $out, $err) = as($plain, 'app', 'app',
	"SELECT snowflake_adopt_database(at_least => '$src_hw_ts') IS NOT NULL");
is($out, 't', '(a) the owner adopts with the source\'s high-water mark as at_least') or diag($err);
like($err, qr/skipped 3 column\(s\) of tables not owned by app: .*\bm\.t\.id\b/,
	'(a) the hostile table is skipped, named in a NOTICE');
like($err, qr/not owned by app: .*\borders\.id\b.*\borders_all\.id\b/,
	'(a) the owner\'s partitioned table with another role\'s partition is skipped, and that partition');
like($err, qr/checked 1 column\(s\)/, '(a) the owner\'s table is checked');

# new IDs, through the default and by calls: all above everything issued
ok_as($plain, 'app', 'app',
	q{INSERT INTO events (payload) SELECT 'new' || g FROM generate_series(1, 500) g});
my $new_min = ok_as($plain, 'app', 'app', q{
	SELECT least((SELECT min(id) FROM events WHERE payload LIKE 'new%'),
	             (SELECT min(x) FROM (SELECT snowflake_nextval() x FROM generate_series(1, 500)) s))});
cmp_ok($new_min, '>', $src_max,
	'(a) every ID issued after the move is above every ID the extension issued (stored or not)');
is( ok_as($plain, 'app', 'app', q{SELECT count(DISTINCT (id >> 12) & 1023) || ':' || min((id >> 12) & 1023)
	FROM events WHERE payload LIKE 'new%'}),
	'1:2', '(a) the new IDs carry the SQL edition\'s shard');

# ---------------------------------------------------------------------------
# (b) SQL edition -> extension
# ---------------------------------------------------------------------------
$plain->safe_psql('postgres', 'CREATE DATABASE sq OWNER app');
install_managed($plain, 'sq');
ok_as($plain, 'sq', 'app', q{
	SELECT snowflake_configure(shard_id => 3);
	CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), note text);
	INSERT INTO items (note) SELECT 'i' || g FROM generate_series(1, 300) g;
});
ok_as($plain, 'sq', 'app', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)');
ok_as($plain, 'sq', 'app', 'SELECT pg_sleep(0.05)');
my $sq_max = ok_as($plain, 'sq', 'app',
	'SELECT max(x) FROM (SELECT snowflake_nextval() x FROM generate_series(1, 100)) s');
cmp_ok($sq_max, '>', ok_as($plain, 'sq', 'app', 'SELECT max(id) FROM items'),
	'(b) IDs were issued above every stored one');

my $dump_b = $plain->basedir . '/sq.dump';
($ok, $out, $err) = run_cmd('pg_dump', '-Fc', '-f', $dump_b, '-d', conn_as($plain, 'sq', 'app'));
ok($ok, '(b) pg_dump of the SQL edition\'s database as its owner') or diag($err);

$ext2->safe_psql('postgres', 'CREATE DATABASE sq OWNER app');
($ok, $out, $err) = run_cmd('pg_restore', '--exit-on-error', '--no-owner',
	'-d', conn_as($ext2, 'sq', 'app'), $dump_b);
ok($ok, '(b) pg_restore into the extension\'s server as the owner, no error') or diag($err);

# a fake SQL edition of another role, claiming IDs an hour ahead
$ext2->safe_psql('sq', 'CREATE SCHEMA m AUTHORIZATION mallory');
ok_as($ext2, 'sq', 'mallory', q{
	CREATE TABLE m.snowflake__config (LIKE public.snowflake__config);
	INSERT INTO m.snowflake__config SELECT * FROM public.snowflake__config;
	CREATE TABLE m.snowflake__shard (LIKE public.snowflake__shard);
	CREATE SEQUENCE m.fake_cap;
	SELECT setval('m.fake_cap', ((floor(extract(epoch FROM now() + interval '1 hour') * 1000)::bigint
	                              - 1704067200000) << 22) + 1);
	INSERT INTO m.snowflake__shard SELECT 9, 'm.fake_cap', 'm.fake_cap', 'm.fake_cap',
	    'm.fake_cap', 'm.fake_cap', 'm.fake_cap';
});

# the extension beside the SQL edition: the names collide, so in a schema of its own
($rc, $out, $err) = $ext2->psql('sq', 'CREATE EXTENSION snowflake');
like($err, qr/already exists/, '(b) CREATE EXTENSION in the SQL edition\'s schema collides');
$ext2->safe_psql('sq', q{
	CREATE SCHEMA snowflake_ext;
	CREATE EXTENSION snowflake SCHEMA snowflake_ext;
});

# adopt before the defaults are re-pointed: the caps, and the columns
# defaulting to the SQL edition's generators
($rc, $out, $err) = $ext2->psql('sq', 'SELECT snowflake_ext.snowflake_adopt_database() IS NOT NULL');
is($out, 't', '(b) adopt finds a floor') or diag($err);
like($err, qr/read the SQL edition's high-water mark in schema "public"/,
	'(b) adopt read the SQL edition\'s high-water mark');
like($err, qr/skipped m\.snowflake__shard: not owned by the database owner/,
	'(b) the fake SQL edition of another role is ignored, named in a NOTICE');
like($err, qr/checked 1 column\(s\)/, '(b) the column defaulting to the SQL edition\'s generator was read');

# re-point the defaults (docs/moving.md), then generate
$ext2->safe_psql('sq', q{
DO $$
DECLARE r record;
BEGIN
    FOR r IN
        SELECT DISTINCT ad.adrelid::regclass AS tbl, a.attname,
               pg_get_expr(ad.adbin, ad.adrelid) AS expr
          FROM pg_attrdef ad
          JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
          JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
                          AND d.refclassid = 'pg_proc'::regclass
         WHERE d.refobjid IN ('public.snowflake_nextval()'::regprocedure,
                              'public.snowflake_nextval(integer)'::regprocedure)
    LOOP
        -- snowflake_nextval() or snowflake_nextval(N): the same call, the extension's function
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', r.tbl, r.attname,
                       regexp_replace(r.expr, '^(\w+\.)?snowflake_nextval\(',
                                      'snowflake_ext.snowflake_nextval('));
    END LOOP;
END
$$;
});
is( $ext2->safe_psql('sq', q{
		SELECT e.extname FROM pg_attrdef ad
		  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
		  JOIN pg_depend x ON x.classid = 'pg_proc'::regclass AND x.objid = d.refobjid AND x.deptype = 'e'
		  JOIN pg_extension e ON e.oid = x.refobjid
		 WHERE ad.adrelid = 'items'::regclass}),
	'snowflake', '(b) the default now calls the extension\'s generator');
$ext2->safe_psql('sq',
	q{INSERT INTO items (note) SELECT 'new' || g FROM generate_series(1, 500) g});
my $new_b = $ext2->safe_psql('sq', q{
	SELECT least((SELECT min(id) FROM items WHERE note LIKE 'new%'),
	             (SELECT min(x) FROM (SELECT snowflake_ext.snowflake_nextval() x FROM generate_series(1, 500)) s))});
cmp_ok($new_b, '>', $sq_max,
	'(b) every ID issued after the move is above every ID the SQL edition issued (stored or not)');
is($ext2->safe_psql('sq', q{SELECT count(*) FROM items WHERE note LIKE 'new%' AND snowflake_ext.snowflake_shard_id(id) = 4}),
	'500', '(b) the new IDs carry the extension\'s shard');

# a SQL edition of another layout is refused
$ext2->safe_psql('postgres', 'CREATE DATABASE js OWNER app');
install_managed($ext2, 'js');
ok_as($ext2, 'js', 'app',
	q{SELECT snowflake_configure(shard_id => 1, preset => 'javascript')});
$ext2->safe_psql('js', 'CREATE SCHEMA snowflake_ext; CREATE EXTENSION snowflake SCHEMA snowflake_ext');
($rc, $out, $err) = $ext2->psql('js', 'SELECT snowflake_ext.snowflake_adopt_database()');
is($rc, 0, '(b) a SQL edition of another layout that issued no ID: adopt goes on') or diag($err);
ok_as($ext2, 'js', 'app', 'SELECT snowflake_nextval()');
($rc, $out, $err) = $ext2->psql('js', 'SELECT snowflake_ext.snowflake_adopt_database()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000.*used another snowflake layout than this server/s,
	'(b) a SQL edition of another layout: adopt refuses (55000)');
# a cap of the database owner's SQL edition an hour ahead (a source whose
# clock ran fast): bounded like any floor, refused without allow_future
$ext2->safe_psql('postgres', 'CREATE DATABASE far OWNER app');
install_managed($ext2, 'far');
ok_as($ext2, 'far', 'app', q{
	SELECT snowflake_configure(shard_id => 5);
	SELECT snowflake_nextval();
	SELECT setval(cap, ((floor(extract(epoch FROM now() + interval '1 hour') * 1000)::bigint
	                     - 1704067200000) << 22) + 1) FROM snowflake__shard;
});
$ext2->safe_psql('far', 'CREATE SCHEMA snowflake_ext; CREATE EXTENSION snowflake SCHEMA snowflake_ext');
($rc, $out, $err) = $ext2->psql('far', 'SELECT snowflake_ext.snowflake_adopt_database()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/22023.*high-water mark in public\.snowflake__cap_5 is too far ahead of the clock/s,
	'(b) a SQL edition\'s cap an hour ahead: adopt refuses (22023)');
is($ext2->safe_psql('far', q{SELECT snowflake_ext.snowflake_timestamp(snowflake_ext.snowflake_nextval())
	< now() + interval '1 minute'}), 't', '(b) the refused adopt moved nothing: IDs at the clock');

done_testing();
