# A PostgreSQL registry that could lose a claim it acknowledged (issue 33,
# defect 1).
#
#  (a) The registry server runs with synchronous_commit = off (and a
#      WAL writer that sleeps 10 s, so an acknowledged commit stays in WAL
#      buffers a while), no standby.  Server A claims the one shard of the
#      pool; its registry worker is frozen right after (SIGSTOP, as a holder
#      cut off from the registry would be: its backends go on generating up
#      to the deadline it got), and the registry crashes (-m immediate) and
#      restarts.  Server B, waiting for the full pool, tries again.
#      Without the fix the claim is gone after the restart, B claims the
#      shard at once while A still generates, and both issue the same IDs.
#      With it: the registry's own writes run with synchronous_commit on
#      whatever the server's setting, A's claim survives the crash, B claims
#      the shard only after A's lease, no two servers generate with the
#      shard at once and no ID is issued by both.
#  (b) A registry server with fsync = off (it cannot keep a commit through
#      a crash of its host) is refused: no claim, state "registry refused",
#      last_error and the log say why and what to do.  It is taken once
#      fsync is on again (a reload, no restart of the holder).
#  (c) A failover to an asynchronous standby that lost a whole claim whose
#      lease (30 s) is longer than any the standby knows (3 s): the pause
#      after the promotion is sized from the registry's limits
#      (snowflake_registry.limits, max_lease_s = 30), not from the claims
#      the new primary still has.  Without it the pause is 3 s + 2 s + 5 s,
#      S2 claims the shard while S1 (its worker frozen, cut off) still
#      generates under its 30 s lease, and both issue the same IDs.  With
#      it: never both generating, no ID issued by both, S2 claims in the end.
#      A claim whose lease is above the limit is refused with a clear error.

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

###########################################################################
# (a) synchronous_commit = off on the registry, a crash after a claim
###########################################################################

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $script = "$sharedir/extension/snowflake_registry.sql";

my $reg = node('reg', preload => 0, start => 1,
	conf => "fsync = on\nsynchronous_commit = off\nwal_writer_delay = 10s\n"
	  . "checkpoint_timeout = 1h\nmax_wal_size = 1GB\n");
$reg->safe_psql('postgres', 'CREATE DATABASE registry');
# the tables made beforehand and checkpointed: A's claim is the one write to lose
$reg->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $reg->connstr('registry'),
	'-f', $script ], "the registry's tables made with the shipped script");
$reg->safe_psql('registry', 'CHECKPOINT');

my @s;
for my $name ('a', 'b')
{
	my $n = registry_node($name, $reg, prefix => '/dur', lease => $lease, shards => '5');
	$n->append_conf('postgresql.conf', "log_min_messages = warning\n");
	push @s, $n;
}
my ($a, $b) = @s;
$a->start;
$a->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
wait_generating($a);
is(held_shard($a), '5', 'a holds the one shard of the pool');

