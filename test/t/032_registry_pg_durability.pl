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

# Each server inserts IDs until told to stop, through every refusal.
sub loader
{
	my ($node) = @_;
	my $sql = qq{
DO \$\$
DECLARE
	i int := 0;
BEGIN
	LOOP
		BEGIN
			INSERT INTO t SELECT snowflake_nextval() FROM generate_series(1, 10);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			PERFORM pg_sleep(0.02);
		END;
		i := i + 1;
		IF i % 50 = 0 THEN
			COMMIT;
			EXIT WHEN (SELECT count(*) FROM pg_ls_dir('.') d WHERE d = 'stop-loader') > 0;
		END IF;
		PERFORM pg_sleep(0.002);
	END LOOP;
END \$\$;
};
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
		  '-d', 'postgres', '-c', $sql ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

# A's worker frozen (its backends go on up to the deadline it got), the
# registry crashed and restarted, all within a second of A's claim
my ($pm, @kids) = process_family($a);
my @worker = grep {
	open my $fh, '<', "/proc/$_/cmdline" or next;
	my $c = <$fh> // '';
	$c =~ /snowflake registry worker/;
} @kids;
is(scalar(@worker), 1, "a's registry worker found");
kill 'STOP', @worker;
my $crashed = time;
$reg->stop('immediate');
$reg->start;
my @loaders = (loader($a));
is($reg->safe_psql('registry',
		q{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/dur' AND status = 'active'}),
	'1', "a's claim, acknowledged before the crash, survived it");

# B starts and tries to claim the shard
$b->start;
$b->safe_psql('postgres', 'CREATE EXTENSION snowflake; CREATE TABLE t (id bigint NOT NULL)');
push @loaders, loader($b);

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
for my $n (@s)
{
	open my $fh, '>', $n->data_dir . '/stop-loader' or die;
	close $fh;
}
for my $l (@loaders)
{
	$l->[0]->finish;
	ok(!$l->[0]->result, 'a loader ran to its end') or diag(${ $l->[2] });
}

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

done_testing();
