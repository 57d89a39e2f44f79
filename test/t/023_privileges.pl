# A hostile role against every entry point (issue 17: defects 1 and 2, and
# the privilege audit), on a real server.
#
# "mallory" can log in, may create objects in public (GRANT CREATE ON SCHEMA
# public TO PUBLIC, the default before PostgreSQL 15 and kept by pg_upgrade)
# and owns a table others use.  Each trap she sets calls trap(), which records
# the role it ran as and, run as a superuser, makes her one.  After every
# entry point the test asserts that trap() never ran and that mallory is not
# a superuser:
#  (a) extension version 1.0 (no snowflake_origin): a view public.snowflake_origin
#      over trap() is never read by the first generating call of a session;
#  (b) version 1.2 installed in public: functions named like ours with an
#      extra defaulted argument (which would make a by-name call ambiguous), an
#      aggregate public.max(bigint), an operator public.>(bigint, bigint), and
#      a hostile search_path in the caller's session: snowflake_nextval(),
#      snowflake_adopt_database() and snowflake_convert_column() run nothing of
#      hers; convert (PL/pgSQL) refuses with a clear error while functions
#      named like ours sit in its schema, adopt (C since 1.3) resolves nothing
#      by name and ignores them; the database is updated to 1.3 first;
#  (c) a far-future ID inserted by a role with INSERT: snowflake_adopt_database()
#      refuses it (22023, naming the table, column and value) and the durable
#      mark does not move; snowflake_raise_floor() refuses a floor too far
#      ahead; allow_future => true is the explicit override;
#  (d) every function's EXECUTE privilege matches the README's table;
#  (e) (issue 25, defects 3 and 4) mallory's code in index expressions and
#      partial-index predicates (an IMMUTABLE function calling a VOLATILE one,
#      which the planner would fold, running it as whoever plans), on her
#      tables and on a temporary table of hers with pg_temp functions:
#      snowflake_adopt_database() and snowflake_convert_column() run as a
#      superuser read the columns' maxima without planning anything over them;
#      temporary tables of other sessions are skipped by adopt, with a NOTICE,
#      and refused by convert, without touching them.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $node = node('privileges', conf => "snowflake.shard_id = 3\n", start => 1);

# mallory and her trap; the trap's log is a table everyone may write to
$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE ROLE writer LOGIN;
});

# Sets up a database where mallory may create objects in public and owns trap().
sub prepare_db
{
	my ($db, $version) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{
		GRANT CREATE ON SCHEMA public TO PUBLIC;
		CREATE EXTENSION snowflake VERSION '$version';
		CREATE TABLE trap_log (ran_as name, at timestamptz DEFAULT clock_timestamp());
		GRANT INSERT, SELECT ON trap_log TO PUBLIC;
	});
	$node->safe_psql($db, q{
		CREATE FUNCTION public.trap() RETURNS bigint LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.trap_log (ran_as) VALUES (current_user);
			IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
				EXECUTE 'ALTER ROLE mallory SUPERUSER';
			END IF;
			RETURN 1;
		END $$;}, extra_params => [ '-U', 'mallory' ]);
	return;
}

# Asserts that trap() never ran in $db and that mallory is no superuser.
sub no_trap
{
	my ($db, $what) = @_;
	is($node->safe_psql($db, 'SELECT count(*) FROM trap_log'), '0', "$what: nothing of mallory's ran");
	is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
		'f', "$what: mallory is not a superuser");
	return;
}

###########################################################################
# (a) version 1.0: the name snowflake_origin is free, and never looked up
###########################################################################

prepare_db('v10', '1.0');
$node->safe_psql('v10', q{
	CREATE VIEW public.snowflake_origin AS SELECT public.trap() AS system_identifier;
	GRANT SELECT ON public.snowflake_origin TO PUBLIC;
}, extra_params => [ '-U', 'mallory' ]);
$node->safe_psql('v10',
	'CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text)');
