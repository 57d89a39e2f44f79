# The SQL edition under 8 concurrent writers (pgbench inserting
# DEFAULT snowflake_nextval() into a table keyed by it), with the server's
# clock stepped back by seconds (libfaketime in the postmaster) while they
# run, then a crash (pg_ctl -m immediate) in the middle of a second run, a
# restart and a third run: no duplicate (the primary key would refuse it, and
# the IDs are counted), IDs of each session increasing in commit order, and
# every ID after the crash above every ID committed before it.

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

plan skip_all => "libfaketime not found at $libfaketime (Debian: faketime)"
  unless -f $libfaketime;

my $install_sql = managed_install_sql();

my $node = node('managed_conc', preload => 0, clock_ms => 0,
	conf => "max_connections = 40\n", start => 1);
$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE DATABASE appdb OWNER app;
	CREATE ROLE writer LOGIN;
});

sub ok_as
{
	my ($role, $sql) = @_;
	return $node->safe_psql('appdb', $sql, extra_params => [ '-U', $role ]);
}

ok_as('app', "\\set ON_ERROR_STOP 1\n" . $install_sql);
ok_as('app', q{
	SELECT snowflake_configure(shard_id => 11, max_clock_lead => 1000, max_clock_wait => 10000);
	-- run: which pgbench run; client: pgbench's client; n: commit order
	-- within a session (drawn in the same statement as the ID)
	CREATE TABLE t (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		run int NOT NULL,
		client int NOT NULL,
		n bigserial);
	GRANT INSERT ON t TO writer;
	GRANT USAGE ON SEQUENCE t_n_seq TO writer;
});

my $script = $node->basedir . '/insert.sql';
# pgbench as the role "writer" (not the owner), 8 clients, for $secs seconds.
sub start_pgbench
{
	my ($run, $secs, $out, $err) = @_;
	open my $fh, '>', $script or die $!;
	print $fh "INSERT INTO t (run, client) VALUES ($run, :client_id);\n";
	close $fh;
	return IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--client=8', '--jobs=2', "--time=$secs",
			'--file=' . $script, '-U', 'writer', '-h', $node->host, '-p', $node->port, 'appdb'
		],
		'>', $out, '2>', $err);
}

# Run 1: the clock steps back 3 s (beyond the 1 s lead) while 8 clients insert.
my ($out1, $err1) = ('', '');
my $h = start_pgbench(1, 8, \$out1, \$err1);
usleep(2_500_000);
set_clock_ms($node, -3000);
$h->finish;
like($out1, qr/number of failed transactions: 0 /, 'run 1 (clock stepped back 3 s): no failed transaction');
unlike($err1, qr/duplicate key/, 'run 1: no duplicate key');
my $n1 = ok_as('app', 'SELECT count(*) FROM t WHERE run = 1');
cmp_ok($n1, '>', 100, "run 1 inserted rows ($n1)");

# Run 2: crashed in the middle.
my ($out2, $err2) = ('', '');
$h = start_pgbench(2, 30, \$out2, \$err2);
usleep(3_000_000);
$node->stop('immediate');
$h->finish;
unlike($err2, qr/duplicate key/, 'run 2 (crashed): no duplicate key');
start_faked($node);
my $n2 = ok_as('app', 'SELECT count(*) FROM t WHERE run = 2');
cmp_ok($n2, '>', 0, "run 2 committed rows before the crash ($n2)");
my $max_before = ok_as('app', 'SELECT max(id) FROM t');

# Run 3: after the restart, the clock still 3 s behind the IDs issued.
my ($out3, $err3) = ('', '');
$h = start_pgbench(3, 5, \$out3, \$err3);
$h->finish;
like($out3, qr/number of failed transactions: 0 /, 'run 3 (after the crash): no failed transaction');
unlike($err3, qr/duplicate key/, 'run 3: no duplicate key');
unlike(slurp_file($node->logfile), qr/duplicate key/, 'the server never refused a duplicate key');

is(ok_as('app', 'SELECT count(*) = count(DISTINCT id) FROM t'), 't', 'all IDs distinct');
is(ok_as('app', 'SELECT count(DISTINCT client) FROM t WHERE run = 3'), '8', 'run 3: all 8 clients inserted');
is( ok_as(
		'app', q{
	SELECT count(*) FROM (
		SELECT id, lag(id) OVER (PARTITION BY run, client ORDER BY n) AS prev FROM t) s
	WHERE id <= prev}),
	'0',
	'within each session, IDs strictly increase in commit order');
is(ok_as('app', "SELECT min(id) > $max_before FROM t WHERE run = 3"), 't',
	'every ID after the crash is above every ID committed before it');
is(ok_as('app', 'SELECT count(*) FROM t WHERE (id >> 12) & 1023 <> 11'), '0', 'every ID carries shard 11');

$node->stop;
done_testing();
