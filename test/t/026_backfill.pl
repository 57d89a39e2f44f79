# Backfill with original creation times (issue 21 part 4), on a real server:
#  (a) one million historical rows, their times spread over three years and
#      many sharing a millisecond, imported on two import shards with
#      snowflake_nextval_at() while pgbench inserts live rows: no duplicate
#      among all IDs, every imported ID decodes to its row's original time
#      (to the unit) and to its import shard, and the import shards never
#      appear among the live IDs;
#  (b) the array form gives the same IDs as the row form would, in order;
#  (c) refusals, each a clear error with nothing issued: a time that
#      decreases, a shard not reserved for imports, live generation on an
#      import shard, a time before the epoch, in the future, more rows in one
#      unit than the sequence holds, a shard that generated live IDs;
#  (d) durability: a crash in the middle, then the import continues with the
#      next day's rows; rows of a day already reserved are refused (never a
#      duplicate); a standby records the reservations and, promoted, does the
#      same.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time);
use IPC::Run;

my $node = node('backfill', allows_streaming => 1, start => 1, conf => q{
snowflake.shard_id = 1
snowflake.shard_ids = '2-3'
snowflake.import_shards = '900-902, 950'
max_connections = 20
});
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE history (n int PRIMARY KEY, created_at timestamptz NOT NULL, src int NOT NULL);
	-- a million rows over two and a half years; 2,000 distinct instants, so 500
	-- rows share each millisecond (import shard 900 gets even rows, 901 odd ones)
	INSERT INTO history
	SELECT g, timestamptz '2024-02-01 00:00:00+00'
	          + ((g % 2000) * interval '40000 seconds') + ((g % 2000) * interval '1 ms'),
	       g % 2
	FROM generate_series(1, 1000000) g;
	CREATE TABLE items (id bigint PRIMARY KEY, n int, created_at timestamptz, live boolean);
});

###########################################################################
# (a) a large import beside live inserts
###########################################################################

# live inserts for the whole import, on this server's shard and a logical one
my $bench_script = $node->basedir . '/live.sql';
open my $fh, '>', $bench_script or die $!;
print $fh "INSERT INTO items SELECT snowflake_nextval(), NULL, now(), true;\n"
  . "INSERT INTO items SELECT snowflake_nextval(2), NULL, now(), true;\n";
close $fh;
my @bench = ('pgbench', '-n', '-c', '2', '-j', '2', '-T', '600', '-f', $bench_script,
	'-h', $node->host, '-p', $node->port, 'postgres');
my ($bout, $berr) = ('', '');
my $bench = IPC::Run::start(\@bench, '>', \$bout, '2>', \$berr);

my $t0 = time;
$node->safe_psql('postgres', q{
	INSERT INTO items
	SELECT snowflake_nextval_at(created_at, 900 + src), n, created_at, false
	FROM history ORDER BY created_at, n;
});
my $import_s = time - $t0;
$bench->signal('INT');
$bench->finish;
diag(sprintf('backfill: 1,000,000 IDs in %.1f s (%.0f IDs/s, with the inserts, beside pgbench)',
		$import_s, 1_000_000 / $import_s));

is($node->safe_psql('postgres', 'SELECT count(*) FROM items WHERE NOT live'), '1000000',
	'a million rows were imported');
my $live = $node->safe_psql('postgres', 'SELECT count(*) FROM items WHERE live');
ok($live > 100, "live inserts ran during the import ($live rows)");
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM items'), '0',
	'no duplicate among imported and live IDs (the primary key held too)');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM items
	WHERE NOT live AND (snowflake_timestamp(id) <> date_trunc('milliseconds', created_at)
	                    OR snowflake_shard_id(id) NOT IN (900, 901))}), '0',
	'every imported ID decodes to its row\'s original time (to the millisecond) and an import shard');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM items WHERE live AND snowflake_shard_id(id) NOT IN (1, 2)}), '0',
	'live IDs carry only live shards');
is($node->safe_psql('postgres', q{
	SELECT bool_and(ok) FROM (
		SELECT id > lag(id) OVER (PARTITION BY snowflake_shard_id(id) ORDER BY created_at, n) IS NOT FALSE AS ok
		FROM items WHERE NOT live) s}), 't',
	'imported IDs of a shard increase with the time, and with the row order within a time');

###########################################################################
# (b) the array form
###########################################################################