# a new session of a superuser: its first generating call checks the origin
$node->safe_psql('v10', q{INSERT INTO items (v) VALUES ('by the superuser')});
is($node->safe_psql('v10', 'SELECT count(*) FROM items WHERE snowflake_shard_id(id) = 3'),
	'1', '1.0: the superuser\'s insert generated an ID');
no_trap('v10', '1.0, a view named snowflake_origin in public');

# the view is not read by the updated extension either
$node->safe_psql('v10', 'DROP VIEW public.snowflake_origin',
	extra_params => [ '-U', 'mallory' ]);
$node->safe_psql('v10', 'ALTER EXTENSION snowflake UPDATE');
$node->safe_psql('v10', q{INSERT INTO items (v) VALUES ('after the update')});
is($node->safe_psql('v10', q{
	SELECT count(*) FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	  AND c.relname = 'snowflake_origin' AND c.relkind = 'r'}),
	'1', 'after the update snowflake_origin is the extension\'s own table');
no_trap('v10', 'updated to 1.2');

###########################################################################
# (b) version 1.2 in public: shadows, an aggregate, an operator, search_path
###########################################################################

prepare_db('v12', '1.2');
# the current version, through the upgrade script (1.2's PL/pgSQL adopt planned
# max() over other roles' tables: see (e))
$node->safe_psql('v12', 'ALTER EXTENSION snowflake UPDATE');
$node->safe_psql('v12', q{
	CREATE TABLE public.shared (id bigserial PRIMARY KEY, v text);
	GRANT ALL ON public.shared TO PUBLIC;
	GRANT USAGE ON SEQUENCE shared_id_seq TO PUBLIC;
}, extra_params => [ '-U', 'mallory' ]);
$node->safe_psql('v12', q{
	CREATE TABLE items (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	CREATE TABLE mine (id bigserial PRIMARY KEY, v text);
	INSERT INTO mine (v) VALUES ('a'), ('b');
});
# the aggregate, the operator and the search_path trap first (no ambiguity)
$node->safe_psql('v12', q{
	CREATE FUNCTION public.trap_sfunc(bigint, bigint) RETURNS bigint LANGUAGE sql
		AS 'SELECT public.trap()';
	CREATE AGGREGATE public.max(bigint) (sfunc = public.trap_sfunc, stype = bigint);
	CREATE FUNCTION public.trap_gt(bigint, bigint) RETURNS boolean LANGUAGE sql
		AS 'SELECT public.trap() > 0';
	CREATE OPERATOR public.> (leftarg = bigint, rightarg = bigint, function = public.trap_gt);
	CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql
		AS 'SELECT now() + make_interval(secs => public.trap())';
}, extra_params => [ '-U', 'mallory' ]);

my $hostile_path = q{SET search_path = public, pg_catalog; };
$node->safe_psql('v12', $hostile_path . q{INSERT INTO items (v) VALUES ('x')});
$node->safe_psql('v12', $hostile_path . 'SELECT count(*) FROM snowflake_nextval_batch(100)');
no_trap('v12', 'generation with a hostile search_path');

my ($rc, $out, $err) = $node->psql('v12', $hostile_path . q{SELECT snowflake_adopt_database()});
is($rc, 0, 'adopt_database runs with a hostile search_path') or diag($err);
no_trap('v12', 'adopt_database with public.max, public.> and public.now()');

($rc, $out, $err) = $node->psql('v12',
	$hostile_path . q{SELECT snowflake_convert_column('mine', 'id')});
is($rc, 0, 'convert_column runs with a hostile search_path') or diag($err);
no_trap('v12', 'convert_column with public.max, public.> and public.now()');

# functions named like ours in the extension's schema: a clear refusal, no call
$node->safe_psql('v12', q{
	CREATE FUNCTION public.snowflake_raise_floor(timestamptz, boolean, integer DEFAULT 0)
		RETURNS void LANGUAGE sql AS 'SELECT public.trap(); SELECT';
	CREATE FUNCTION public.snowflake_min_id(timestamptz, integer DEFAULT 0, text DEFAULT '')
		RETURNS bigint LANGUAGE sql AS 'SELECT public.trap()';
}, extra_params => [ '-U', 'mallory' ]);
($rc, $out, $err) = $node->psql('v12', 'SELECT snowflake_adopt_database()');
is($rc, 0, 'adopt_database resolves nothing by name: functions named like ours in its schema do not matter')
  or diag($err);
$node->safe_psql('v12', 'CREATE TABLE mine2 (id bigserial PRIMARY KEY)');
($rc, $out, $err) = $node->psql('v12', q{SELECT snowflake_convert_column('mine2', 'id')});
like($err, qr/ERROR:  schema public holds functions named like snowflake's own that are not the extension's/,
	'convert_column refuses while functions named like ours sit in its schema');
no_trap('v12', 'shadowing functions in the extension\'s schema');

# mallory's own table with a snowflake default: adopt reads it as the table's
# owner would, never running her code (no triggers, rules or policies on SELECT
# run for a superuser, and max() is pg_catalog's)
$node->safe_psql('v12', q{
	DROP FUNCTION public.snowflake_raise_floor(timestamptz, boolean, integer);
	DROP FUNCTION public.snowflake_min_id(timestamptz, integer, text);
	CREATE TABLE public.hers (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	CREATE FUNCTION public.hers_trig() RETURNS trigger LANGUAGE plpgsql
		AS 'BEGIN PERFORM public.trap(); RETURN NEW; END';
	CREATE TRIGGER hers_trig BEFORE INSERT OR UPDATE ON public.hers
		FOR EACH ROW EXECUTE FUNCTION public.hers_trig();
	ALTER TABLE public.hers ENABLE ROW LEVEL SECURITY;
	CREATE POLICY hers_pol ON public.hers USING (public.trap() > 0);
}, extra_params => [ '-U', 'mallory' ]);
($rc, $out, $err) = $node->psql('v12', $hostile_path . 'SELECT snowflake_adopt_database()');
is($rc, 0, 'adopt_database reads a hostile role\'s table') or diag($err);
no_trap('v12', 'adopt_database over a table with triggers and policies of mallory\'s');

###########################################################################
# (e) index expressions, partial-index predicates, temporary tables (before
#     (c), which leaves the server's floor a minute ahead of the clock)
###########################################################################

prepare_db('v13', '1.3');

# Puts things back after a trap that ran (before the fix), so that each case
# below fails or passes on its own.
sub reset_trap
{
	my ($db) = @_;
	$node->safe_psql($db, 'DELETE FROM trap_log');
	$node->safe_psql('postgres', 'ALTER ROLE mallory NOSUPERUSER');
	return;
}

# trap_su() does nothing unless a superuser runs it (so that mallory's own
# inserts and index builds do not count), then calls trap(); imm_trap() is
# IMMUTABLE and calls it: the planner folds a call of it in an index
# expression or predicate, running it as whoever plans.
$node->safe_psql('v13', q{
	CREATE FUNCTION public.trap_su() RETURNS integer LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			PERFORM public.trap();
		END IF;
		RETURN 0;
	END $$;
	CREATE FUNCTION public.imm_trap() RETURNS integer LANGUAGE plpgsql IMMUTABLE
		AS 'BEGIN RETURN public.trap_su(); END';
	CREATE TABLE public.hers_expr (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	CREATE INDEX hers_expr_trap ON public.hers_expr ((id + public.imm_trap()));
	CREATE TABLE public.hers_pred (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	CREATE INDEX hers_pred_trap ON public.hers_pred (v) WHERE public.imm_trap() = 0;
	INSERT INTO public.hers_expr (v) VALUES ('a'), ('b');
	INSERT INTO public.hers_pred (v) VALUES ('a'), ('b');
}, extra_params => [ '-U', 'mallory' ]);
is($node->safe_psql('v13', 'SELECT count(*) FROM trap_log'), '0',
	'mallory\'s own inserts through her index expressions do not spring the trap');

($rc, $out, $err) = $node->psql('v13', 'SELECT snowflake_adopt_database() IS NOT NULL');
is($out, 't', 'adopt_database reads tables with hostile index expressions and predicates')
  or diag($err);
like($err, qr/NOTICE:  snowflake: checked 2 column\(s\)/, 'adopt_database checked both columns');
no_trap('v13', 'adopt_database over an index expression and a partial-index predicate of mallory\'s');
reset_trap('v13');

for my $t (qw(hers_expr hers_pred))
{
	($rc, $out, $err) = $node->psql('v13', qq{SELECT snowflake_convert_column('public.$t', 'id')});
	is($rc, 0, "convert_column as a superuser over $t") or diag($err);
	like($err, qr/existing values \(up to \d+\) stay below every new ID/,
		"convert_column read the largest value of $t");
	no_trap('v13', "convert_column over $t");
	reset_trap('v13');
}

# the largest value comes from the rows, whichever way it is read: a btree on
# the plain column, or the heap without one
is($node->safe_psql('v13', q{
	CREATE TABLE public.plain (id bigint, v text);
	INSERT INTO public.plain (id, v) SELECT g, 'old' FROM generate_series(1, 500) g;
	INSERT INTO public.plain (id, v) VALUES (NULL, 'no id');
	DELETE FROM public.plain WHERE id > 400;
	CREATE TABLE public.keyed (id bigint, v text);
	CREATE INDEX keyed_id ON public.keyed (id);
	INSERT INTO public.keyed (id, v) SELECT g, 'old' FROM generate_series(1, 500) g;
	INSERT INTO public.keyed (id, v) VALUES (NULL, 'no id');
	DELETE FROM public.keyed WHERE id > 300;
	CREATE TABLE public.desc_keyed (id bigint, v text);
	CREATE INDEX desc_keyed_id ON public.desc_keyed (id DESC NULLS FIRST);
	INSERT INTO public.desc_keyed (id, v) SELECT g, 'old' FROM generate_series(1, 500) g;
	INSERT INTO public.desc_keyed (id, v) VALUES (NULL, 'no id');
	DELETE FROM public.desc_keyed WHERE id > 200;
	CREATE TABLE public.empty (id bigint PRIMARY KEY);
	SELECT snowflake_column_max('public.plain', 'id') || ' ' || snowflake_column_max('public.keyed', 'id')
	       || ' ' || snowflake_column_max('public.desc_keyed', 'id')
	       || ' ' || coalesce(snowflake_column_max('public.empty', 'id')::text, 'null')}),
	'400 300 200 null', 'snowflake_column_max: the largest live value, from the heap or a btree, either order');
($rc, $out, $err) = $node->psql('v13', q{SELECT snowflake_column_max('public.plain', 'id')},
	extra_params => [ '-U', 'mallory', '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  42501: must be owner of table public\.plain/,
	'snowflake_column_max: only the table\'s owner may read it');

# foreign tables: reading one runs its wrapper (here a program, as the
# server's OS user), so adopt skips them with a NOTICE and convert refuses them
my $marker = $node->basedir . '/fdw_program_ran';
$node->safe_psql('v13', qq{
	CREATE EXTENSION file_fdw;
	CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
	CREATE FOREIGN TABLE public.ft (id bigint DEFAULT snowflake_nextval())
		SERVER files OPTIONS (program 'touch $marker; echo 5');
	CREATE TABLE public.pt (id bigint DEFAULT snowflake_nextval()) PARTITION BY RANGE (id);
	CREATE TABLE public.pt_local PARTITION OF public.pt FOR VALUES FROM (MINVALUE) TO (1000);
	CREATE FOREIGN TABLE public.pt_remote PARTITION OF public.pt FOR VALUES FROM (1000) TO (MAXVALUE)
		SERVER files OPTIONS (program 'touch $marker; echo 1500');
	INSERT INTO public.pt_local VALUES (7);
});
($rc, $out, $err) = $node->psql('v13', 'SELECT snowflake_adopt_database() IS NOT NULL');
is($out, 't', 'adopt_database succeeds beside foreign tables') or diag($err);
like($err, qr/NOTICE:  snowflake: skipped foreign table public\.ft\n/, 'adopt_database skipped the foreign table');
like($err, qr/NOTICE:  snowflake: skipped foreign table public\.pt_remote\n/,
	'adopt_database skipped the foreign partition');
is(scalar(() = $err =~ /skipped foreign table public\.pt_remote/g), 1,
	'the foreign partition is reported once, though its parent\'s default and its own both matched');
($rc, $out, $err) = $node->psql('v13', q{SELECT snowflake_column_max('public.pt', 'id')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: cannot read foreign table public\.pt_remote/,
	'snowflake_column_max refuses a foreign partition (0A000)');
($rc, $out, $err) = $node->psql('v13', q{SELECT snowflake_convert_column('public.pt', 'id')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: cannot read foreign table public\.pt_remote/,
	'convert_column refuses a table with a foreign partition (0A000)');
ok(!-e $marker, 'no foreign data wrapper ran');
$node->safe_psql('v13', 'DROP TABLE public.pt; DROP FOREIGN TABLE public.ft');

# (issue 25, defect 4) another session's temporary table with a snowflake
# default: adopt skips it, saying so, without touching it (it could not read
# it, and its IDs end with that session)
sub open_session
{
	my ($role, $sql) = @_;
	my %s = (in => '', out => '', err => '');
	$s{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('v13'), '-U', $role ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$s{in} .= $sql . "\nSELECT 'ready';\n";
	pump_until($s{h}, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default),
		\$s{out}, qr/ready/) or diag("session of $role: $s{err}");
	return \%s;
}

# Ends a session of open_session(), checking that its temporary table was
# there until then.
sub close_session
{
	my ($s, $table) = @_;
	$s->{in} .= "SELECT 'rows=' || (SELECT count(*) FROM pg_class WHERE relname = '$table' AND relpersistence = 't');\n\\q\n";
	$s->{h}->finish;
	like($s->{out}, qr/rows=1/, "the temporary table $table was there throughout");
	return;
}

my $writer_session = open_session('writer', q{
	CREATE TEMP TABLE w_tmp (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	INSERT INTO w_tmp (v) VALUES ('a');
});
($rc, $out, $err) = $node->psql('v13', 'SELECT snowflake_adopt_database() IS NOT NULL');
is($out, 't', 'adopt_database succeeds while another session holds a temporary table with a snowflake default')
  or diag($err);
like($err, qr/NOTICE:  snowflake: skipped temporary table pg_temp_\d+\.w_tmp of another session/,
	'adopt_database says which temporary table it skipped');
close_session($writer_session, 'w_tmp');

# mallory's temporary table, with pg_temp functions in its index expression
# and predicate (any role with TEMP, PUBLIC's default, can do this).  No
# other index comes before them: planning reads a plain btree's root, which
# fails on another session's temporary table before the traps are folded.
$node->safe_psql('v13', 'CREATE SEQUENCE public.trap_seq; GRANT USAGE ON SEQUENCE public.trap_seq TO PUBLIC',
	extra_params => [ '-U', 'mallory' ]);
my $mallory_session = open_session('mallory', q{
	CREATE FUNCTION pg_temp.vol_trap() RETURNS integer LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			-- a sequence moves even if the caller's transaction then fails
			PERFORM nextval('public.trap_seq');
			INSERT INTO public.trap_log (ran_as) VALUES (current_user);
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		END IF;
		RETURN 0;
	END $$;
	-- by its schema's real name: "pg_temp" is the caller's own temporary schema
	DO $$ BEGIN
		EXECUTE format('CREATE FUNCTION pg_temp.imm_trap() RETURNS integer LANGUAGE plpgsql IMMUTABLE '
					   'AS %L', format('BEGIN RETURN %I.vol_trap(); END', pg_my_temp_schema()::regnamespace));
	END $$;
	CREATE TEMP TABLE m_tmp (id bigint DEFAULT snowflake_nextval(), v text);
	CREATE INDEX m_tmp_expr ON m_tmp ((id + pg_temp.imm_trap()));
	CREATE INDEX m_tmp_pred ON m_tmp (v) WHERE pg_temp.imm_trap() = 0;
	INSERT INTO m_tmp (v) VALUES ('a');
});
($rc, $out, $err) = $node->psql('v13', 'SELECT snowflake_adopt_database() IS NOT NULL');
is($out, 't', 'adopt_database succeeds beside mallory\'s temporary table') or diag($err);
like($err, qr/NOTICE:  snowflake: skipped temporary table pg_temp_\d+\.m_tmp of another session/,
	'adopt_database skipped mallory\'s temporary table');
no_trap('v13', 'adopt_database beside a temporary table with pg_temp functions in its indexes');
is($node->safe_psql('v13', 'SELECT is_called FROM public.trap_seq'), 'f',
	'adopt_database: her pg_temp function never ran, not even in a transaction that failed');
reset_trap('v13');

($rc, $out, $err) = $node->psql('v13', q{
	SELECT snowflake_convert_column((SELECT oid FROM pg_class WHERE relname = 'm_tmp')::regclass, 'id')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  0A000: cannot read temporary table pg_temp_\d+\.m_tmp of another session/,
	'convert_column refuses another session\'s temporary table (0A000)');
no_trap('v13', 'convert_column over another session\'s temporary table');
is($node->safe_psql('v13', 'SELECT is_called FROM public.trap_seq'), 'f',
	'convert_column: her pg_temp function never ran, not even in a transaction that failed');
reset_trap('v13');

close_session($mallory_session, 'm_tmp');

###########################################################################
# (c) a far-future ID does not stop generation
###########################################################################

$node->safe_psql('v12', q{
	CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v text);
	GRANT INSERT ON orders TO writer;
	INSERT INTO orders (v) VALUES ('real');
});
my $mark_before = $node->safe_psql('v12', 'SELECT max(reserved_until) FROM snowflake_stats');
$node->safe_psql('v12',
	q{INSERT INTO orders (id, v) VALUES (snowflake_max_id('2093-01-01'), 'planted')},
	extra_params => [ '-U', 'writer' ]);
($rc, $out, $err) = $node->psql('v12', 'SELECT snowflake_adopt_database()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'adopt_database refuses a far-future ID');
like($err, qr/ERROR:  22023: the largest snowflake ID in column "id" of public.orders is too far ahead of the clock/,
	'the refusal names the table and the column (22023)');
like($err, qr/DETAIL:  Its value \d+ carries 2093-01-01/, 'the detail names the value and its time');
like($err, qr/allow_future => true/, 'the hint names the override');
is($node->safe_psql('v12', "SELECT max(reserved_until) <= '$mark_before'::timestamptz + interval '10 s' FROM snowflake_stats"),
	't', 'the durable mark did not move');
$node->safe_psql('v12', q{INSERT INTO orders (v) VALUES ('still generating')});
is($node->safe_psql('v12', q{SELECT snowflake_timestamp(id) < now() + interval '1 minute' FROM orders WHERE v = 'still generating'}),
	't', 'generation goes on at the clock');

($rc, $out, $err) = $node->psql('v12', q{SELECT snowflake_raise_floor('2093-01-01')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22023: snowflake floor .* is too far ahead of the clock/,
	'raise_floor refuses a floor far ahead (22023)');
# the override, with a floor one minute ahead: accepted, and generation then
# waits for the clock as it says it would
$node->safe_psql('v12', q{DELETE FROM orders WHERE v = 'planted'});
($rc, $out, $err) = $node->psql('v12', q{SELECT snowflake_adopt_database(at_least => '2093-01-01')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22023: snowflake floor .* is too far ahead of the clock/,
	'adopt_database refuses an at_least far ahead (22023)');

$node->safe_psql('v12', q{
	INSERT INTO orders (id, v) VALUES (snowflake_max_id(now() + interval '60 s'), 'a minute ahead')},
	extra_params => [ '-U', 'writer' ]);
($rc, $out, $err) = $node->psql('v12', 'SELECT snowflake_adopt_database()');
like($err, qr/too far ahead of the clock/, 'a minute ahead is refused without the override');
($rc, $out, $err) = $node->psql('v12', 'SELECT snowflake_adopt_database(allow_future => true) IS NOT NULL');
is($out, 't', 'allow_future => true accepts it') or diag($err);
($rc, $out, $err) = $node->psql('v12', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  58000: could not generate a snowflake ID: IDs are \d+ ms ahead of the clock/,
	'after the override generation waits for the clock, then refuses clearly');

###########################################################################
# (d) who may execute what: the table in docs/security.md
###########################################################################

my %public_execute = map { $_ => 1 } split /\s+/, q(
	snowflake_nextval() snowflake_nextval_batch(integer)
	snowflake_timestamp(bigint) snowflake_shard_id(bigint) snowflake_sequence(bigint)
	snowflake_decode(bigint) snowflake_min_id(timestamp_with_time_zone)
	snowflake_min_id(timestamp_with_time_zone,integer) snowflake_max_id(timestamp_with_time_zone)
	snowflake_max_id(timestamp_with_time_zone,integer) snowflake_to_text(bigint)
	snowflake_from_text(text) snowflake_layout() snowflake_stats() snowflake_metrics()
	snowflake_timestamp(bigint,text) snowflake_shard_id(bigint,text) snowflake_sequence(bigint,text)
	snowflake_decode(bigint,text) snowflake_datacenter(bigint) snowflake_worker(bigint)
	snowflake_partition_interval(interval,boolean) snowflake_partition_span(bigint)
	snowflake_partition_bounds(timestamp_with_time_zone,timestamp_with_time_zone,interval,boolean)
	snowflake_convert_column(regclass,name,integer,boolean,boolean)
	snowflake_convert_column(regclass,name,boolean,boolean)
	snowflake_column_max(regclass,name)
	snowflake_public_id(bigint) snowflake_public_id(bigint,text)
	snowflake_from_public_id(text) snowflake_from_public_id(text,text)
	snowflake_created_after(bigint,timestamp_with_time_zone)
	snowflake_created_before(bigint,timestamp_with_time_zone)
	snowflake_created_between(bigint,timestamp_with_time_zone,timestamp_with_time_zone)
	snowflake_time_bound(timestamp_with_time_zone)
	snowflake(bigint) snowflake(integer) snowflake(smallint) snowflake_in(cstring) snowflake_recv(internal)
	snowflake_sortsupport(internal) snowflake_time_support(internal)
	snowflake_commit_watermark() snowflake_commit_watermark(integer));
my $rows = $node->safe_psql('v12', q{
	SELECT replace(replace(p.oid::regprocedure::text, ' ', '_'), ',_', ','),
	       has_function_privilege('writer', p.oid, 'EXECUTE'),
	       has_function_privilege('pg_read_all_stats', p.oid, 'EXECUTE')
	FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake' AND d.deptype = 'e'
	ORDER BY 1});
foreach my $line (split /\n/, $rows)
{
	my ($fn, $plain, $stats) = split /\|/, $line;
	$fn =~ s/timestamp_with_time_zone/timestamp_with_time_zone/g;
	# the type snowflake's own machinery (operators, comparisons, casts) is
	# every role's, as int8's is
	my $want = ($public_execute{$fn} || $fn =~ /[(,]snowflake[,)]/) ? 't' : 'f';
	is($plain, $want, "EXECUTE on $fn for a plain role: " . ($want eq 't' ? 'granted' : 'revoked'));
	is($stats, 't', "EXECUTE on $fn for pg_read_all_stats")
	  if $fn eq 'snowflake_registry()' or $fn eq 'snowflake_server_metrics()'
	  or $fn eq 'snowflake_registry_replication()';
}

done_testing();
