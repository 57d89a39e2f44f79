# Shard IDs from an etcd registry: endpoints that fail.
#
#  (a) etcd entirely down when the server starts: the server starts and
#      serves everything but generation, which refuses saying it waits for
#      the registry (state "unreachable"); once etcd is back the shard is
#      claimed with no restart;
#  (b) the first endpoint accepts connections and never answers: the request
#      times out and the worker fails over to the next endpoint;
#  (c) an endpoint that answers HTTP 200 with garbage is an error (state
#      "unreachable", last_error says why), never a hang or a crash.

use strict;
use warnings;

use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use EtcdCluster;
use RegistryTest;
use SnowflakeTest;

plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

my $etcd = EtcdCluster->new(3);

# A listener on a free loopback port that accepts and never answers.
my ($silent_port) = EtcdCluster::pick_ports(1);
my $silent = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $silent_port,
	Proto     => 'tcp',
	ReuseAddr => 1,
	Listen    => 16) or die "could not listen on $silent_port: $!";

# A child process that answers every request with HTTP 200 and garbage.
my ($garbage_port) = EtcdCluster::pick_ports(1);
my $garbage_pid = fork();
die "fork: $!" unless defined $garbage_pid;
if ($garbage_pid == 0)
{
	my $srv = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $garbage_port,
		Proto     => 'tcp',
		ReuseAddr => 1,
		Listen    => 16) or POSIX::_exit(1);
	while (my $c = $srv->accept)
	{
		my $req = '';
		while (my $line = <$c>)
		{
			$req .= $line;
			last if $line eq "\r\n";
		}
		my ($len) = $req =~ /Content-Length: (\d+)/i;
		read($c, my $body, $len) if $len;
		my $answer = '{"header":{"revision":"1"},"ID":"12","TTL":"5"<html>';
		print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		  . "Content-Length: " . length($answer) . "\r\n\r\n$answer";
		close $c;
	}
	POSIX::_exit(0);
}
END { kill 'KILL', $garbage_pid if $garbage_pid; }

###########################################################################
# (a) etcd down at start
###########################################################################

my $a = registry_node('a', $etcd, prefix => '/snowflake/faults', lease => 3);
$etcd->kill_member($_) for 1 .. 3;
$a->start;
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (x int)');
ok($a->poll_query_until('postgres', "SELECT state = 'unreachable' FROM snowflake_registry"),
	'a: with etcd down the registry state is "unreachable"');
my ($ret, $out, $err) = $a->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
isnt($ret, 0, 'a: snowflake_nextval() refuses');
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: this server holds no shard in the registry yet/,
	'a: SQLSTATE 55000, "holds no shard in the registry yet"');
like($err, qr/DETAIL:  The registry worker is trying to reach etcd .*last error: .*(?:granting a lease|Couldn't connect|Connection refused)/,
	'a: the detail says it is trying to reach etcd and why it cannot');
$a->safe_psql('postgres', 'INSERT INTO t VALUES (1)');
is($a->safe_psql('postgres', 'SELECT count(*) FROM t'), 1, 'a: the database works for everything else');
ok(!$a->log_contains(qr/FATAL|PANIC/), 'a: nothing FATAL in the log');
$etcd->start_member($_) for 1 .. 3;
$etcd->wait_healthy;
wait_generating($a, 'a once etcd is back');
like($a->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/, 'a generates, with no restart');
$a->stop;

###########################################################################
# (b) a silent endpoint first: fail-over
###########################################################################

my $b = registry_node('b', $etcd, prefix => '/snowflake/faults', lease => 3,
	endpoints => "http://127.0.0.1:$silent_port," . $etcd->endpoint(2));
$b->start;
$b->safe_psql('postgres', 'CREATE EXTENSION snowflake');
wait_generating($b, 'b with a silent first endpoint');
is(registry_row($b, 'endpoint'), $etcd->endpoint(2), 'b: the endpoint in use is the one that answers');
# Timed by the server's log, from its start to its claim (a request without a
# timeout would wait for the silent endpoint forever; each attempt costs
# lease/8 here, 375 ms): bounded generously, for a loaded machine.
my $b_offset = -s $b->logfile;
$b->restart;
wait_generating($b, 'b after a restart');
my ($b_start) = log_times($b, qr/LOG:  starting PostgreSQL/, $b_offset);
my ($b_claim) = log_times($b, qr/claimed shard \d+ under lease/, $b_offset);
ok( defined $b_start && defined $b_claim && $b_claim - $b_start < 20,
	sprintf('b: a silent endpoint costs a bounded timeout, not a hang (claimed %.1f s after the start)',
		($b_claim // 0) - ($b_start // 0)));
$b->stop;

###########################################################################
# (c) an endpoint that answers garbage
###########################################################################

my $c = registry_node('c', $etcd, prefix => '/snowflake/faults', lease => 3,
	endpoints => "http://127.0.0.1:$garbage_port");
$c->start;
$c->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($c->poll_query_until('postgres',
		"SELECT state = 'unreachable' AND last_error LIKE '%not valid JSON%' FROM snowflake_registry"),
	'c: garbage is an error: state "unreachable", last_error "not valid JSON"');
($ret, $out, $err) = $c->psql('postgres', 'SELECT snowflake_nextval()');
isnt($ret, 0, 'c: snowflake_nextval() refuses');
ok(!$c->log_contains(qr/terminated by signal|PANIC/), 'c: no process crashed');
my $r0 = registry_row($c, 'requests');
ok($c->poll_query_until('postgres', "SELECT requests > $r0 FROM snowflake_registry"),
	'c: the registry worker is alive and keeps retrying');
$c->stop;

$etcd->stop;
done_testing();
