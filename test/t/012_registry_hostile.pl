# The registry against odd states (issue 17: defects 4, 5, 6 and 8, and the
# audit's "a hostile or garbage registry"), with a real etcd cluster:
#  (a) garbage under the prefix, edited by hand: a freshness mark far in the
#      future, one beyond the layout, one that is not a number, keys of another
#      layout and junk keys.  Each bad mark refuses its shard only (LOG line,
#      state "mark refused" for an explicit shard, another shard for a pool);
#      nothing reaches pg_snowflake/mark; the server without a registry
#      generates normally afterwards; a fixed key is claimed again;
#  (b) the answer to a claim is lost (a proxy forwards the claim to etcd and
#      drops the connection before answering): the server takes the shard it
#      holds under its own lease instead of refusing itself forever; from a
#      pool, it takes that shard rather than another (no shard leaks);
#  (c) a call that waits for the clock re-checks its lease: etcd frozen while
#      the call waits, the deadline passes, and the call refuses instead of
#      returning an ID after the deadline;
#  (d) an etcd outage: generation goes on until the lease deadline (the
#      freshness mark is published that far), not only to a mark a few
#      seconds ahead; the LOG line about the deadline comes on time; the view
#      shows the held shard in snowflake_layout() and generating = f after it;
#  (e) a crash, then a restart: the server takes its own shard back and
#      generates at once (above its own durable mark), not after waiting for
#      the mark it had published up to its lease deadline.

use strict;
use warnings;

use IO::Socket::INET;
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use EtcdCluster;
use RegistryTest;
use SnowflakeTest;

plan skip_all => 'etcd is not installed' unless -x $EtcdCluster::etcd;

my $etcd = EtcdCluster->new(3);

###########################################################################
# (a) garbage in the registry
###########################################################################

my $prefix = '/snowflake/garbage';
my $now_ms = int(time * 1000);
$etcd->ctl('put', "$prefix/shards/9/mark", '3000000000000000');           # year 97036
$etcd->ctl('put', "$prefix/shards/10/mark", ($now_ms + 86_400_000) . ''); # a day ahead
$etcd->ctl('put', "$prefix/shards/11/mark", 'twelve o\'clock');           # not a number
$etcd->ctl('put', "$prefix/shards/5000/holder", 'a key of a wider layout');
$etcd->ctl('put', "$prefix/shards/x/holder", 'junk');
$etcd->ctl('put', "$prefix/shards/12/mark", ($now_ms - 1000) . '');       # a sane one

# an explicit shard with an absurd mark
my $x = registry_node('x', $etcd, prefix => $prefix, lease => 3, shard_id => 9);
$x->start;
$x->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($x->poll_query_until('postgres', q{SELECT state = 'mark refused' FROM snowflake_registry}),
	'explicit shard 9 with a mark in year 97036: state "mark refused"');
like(registry_row($x, 'last_error'), qr{The freshness mark /snowflake/garbage/shards/9/mark is 3000000000000000, beyond the last time this layout can represent},
	'last_error names the key and what is wrong');
ok($x->log_contains(qr/LOG:  snowflake registry: refusing shard 9/), 'a LOG line names the shard');
my ($rc, $out, $err) = $x->psql('postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: the freshness mark of shard 9 in the registry is refused/,
	'generation refuses, saying why (55000)');
