# Public IDs (issue 29, part 2) on a real server: snowflake_public_id() and
# snowflake_from_public_id() round-trip 100,000 generated IDs, give fixed-
# length URL-safe strings that consecutive IDs do not relate, refuse malformed
# strings (22P02) and unknown key versions (22023); keys rotate through a
# reload (old strings decode while their key is listed, new ones use the new
# version, old ones refuse once it is gone); the keys are never readable by
# another role (SHOW, current_setting(), pg_settings, pg_file_settings,
# pg_db_role_setting), never settable through SQL, and never in the server
# log: not at start, not at a reload, not for a refused value.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

# Three keys and a refused one, each a string that must never reach the log.
my $k1 = '6b31' . ('a1' x 14);
my $k2 = '6b32' . ('b2' x 30);
my $k3 = '6b33' . ('c3' x 14);
my $bad = '6b34' . ('d4' x 14) . 'zz';

my $node = node('public_ids',
	conf => "snowflake.shard_id = 7\ninclude_if_exists 'public_id_keys.conf'\n");
my $keys_file = $node->data_dir . '/public_id_keys.conf';

# Writes the keys file (mode 0600, as the README says) and reloads.
sub set_keys
{
	my ($value) = @_;
	open my $fh, '>', $keys_file or die "could not write $keys_file: $!";
	print $fh "snowflake.public_id_keys = '$value'\n";
	close $fh;
	chmod 0600, $keys_file;
}

sub reload_and_wait
{
	my ($want_versions) = @_;
	$node->reload;
	$node->poll_query_until('postgres', 'SHOW snowflake.public_id_keys', $want_versions)
	  or die "the reload did not reach a new session";
}

# Runs SQL expected to fail; returns its stderr (VERBOSITY verbose: with the SQLSTATE).
sub fails
{
	my ($sql, %opts) = @_;
	my ($rc, $out, $err) = $node->psql($opts{db} // 'postgres', $sql,
		extra_params => ['-v', 'VERBOSITY=verbose', @{ $opts{params} // [] }]);
	isnt($rc, 0, "fails: $sql");
	return $err;
}

$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE ROLE plain LOGIN;
	CREATE ROLE reader LOGIN IN ROLE pg_read_all_settings;
});

###########################################################################
# No keys: a clear error
###########################################################################

like(fails('SELECT snowflake_public_id(1)'),
	qr/ERROR:  55000: snowflake.public_id_keys is not set.*HINT:  .*reload/s,
	'without keys: 55000 with a hint');
is($node->safe_psql('postgres', 'SHOW snowflake.public_id_keys'), '(none)', 'SHOW: (none)');

set_keys("1:$k1");
reload_and_wait('versions 1 (keys not shown)');

###########################################################################
# 100,000 generated IDs round-trip; fixed length, URL-safe, unrelated
###########################################################################

$node->safe_psql('postgres', q{
	CREATE TABLE ids AS
	SELECT id, snowflake_public_id(id) AS pid, snowflake_public_id(id, 'orders') AS tpid
	FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) g;
	CREATE TABLE pairs AS
	SELECT i, snowflake_public_id(i) AS a, snowflake_public_id(i + 1) AS b
	FROM generate_series(1000000, 1010000) i;
});
is($node->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT pid), count(DISTINCT tpid),
	       count(*) FILTER (WHERE snowflake_from_public_id(pid) = id),
	       count(*) FILTER (WHERE snowflake_from_public_id(upper(pid)) = id),
	       count(*) FILTER (WHERE snowflake_from_public_id(tpid, 'orders') = id),
	       count(*) FILTER (WHERE pid ~ '^1[0-9a-f][0-9abcdefghjkmnpqrstvwxyz]{12}$'),
	       count(*) FILTER (WHERE tpid <> pid)
	FROM ids}),
	'100000|100000|100000|100000|100000|100000|100000|100000',
	'100,000 IDs: distinct public IDs that round-trip (either case, with a tweak), 14 '
	  . 'characters of the URL-safe alphabet after version 1');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE length(snowflake_public_id(v)) = 14
	                        AND snowflake_from_public_id(snowflake_public_id(v)) = v)
	FROM unnest(ARRAY[0, 1, -1, 9223372036854775807, -9223372036854775808]::bigint[]) v}),
	'5', 'the edges of bigint round-trip in 14 characters');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE snowflake_from_public_id(tpid) <> id),
	       count(*) FILTER (WHERE snowflake_from_public_id(tpid, 'users') <> id)
	FROM ids}),
	'100000|100000', 'a public ID made under a tweak decodes to another ID without it');

# Consecutive IDs: the strings share about 0.44 positions by chance (1/32 per
# character, 1/16 for the first) and sort either way about half the time; the
# text form (snowflake_to_text) shares 12 of 13 and always sorts up.
my ($shared, $up) = split /\|/, $node->safe_psql('postgres', q{
	SELECT avg((SELECT count(*) FROM generate_series(2, 14) k
	            WHERE substr(a, k, 1) = substr(b, k, 1))),
	       avg((a < b)::int)
	FROM pairs});
