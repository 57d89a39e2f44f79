# SnowflakeTest.pm
#	The one way the tests make a server (node()), and the helpers the TAP
#	tests share: libfaketime preloaded into one postmaster only, its clock
#	offset, the reloadable clock settings, and one shard's counters; the
#	generator under test; the times a server logged things at; the mark on
#	disk; psql runs that are timed or expected to fail; a postmaster's pid
#	after a backend was killed.
#
#	use FindBin;
#	use lib "$FindBin::RealBin/../perl";
#	use SnowflakeTest;
#
#	my $n = node('a', conf => { 'snowflake.shard_id' => 7 }, extension => 1);
#	my $p = node('p', allows_streaming => 1, conf => "snowflake.shard_id = 1\n", start => 1);
#	$p->backup('b');
#	my $s = node('s', standby => [ $p, 'b' ], start => 1);
#	my $f = node('f', clock_ms => 60_000, start => 1);    # libfaketime, 60 s ahead

package SnowflakeTest;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use POSIX qw(strftime);
use PostgreSQL::Test::Cluster;
use File::Basename ();
use PostgreSQL::Test::Utils qw(slurp_file);
use Test::More;
use Time::HiRes qw(time);
use Time::Local qw(timegm);

our @EXPORT = qw(node managed_install_sql $libfaketime set_clock_ms freeze_clock_ms thaw_clock_ms
  start_faked clock_settings shard_stats generator use_generator
  check_generator log_times mark_ms timed_psql check_refused postmaster_pid
  wait_after_backend_kill connstr_of);

# Debian's faketime package; tests skip themselves when it is missing.
our $libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

# Options of node() that go to PostgreSQL::Test::Cluster's init.
my @init_opts = qw(allows_streaming has_archiving extra);

