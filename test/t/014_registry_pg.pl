# Shard IDs from a PostgreSQL registry (snowflake.registry = a libpq
# connection string): the registry is a real PostgreSQL server, the holders
# real preloaded servers.
#  (a) four servers pointed at a database that does not exist yet: they
#      start, say why they wait, and once the database is created (empty)
#      they make the registry's tables once between them and claim four
#      distinct shards; pgbench on all four: no duplicate ID;
#  (b) a clean stop releases (status "released", the final mark published);
#      a restart and a crash restart take the same shard back; each claim is
#      a row of its own, none deleted;
#  (c) a holder frozen with SIGSTOP past its lease while another server
#      takes its shard: the next holder's IDs are above every ID of the
#      frozen one, whose row is marked "expired" by the registry's clock;
#      thawed, it issues nothing under the lost lease;
#  (d) the registry server down: generation goes on until the lease
#      deadline, then refuses; registry back: generation resumes, same
#      shard, no restart;
#  (e) a hot standby claims nothing; promoted, it claims its own shard;
#  (f) the view: backend, datacenter and worker, clock skew, traffic;
#  (g) a highly available registry (a primary and its streaming standby,
#      both hosts in the connection string with target_session_attrs):
#      the registry's primary dies and its standby is promoted; the holder
#      finds the new primary on its own and keeps its shard.

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

my $reg = node('registry', preload => 0, allows_streaming => 1,
	conf => "fsync = on\nmax_connections = 40\n", start => 1);

sub rq
{
	my ($sql, $db) = @_;
	return $reg->safe_psql($db // 'registry', $sql);
}

my $create = q{
	CREATE EXTENSION snowflake;
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
	                at timestamptz DEFAULT clock_timestamp(), c int);
};

###########################################################################
# (a) an empty registry database, four servers at once
###########################################################################

# (the same four servers serve every part below, with new registry settings)
my @h;
for my $i (1 .. 4)
{
	my $node = registry_node("h$i", $reg, prefix => '/pg/a', lease => 3,
		init => { allows_streaming => $i == 4 });
	$node->start;
	$node->safe_psql('postgres', $create);
	push @h, $node;
}
ok($h[0]->poll_query_until('postgres',
		q{SELECT state = 'unreachable' AND last_error LIKE '%database "registry" does not exist%'
		  FROM snowflake_registry}),
	'without the registry database: state "unreachable", last_error says why');
my ($ret, $out, $err) = $h[0]->psql('postgres', "\\set VERBOSITY verbose\nSELECT snowflake_nextval()");
like($err, qr/ERROR:  55000: cannot generate snowflake IDs: this server holds no shard in the registry yet/,
	'generation refuses meanwhile (55000)');
like($err, qr/DETAIL:  The registry worker is trying to reach the PostgreSQL registry/,
	'the detail names the PostgreSQL registry');

$reg->safe_psql('postgres', 'CREATE DATABASE registry');
wait_generating($_) for @h;
is(rq('SELECT count(*) FROM snowflake_registry.schema_version'), '1',
	'the servers made the registry\'s tables: one schema_version row');
is(rq('SELECT version FROM snowflake_registry.schema_version'), '1', 'version 1');

my %shard_of;
for my $node (@h)
{
	my $s = held_shard($node);
	$shard_of{ $node->name } = $s;
	my $port = $node->port;
	is( rq("SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/pg/a' "
			  . "AND datacenter = 0 AND worker = $s AND status = 'active' AND holder LIKE '%port $port,%'"),
		'1', $node->name . ": one active row for shard $s names this server");
}
is(scalar(keys %{ { map { $_ => 1 } values %shard_of } }), 4, 'four servers hold four distinct shards');
is(rq(q{SELECT count(*) FROM snowflake_registry.claims WHERE status = 'active'}), '4',
	'four active rows in all');