cmp_ok($shared, '<', 1.0, "consecutive IDs share $shared character positions on average (< 1)");
cmp_ok(abs($up - 0.5), '<', 0.05, "consecutive IDs sort upwards in a fraction $up (about 0.5)");

###########################################################################
# Malformed strings (22P02), unknown versions (22023)
###########################################################################

my $one = $node->safe_psql('postgres', 'SELECT snowflake_public_id(1)');
my $tail = substr($one, 1);
foreach my $case ('', 'abc', "${one}0", substr($one, 0, 13) . 'i', substr($one, 0, 13) . '-',
	'1z' . substr($one, 2), "1$tail ")
{
	like(fails("SELECT snowflake_from_public_id('$case')"),
		qr/ERROR:  22P02: invalid public ID: ".*".*DETAIL:  A public ID is 14 characters/s,
		"22P02 for '$case'");
}
like(fails("SELECT snowflake_from_public_id('5$tail')"),
	qr/ERROR:  22023: public ID "5\Q$tail\E" has key version 5, which snowflake.public_id_keys does not list.*DETAIL:  snowflake.public_id_keys lists key versions 1\..*HINT:  The key was retired/s,
	'22023 for a key version not listed, with the versions that are and a hint');
is($node->safe_psql('postgres', 'SELECT snowflake_public_id(NULL), snowflake_from_public_id(NULL)'),
	'|', 'NULL in, NULL out');

###########################################################################
# STABLE, so no expression index; the primary key serves the lookup;
# parallel workers get the keys
###########################################################################

is($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT provolatile::text, ',') FROM pg_proc
	WHERE proname IN ('snowflake_public_id', 'snowflake_from_public_id')}),
	's', 'the four functions are STABLE');
like(fails('CREATE INDEX ON ids ((snowflake_public_id(id)))'),
	qr/functions in index expression must be marked IMMUTABLE/,
	'no expression index on a public ID');
$node->safe_psql('postgres', 'ALTER TABLE ids ADD PRIMARY KEY (id); ANALYZE ids');
like($node->safe_psql('postgres', qq{
	EXPLAIN (COSTS OFF) SELECT * FROM ids WHERE id = snowflake_from_public_id('$one')}),
	qr/Index Scan using ids_pkey/, 'WHERE id = snowflake_from_public_id($1) uses the primary key');
my $force = $node->safe_psql('postgres',
	"SELECT CASE WHEN current_setting('server_version_num')::int >= 160000 "
	  . "THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END");
is($node->safe_psql('postgres', qq{
	SET $force = on; SET parallel_setup_cost = 0;
	SELECT count(*) FILTER (WHERE snowflake_public_id(id) = pid AND snowflake_from_public_id(pid) = id)
	FROM ids}),
	'100000', 'in parallel workers too');

###########################################################################
# Rotation through a reload
###########################################################################

my %old = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres', 'SELECT id, pid FROM ids ORDER BY id LIMIT 1000');
set_keys("2:$k2, 1:$k1");
reload_and_wait('versions 2,1 (keys not shown)');
my $sql_old = join(',', map { "($_, '$old{$_}')" } keys %old);
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE snowflake_from_public_id(p) = i),
	       count(*) FILTER (WHERE left(snowflake_public_id(i), 1) = '2'),
	       count(*) FILTER (WHERE snowflake_public_id(i) <> p),
	       count(*) FILTER (WHERE snowflake_from_public_id(snowflake_public_id(i)) = i)
	FROM (VALUES $sql_old) v (i, p)}),
	'1000|1000|1000|1000',
	'after adding key 2 first: old strings still decode, new ones are version 2 and decode');

# a refused value at a reload keeps the keys in force
set_keys("3:$k3,2:$bad");
$node->reload;
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_file_settings
	WHERE name = 'snowflake.public_id_keys' AND error IS NOT NULL})
  or die 'the refused value was not read';
is($node->safe_psql('postgres', 'SHOW snowflake.public_id_keys'), 'versions 2,1 (keys not shown)',
	'a refused value at a reload leaves the keys in force');

set_keys("2:$k2");
reload_and_wait('versions 2 (keys not shown)');
my ($first) = sort keys %old;
like(fails("SELECT snowflake_from_public_id('$old{$first}')"),
	qr/ERROR:  22023: public ID "\Q$old{$first}\E" has key version 1, which snowflake.public_id_keys does not list/,
	'with key 1 removed, its strings refuse');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE snowflake_from_public_id(snowflake_public_id(i)) = i)
	FROM (VALUES $sql_old) v (i, p)}), '1000', 'version 2 strings still decode');

###########################################################################
# Nobody reads the keys; SQL cannot set them
###########################################################################

like(fails('SHOW snowflake.public_id_keys', params => ['-U', 'plain']),
	# 15: "must be superuser or have privileges of pg_read_all_settings ...";
	# 16 and later: "permission denied to examine ..." (same SQLSTATE)
	qr/42501: (must be superuser or have privileges of pg_read_all_settings|permission denied to examine "snowflake\.public_id_keys")/,
	'a plain role cannot SHOW the keys');
