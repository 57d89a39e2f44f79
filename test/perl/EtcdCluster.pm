# EtcdCluster.pm
#	A real etcd cluster for the registry tests: Debian's etcd-server,
#	members on loopback ports, data in the test's temporary directory.
#	Members can be killed (SIGKILL) and started again; every member still
#	running when the test ends is killed.
#
#	use EtcdCluster;
#	my $etcd = EtcdCluster->new(3);     # starts 3 members, waits for health
#	$etcd->endpoints;                   # "http://127.0.0.1:P1,..."
#	$etcd->kill_member(1); $etcd->start_member(1);
#	$etcd->ctl('get', '--prefix', '/snowflake/');
#
#	For the partition tests, members may listen on other addresses and run
#	in a network namespace (NetNs):
#	EtcdCluster->new(3, peer_hosts => ['198.18.5.1', '198.18.5.1', '198.18.5.2'],
#	    client_hosts => [['127.0.0.1', '198.18.5.1'], [...], ['198.18.5.2']],
#	    netns => [undef, undef, $ns], pre_vote => 1);

package EtcdCluster;

use strict;
use warnings;

use IO::Socket::INET;
use PostgreSQL::Test::Utils;
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

our $etcd    = '/usr/bin/etcd';
our $etcdctl = '/usr/bin/etcdctl';

my @all_clusters;

# Whether a TCP port on 127.0.0.1 is free (nothing listens, we can bind).
sub port_free
{
	my ($port) = @_;
	my $sock = IO::Socket::INET->new(
		LocalAddr => '127.0.0.1',
		LocalPort => $port,
		Proto     => 'tcp',
		ReuseAddr => 1,
		Listen    => 1);
	return 0 unless $sock;
	close $sock;
	return 1;
}

# Ports above Linux's ephemeral range (32768-60999) and PostgreSQL::Test::
# Cluster's (10200-32767), so they collide with neither.  scripts/test.sh runs
# two versions at once and gives each its lane (SNOWFLAKE_PORT_LANE 0 or 1):
# each lane draws from its own half of the range.
sub pick_ports
{
	my ($count) = @_;
	my ($low, $high) = (61000, 64999);
	my $lane = $ENV{SNOWFLAKE_PORT_LANE};
	if (defined $lane && $lane =~ /^[01]$/)
	{
		$low += 2000 * $lane;
		$high = $low + 1999;
	}
	my @ports;
	my $port = $low + int(rand($high - $low));
	while (@ports < $count)
	{
		$port = $low if ++$port > $high;
		push @ports, $port if port_free($port);
	}
	return @ports;
}

sub new
{
	my ($class, $members, %o) = @_;
	$members //= 3;
	my @ports = pick_ports(2 * $members);
	my $self = bless {
		dir      => PostgreSQL::Test::Utils::tempdir('etcd'),
		members  => [],
		token    => 'snowflake-test-' . $$ . '-' . int(rand(1e9)),
		pre_vote => $o{pre_vote},
	}, $class;
	for my $i (1 .. $members)
	{
		push @{ $self->{members} },
		  {
			name         => "e$i",
			client_port  => shift @ports,
			peer_port    => shift @ports,
			peer_host    => ($o{peer_hosts} ? $o{peer_hosts}[ $i - 1 ] : undef) // '127.0.0.1',
			client_hosts => ($o{client_hosts} ? $o{client_hosts}[ $i - 1 ] : undef)
			  // ['127.0.0.1'],
			netns   => $o{netns} ? $o{netns}[ $i - 1 ] : undef,
			pid     => undef,
			started => 0,
		  };
	}
	push @all_clusters, $self;
	$self->start_member($_) for 1 .. $members;
	$self->wait_healthy;
	return $self;
}

sub member { my ($self, $i) = @_; return $self->{members}[ $i - 1 ]; }