# The one way a test makes a server: node($name, %opts) returns a new
# PostgreSQL::Test::Cluster node, initialised with the library preloaded and
# the generator under test (snowflake.generator from SNOWFLAKE_GENERATOR, see
# use_generator), then these options:
#   allows_streaming, has_archiving, extra: passed to init;
#   standby => [$primary, $backup]: a streaming standby made from that
#     backup instead (its configuration is its primary's: no preload line,
#     no generator line of its own);
#   preload => 0: neither the library nor the generator (a plain server,
#     such as a PostgreSQL registry);
#   conf => "lines\n", or { name => value } (values quoted, names in order):
#     appended to postgresql.conf after those lines, so it wins;
#   clock_ms => N: libfaketime's clock file, N ms off the real time (the
#     node then starts faked); faked => 1: start faked (the clock as it is,
#     0 when unset); fake_monotonic => 1: fake the monotonic clock too;
#   start => 1: start it; extension => 1: start it and CREATE EXTENSION
#     snowflake in the postgres database.
sub node
{
	my ($name, %o) = @_;
	my %known = map { $_ => 1 } @init_opts,
	  qw(standby preload conf clock_ms faked fake_monotonic start extension);
	my @unknown = grep { !$known{$_} } sort keys %o;
	die "SnowflakeTest::node: unknown option(s) @unknown" if @unknown;

	my $node = PostgreSQL::Test::Cluster->new($name);
	if ($o{standby})
	{
		my ($primary, $backup) = @{ $o{standby} };
		$node->init_from_backup($primary, $backup, has_streaming => 1);
	}
	else
	{
		$node->init(map { exists $o{$_} ? ($_ => $o{$_}) : () } @init_opts);
		if ($o{preload} // 1)
		{
			$node->append_conf('postgresql.conf',
				"shared_preload_libraries = 'snowflake'\n");
			use_generator($node);
		}
	}
	my $conf = $o{conf};
	if (ref $conf eq 'HASH')
	{
		$conf = join '', map {
			my $v = $conf->{$_};
			$v =~ s/'/''/g;
			"$_ = '$v'\n"
		} sort keys %$conf;
	}
	$node->append_conf('postgresql.conf', $conf) if defined $conf && $conf ne '';
	set_clock_ms($node, $o{clock_ms}) if defined $o{clock_ms};

	return $node unless $o{start} || $o{extension};
	if ($o{faked} || defined $o{clock_ms})
	{
		start_faked($node, fake_monotonic => $o{fake_monotonic});
	}
	else
	{
		$node->start;
	}
	$node->safe_psql('postgres', 'CREATE EXTENSION snowflake') if $o{extension};
	return $node;
}

# The faked clock of a node: an offset from the real time in its base dir.
sub clock_file
{
	my ($node) = @_;
	return $node->basedir . '/faketime.rc';
}

# Replaces a node's clock file atomically (rename), so that every call is
# exactly one step of the clock.
sub write_clock_file
{
	my ($node, $text) = @_;
	my $file = clock_file($node);
	my $tmp  = "$file.tmp";
	open my $fh, '>', $tmp or die "could not write $tmp: $!";
	print $fh "$text\n";
	close $fh or die "could not close $tmp: $!";
	rename $tmp, $file or die "could not rename $tmp: $!";
	return;
}

# Sets a node's clock offset from the real time in milliseconds.
sub set_clock_ms
{
	my ($node, $offset_ms) = @_;
	write_clock_file($node,
		$offset_ms == 0 ? '+0' : sprintf('%+.3f', $offset_ms / 1000));
	return;
}

# Holds a node's clock still at $unix_ms (milliseconds since 1970): every
# reading returns exactly that instant until the clock file changes again
# (libfaketime's absolute "YYYY-MM-DD hh:mm:ss.fff", read in local time as
# strftime writes it).  A step between two held instants is exact, however
# long a backend goes without reading the clock: use it to test what a
# backward step does, not how long anything takes (pg_sleep and the
# generator's waits for the clock never end while it stands still).  The
# instant is held half a millisecond in: libfaketime turns the fraction into
# nanoseconds through a double, which can land a hair below the millisecond
# written, and a reading in whole milliseconds would be one short.
sub freeze_clock_ms
{
	my ($node, $unix_ms) = @_;
	my $s = int($unix_ms / 1000);
	write_clock_file($node,
		strftime('%Y-%m-%d %H:%M:%S', localtime($s))
		  . sprintf('.%03d5', $unix_ms - $s * 1000));
	return;
}

# Lets a held clock run again from $from_ms: sets the offset from the real
# time, measured before the file changes, so that no reading after it is
# earlier than $from_ms (no backward step).  Returns the offset in ms.
sub thaw_clock_ms
{
	my ($node, $from_ms) = @_;
	my $offset_ms = $from_ms - int(time * 1000);
	set_clock_ms($node, $offset_ms);
	return $offset_ms;
}

# Starts a node with libfaketime preloaded into its postmaster (and so its
# children) only: psql, pgbench and other nodes keep the real clock.  Only
# the wall clock is faked, as an NTP step would, unless fake_monotonic => 1.
sub start_faked
{
	my ($node, %opts) = @_;
	set_clock_ms($node, 0) unless -f clock_file($node);
	local $ENV{LD_PRELOAD}                   = $libfaketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE}      = clock_file($node);
	local $ENV{FAKETIME_NO_CACHE}            = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	delete $ENV{FAKETIME_DONT_FAKE_MONOTONIC} if $opts{fake_monotonic};
	$node->start;
	return;
}

# Writes snowflake.max_clock_lead / max_clock_wait (ms) into the node's
# snowflake_clock.conf (which its postgresql.conf must include); when the
# node is running, reloads it and waits until new sessions see the values.
sub clock_settings
{
	my ($node, $lead_ms, $wait_ms, $running) = @_;
	my $file = $node->data_dir . '/snowflake_clock.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh "snowflake.max_clock_lead = '${lead_ms}ms'\n"
	  . "snowflake.max_clock_wait = '${wait_ms}ms'\n";
	close $fh or die "could not close $file: $!";
	return unless $running;
	$node->reload;
	ok( $node->poll_query_until(
			'postgres', q{
			SELECT string_agg(setting, ',' ORDER BY name) FROM pg_settings
			WHERE name IN ('snowflake.max_clock_lead', 'snowflake.max_clock_wait')},
			"$lead_ms,$wait_ms"),
		"settings reloaded: max_clock_lead = $lead_ms ms, max_clock_wait = $wait_ms ms");
	return;
}

# The numeric counters of snowflake_stats.
my @stat_cols = qw(ids_issued sequence_exhausted clock_steps_back
  largest_step_back_ms waits wait_time_ms refusals mark_writes
  inline_mark_writes);

