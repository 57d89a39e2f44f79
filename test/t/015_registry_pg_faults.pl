# A PostgreSQL registry that is wrong in every way the operations guide
# names; each time the server starts (except for a connection string that
# cannot be parsed, which is nonsense in a setting), says exactly what is
# wrong, retries, never generates without a claim, and never stops other
# shards:
#  (a) a connection string libpq cannot parse: the server refuses to start
#      and says why, without printing the password it holds;
#  (b) a valid one to a port nothing listens on: the server starts, the view
#      shows the connection error and masks the password; no session but a
#      superuser's may read the setting;
#  (c) an empty registry database whose role may not create the tables: the
#      error names the shipped script; once it is run (psql -f, as written in
#      the file) and the grants of docs/operations.md given (run as written
#      there), the server claims with no restart; the role may not delete;
#  (d) tables of another version: refused, saying which;
#  (e) a read-only registry: refused, saying so; writable again: claimed;
#  (f) rows edited by hand: an absurd freshness mark refuses its shard only
#      (another of the pool is claimed); an active claim set to "released"
#      by hand: the holder notices at its next heartbeat, stops, and claims
#      again.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use RegistryTest;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $script = "$sharedir/extension/snowflake_registry.sql";
ok(-f $script, "the schema script is installed: $script");

my $reg = node('registry', preload => 0, conf => "fsync = on\nlisten_addresses = '127.0.0.1'\n", start => 1);
$reg->safe_psql('postgres', 'CREATE DATABASE registry');

my $x = registry_node('x', $reg, prefix => '/faults', lease => 3);
my $y = registry_node('y', $reg, prefix => '/faults', lease => 3);
# the warnings of settings too (registry_node logs from LOG up)
$x->append_conf('postgresql.conf', "log_min_messages = warning\n");

sub error_is
{
	my ($node, $pattern, $what) = @_;
	ok($node->poll_query_until('postgres',
			"SELECT last_error ~ '$pattern' FROM snowflake_registry"), $what)
	  or diag(registry_row($node, 'state, last_error'));
	return;
}

###########################################################################
# (a) a connection string libpq cannot parse
###########################################################################

for my $case (
	[ 'host=localhost port', qr/missing "=" after "port" in connection info string/ ],
	[ 'host=localhost password=hunter2 port', qr/libpq cannot parse it \(its message is not shown: the string holds a password\)/ ],
	[ 'postgresql://u:hunter2@[::1', qr/libpq cannot parse it \(its message is not shown/ ])
{
	my ($target, $why) = @$case;
	reconfigure($x, undef, endpoints => $target);
	my $offset = -s $x->logfile // 0;
	ok(!$x->start(fail_ok => 1), "refuses to start with snowflake.registry = '$target'");
	my $log = slurp_file($x->logfile, $offset);
	like($log, qr/FATAL:  invalid value for parameter "snowflake\.registry"/, '  FATAL names the setting');
	like($log, qr/snowflake\.registry is not a valid PostgreSQL connection string: /, '  and says what it is not');
	like($log, $why, '  and why');
	unlike($log, qr/hunter2/, '  without the password');
}

###########################################################################
# (b) a port nothing listens on
###########################################################################

my ($dead_port) = PostgreSQL::Test::Cluster::get_free_port();
reconfigure($x, undef,
	endpoints => "host=127.0.0.1 port=$dead_port dbname=registry password=hunter2",
	prefix => '/faults', lease => 3);
$x->start;
$x->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE ROLE someone LOGIN');
error_is($x, 'connecting: .*(Connection refused|could not connect)',
	'nothing listens: last_error has the connection error');
is(registry_row($x, 'state'), 'unreachable', 'state "unreachable"');
like(registry_row($x, 'endpoints'), qr/password=\*{8}/, 'the view masks the password');
unlike(registry_row($x, 'endpoints'), qr/hunter2/, 'and never shows it');
my ($ret, $out, $err) = $x->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/this server holds no shard in the registry yet/, 'generation refuses');
unlike($err, qr/hunter2/, 'the error does not show the password');
($ret, $out, $err) = $x->psql('postgres', 'SHOW snowflake.registry', extra_params => [ '-U', 'someone' ]);
like($err, qr/must be superuser|permission denied|privileges of pg_read_all_settings/,
	'a role that is not a superuser may not read snowflake.registry');
my $r0 = registry_row($x, 'requests');
ok($x->poll_query_until('postgres', "SELECT requests > $r0 + 2 FROM snowflake_registry"),
	'the worker keeps retrying');
$x->stop;
unlike(slurp_file($x->logfile), qr/hunter2/, 'the password is nowhere in the log');

###########################################################################
# (c) empty database, a role that may not create the tables
###########################################################################

$reg->safe_psql('registry', 'CREATE ROLE snowflake_holder LOGIN');
reconfigure($x, $reg, user => 'snowflake_holder', prefix => '/faults', lease => 3);
$x->start;
error_is($x, 'may not create it \(permission denied\): run .*snowflake_registry\.sql there',
	'a role that may not create the tables: last_error names the script');
like(registry_row($x, 'last_error'), qr/\Q$script\E/, 'by its installed path');
($ret, $out, $err) = $x->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: this server holds no shard in the registry yet/,
	'generation refuses (55000)');
like($err, qr/snowflake_registry\.sql/, 'and its detail names the script too');