is(holder_in_etcd($etcd, $prefix, 9), '', 'the refused shard is not kept in etcd');
ok((mark_ms($x) // 0) < 4_000_000_000_000, 'nothing of the absurd mark reached pg_snowflake/mark');
$x->stop;

# the same data directory without a registry: generation works
$x->append_conf('postgresql.conf', "snowflake.registry = ''\n");
$x->start;
like($x->safe_psql('postgres', 'SELECT snowflake_nextval()'), qr/^\d+$/,
	'without the registry the server generates: the durable mark is not poisoned');
$x->stop;

# a pool of the three bad shards: each is refused, and the server says so
my $y = registry_node('y', $etcd, prefix => $prefix, lease => 3, shards => '9-11');
$y->start;
$y->safe_psql('postgres', 'CREATE EXTENSION snowflake');
foreach my $bad (9, 10, 11)
{
	my $seen = 0;
	for (1 .. 300)
	{
		last if ($seen = $y->log_contains(qr/refusing shard $bad\b/));
		sleep 0.1;
	}
	ok($seen, "pool: shard $bad was refused with a LOG line");
}
ok($y->poll_query_until('postgres', q{SELECT state = 'mark refused' FROM snowflake_registry}),
	'pool: every free shard refused: state "mark refused"');
($rc, $out, $err) = $y->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/the freshness marks of the free shards of the pool "9-11" in the registry are refused/,
	'pool: generation refuses, saying why');
is(holder_in_etcd($etcd, $prefix, $_), '', "pool: shard $_ is not kept") for 9 .. 11;
$y->stop;

# the pool 9-12: shard 12, whose mark is sane, is claimed
$y->append_conf('postgresql.conf', "snowflake.registry_shards = '9-12'\n");
$y->start;
wait_generating($y, 'a pool with three bad marks and one good one');
is(held_shard($y), '12', 'the pool claimed the shard with the sane mark');
ok(!$y->log_contains(qr/PANIC|FATAL|terminated by signal/), 'no crash, nothing fatal');
my $id = $y->safe_psql('postgres', 'SELECT snowflake_nextval()');
is($y->safe_psql('postgres', "SELECT snowflake_shard_id($id), snowflake_timestamp($id) < now() + interval '1 minute'"),
	'12|t', 'IDs carry shard 12 and a time near the clock');
is($y->safe_psql('postgres', 'SELECT shard_id FROM snowflake_layout()'), '12',
	'snowflake_layout().shard_id is the shard held from the registry');
$y->stop;

# fixed by hand: the explicit shard is claimed once its refusal has aged out
$etcd->ctl('put', "$prefix/shards/9/mark", int(time * 1000) . '');
$x->append_conf('postgresql.conf', "snowflake.registry = '" . $etcd->endpoints . "'\n");
$x->start;
wait_generating($x, 'shard 9 after its mark was fixed');
is(held_shard($x), '9', 'x holds shard 9');
$x->stop;

###########################################################################
# (b) the answer to the claim is lost
###########################################################################

# A proxy in front of one etcd member that applies the first claim
# (a transaction comparing a key's create revision) and drops the connection
# instead of answering it.
my $proxy = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
	Listen => 5, ReuseAddr => 1, Proto => 'tcp') or die "proxy: $!";
my $proxy_port = $proxy->sockport;
my $etcd_port = $etcd->member(1)->{client_port};
my $proxy_pid = fork();
die "fork: $!" unless defined $proxy_pid;
if ($proxy_pid == 0)
{
	my %dropped;
	while (my $c = $proxy->accept)
	{
		while (1)
		{
			my $head = '';
			while ($head !~ /\r\n\r\n$/)
			{
				my $n = sysread($c, my $ch, 1);
				last unless $n;
				$head .= $ch;
			}
			last unless $head =~ /^POST (\S+) /;
			my $path = $1;
			my ($len) = $head =~ /Content-Length: (\d+)/i;
			my $body = '';
			while (length($body) < ($len // 0))
			{
				my $n = sysread($c, my $buf, $len - length($body));
				last unless $n;
				$body .= $buf;
			}
			my $e = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $etcd_port,
				Proto => 'tcp') or last;
			print $e "POST $path HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			  . "Content-Length: " . length($body) . "\r\nConnection: close\r\n\r\n$body";
			my $answer = '';
			while (sysread($e, my $buf, 65536)) { $answer .= $buf; }
			close $e;
			# the first claim of each key: etcd applied it; the client never hears
			if ($path eq '/v3/kv/txn' && $body =~ /"key":"([^"]+)","target":"CREATE"/
				&& !$dropped{$1}++)
			{
				last;
			}
			# re-framed with a Content-Length, so the client may keep the connection
			my ($status, $headers, $rest) = $answer =~ /^(HTTP\/1\.1 \d+[^\r]*)\r\n(.*?)\r\n\r\n(.*)$/s;
			last unless defined $status;
			if ($headers =~ /Transfer-Encoding: chunked/i)
			{
				my $plain = '';
				while ($rest =~ s/^([0-9a-fA-F]+)\r\n//)
				{
					my $size = hex $1;
					last if $size == 0;
					$plain .= substr($rest, 0, $size);
					$rest = substr($rest, $size + 2);
				}
				$rest = $plain;
			}
			print $c "$status\r\nContent-Type: application/json\r\nContent-Length: "
			  . length($rest) . "\r\n\r\n$rest";
		}
		close $c;
	}
	POSIX::_exit(0);
}
END { kill 'KILL', $proxy_pid if $proxy_pid; }

my $l = registry_node('lost', $etcd, prefix => '/snowflake/lost', lease => 3, shard_id => 4,
	endpoints => "http://127.0.0.1:$proxy_port");