my $arr = $node->safe_psql('postgres', q{
	SELECT string_agg(snowflake_timestamp(id)::text || '/' || snowflake_sequence(id), ',' ORDER BY id)
	FROM snowflake_nextval_at_batch(ARRAY['2025-03-01 10:00:00.001+00', '2025-03-01 10:00:00.001+00',
	                                '2025-03-01 10:00:00.002+00']::timestamptz[], 950) id});
like($arr, qr/^2025-03-01 10:00:00\.001\+00\/0,2025-03-01 10:00:00\.001\+00\/1,2025-03-01 10:00:00\.002\+00\/0$/,
	'the array form: one ID per time, in order; rows of one time take successive sequences');

###########################################################################
# (c) refusals
###########################################################################

check_refused($node, q{SELECT snowflake_nextval_at('2025-03-01 09:00:00+00', 950)},
	qr/ERROR:  22023: creation time "2025-03-01 .*" is earlier than the last ID of import shard 950/,
	'a decreasing time');
check_refused($node, q{SELECT snowflake_nextval_at('2025-03-01 09:00:00+00', 3)},
	qr/ERROR:  55000: shard 3 is not reserved for imports/, 'a shard not reserved for imports');
check_refused($node, q{SELECT snowflake_nextval(950)},
	qr/ERROR:  55000: shard 950 is reserved for imports/, 'live generation on an import shard');
check_refused($node, q{SELECT snowflake_nextval_at('2019-01-01 00:00:00+00', 902)},
	qr/ERROR:  22008: creation time out of range for snowflake IDs/, 'a time before the epoch');
check_refused($node, q{SELECT snowflake_nextval_at(now() + interval '1 hour', 902)},
	qr/ERROR:  22008: creation time ".*" is in the future/, 'a time in the future');
check_refused($node, q{SELECT count(*) FROM snowflake_nextval_at_batch(array_fill(timestamptz '2025-05-05 05:05:05+00', ARRAY[4097]), 902)},
	qr/ERROR:  54000: more than 4096 rows with one creation time on import shard 902/,
	'more rows in one unit than its sequence holds');

# a shard that generated live IDs since the start, then listed for imports
$node->safe_psql('postgres', 'SELECT snowflake_nextval(3)');
$node->append_conf('postgresql.conf', "snowflake.import_shards = '900-902, 950, 3'\n");
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('snowflake.import_shards') LIKE '%3'});
check_refused($node, q{SELECT snowflake_nextval_at('2025-03-01 09:00:00+00', 3)},
	qr/ERROR:  55000: shard 3 generated live IDs since the server started/,
	'a shard that generated live IDs');

###########################################################################
# (d) durability: a crash, a standby, a promotion
###########################################################################

$node->backup('b');
my $standby = node('backfill_standby', standby => [ $node, 'b' ], start => 1);

$node->safe_psql('postgres', q{
	INSERT INTO items SELECT snowflake_nextval_at(ts, 902), 0, ts, false
	FROM generate_series(timestamptz '2026-01-10 00:00:00+00', '2026-01-10 12:00:00+00', interval '1 minute') ts});
my $day_max = $node->safe_psql('postgres', q{SELECT max(id) FROM items WHERE snowflake_shard_id(id) = 902});
$node->wait_for_catchup($standby);
like(slurp_file($node->data_dir . '/pg_snowflake/imports'), qr/shard 902 reserved_unix_ms \d+/,
	'pg_snowflake/imports records the reservation of shard 902');
like(slurp_file($standby->data_dir . '/pg_snowflake/imports'), qr/shard 902 reserved_unix_ms \d+/,
	'the standby recorded it from WAL');

$node->stop('immediate');
$node->start;
check_refused($node, q{SELECT snowflake_nextval_at('2026-01-10 13:00:00+00', 902)},
	qr/ERROR:  22023: creation time .* is earlier than the last ID of import shard 902/,
	'after a crash, a time within the reserved day is refused (never a duplicate)');
my $next = $node->safe_psql('postgres', q{SELECT snowflake_nextval_at('2026-01-11 00:00:00+00', 902)});
ok($next > $day_max, 'after a crash the import goes on with the next day, above every earlier ID');

$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
my ($rc, $out, $err) = $standby->psql('postgres',
	q{SELECT snowflake_nextval_at('2026-01-10 13:00:00+00', 902)});
like($err, qr/is earlier than the last ID of import shard 902/,
	'the promoted standby refuses the reserved day too');
my $promoted = $standby->safe_psql('postgres',
	q{SELECT snowflake_nextval_at('2026-01-12 00:00:00+00', 902)});