# as the operations guide says: the script as a role that may, then the grants
my ($sret, $sout, $serr) = run_command(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $reg->connstr('registry'), '-f', $script ]);
is($serr // '', '', 'psql -f runs the shipped script without an error');
my $doc = slurp_file("$FindBin::RealBin/../../docs/operations.md");
my ($grants) = $doc =~ /<!-- registry-grants[^>]*-->\s*```sql\n(.*?)```/s;
ok(defined $grants, 'docs/operations.md has the marked grants');
$reg->safe_psql('registry', $grants // 'SELECT 1');
wait_generating($x, 'x once the tables are there and granted');
is($reg->safe_psql('registry', q{SELECT count(*) FROM snowflake_registry.claims WHERE status = 'active'}),
	'1', 'x claimed as snowflake_holder, with no restart');
($ret, $out, $err) = $reg->psql('registry', 'DELETE FROM snowflake_registry.claims',
	extra_params => [ '-U', 'snowflake_holder' ]);
like($err, qr/permission denied for table claims/, 'the registry role may not delete claims');
($ret, $out, $err) = $reg->psql('registry', 'DROP TABLE snowflake_registry.shards',
	extra_params => [ '-U', 'snowflake_holder' ]);
like($err, qr/must be owner/, 'nor drop the tables');
$x->stop;

###########################################################################
# (d) tables of another version
###########################################################################

$reg->safe_psql('registry', 'UPDATE snowflake_registry.schema_version SET version = 2');
$x->start;
error_is($x, 'are version 2, this server needs version 1',
	'tables of version 2: refused, saying which');
is($x->safe_psql('postgres', 'SELECT generating FROM snowflake_registry'), 'f', 'no generation');
$reg->safe_psql('registry', 'UPDATE snowflake_registry.schema_version SET version = 1');
wait_generating($x, 'x once the version is right');
$x->stop;

###########################################################################
# (e) a read-only registry
###########################################################################

$reg->safe_psql('postgres', 'ALTER DATABASE registry SET default_transaction_read_only = on');
$x->start;
error_is($x, 'read-only transaction \(a read-only server: list the registry.s hosts with target_session_attrs=read-write\)',
	'a read-only registry: refused, saying so');
is($x->safe_psql('postgres', 'SELECT state FROM snowflake_registry'), 'unreachable', 'state "unreachable"');
$reg->safe_psql('postgres', 'ALTER DATABASE registry RESET default_transaction_read_only');
wait_generating($x, 'x once the registry is writable');
$x->stop;

###########################################################################
# (f) rows edited by hand
###########################################################################

my $now_ms = int(time * 1000);
$reg->safe_psql('registry', qq{
	INSERT INTO snowflake_registry.shards VALUES
		('/edited', 0, 9, 3000000000000000),
		('/edited', 0, 10, @{[ $now_ms + 86_400_000 ]});
});
reconfigure($x, $reg, prefix => '/edited', lease => 3, shards => '9-10');
$x->start;
ok($x->poll_query_until('postgres', q{SELECT state = 'mark refused' FROM snowflake_registry}),
	'a pool of two shards with absurd marks: state "mark refused"');
$x->stop;
reconfigure($x, $reg, prefix => '/edited', lease => 3, shards => '9-11');
$x->start;
wait_generating($x, 'a pool whose shards 9 and 10 have absurd marks');
is(held_shard($x), '11', 'the shard with no absurd mark was claimed');
ok($x->log_contains(qr/refusing shard 9/) && $x->log_contains(qr/refusing shard 10/),
	'shards 9 and 10 were refused, with LOG lines');
ok($x->log_contains(qr/The freshness mark \(mark_ms of snowflake_registry\.shards, id_space '\/edited', datacenter 0, worker 9\) is 3000000000000000, beyond the last time this layout can represent/),
	'the LOG names the row and what is wrong with it');
is($reg->safe_psql('registry', q{SELECT string_agg(DISTINCT status, ',') FROM snowflake_registry.claims
		WHERE id_space = '/edited' AND worker IN (9, 10)}),
	'released', 'their claims were given back at once');

# an explicit shard whose mark is absurd, next to a server that generates
reconfigure($y, $reg, prefix => '/edited', lease => 3, shard_id => 9);
$y->start;
$y->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($y->poll_query_until('postgres', q{SELECT state = 'mark refused' FROM snowflake_registry}),
	'explicit shard 9: state "mark refused"');
($ret, $out, $err) = $y->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/the freshness mark of shard 9 in the registry is refused/, 'its generation says why');
like($x->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/, 'the other server goes on generating');
$y->stop;

# x's active claim set to "released" by hand
my $before = $x->safe_psql('postgres', 'SELECT snowflake_nextval()');
my $claim = $reg->safe_psql('registry',
	q{SELECT claim_id FROM snowflake_registry.claims WHERE id_space = '/edited' AND status = 'active'});
$reg->safe_psql('registry',
	"UPDATE snowflake_registry.claims SET status = 'released', released_at = now() WHERE claim_id = $claim");
my $seen = 0;
for (1 .. 100)
{
	last if ($seen = $x->log_contains(qr/lost shard 11/));
	sleep 0.1;
}
ok($seen, 'x notices at its next heartbeat that its claim is gone, and logs it');
wait_generating($x, 'x after claiming again');
ok($reg->safe_psql('registry',
		qq{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/edited' AND status = 'active' AND claim_id > $claim}) == 1,
	'with a new claim row');
ok($x->safe_psql('postgres', 'SELECT snowflake_nextval()') > $before, 'and resumes above its IDs');
ok(!$x->log_contains(qr/PANIC|terminated by signal/), 'nothing crashed');
$x->stop;
$reg->stop;

done_testing();