$l->start;
$l->safe_psql('postgres', 'CREATE EXTENSION snowflake');
wait_generating($l, 'a server whose first claim was answered into the void');
is(held_shard($l), '4', 'it holds shard 4');
ok($l->log_contains(qr/shard 4 is already held under this server's lease \w+; taking it/),
	'the LOG says it took the shard held under its own lease');
like(holder_in_etcd($etcd, '/snowflake/lost', 4), qr/port \Q${\ $l->port }\E/,
	'the holder key is this server\'s');
$l->stop;
is(holder_in_etcd($etcd, '/snowflake/lost', 4), '', 'a clean stop released it: nothing leaked');

# the same from a pool: the retry takes the shard whose claim went unanswered,
# instead of claiming another and leaving that one held under its lease
reconfigure($l, $etcd, prefix => '/snowflake/lostpool', lease => 3, shards => '4-5',
	endpoints => "http://127.0.0.1:$proxy_port");
$l->start;
wait_generating($l, 'a pool server whose first claim was answered into the void');
my $pool_shard = held_shard($l);
ok($l->log_contains(qr/shard $pool_shard is already held under this server's lease \w+; taking it/),
	'it took the shard of its unanswered claim');
is(scalar(grep { holder_in_etcd($etcd, '/snowflake/lostpool', $_) ne '' } 4, 5), 1,
	'one holder key in the pool: the unanswered claim did not leak a shard');
$l->stop;

###########################################################################
# (c) a call that waits for the clock re-checks its lease
###########################################################################

SKIP:
{
	skip "libfaketime is not installed ($libfaketime)", 6 unless -f $libfaketime;
	# "At the deadline" against "after its wait for the clock": the clock
	# steps back 40 s, so the call would wait about that long for it (less
	# the time it took to start), while the lease deadline is at most 2.4 s
	# (lease 3 s less 1/5) after the last renewal: the two ends lie far apart
	# whatever the scheduling, and etcd is frozen only once the call is seen
	# waiting.
	my $w = registry_node('waiter', $etcd, prefix => '/snowflake/waiter', lease => 3,
		shard_id => 5);
	$w->append_conf('postgresql.conf',
		"snowflake.max_clock_lead = 0\nsnowflake.max_clock_wait = '60s'\n");
	start_faked($w);
	$w->safe_psql('postgres', 'CREATE EXTENSION snowflake');
	wait_generating($w);
	$w->safe_psql('postgres', 'SELECT count(*) FROM snowflake_nextval_batch(1000)');
	set_clock_ms($w, -40000);
	my ($stdout, $stderr) = ('', '');
	my $call = IPC::Run::start(
		[
			'psql', '-X', '-d', $w->connstr('postgres') . ' application_name=waiter',
			'-c', 'SELECT snowflake_nextval()'
		],
		'>', \$stdout, '2>', \$stderr);
	ok( $w->poll_query_until(
			'postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'waiter' AND wait_event_type = 'Extension'}),
		'the call waits for the clock');
	# etcd frozen: no renewal, the lease deadline (<= 2.4 s away) passes while the call waits
	my @pids = map { $etcd->member($_)->{pid} } 1 .. 3;
	kill 'STOP', @pids;
	my $t0 = time;
	$call->finish;
	my $waited = time - $t0;
	kill 'CONT', @pids;
	like($stderr, qr/cannot generate snowflake IDs: the registry lease of shard 5 is not known to be valid/,
		'the waiting call refuses once the lease deadline passed');
	ok($waited < 20, sprintf('at the deadline, not after its wait for the clock (%.1f s)', $waited));
	unlike($stdout, qr/^\s*\d{10,}/m, 'it returned no ID');
	$etcd->wait_healthy;
	set_clock_ms($w, 0);
	wait_generating($w, 'the waiter once etcd is back');
	$w->stop;
}

###########################################################################
# (d) an etcd outage: generation lasts to the lease deadline
###########################################################################

my $o = registry_node('outage', $etcd, prefix => '/snowflake/outage', lease => 10, shard_id => 6);
$o->start;
$o->safe_psql('postgres', 'CREATE EXTENSION snowflake');
wait_generating($o);
# keep generating so that the mark is kept fresh
$o->safe_psql('postgres', 'SELECT count(*) FROM snowflake_nextval_batch(10000)');
ok($o->poll_query_until('postgres',
		'SELECT freshness_mark >= lease_deadline FROM snowflake_registry'),
	'the published freshness mark reaches the lease deadline');

my @pids = map { $etcd->member($_)->{pid} } 1 .. 3;
kill 'STOP', @pids;
my $cut = time;
my $deadline = $o->safe_psql('postgres',
	'SELECT extract(epoch FROM lease_deadline) FROM snowflake_registry');
# a client that generates every 20 ms and reports the last success and the first refusal
($rc, $out, $err) = $o->psql('postgres', q{
DO $$
DECLARE
	last_ok timestamptz;
BEGIN
	LOOP
		BEGIN
			PERFORM snowflake_nextval();
			last_ok := clock_timestamp();
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			RAISE NOTICE 'last ok % refused %: %', extract(epoch FROM last_ok),
				extract(epoch FROM clock_timestamp()), SQLERRM;
			RETURN;
		END;
		PERFORM pg_sleep(0.02);
	END LOOP;
END $$;});
is($o->safe_psql('postgres', q{SELECT generating FROM snowflake_registry}), 'f',
	'the view says generating = f after the deadline');
kill 'CONT', @pids;
my ($last_ok, $refused_at, $why) = $err =~ /last ok ([\d.]+) refused ([\d.]+): (.*)/;
ok(defined $last_ok, 'the outage ended generation') or diag($err);
like($why // '', qr/the registry lease of shard 6 is not known to be valid/,
	'it ended at the lease, not at a freshness mark');
ok(($last_ok // 0) > $deadline - 1.0,
	sprintf('the last ID came %.2f s before the lease deadline (%.1f s after the cut)',
		$deadline - ($last_ok // 0), ($last_ok // 0) - $cut));
# The worker logs it on its next tick after the deadline, which can come after
# a backend's own check of the deadline refused (the worker may be in a
# request to the stopped etcd, bounded by the deadline, or descheduled): the
# log is read until the line is there, for up to 15 s; the line's own time
# must still be within 1 s of the deadline.
my $logged;
for (1 .. 150)
{
	($logged) = log_times($o, qr/LOG:  snowflake registry: the lease deadline of shard 6 passed/);
	last if defined $logged;
	sleep 0.1;
}
ok(defined $logged, 'the lease deadline is logged');
if (defined $logged)
{
	ok($logged - $deadline < 1.0,
		sprintf('on time: %.2f s after the deadline', $logged - $deadline));
}
$etcd->wait_healthy;
wait_generating($o, 'the outage server once etcd is back');

###########################################################################
# (e) a crash, then a restart: its own shard back at once
#
# With a 60 s lease the published freshness mark runs about 50 s ahead of
# the clock, its own durable mark about 2 s: the first ID after the crash
# lies below the freshness mark published before it, however long the
# restart took on a loaded machine (the clock stays below that mark for the
# better part of a minute).  Had it resumed above that mark, the call would
# have been refused (50 s is more than max_clock_lead + max_clock_wait).
###########################################################################

reconfigure($o, $etcd, prefix => '/snowflake/outage', lease => 60, shard_id => 6);
$o->restart;
wait_generating($o, 'with a 60 s lease');
$o->safe_psql('postgres', 'SELECT count(*) FROM snowflake_nextval_batch(10000)');
ok($o->poll_query_until('postgres',
		'SELECT freshness_mark >= lease_deadline FROM snowflake_registry'),
	'the published freshness mark reaches the lease deadline, 48 s ahead');
my $before = $o->safe_psql('postgres', 'SELECT snowflake_nextval()');
my $published = $o->safe_psql('postgres',
	'SELECT extract(epoch FROM freshness_mark) * 1000 FROM snowflake_registry');
$o->stop('immediate');
$o->start;
wait_generating($o, 'after a crash');
($rc, $out, $err) = $o->psql('postgres',
	q{SELECT id, (extract(epoch FROM snowflake_timestamp(id)) * 1000)::bigint
	  FROM snowflake_nextval() AS id});
is($rc, 0, 'the first call after the crash succeeds') or diag($err);
my ($first, $first_ms) = split /\|/, $out;
ok(defined $first_ms && $first_ms < $published,
	sprintf('without resuming above (or waiting for) the lease-long mark (%.1f s below it)',
		($published - ($first_ms // 0)) / 1000));
ok(($first || 0) > $before, 'and its ID is above every ID before the crash');
ok($o->log_contains(qr/This server held it before it stopped without releasing it/),
	'the LOG says it resumed above its own durable mark');
$o->stop;

$etcd->stop;
done_testing();