# One shard's counters as a hash reference (zeros when it has no row yet).
sub shard_stats
{
	my ($node, $shard) = @_;
	my $cols = join(', ', map { "coalesce(max($_), 0)" } @stat_cols);
	my @v = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT $cols FROM snowflake_stats WHERE shard_id = $shard");
	my %h;
	@h{@stat_cols} = @v;
	return \%h;
}

# The generator under test: SNOWFLAKE_GENERATOR (scripts/test.sh runs the
# concurrency, clock and logical-shard tests once per generator), or the
# default.
sub generator
{
	return $ENV{SNOWFLAKE_GENERATOR} // 'atomic';
}

# Configures an initialised node for that generator.
sub use_generator
{
	my ($node) = @_;
	$node->append_conf('postgresql.conf',
		"snowflake.generator = '" . generator() . "'\n");
	return;
}

# Checks that a running node uses it.
sub check_generator
{
	my ($node) = @_;
	is($node->safe_psql('postgres', 'SHOW snowflake.generator'),
		generator(), $node->name . ': runs the ' . generator() . ' generator');
	return;
}

# The times (seconds, with the milliseconds) at which $node logged the lines
# that match $re, from byte $offset of its log on, in order.  They come from
# the log_line_prefix of the test clusters ("%m": the server's own clock when
# it wrote the line), so they time what the servers did, not when a loaded
# test got round to looking.  Read as UTC: the differences between them are
# exact (unless daylight saving time changed between them), and they are Unix
# times when the log's zone is UTC.  A node whose clock is faked logs its
# faked time.
sub log_times
{
	my ($node, $re, $offset) = @_;
	my @times;
	for my $line (split /\n/, slurp_file($node->logfile, $offset // 0))
	{
		next unless $line =~ $re;
		my ($y, $mo, $d, $h, $mi, $s) =
		  $line =~ /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) /
		  or next;
		push @times, timegm(0, $mi, $h, $d, $mo - 1, $y) + $s;
	}
	return @times;
}

# The durable mark recorded in a node's data directory (Unix ms of
# pg_snowflake/mark), or undef when there is none.
sub mark_ms
{
	my ($node) = @_;
	my $file = $node->data_dir . '/pg_snowflake/mark';
	return undef unless -f $file;
	my ($ms) = slurp_file($file) =~ /^mark_unix_ms (-?\d+)$/m;
	return $ms;
}

# Runs $sql in a new psql session on $node, with psql's timeout (s);
# returns (exit code, stdout, stderr, seconds it took).
sub timed_psql
{
	my ($node, $sql, $timeout) = @_;
	my $t0 = time;
	my ($ret, $out, $err) = $node->psql('postgres', $sql, timeout => $timeout);
	return ($ret, $out, $err, time - $t0);
}

# Checks that $sql fails on $node ("$what: refused") with an error that
# matches $re (VERBOSITY verbose: with the SQLSTATE); returns the error.
sub check_refused
{
	my ($node, $sql, $re, $what) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($rc, 0, "$what: refused");
	like($err, $re, "$what: the error says why");
	return $err;
}

# The pid of a node's postmaster, from its postmaster.pid.
sub postmaster_pid
{
	my ($node) = @_;
	my ($first) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	return $first;
}

# After a backend of $node was killed: waits until the postmaster has
# noticed (in its log from byte $offset on), reinitialised and finished
# crash recovery, and accepts connections; true if it does in time.
sub wait_after_backend_kill
{
	my ($node, $offset) = @_;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/,
		$offset);
	foreach my $attempt (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		my ($out, $err) = ('', '');
		IPC::Run::run(
			[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'SELECT 1' ],
			'>', \$out, '2>', \$err);
		return 1 if $? == 0 && $out eq "1\n";
		Time::HiRes::usleep(100_000);
	}
	return 0;
}

# A connection string for a subscription to $node's postgres database (no
# quotes inside).
sub connstr_of
{
	my ($node) = @_;
	return 'port=' . $node->port . ' host=' . $node->host . ' dbname=postgres';
}


# The SQL edition's plain install script (managed/install.sql), as a database
# owner runs it: the release checks fail when it differs from what
# managed/build.sh makes of managed/src/, so the tests install what users get.
sub managed_install_sql
{
	my $dir = File::Basename::dirname(__FILE__);
	return PostgreSQL::Test::Utils::slurp_file("$dir/../../managed/install.sql");
}

1;