ok($promoted > $day_max, 'and goes on with a later day, above every ID the old primary imported');

$standby->stop;

###########################################################################
# (e) what a review found: the mark, live calls, the floor, damage, the layout
###########################################################################

# today's rows reserve up to the end of today; after a restart the import
# slot stands there, which must not carry the server's mark (and every live
# shard) hours ahead of the clock
$node->safe_psql('postgres', q{SELECT snowflake_nextval_at(clock_timestamp() - interval '1 second', 901)});
$node->stop('immediate');
$node->start;
($rc, $out, $err) = $node->psql('postgres', q{SELECT snowflake_nextval_at(clock_timestamp() - interval '1 second', 901)});
$node->safe_psql('postgres', q{SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)});
sleep 3;    # the mark worker's turn
cmp_ok(mark_ms($node) // 0, '<', int(time * 1000) + 60_000,
	'an import slot resumed at the end of its reserved day does not carry the mark ahead');
$node->stop('immediate');
$node->start;
($rc, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
is($rc, 0, 'after another crash live generation works at once') or diag($err);

# a shard imported into since the start cannot generate live IDs, and says so
$node->safe_psql('postgres', q{SELECT snowflake_nextval_at('2026-01-13 00:00:00+00', 902)});
$node->append_conf('postgresql.conf', "snowflake.import_shards = '900-901, 950'\nsnowflake.shard_ids = '2-3, 902'\n");
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('snowflake.shard_ids') LIKE '%902'});
check_refused($node, q{SELECT snowflake_nextval(902)},
	qr/ERROR:  55000: shard 902 was used for imports since the server started/,
	'a live call on a shard imported into since the start');
$node->append_conf('postgresql.conf', "snowflake.import_shards = '900-902, 950'\nsnowflake.shard_ids = '2-3'\n");
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('snowflake.shard_ids') = '2-3'});

# the floor raised for a database whose pg_snowflake/ was lost holds for
# import shards too, in memory and, recorded, after a restart
$node->stop;
unlink $node->data_dir . '/pg_snowflake/imports' or die "unlink: $!";
$node->start;
$node->safe_psql('postgres', q{SELECT snowflake_raise_floor(clock_timestamp())});
like(slurp_file($node->data_dir . '/pg_snowflake/imports'), qr/^floor_unix_ms \d+$/m,
	'snowflake_raise_floor() records the floor for import shards');
check_refused($node, q{SELECT snowflake_nextval_at('2025-01-01 00:00:00+00', 901)},
	qr/ERROR:  22023: creation time .* is earlier than the last ID of import shard 901/,
	'an import below the raised floor is refused');
$node->restart;
check_refused($node, q{SELECT snowflake_nextval_at('2025-01-01 00:00:00+00', 900)},
	qr/ERROR:  22023: creation time .* is earlier than the last ID of import shard 900/,
	'after a restart too, on any import shard (its reservation lost with the file)');

# a value this layout cannot hold in pg_snowflake/imports is damage
$node->stop;
append_to_file($node->data_dir . '/pg_snowflake/imports', "shard 950 reserved_unix_ms 99999999999999999\n");
$node->start;
check_refused($node, q{SELECT snowflake_nextval_at('2026-02-01 00:00:00+00', 950)},
	qr/ERROR:  XX001: could not read the snowflake import reservations/,
	'an impossible reservation is refused as damage, never resumed from');
$node->stop;

# the first ID, even an imported one, records the layout: a changed layout is
# then refused as for live IDs.  CREATE EXTENSION records it already (issue
# 33): its record is removed, as in a data directory from before 1.3
my $fresh = node('backfill_fresh', extension => 1, conf => q{
snowflake.shard_id = 1
snowflake.import_shards = '5'
});
$fresh->stop;
unlink $fresh->data_dir . '/pg_snowflake/layout'
  or die 'could not remove the layout record: ' . $!;
$fresh->start;
$fresh->safe_psql('postgres', q{SELECT snowflake_nextval_at('2025-01-01 00:00:00+00', 5)});
ok(-f $fresh->data_dir . '/pg_snowflake/layout', 'an import records the layout');
$fresh->stop;
$fresh->append_conf('postgresql.conf', "snowflake.time_unit = '10ms'\n");
$fresh->start;
($rc, $out, $err) = $fresh->psql('postgres', q{SELECT snowflake_nextval_at('2025-06-01 00:00:00+00', 5)},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: the snowflake ID layout differs from the one this data directory generated with/,
	'a layout changed after an import is refused');
$fresh->stop;
done_testing();
