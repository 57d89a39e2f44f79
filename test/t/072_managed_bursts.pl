# The SQL edition's bounded lead, on a held clock (libfaketime): a burst
# past a time unit's sequence space borrows the following units up to
# max_clock_lead exactly, then waits for the clock up to max_clock_wait and
# fails with the extension's SQLSTATE (58000); the clock set back by
# seconds makes calls wait, then continue above every ID issued; a refused
# call issues nothing.  Counted in snowflake_stats.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

plan skip_all => "libfaketime not found at $libfaketime (Debian: faketime)"
  unless -f $libfaketime;

my $install_sql = managed_install_sql();

my $node = node('managed_burst', preload => 0, clock_ms => 0, start => 1);
$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE DATABASE appdb OWNER app;
});

sub ok_app
{
	my ($sql) = @_;
	return $node->safe_psql('appdb', $sql, extra_params => [ '-U', 'app' ]);
}

sub fails_app
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('appdb', $sql,
		extra_params => [ '-U', 'app', '-v', 'VERBOSITY=verbose' ]);
	return $rc == 0 ? '' : $err;
}

ok_app("\\set ON_ERROR_STOP 1\n" . $install_sql);
# 16 IDs per millisecond, a lead of 100 ms, a wait of 300 ms.
ok_app(q{
	SELECT snowflake_configure(shard_id => 2, sequence_bits => 4,
	                           max_clock_lead => 100, max_clock_wait => 300);
	CREATE TABLE ids (id bigint PRIMARY KEY, n bigserial);
});
my $w = 1 << (10 + 4);    # values of S per unit: 2^(shard_bits + sequence_bits)
my $epoch_ms = 1704067200000;

# Hold the clock at a whole millisecond t0.
my $t0 = int(time * 1000) + 60_000;
freeze_clock_ms($node, $t0);
my $u0 = $t0 - $epoch_ms;

# The burst: 101 units (t0 and the 100 ms of lead) of 16 IDs each.
ok_app('INSERT INTO ids (id) SELECT snowflake_nextval() FROM generate_series(1, 101 * 16)');
is( ok_app(
		qq{
	SELECT count(*), count(DISTINCT id), min(id >> 14) - $u0, max(id >> 14) - $u0,
	       count(*) FILTER (WHERE (id >> 4) & 1023 <> 2)
	FROM ids}),
	'1616|1616|0|100|0',
	'a burst of 1,616 IDs on a held clock: distinct, from the clock\'s unit up to exactly the lead (100 units), shard 2');

# The clock set back 5 s from t0 and running again (pg_sleep, and so any
# wait, needs a clock that moves): the next call is beyond the lead, waits
# max_clock_wait, then fails; a refused statement stores nothing.
my $max = ok_app('SELECT max(id) FROM ids');
thaw_clock_ms($node, $t0 - 5000);
my $err = fails_app('SELECT snowflake_nextval()');
like($err, qr/58000.*could not generate a snowflake ID: IDs are \d+ ms ahead of the clock/s,
	'clock 5 s behind the IDs: 58000 after waiting');
like($err, qr/max_clock_wait \(300 ms\)/, 'the error names the wait it took');
is(ok_app('SELECT waits || \'/\' || refusals FROM snowflake_stats WHERE shard_id = 2'),
	'1/1', 'snowflake_stats: one wait, one refusal');
$err = fails_app('INSERT INTO ids (id) SELECT snowflake_nextval() FROM generate_series(1, 100)');
like($err, qr/58000/, 'a statement of 100 calls: refused (58000)');
is(ok_app("SELECT count(*) FROM ids WHERE id > $max"), '0', 'the refused statement stored nothing');

# With a wait of 10 s, calls wait for the clock and continue above.
ok_app('SELECT snowflake_configure(max_clock_wait => 10000)');
ok_app('INSERT INTO ids (id) SELECT snowflake_nextval() FROM generate_series(1, 20)');
is( ok_app(
		qq{SELECT count(*), min(id) > $max, bool_and(id > prev OR prev IS NULL), count(*) = count(DISTINCT id)
		  FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM ids WHERE id > $max) s}),
	'20|t|t|t',
	'clock set back by 5 s: after waiting, 20 IDs above every ID issued before, increasing');
cmp_ok(ok_app('SELECT waits FROM snowflake_stats WHERE shard_id = 2'), '>=', 3,
	'snowflake_stats counts the waits');
is(ok_app('SELECT count(*) = count(DISTINCT id) FROM ids'), 't', 'no ID was issued twice');

$node->stop;
done_testing();
