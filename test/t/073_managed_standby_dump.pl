# The SQL edition across failover and dump/restore: a synchronous standby,
# promoted after the primary crashed (pg_ctl -m immediate) while writers
# were committing, continues above every ID the primary committed; a
# pg_dump/pg_restore of the database by its (non-superuser) owner keeps the
# configuration and the sequences' positions, so the restored database
# continues above every ID in the dump, with its fast path bound to its own
# sequences.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $install_sql = managed_install_sql();

my $primary = node('managed_primary', preload => 0, allows_streaming => 1, start => 1);
$primary->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE DATABASE appdb OWNER app;
});
$primary->safe_psql('appdb', "\\set ON_ERROR_STOP 1\n" . $install_sql, extra_params => [ '-U', 'app' ]);
$primary->safe_psql('appdb', q{
	SELECT snowflake_configure(shard_id => 1);
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), client int, n bigserial);
	INSERT INTO t (client) SELECT 0 FROM generate_series(1, 1000);
}, extra_params => [ '-U', 'app' ]);

$primary->backup('b');
my $standby = node('managed_standby', standby => [ $primary, 'b' ], start => 1);
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'managed_standby'\n");
$primary->reload;
ok( $primary->poll_query_until('postgres',
		q{SELECT sync_state FROM pg_stat_replication WHERE application_name = 'managed_standby'}, 'sync'),
	'the standby is synchronous');

# Writers commit on the primary, which crashes under them.
my $script = $primary->basedir . '/insert.sql';
open my $fh, '>', $script or die $!;
print $fh "INSERT INTO t (client) VALUES (:client_id + 1);\n";
close $fh;
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client=4', '--jobs=2', '--time=30', "--file=$script",
		'-U', 'app', '-h', $primary->host, '-p', $primary->port, 'appdb'
	],
	'>', \$out, '2>', \$err);
usleep(3_000_000);
$primary->stop('immediate');
$h->finish;
unlike($err, qr/duplicate key/, 'writers on the primary: no duplicate key');

$standby->promote;
my $max_primary = $standby->safe_psql('appdb', 'SELECT max(id) FROM t');
my $rows = $standby->safe_psql('appdb', 'SELECT count(*) FROM t WHERE client > 0');
cmp_ok($rows, '>', 0, "the promoted standby holds the rows committed by the writers ($rows)");

$standby->safe_psql('appdb', 'INSERT INTO t (client) SELECT 99 FROM generate_series(1, 2000)',
	extra_params => [ '-U', 'app' ]);
is( $standby->safe_psql(
		'appdb', qq{
	SELECT count(*), min(id) > $max_primary, count(*) FILTER (WHERE (id >> 12) & 1023 <> 1)
	FROM t WHERE client = 99}),
	'2000|t|0',
	'promoted standby: 2,000 new IDs, all above every ID the primary committed');
is($standby->safe_psql('appdb', 'SELECT count(*) = count(DISTINCT id) FROM t'), 't', 'no duplicate');

# Dump by the owner, restore into a new database of the same owner.
$standby->safe_psql('postgres', 'CREATE DATABASE appdb2 OWNER app');
my $dump = $standby->basedir . '/appdb.dump';
$standby->command_ok(
	[ 'pg_dump', '-Fc', '-U', 'app', '-h', $standby->host, '-p', $standby->port, '-f', $dump, 'appdb' ],
	'pg_dump by the owner');
my $max_dumped = $standby->safe_psql('appdb', 'SELECT max(id) FROM t');
my ($rc, $rout, $rerr) = ('', '', '');
IPC::Run::run(
	[ 'pg_restore', '-U', 'app', '-h', $standby->host, '-p', $standby->port, '-d', 'appdb2', $dump ],
	'>', \$rout, '2>', \$rerr);
is($rerr, '', 'pg_restore by the owner: no error');

is($standby->safe_psql('appdb2', 'SELECT shard_id FROM snowflake__config'), '1',
	'restored: the configuration');
like($standby->safe_psql('appdb2', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT snowflake_nextval()', extra_params => [ '-U', 'app' ]),
	qr/nextval\('snowflake__seq_1'::regclass\)/, 'restored: the fast path is inlined and bound to the restored sequence');
is( $standby->safe_psql(
		'appdb2', qq{
	INSERT INTO t (client) SELECT 98 FROM generate_series(1, 1000);
	SELECT count(*), min(id) > $max_dumped FROM t WHERE client = 98}, extra_params => [ '-U', 'app' ]),
	'1000|t',
	'restored: new IDs above every ID in the dump');
is($standby->safe_psql('appdb2', 'SELECT count(*) = count(DISTINCT id) FROM t'), 't',
	'restored: no duplicate');
# The original database is untouched by the restored one's generation.
is( $standby->safe_psql(
		'appdb', qq{SELECT snowflake_nextval() > $max_dumped}, extra_params => [ '-U', 'app' ]),
	't', 'the original database continues too');

$standby->stop;
done_testing();
