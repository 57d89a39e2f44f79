# NetNs.pm
#	Network namespaces for the partition tests, through the root helper
#	scripts/test.sh installs (/usr/local/sbin/snowflake-netns, run with
#	sudo): each namespace has a veth pair to the host, 198.18.N.1 outside
#	and 198.18.N.2 inside.  A server started inside keeps its Unix socket in
#	the shared file system, so clients reach it whatever happens to its
#	network; cut() drops every packet of the namespace that is not on its
#	loopback, heal() lets them through again.  Namespaces are deleted when
#	the test ends.
#
#	plan skip_all => NetNs::unavailable() if NetNs::unavailable();
#	my $ns = NetNs->new;
#	$ns->start_node($node);             # a node of SnowflakeTest::node (not started), inside
#	my $pid = $ns->spawn(\@cmd, $log);  # any command, inside, in the background
#	$ns->cut; $ns->heal;
#	$ns->outer; $ns->inner;             # the addresses

package NetNs;

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Utils;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep);

our $helper = '/usr/local/sbin/snowflake-netns';
my @all;

# Runs the helper through sudo: its output, its errors, and whether it succeeded.
sub run_helper
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'sudo', '-n', $helper, @args ], '>', \$out, '2>', \$err);
	chomp $out;
	return ($out, $err, $ok);
}

# Why namespaces cannot be used here (undef if they can).
sub unavailable
{
	return "the partition helper $helper is not installed (scripts/test.sh installs it as root)"
	  unless -x $helper;
	my ($out, $err) = run_helper('check');
	return "the partition helper does not work here: $err" unless $out eq 'ok';
	return undef;
}

sub new
{
	my ($class) = @_;
	my ($n, $err) = run_helper('create');
	die "could not make a network namespace: $err" unless $n =~ /^\d+$/;
	my $self = bless { n => $n }, $class;
	push @all, $self;
	return $self;
}

sub n     { return $_[0]->{n}; }
sub outer { return '198.18.' . $_[0]->{n} . '.1'; }
sub inner { return '198.18.' . $_[0]->{n} . '.2'; }

sub cut
{
	my ($self) = @_;
	my ($out, $err, $ok) = run_helper('cut', $self->{n});
	die "cut failed: $err" unless $ok;
	return;
}

sub heal
{
	my ($self) = @_;
	my ($out, $err, $ok) = run_helper('heal', $self->{n});
	die "heal failed: $err" unless $ok;
	return;
}

# An absolute path for a program on PATH.
sub which
{
	my ($prog) = @_;
	for my $dir (split /:/, $ENV{PATH})
	{
		return "$dir/$prog" if -x "$dir/$prog";
	}
	die "$prog not found on PATH";
}

# Starts a PostgreSQL::Test::Cluster node inside the namespace, as its start() would.
sub start_node
{
	my ($self, $node) = @_;
	my ($out, $err, $ok) = run_helper('exec', $self->{n}, which('pg_ctl'), '-w', '-D',
		$node->data_dir, '-l', $node->logfile, '-o', '--cluster-name=' . $node->name, 'start');
	die "could not start " . $node->name . " in namespace $self->{n}: $err" unless $ok;
	$node->_update_pid(1);
	return;
}

# Starts a command inside the namespace in the background; returns the pid
# of the command itself (not of sudo), once it runs.
sub spawn
{
	my ($self, $cmd, $log) = @_;
	my $name = (split m{/}, $cmd->[0])[-1];
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open STDOUT, '>>', $log or POSIX::_exit(1);
		open STDERR, '>&', \*STDOUT or POSIX::_exit(1);
		exec 'sudo', '-n', $helper, 'exec', $self->{n}, @$cmd or POSIX::_exit(1);
	}
	for (1 .. 200)
	{
		my $found = descendant_named($pid, $name);
		return ($found, $pid) if $found;
		sleep 0.05;
	}
	die "$name did not start in namespace $self->{n}";
}

# A descendant of $pid whose command name is $name.
sub descendant_named
{
	my ($pid, $name) = @_;
	my %parent;
	my %comm;
	opendir my $dh, '/proc' or return;
	for my $p (grep { /^\d+$/ } readdir $dh)
	{
		open my $fh, '<', "/proc/$p/stat" or next;
		my $stat = <$fh>;
		close $fh;
		next unless defined $stat && $stat =~ /^\d+ \((.*)\) \S+ (\d+)/s;
		$comm{$p}   = $1;
		$parent{$p} = $2;
	}
	closedir $dh;
	for my $p (keys %comm)
	{
		next unless $comm{$p} eq substr($name, 0, 15);
		for (my $q = $parent{$p}; defined $q && $q > 1; $q = $parent{$q})
		{
			return $p if $q == $pid;
		}
	}
	return;
}

sub delete
{
	my ($self) = @_;
	return unless $self->{n};
	run_helper('delete', $self->{n});
	$self->{n} = undef;
	return;
}

END
{
	local $?;
	$_->delete for @all;
}

1;