sub endpoint
{
	my ($self, $i, $host) = @_;
	my $m = $self->member($i);
	return 'http://' . ($host // $m->{client_hosts}[0]) . ':' . $m->{client_port};
}

sub endpoints
{
	my ($self) = @_;
	return join(',', map { $self->endpoint($_) } 1 .. scalar @{ $self->{members} });
}

# Starts (or restarts, keeping its data) member $i.
sub start_member
{
	my ($self, $i) = @_;
	my $m       = $self->member($i);
	my $data    = "$self->{dir}/$m->{name}";
	my $cluster = join(',',
		map { "$_->{name}=http://$_->{peer_host}:$_->{peer_port}" } @{ $self->{members} });
	my $clients = join(',', map { "http://$_:$m->{client_port}" } @{ $m->{client_hosts} });
	my @cmd = (
		$etcd,
		'--name' => $m->{name},
		'--data-dir' => $data,
		'--listen-client-urls' => $clients,
		'--advertise-client-urls' => $self->endpoint($i),
		'--listen-peer-urls' => "http://$m->{peer_host}:$m->{peer_port}",
		'--initial-advertise-peer-urls' => "http://$m->{peer_host}:$m->{peer_port}",
		'--initial-cluster' => $cluster,
		'--initial-cluster-token' => $self->{token},
		'--initial-cluster-state' => ($m->{started} ? 'existing' : 'new'),
		# short elections keep the tests quick
		'--heartbeat-interval' => 100,
		'--election-timeout' => 1000);
	push @cmd, '--pre-vote' if $self->{pre_vote};
	my $log = "$self->{dir}/$m->{name}.log";
	if ($m->{netns})
	{
		# the member's own pid, and sudo's to reap
		($m->{pid}, $m->{sudo_pid}) = $m->{netns}->spawn(\@cmd, $log);
		$m->{started} = 1;
		return;
	}
	my $pid = fork();
	die "fork failed: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>>', $log or POSIX::_exit(1);
		open STDERR, '>&', \*STDOUT or POSIX::_exit(1);
		exec @cmd or POSIX::_exit(1);
	}
	$m->{pid}     = $pid;
	$m->{started} = 1;
	return;
}

# Kills member $i with SIGKILL (a member whose peers are gone can hang on SIGTERM).
sub kill_member
{
	my ($self, $i) = @_;
	my $m = $self->member($i);
	return unless $m->{pid};
	kill 'KILL', $m->{pid};
	waitpid($m->{sudo_pid} // $m->{pid}, 0);
	$m->{pid} = undef;
	$m->{sudo_pid} = undef;
	return;
}

sub stop
{
	my ($self) = @_;
	$self->kill_member($_) for 1 .. scalar @{ $self->{members} };
	return;
}

# Runs etcdctl against the running members; returns its output.
sub ctl
{
	my ($self, @args) = @_;
	my @eps = map { $self->endpoint($_) }
	  grep { $self->member($_)->{pid} } 1 .. scalar @{ $self->{members} };
	local $ENV{ETCDCTL_API} = '3';
	my ($out, $err) = run_command(
		[ $etcdctl, '--endpoints=' . join(',', @eps), '--dial-timeout=2s',
		  '--command-timeout=5s', @args ]);
	return $out;
}

# Waits until a write through every running member succeeds.
sub wait_healthy
{
	my ($self) = @_;
	my $deadline = time + 60;
	local $ENV{ETCDCTL_API} = '3';
	while (time < $deadline)
	{
		my $ok = 1;
		for my $i (grep { $self->member($_)->{pid} } 1 .. scalar @{ $self->{members} })
		{
			my ($out, $err) = run_command(
				[ $etcdctl, '--endpoints=' . $self->endpoint($i), '--dial-timeout=1s',
				  '--command-timeout=2s', 'put', '/health-probe', 'x' ]);
			$ok = 0 unless $out =~ /OK/;
		}
		return 1 if $ok;
		sleep(0.2);
	}
	die "etcd cluster did not become healthy; logs in $self->{dir}";
}

END
{
	local $?;
	$_->stop for @all_clusters;
}

1;