# concurrent inserts on all four, then every ID once
is(pgbench_inserts('t', @h), 4, 'pgbench ran on all four servers');
my (%seen, $dups, $total);
for my $node (@h)
{
	my $s = $shard_of{ $node->name };
	is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE snowflake_shard_id(id) <> $s"),
		'0', $node->name . ": every ID carries shard $s");
	for my $id (split /\n/, $node->safe_psql('postgres', 'SELECT id FROM t'))
	{
		$total++;
		$dups++ if $seen{$id}++;
	}
}
ok($total > 1000, "the four servers inserted $total rows");
is($dups // 0, 0, 'no ID appears twice across the four servers');

###########################################################################
# (b) release, restart, crash restart
###########################################################################

my $b = $h[0];
my $bs = $shard_of{ $b->name };
my $b_max = $b->safe_psql('postgres', 'SELECT max(id) FROM t');
$b->stop;
is(rq("SELECT status, released_at IS NOT NULL FROM snowflake_registry.claims "
		  . "WHERE id_space = '/pg/a' AND worker = $bs ORDER BY claim_id DESC LIMIT 1"),
	'released|t', 'a clean stop: the row is "released", with its time');
my $mark = rq("SELECT mark_ms FROM snowflake_registry.shards WHERE id_space = '/pg/a' AND worker = $bs");
my $last_ms = $h[1]->safe_psql('postgres',
	"SELECT (extract(epoch FROM snowflake_timestamp($b_max)) * 1000)::bigint");
ok($mark >= $last_ms && $mark < $last_ms + 1000,
	"the final mark covers the last ID issued, and no more than it needs (" . ($mark - $last_ms) . ' ms above)');
is(rq("SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/pg/a' AND worker = $bs AND status = 'active'"),
	'0', 'the shard is free at once');

$b->start;
wait_generating($b, 'h1 after a clean restart');
is(held_shard($b), $bs, 'h1 holds the same shard after a clean restart');
ok($b->safe_psql('postgres', 'SELECT snowflake_nextval()') > $b_max, 'and resumes above its IDs');
$b->stop('immediate');
$b->start;
wait_generating($b, 'h1 after a crash');
is(held_shard($b), $bs, 'h1 holds the same shard after a crash');
ok($b->log_contains(qr/revoking lease \w+ of this server's previous run/),
	"h1's log: it released its previous run's claim");
is(rq("SELECT string_agg(status, ',' ORDER BY claim_id) FROM snowflake_registry.claims "
		  . "WHERE id_space = '/pg/a' AND worker = $bs"),
	'released,released,active', 'three claims of the shard, three rows: an audit trail');
$_->stop for @h;

###########################################################################
# (c) a frozen holder loses its shard
###########################################################################

my ($f1, $f2) = @h[ 1, 2 ];
my $fresh = 'DROP TABLE t; CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
	at timestamptz DEFAULT clock_timestamp(), c int)';
reconfigure($_, $reg, prefix => '/pg/frozen', shards => '3', lease => 3) for ($f1, $f2);
$f1->start;
$f1->safe_psql('postgres', $fresh);
wait_generating($f1, 'f1 (h2)');
$f2->start;
$f2->safe_psql('postgres', $fresh);
ok($f2->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
	'f2 waits: the pool is full');

my $script = $f1->basedir . '/insert.sql';
open my $fh, '>', $script or die;
print $fh "INSERT INTO t (c) VALUES (:client_id);\n";
close $fh;
my ($pgb_out, $pgb_err) = ('', '');
my $pgb = IPC::Run::start(
	[
		'pgbench', '--no-vacuum', '--client=2', '--jobs=1', '--time=15', '-f', $script,
		'-h', $f1->host, '-p', $f1->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
ok($f1->poll_query_until('postgres', 'SELECT count(*) > 500 FROM t'), 'f1 is inserting');
my @family = process_family($f1);
kill 'STOP', @family;
my $frozen_at = time;
wait_generating($f2, 'f2 while f1 is frozen');
my $taken_after = time - $frozen_at;
ok($taken_after >= 2,
	sprintf('f2 took shard 3 only once f1\'s lease could have expired (%.1f s, lease 3 s)', $taken_after));
$f2->safe_psql('postgres', 'INSERT INTO t (c) SELECT -1 FROM generate_series(1, 2000)');
is(rq(q{SELECT string_agg(status, ',' ORDER BY claim_id) FROM snowflake_registry.claims
		WHERE id_space = '/pg/frozen'}),
	'expired,active', 'f1\'s row is marked "expired" (not deleted), f2\'s is active');
ok(rq(q{SELECT released_at = last_heartbeat + interval '3 s' FROM snowflake_registry.claims
		WHERE id_space = '/pg/frozen' AND status = 'expired'}) eq 't',
	'it expired at its last heartbeat + the lease, by the registry\'s clock');
sleep(1);
kill 'CONT', reverse @family;
my $thawed_at = time;
($ret, $out, $err) = $f1->psql('postgres', 'SELECT snowflake_nextval()');
isnt($ret, 0, 'f1, thawed: snowflake_nextval() refuses at once');
$pgb->finish;
is($f1->safe_psql('postgres', "SELECT count(*) FROM t WHERE at >= to_timestamp($thawed_at)"),
	'0', 'f1 committed no row whose ID was taken after the thaw');
ok($f1->poll_query_until('postgres', "SELECT state = 'pool full' FROM snowflake_registry"),
	'f1 knows it lost the shard: the pool is full');
ok($f1->log_contains(qr/lost shard 3|lease deadline of shard 3 passed/), 'f1 logs the loss');
my $f1_max = $f1->safe_psql('postgres', 'SELECT max(id) FROM t');
is($f2->safe_psql('postgres', "SELECT count(*) FROM t WHERE id <= $f1_max"), '0',
	'every ID of the new holder f2 is above every ID the frozen f1 issued');
my %ids;
my $dup2 = 0;
for my $n ($f1, $f2)
{
	$dup2 += $ids{$_}++ ? 1 : 0 for split /\n/, $n->safe_psql('postgres', 'SELECT id FROM t');
}
is($dup2, 0, 'no ID of f1 and f2 appears twice (' . scalar(keys %ids) . ' IDs)');
$f2->stop;
wait_generating($f1, 'f1 once f2 released the shard');
$f1->stop;

###########################################################################
# (d) the registry server down
###########################################################################

my $q = $h[2];
reconfigure($q, $reg, prefix => '/pg/outage', lease => 4);
$q->start;
wait_generating($q, 'q (h3)');
my $q_shard = held_shard($q);
my $q_before = $q->safe_psql('postgres', 'SELECT snowflake_nextval()');
$reg->stop('immediate');
my $down_at = time;
($ret, $out, $err) = $q->psql('postgres', REFUSAL_PROBE);
my ($after) = $err =~ /refused after ([\d.]+) s/;
like($err, qr/cannot generate snowflake IDs: the registry lease of shard $q_shard is not known to be valid/,
	'registry down: generation stops with "the registry lease ... is not known to be valid"');
ok(defined $after && $after > 0.5 && time - $down_at <= 4 + 1,
	sprintf('after going on for %.2f s, within the lease (4 s)', $after // -1));
like(registry_row($q, 'last_error'), qr/renewing the lease|publishing the freshness mark|connecting/,
	'last_error says which request failed');
like(registry_row($q, 'state'), qr/^(expired|unreachable|claiming)$/, 'the state says so too');
$reg->start;
wait_generating($q, 'q once the registry is back');
is(held_shard($q), $q_shard, 'q holds the same shard, with no restart');
ok($q->safe_psql('postgres', 'SELECT snowflake_nextval()') > $q_before, 'and generates above its earlier IDs');

###########################################################################
# (f) the view
###########################################################################

my $view = $q->safe_psql('postgres', q{
	SELECT backend, endpoints ~ 'host=' AND endpoints ~ 'dbname=registry', prefix, state, datacenter,
	       worker = shard_id, clock_skew_ms IS NOT NULL, abs(clock_skew_ms) < 1000,
	       clock_skew_error_ms >= 0, requests > 0, bytes_sent > 0, bytes_received > 0,
	       endpoint LIKE '%/registry', freshness_mark IS NOT NULL
	FROM snowflake_registry});
is($view, 'postgresql|t|/pg/outage|held|0|t|t|t|t|t|t|t|t|t',
	'the view: backend, endpoints, ID space, datacenter 0 and worker = shard, a small clock skew, traffic');
$q->stop;

###########################################################################
# (e) a standby claims nothing until promoted
###########################################################################

my $p = $h[3];
reconfigure($p, $reg, prefix => '/pg/standby', shards => '10-11', lease => 3);
$p->start;
$p->safe_psql('postgres', $fresh);
wait_generating($p, 'p (h4)');
my $p_shard = held_shard($p);
$p->safe_psql('postgres', 'INSERT INTO t (c) SELECT 1 FROM generate_series(1, 1000)');
$p->backup('b');
my $s = node('s', standby => [ $p, 'b' ], start => 1);
$p->wait_for_catchup($s);
is($s->safe_psql('postgres', 'SELECT state, shard_id IS NULL, generating FROM snowflake_registry'),
	'off|t|f', 'the standby holds no shard');
sleep(1);
is(rq(q{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/pg/standby'}), '1',
	'the registry has one claim: the primary\'s');
$s->promote;
wait_generating($s, 'the promoted standby');
my $s_shard = held_shard($s);
isnt($s_shard, $p_shard, "the promoted standby claimed shard $s_shard, not the primary's $p_shard");
is(rq(q{SELECT count(*) FROM snowflake_registry.claims WHERE id_space = '/pg/standby' AND status = 'active'}),
	'2', 'two active claims now');
$s->safe_psql('postgres', 'INSERT INTO t (c) SELECT 3 FROM generate_series(1, 1000)');
$p->safe_psql('postgres', 'INSERT INTO t (c) SELECT 4 FROM generate_series(1, 1000)');
my $p_ids = $p->safe_psql('postgres', q{SELECT string_agg(id::text, ',') FROM t WHERE c = 4});
is($s->safe_psql('postgres', "SELECT count(*) FROM t WHERE id IN ($p_ids)"), '0',
	'none of its IDs equals one the old primary issued after the promotion');
$s->stop;
$p->stop;

###########################################################################
# (g) a failover of the registry
###########################################################################

$reg->backup('regb');
my $reg2 = node('registry2', standby => [ $reg, 'regb' ], start => 1);
my $ha = $h[0];
reconfigure($ha, undef,
	endpoints => 'host=' . $reg->host . ',' . $reg2->host . ' port=' . $reg->port . ',' . $reg2->port
	  . ' dbname=registry target_session_attrs=read-write',
	prefix => '/pg/ha', lease => 10);
$ha->start;
wait_generating($ha, 'a holder of a registry with a standby');
my $ha_shard = held_shard($ha);
like(registry_row($ha, 'endpoint'), qr/:${\ $reg->port }\/registry$/, 'it uses the primary');
$reg->wait_for_catchup($reg2);
my $ha_before = $ha->safe_psql('postgres', 'SELECT snowflake_nextval()');
$reg->stop('immediate');
$reg2->promote;
ok($ha->poll_query_until('postgres',
		"SELECT endpoint LIKE '%:" . $reg2->port . "/registry' AND generating FROM snowflake_registry"),
	'the registry failed over: the holder found the promoted standby on its own');
is(held_shard($ha), $ha_shard, 'and kept its shard');
ok($ha->safe_psql('postgres', 'SELECT snowflake_nextval()') > $ha_before, 'and generates above its IDs');
is($reg2->safe_psql('registry', q{SELECT count(*) FROM snowflake_registry.claims
		WHERE id_space = '/pg/ha' AND status = 'active' AND last_heartbeat > now() - interval '10 s'}),
	'1', 'its claim lives on in the new primary, with fresh heartbeats');
$ha->stop;
$reg2->stop;

done_testing();