# A's worker frozen (its backends go on up to the deadline it got), the
# registry crashed and restarted, all within a second of A's claim
my ($pm, @kids) = process_family($a);
my @worker = processes_named(qr/snowflake registry worker/, @kids);
is(scalar(@worker), 1, "a's registry worker found");
kill 'STOP', @worker;
my $crashed = time;
$reg->stop('immediate');
$reg->start;
my @loaders = (start_loader($a));
is($reg->safe_psql('registry',
		q{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/dur' AND status = 'active'}),
	'1', "a's claim, acknowledged before the crash, survived it");

# B starts and tries to claim the shard
$b->start;
$b->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
push @loaders, start_loader($b);

# While A may still generate (up to its deadline, which the frozen worker
# never moves), sample both servers: never both generating with the shard.
my $both = 0;
my $samples = 0;
my $a_deadline = $crashed + $lease;		# a's deadline is no later than this
while (time < $a_deadline + 2)
{
	my $ga = $a->safe_psql('postgres', q{SELECT generating AND shard_id = 5 FROM snowflake_registry});
	my $gb = $b->safe_psql('postgres', q{SELECT generating AND shard_id = 5 FROM snowflake_registry});
	$samples++;
	$both++ if $ga eq 't' && $gb eq 't';
	sleep 0.1;
}
note("$samples samples, $both with both servers generating with shard 5");
is($both, 0, 'never both servers generating with the same shard');

ok($b->poll_query_until('postgres', 'SELECT generating FROM snowflake_registry'),
	'b claims the shard in the end (after a lease)');
is(held_shard($b), '5', 'b holds the shard');
kill 'CONT', @worker;
sleep 2;						# B generates a while
stop_loaders(\@s, @loaders);

my $csv = $b->basedir . '/ids.csv';
$b->safe_psql('postgres', "COPY t TO '$csv'");
$a->safe_psql('postgres', "CREATE TABLE t2 (id bigint); COPY t2 FROM '$csv'");
my ($n1, $n2) = map { $_->safe_psql('postgres', 'SELECT count(*) FROM t') } @s;
note("a issued $n1 IDs, b $n2");
cmp_ok($n1, '>', 0, 'a issued IDs');
cmp_ok($n2, '>', 0, 'b issued IDs');
is($a->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM t'), '0',
	'no duplicate among the IDs of a');
is($b->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM t'), '0',
	'no duplicate among the IDs of b');
is($a->safe_psql('postgres', 'SELECT count(*) FROM t JOIN t2 USING (id)'), '0',
	'no ID issued by both servers');
$_->stop for @s;
$reg->stop;

###########################################################################
# (b) fsync = off on the registry: refused
###########################################################################

my $unsafe = node('unsafe', preload => 0, start => 1,
	conf => "fsync = off\nsynchronous_commit = off\n");
$unsafe->safe_psql('postgres', 'CREATE DATABASE registry');
my $c = registry_node('c', $unsafe, prefix => '/dur', lease => 3, shards => '5');
$c->append_conf('postgresql.conf', "log_min_messages = warning\n");
$c->start;
$c->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($c->poll_query_until('postgres',
		q{SELECT state = 'registry refused' FROM snowflake_registry}),
	'a registry with fsync = off: state "registry refused"');
like(registry_row($c, 'last_error'),
	qr/the registry server runs with fsync = off: .*set fsync = on there/,
	'last_error says why and what to do');
like(slurp_file($c->logfile),
	qr/WARNING:  snowflake registry: refusing the PostgreSQL registry: .*fsync = off/,
	'and the log');
is(registry_row($c, 'generating'), 'f', 'c generates nothing');
my ($ret, $out, $err) = $c->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/ERROR:  cannot generate snowflake IDs/, 'generation refuses');
my $has_claims = $unsafe->safe_psql('registry',
	q{SELECT to_regclass('snowflake_registry.claims') IS NOT NULL});
is($has_claims eq 't'
	? $unsafe->safe_psql('registry', 'SELECT count(*) FROM snowflake_registry.claims')
	: '0', '0', 'no claim in the registry');

$unsafe->append_conf('postgresql.conf', "fsync = on\n");
$unsafe->reload;
ok($c->poll_query_until('postgres', 'SELECT generating FROM snowflake_registry'),
	'fsync on again (a reload): c claims its shard, no restart');
$c->stop;
$unsafe->stop;

###########################################################################
# (c) a promoted asynchronous standby that lost a claim with a longer lease
###########################################################################

my $r1 = node('r1', preload => 0, allows_streaming => 1, start => 1, conf => "fsync = on\n");
$r1->safe_psql('postgres', 'CREATE DATABASE registry');
$r1->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $r1->connstr('registry'),
	'-f', $script ], "r1: the registry's tables made with the shipped script");
# the registry allows leases up to 30 s (the table is new in 1.3)
$r1->psql('registry', 'UPDATE snowflake_registry.limits SET max_lease_s = 30, max_lead_ms = 2000');