like(fails(q{SELECT current_setting('snowflake.public_id_keys')}, params => ['-U', 'plain']),
	qr/42501/, 'nor read them with current_setting()');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_settings WHERE name = 'snowflake.public_id_keys'},
	extra_params => ['-U', 'plain']), '0', 'nor see them in pg_settings');
like(fails('SELECT * FROM pg_file_settings', params => ['-U', 'plain']),
	qr/42501: permission denied/, 'nor read pg_file_settings');
is($node->safe_psql('postgres', 'SHOW snowflake.public_id_keys', extra_params => ['-U', 'reader']),
	'versions 2 (keys not shown)', 'pg_read_all_settings sees the versions, not the keys');
my $settings_row = $node->safe_psql('postgres',
	q{SELECT s::text FROM pg_settings s WHERE name = 'snowflake.public_id_keys'},
	extra_params => ['-U', 'reader']);
unlike($settings_row, qr/6b3/, 'no key in any column of pg_settings, for pg_read_all_settings');
unlike($node->safe_psql('postgres',
		q{SELECT s::text FROM pg_settings s WHERE name = 'snowflake.public_id_keys'}),
	qr/6b3/, 'nor for a superuser');

# SQL cannot set them (the framework logs every statement: these are kept out of the
# log with log_statement and log_min_error_statement, as the README tells users to)
like(fails("SET log_statement = none; SET log_min_error_statement = panic; ALTER SYSTEM SET snowflake.public_id_keys = '3:$k3'"),
	qr/55P02: parameter "snowflake.public_id_keys" cannot be changed/, 'ALTER SYSTEM is refused');
like(fails("SET log_statement = none; SET log_min_error_statement = panic; SET snowflake.public_id_keys = '3:$k3'"),
	qr/55P02: parameter "snowflake.public_id_keys" cannot be changed now/, 'SET is refused');
like(fails("SET log_statement = none; SET log_min_error_statement = panic; ALTER ROLE plain SET snowflake.public_id_keys = '3:$k3'"),
	qr/55P02/, 'ALTER ROLE ... SET is refused');
like(fails("SET log_statement = none; SET log_min_error_statement = panic; ALTER DATABASE postgres SET snowflake.public_id_keys = '3:$k3'"),
	qr/55P02/, 'ALTER DATABASE ... SET is refused');
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'public_id'},
		extra_params => ['-U', 'plain']),
	'0', 'pg_db_role_setting holds no keys');

###########################################################################
# Every key version listed at once (issue 33): the error for an unlisted
# version and SHOW print all 31 others, as any role; the list of versions once
# overflowed a fixed buffer on the stack (a crash, with 26 versions or more)
###########################################################################

my @many = map { sprintf('%d:6b35%02x', $_, $_) . ('e5' x 13) } reverse 1 .. 31;
set_keys(join(',', @many));
my $all_versions = join(',', reverse 1 .. 31);
reload_and_wait("versions $all_versions (keys not shown)");
is($node->safe_psql('postgres', 'SHOW snowflake.public_id_keys', extra_params => ['-U', 'reader']),
	"versions $all_versions (keys not shown)", 'SHOW lists all 31 key versions');
my $listed = join(', ', reverse 1 .. 31);
like(fails(q{SELECT snowflake_from_public_id('00000000000000')}, params => ['-U', 'plain']),
	qr/ERROR:  22023: public ID "00000000000000" has key version 0, which snowflake.public_id_keys does not list.*DETAIL:  snowflake.public_id_keys lists key versions \Q$listed\E\.\n/s,
	'a plain role decoding an unlisted version with 31 listed: 22023 listing every version');
is($node->safe_psql('postgres', q{SELECT snowflake_from_public_id(snowflake_public_id(42))},
	extra_params => ['-U', 'plain']), '42', 'and the backend still serves (no crash)');

###########################################################################
# A refused value at start stops the server; the log never holds a key
###########################################################################

set_keys("1:$k1,2:$bad");
$node->stop;
ok(!$node->start(fail_ok => 1), 'a refused value at start stops the server');
like(slurp_file($node->logfile),
	qr/FATAL:  invalid value for parameter "snowflake.public_id_keys"\n.*DETAIL:  The value is not shown because it holds keys/,
	'and says why without the value');
set_keys("2:$k2,1:$k1");
$node->start;
is($node->safe_psql('postgres', 'SHOW snowflake.public_id_keys'), 'versions 2,1 (keys not shown)',
	'keys at start');
$node->stop;

my $log = slurp_file($node->logfile);
like($log, qr/invalid value for parameter "snowflake.public_id_keys"/,
	'the log names the refused values');
foreach my $k ($k1, $k2, $k3, $bad)
{
	unlike($log, qr/\Q$k\E/i, 'the server log never holds key ' . substr($k, 0, 4));
	unlike($log, qr/\Q${\ substr($k, 4, 16)}\E/i, '... nor part of it');
}

done_testing();
