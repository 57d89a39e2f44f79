# A PostgreSQL registry that fails over to an asynchronous standby which
# lacks the holder's last heartbeats (issue 25, defect 1).
#
# Registry R1 with a streaming standby R2 (pg_basebackup -R); servers S1 and
# S2 list both (target_session_attrs=read-write), one shard in the pool, a
# 10 s lease, both loading IDs.  R2's replication is cut right after one of
# S1's renewals; S1 renews twice more on R1 alone, then R1 dies
# (-m immediate) right after the second.  S1's registry worker is frozen
# (SIGSTOP) from then on, as a holder cut off from the new primary would
# be: its backends go on generating up to the deadline it got from R1,
# later than R2's copy of its row says.  R2 is promoted once that copy has
# expired by R2's clock.
#
# Without the promotion pause, S2 claims the shard from R2 at once and
# resumes above R2's stale freshness mark while S1 still generates: many
# IDs issued by both.  With it: no claim is made and no active row marked
# expired until the lease + max_clock_lead + the margin after the promotion
# has passed (S2 says why it waits), no ID is issued by both, and S2 does
# claim the shard in the end.

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use RegistryTest;

my $lease = 10;

my $r1 = node('r1', preload => 0, conf => "fsync = on\n", allows_streaming => 1, start => 1);
$r1->safe_psql('postgres', 'CREATE DATABASE registry');
$r1->backup('r1b');
my $r2 = node('r2', standby => [ $r1, 'r1b' ], start => 1);

my $target = 'host=' . $r1->host . ',' . $r2->host . ' port=' . $r1->port . ',' . $r2->port
  . ' dbname=registry target_session_attrs=read-write';
my @s;
for my $name ('s1', 's2')
{
	my $n = registry_node($name, undef, endpoints => $target, prefix => '/promo',
		lease => $lease, shards => '3');
	# WARNINGs too (registry_node logs from LOG up)
	$n->append_conf('postgresql.conf', "log_min_messages = warning\n");
	$n->start;
	$n->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
	push @s, $n;
}
my ($s1, $s2) = @s;
wait_generating($s1);
is(held_shard($s1), '3', 's1 holds the one shard of the pool');
is(registry_row($s2, 'state'), 'pool full', 's2 waits: the pool is full');
ok($s1->poll_query_until('postgres',
		q{SELECT registry_replication = 'asynchronous' FROM snowflake_registry}),
	'the view says the registry replicates asynchronously');
like(slurp_file($s1->logfile), qr/WARNING:  snowflake registry: the PostgreSQL registry has standbys, but none is synchronous/,
	'and the log warns');

my @loaders = map { start_loader($_) } @s;

# the holder's heartbeat on R1, in registry time (epoch seconds)
sub heartbeat
{
	return $r1->safe_psql('registry', q{SELECT extract(epoch FROM last_heartbeat)
		FROM snowflake_registry.claims WHERE id_space = '/promo' AND status = 'active'});
}
# waits for S1's next renewal on R1
sub next_renewal
{
	my $before = heartbeat();
	my $t0 = time;
	while (time - $t0 < 3 * $lease)
	{
		my $now = heartbeat();
		return $now if $now ne $before;
		sleep 0.05;
	}
	die 'no renewal of s1 seen on r1';
}

# cut R2's replication right after a renewal (which R2 gets first)
next_renewal();
$r1->wait_for_catchup($r2);
$r2->safe_psql('postgres', "ALTER SYSTEM SET primary_conninfo = ''");
$r2->reload;
ok($r2->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver'),
	"r2's replication is cut");
my $r2_heartbeat = $r2->safe_psql('registry', q{SELECT extract(epoch FROM last_heartbeat)
	FROM snowflake_registry.claims WHERE id_space = '/promo' AND status = 'active'});

# two more renewals on R1 alone, then R1 dies and S1's worker is frozen
next_renewal();
my $last = next_renewal();
$r1->stop('immediate');
my ($pm, @kids) = process_family($s1);
my @worker = processes_named(qr/snowflake registry worker/, @kids);
is(scalar(@worker), 1, "s1's registry worker found");
kill 'STOP', @worker;
cmp_ok($last - $r2_heartbeat, '>', $lease / 2,
	"s1's last renewal on r1 came well after the last one r2 has");

# promote R2 once its copy of S1's row has expired by its clock
ok($r2->poll_query_until('registry', q{SELECT last_heartbeat + lease_ttl_s * interval '1 s' < now()
	FROM snowflake_registry.claims WHERE id_space = '/promo' AND status = 'active'}),
	"r2's copy of s1's claim has expired");
my $promoted = time;				# the pause counts from after this
$r2->promote;

# S2 waits, saying why, and claims the shard once the pause is over
$s2->poll_query_until('postgres',
	q{SELECT last_error ~ 'failed over' OR generating FROM snowflake_registry});
like(registry_row($s2, 'last_error'), qr/failed over/,
	's2 says that the registry failed over and claims wait');
is(registry_row($s2, 'state'), 'failover pause', 'in state "failover pause"');
is($r2->safe_psql('registry', q{SELECT count(*) FROM snowflake_registry.claims
	WHERE id_space = '/promo' AND status = 'expired'}), '0',
	'no active row is marked expired during the pause');
ok($s2->poll_query_until('postgres', 'SELECT generating FROM snowflake_registry'),
	's2 claims the shard in the end');
my $waited = time - $promoted;
note("s2 claimed ${waited}s after the promotion");
cmp_ok($waited, '>=', $lease, 's2 claimed no sooner than a lease after the promotion');
is(held_shard($s2), '3', 's2 holds the shard');
like(slurp_file($s2->logfile), qr/claims wait until/, 's2 logged the pause');

kill 'CONT', @worker;
sleep 3;						# S2 generates a while
stop_loaders(\@s, @loaders);

my $csv = $s2->basedir . '/ids.csv';
$s2->safe_psql('postgres', "COPY t TO '$csv'");
$s1->safe_psql('postgres', "CREATE TABLE t2 (id bigint); COPY t2 FROM '$csv'");
my ($n1, $n2) = map { $_->safe_psql('postgres', 'SELECT count(*) FROM t') } @s;
note("s1 issued $n1 IDs, s2 $n2");
cmp_ok($n1, '>', 0, 's1 issued IDs');
cmp_ok($n2, '>', 0, 's2 issued IDs');
is($s1->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM t'), '0',
	'no duplicate among the IDs of s1');
is($s2->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM t'), '0',
	'no duplicate among the IDs of s2');
is($s1->safe_psql('postgres', 'SELECT count(*) FROM t JOIN t2 USING (id)'), '0',
	'no ID issued by both servers');

$_->stop for @s;
$r2->stop;

done_testing();