# S0, with a 3 s lease, claims and releases shard 7: the only claim R2 will know
my $s0 = registry_node('s0', $r1, prefix => '/lost', lease => 3, shards => '7');
$s0->start;
$s0->safe_psql('postgres', 'CREATE EXTENSION snowflake');
wait_generating($s0);
$s0->stop;
$r1->backup('r1b');
my $r2 = node('r2', standby => [ $r1, 'r1b' ], start => 1);
$r1->wait_for_catchup($r2);

# R2 cut off; S1 (30 s lease) claims shard 7 on R1 alone
$r2->safe_psql('postgres', "ALTER SYSTEM SET primary_conninfo = ''");
$r2->reload;
ok($r2->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver'),
	"r2's replication is cut");
my $s1 = registry_node('s1', $r1, prefix => '/lost', lease => 30, shards => '7');
$s1->start;
$s1->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
wait_generating($s1);
my $s1_claimed = time;
my @l2 = (start_loader($s1));
my (undef, @k1) = process_family($s1);
my @w1 = processes_named(qr/snowflake registry worker/, @k1);
is(scalar(@w1), 1, "s1's registry worker found");
kill 'STOP', @w1;
$r1->stop('immediate');
$r2->promote;
is($r2->safe_psql('registry', q{SELECT count(*) FROM snowflake_registry.claims
	WHERE id_space = '/lost' AND lease_ttl_s = 30}), '0', "r2 lacks s1's claim");

my $s2 = registry_node('s2', $r2, prefix => '/lost', lease => 3, shards => '7');
$s2->start;
$s2->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
push @l2, start_loader($s2);
my ($both2, $samples2) = (0, 0);
while (time < $s1_claimed + 30 + 2)
{
	my $g1 = $s1->safe_psql('postgres', q{SELECT generating AND shard_id = 7 FROM snowflake_registry});
	my $g2 = $s2->safe_psql('postgres', q{SELECT generating AND shard_id = 7 FROM snowflake_registry});
	$samples2++;
	$both2++ if $g1 eq 't' && $g2 eq 't';
	sleep 0.1;
}
note("$samples2 samples, $both2 with both servers generating with shard 7");
is($both2, 0, 'never s1 and s2 generating with the same shard');
ok($s2->poll_query_until('postgres', 'SELECT generating FROM snowflake_registry'),
	's2 claims the shard in the end');
kill 'CONT', @w1;
sleep 2;
stop_loaders([$s1, $s2], @l2);
my $csv2 = $s2->basedir . '/ids.csv';
$s2->safe_psql('postgres', "COPY t TO '$csv2'");
$s1->safe_psql('postgres', "CREATE TABLE t2 (id bigint); COPY t2 FROM '$csv2'");
my ($m1, $m2) = map { $_->safe_psql('postgres', 'SELECT count(*) FROM t') } ($s1, $s2);
note("s1 issued $m1 IDs, s2 $m2");
cmp_ok($m1, '>', 0, 's1 issued IDs');
cmp_ok($m2, '>', 0, 's2 issued IDs');
is($s1->safe_psql('postgres', 'SELECT count(*) FROM t JOIN t2 USING (id)'), '0',
	'no ID issued by both s1 and s2');
$_->stop for ($s1, $s2);

# a claim above the limit is refused, saying why
my $long = registry_node('long', $r2, prefix => '/lost', lease => 40, shards => '8');
$long->start;
$long->safe_psql('postgres', 'CREATE EXTENSION snowflake');
ok($long->poll_query_until('postgres',
		q{SELECT last_error ~ 'longer than the registry allows' FROM snowflake_registry}),
	'a 40 s lease against max_lease_s = 30: refused');
like(registry_row($long, 'last_error'), qr/a lease of 40 s is longer than the registry allows \(max_lease_s = 30 s\)/,
	'last_error says why');
is(registry_row($long, 'generating'), 'f', 'it generates nothing');
$long->stop;

$r2->stop;

done_testing();
