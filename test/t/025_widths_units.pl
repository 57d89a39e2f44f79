# IDs of other widths and time units, and datacenters (issue 21 parts 1-3,
# issue 18 part 2), on real servers:
#  (a) the JavaScript preset (snowflake.id_bits = 53, time_unit = 10ms,
#      6 shard bits, 8 sequence bits): single calls, batches, a logical shard
#      and the text form all stay at or below 2^53 - 1, increase, decode to
#      their shard and to the start of a 10 ms unit near the clock; time-range
#      bounds count in the unit; IDs round-trip through JSON as numbers in
#      node; after a crash the generator resumes above the mark, in units;
#  (b) the layout guard: a server that generated with 10 ms units refuses to
#      run with 1 ms ones (the recorded layout names what changed), and a
#      standby made before the layout was recorded (CREATE EXTENSION)
#      records the primary's layout from WAL;
#  (c) bad widths and units stop the server at start, with the arithmetic;
#      ALTER SYSTEM refuses them first;
#  (d) datacenters: snowflake.datacenter_bits = 4, datacenter_id = 3: the
#      shard field is datacenter | worker, decoded by snowflake_datacenter(),
#      snowflake_worker() and snowflake_decode(id, 'snowflake'); a shard_id
#      outside the datacenter stops the server;
#  (e) sonyflake_v2 decodes an ID composed as Sonyflake v2 composes it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use IPC::Run;

my $js_conf = q{
snowflake.shard_id = 5
snowflake.shard_ids = '7'
snowflake.id_bits = 53
snowflake.time_unit = '10ms'
snowflake.shard_bits = 6
snowflake.sequence_bits = 8
};

###########################################################################
# (a) the JavaScript preset
###########################################################################

my $js = node('js', allows_streaming => 1, conf => $js_conf, start => 1);
# a backup before CREATE EXTENSION, which records the layout: the standby
# made from it in (b) gets the layout through WAL
$js->backup('before_extension');
ok(!-e $js->backup_dir . '/before_extension/pg_snowflake/layout',
	'the backup holds no layout record');
$js->safe_psql('postgres', 'CREATE EXTENSION snowflake');

is($js->safe_psql('postgres', q{
	SELECT id_bits, time_unit_ms, timestamp_bits, ids_per_unit_per_shard,
	       last_timestamp > now() + interval '170 years'
	FROM snowflake_layout()}),
	'53|10|39|256|t', 'snowflake_layout() shows the width, the unit and 174 years of timestamps');

$js->safe_psql('postgres', q{
	CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), kind text,
	                n serial);
	INSERT INTO t (kind) SELECT 'single' FROM generate_series(1, 3000);
	INSERT INTO t (id, kind) SELECT id, 'batch' FROM snowflake_nextval_batch(20000) id;
	INSERT INTO t (id, kind) SELECT snowflake_nextval(7), 'logical' FROM generate_series(1, 500);
});
is($js->safe_psql('postgres', q{SELECT count(*) FROM t WHERE id > 9007199254740991 OR id < 0}),
	'0', 'every ID is a safe JavaScript integer (at most 2^53 - 1)');
is($js->safe_psql('postgres', q{SELECT count(DISTINCT id) = count(*) FROM t}), 't',
	'no duplicate');
is($js->safe_psql('postgres', q{
	SELECT bool_and(ok) FROM (
		SELECT id > lag(id) OVER (PARTITION BY kind ORDER BY n) OR lag(id) OVER (PARTITION BY kind ORDER BY n) IS NULL AS ok
		FROM t) s}), 't', 'IDs increase in the order they were issued');
is($js->safe_psql('postgres', q{
	SELECT bool_and(snowflake_shard_id(id) = CASE kind WHEN 'logical' THEN 7 ELSE 5 END)
	FROM t}), 't', 'IDs decode to their shard');
is($js->safe_psql('postgres', q{
	SELECT bool_and(extract(epoch FROM snowflake_timestamp(id)) * 1000 % 10 = 0
	                AND abs(extract(epoch FROM snowflake_timestamp(id) - now())) < 600)
	FROM t}), 't', 'decoded times are starts of 10 ms units, near the clock');
is($js->safe_psql('postgres', q{
	SELECT snowflake_min_id(ts) <= id AND id <= snowflake_max_id(ts)
	FROM t, LATERAL (SELECT snowflake_timestamp(id) + interval '9 ms' AS ts) s
	ORDER BY id DESC LIMIT 1}), 't',
	'time-range bounds count in the unit: a time 9 ms into a unit bounds its IDs');
is($js->safe_psql('postgres', q{
	SELECT snowflake_max_id('2030-01-01 00:00:00.005+00') - snowflake_min_id('2030-01-01 00:00:00.009+00')
	     = (1 << 14) - 1}), 't', 'every time within one unit has the same bounds');
is($js->safe_psql('postgres', q{
	SELECT bool_and(snowflake_from_text(snowflake_to_text(id)) = id) FROM t}), 't',
	'the text form round-trips');
my ($rc, $out, $err) = $js->psql('postgres', q{SELECT snowflake_timestamp(9007199254740992)},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22003: invalid snowflake ID: 9007199254740992\nDETAIL:  This server's IDs are 53 bits wide/,
	'a value wider than 53 bits is not one of this server\'s IDs (22003)');

# partitions by the key count in the unit too
is($js->safe_psql('postgres', q{
	SELECT snowflake_partition_interval('1 day') = snowflake_min_id('2030-01-02') - snowflake_min_id('2030-01-01')
	   AND snowflake_partition_span(snowflake_partition_interval('1 day')) = interval '1 day'
	   AND snowflake_partition_span(snowflake_partition_interval('250 ms')) = interval '250 ms'
	   AND (SELECT bool_and(from_id = snowflake_min_id(starts) AND to_id = snowflake_min_id(ends))
	        FROM snowflake_partition_bounds('2030-01-01', '2030-01-08'))
	   AND (SELECT count(*) FROM snowflake_partition_bounds('2030-01-01', '2030-01-08')) = 7}), 't',
	'partition intervals, spans and bounds count in 10 ms units');
is($js->safe_psql('postgres', q{
	SELECT count(*) FROM snowflake_partition_bounds('2030-01-01', '2030-01-02 00:00:00.005')}), '2',
	'a range that ends 5 ms into a 10 ms unit includes the partition of that unit');
($rc, $out, $err) = $js->psql('postgres', q{SELECT snowflake_partition_interval('15 ms')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22023: partition span "00:00:00.015" is not a whole number of time units\nDETAIL:  IDs carry their time in units of 10 ms/,
	'a span that is not whole units is refused (22023)');
($rc, $out, $err) = $js->psql('postgres', q{SELECT snowflake_partition_span(100)},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  22023: a partition interval of 100 IDs is not a whole number of time units in this layout/,
	'an interval that is not whole units is refused (22023)');

SKIP:
{
	my $node = `command -v node 2>/dev/null`;
	chomp $node;
	skip 'node is not installed', 2 unless $node;
	# JSON built on the server, with the IDs as numbers, parsed by JavaScript
	my $json = $js->safe_psql('postgres',
		q{SELECT json_agg(json_build_object('id', id, 'text', id::text) ORDER BY id) FROM t});
	my ($stdout, $stderr) = ('', '');
	IPC::Run::run([ $node, '-e', q{
		let s = '';
		process.stdin.on('data', d => s += d);
		process.stdin.on('end', () => {
			const rows = JSON.parse(s);
			let bad = 0;
			for (const r of rows)
				if (!Number.isSafeInteger(r.id) || String(r.id) !== r.text) bad++;
			console.log(rows.length + ' ' + bad);
		});
	} ], '<', \$json, '>', \$stdout, '2>', \$stderr);
	my ($count, $bad) = split ' ', $stdout;
	is($count, $js->safe_psql('postgres', 'SELECT count(*) FROM t'),
		'node parsed every ID from JSON') or diag($stderr);
	is($bad, '0', 'every ID survived JSON.parse as a JavaScript number, exactly');
}

# a crash, then a restart: the generator resumes above the mark, in units
my $max_before = $js->safe_psql('postgres', 'SELECT max(id) FROM t');
$js->stop('immediate');
$js->start;
my $after = $js->safe_psql('postgres', 'SELECT snowflake_nextval()');
ok($after > $max_before, 'after a crash the first ID is above every earlier one');

###########################################################################
# (b) the layout guard and standbys
###########################################################################

like(slurp_file($js->data_dir . '/pg_snowflake/layout'),
	qr/id_bits 53\nunit_ms 10\n/, 'pg_snowflake/layout records the width and the unit');
my $standby = node('js_standby', standby => [ $js, 'before_extension' ], start => 1);
$js->safe_psql('postgres', 'INSERT INTO t (kind) VALUES (\'for the standby\')');
$js->wait_for_catchup($standby);
like(slurp_file($standby->data_dir . '/pg_snowflake/layout'),
	qr/id_bits 53\nunit_ms 10\n/,
	'a standby made before the layout was recorded records the primary\'s width and unit from WAL');
is($standby->safe_psql('postgres',
		q{SELECT snowflake_timestamp(max(id)) = (SELECT snowflake_timestamp(max(id)) FROM t) FROM t}),
	't', 'the standby decodes with the same unit');
$standby->stop;

$js->stop;
$js->append_conf('postgresql.conf', "snowflake.time_unit = '1ms'\n");
$js->start;
($rc, $out, $err) = $js->psql('postgres', 'SELECT snowflake_timestamp(1)');
like($err, qr/the snowflake ID layout differs from the one this data directory generated with\nDETAIL:  snowflake.time_unit was 10 ms and is now 1 ms/,
	'a server that generated with 10 ms units refuses to decode with 1 ms ones');
$js->stop;

###########################################################################
# (c) bad widths and units
###########################################################################

my $bad = node('bad_layout', conf => "snowflake.shard_id = 1\ninclude_if_exists = 'layout.conf'\n");
foreach my $case (
	[ "snowflake.time_unit = '3ms'", qr/FATAL:  invalid value for parameter "snowflake.time_unit"/,
	  'a unit that does not divide a second' ],
	[ "snowflake.id_bits = 53", qr/FATAL:  snowflake.shard_bits \+ snowflake.sequence_bits must be at most 15\n.*DETAIL:  snowflake.id_bits 53 less 10 \+ 12 leaves 31 timestamp bits of 1 ms/,
	  '53 bits with the default widths and 1 ms: the timestamp would last 24 days' ],
	[ "snowflake.id_bits = 39", qr/FATAL:  invalid value for parameter "snowflake.id_bits"/,
	  'a width below the minimum' ],
	[ "snowflake.datacenter_bits = 11", qr/FATAL:  snowflake.datacenter_bits must be at most snowflake.shard_bits/,
	  'more datacenter bits than shard bits' ])
{
	my ($line, $re, $what) = @$case;
	my $file = $bad->data_dir . '/layout.conf';
	open my $fh, '>', $file or die $!;
	print $fh "$line\n";
	close $fh;
	my $offset = -s $bad->logfile // 0;
	ok(!$bad->start(fail_ok => 1), "$what: the server does not start");
	like(substr(slurp_file($bad->logfile), $offset), $re, "$what: the log says why");
}
unlink $bad->data_dir . '/layout.conf';
$bad->start;
($rc, $out, $err) = $bad->psql('postgres', q{ALTER SYSTEM SET snowflake.time_unit = '3ms'});
like($err, qr/invalid value for parameter "snowflake.time_unit": 3.*\nDETAIL:  snowflake.time_unit must divide a second/,
	'ALTER SYSTEM refuses a unit that does not divide a second');
$bad->stop;

###########################################################################
# (d) datacenters
###########################################################################

my $dc = node(
	'dc', extension => 1, conf => q{
snowflake.datacenter_bits = 4
snowflake.datacenter_id = 3
snowflake.shard_id = 200
});
my $id = $dc->safe_psql('postgres', 'SELECT snowflake_nextval()');
is($dc->safe_psql('postgres', qq{
	SELECT snowflake_shard_id($id), snowflake_datacenter($id), snowflake_worker($id),
	       (snowflake_decode($id, 'snowflake')).shard_high, (snowflake_decode($id, 'snowflake')).shard_low}),
	'200|3|8|3|8', 'shard 200 is datacenter 3, worker 8 (200 = 3 << 6 | 8)');
is($dc->safe_psql('postgres',
		'SELECT datacenter_bits, datacenter_id FROM snowflake_layout()'),
	'4|3', 'snowflake_layout() shows the datacenter');
# logical and import shards lie in the datacenter too, on reload as at start
foreach my $setting ('shard_ids', 'import_shards')
{
	my ($rc, $out, $err) = $dc->psql('postgres', "ALTER SYSTEM SET snowflake.$setting = '250-260'",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  22023: invalid value for parameter "snowflake\.$setting": "250-260"\nDETAIL:  Shard 256 lies in datacenter 4, and this server's snowflake\.datacenter_id is 3: its shards are 192 to 255\./,
		"snowflake.$setting outside the datacenter is refused, naming its shards");
}
$dc->safe_psql('postgres', "ALTER SYSTEM SET snowflake.shard_ids = '192-199'");
$dc->stop;
$dc->append_conf('postgresql.conf', "snowflake.import_shards = '100'\n");
ok(!$dc->start(fail_ok => 1), 'import shards outside the datacenter: the server does not start');
like(slurp_file($dc->logfile), qr/FATAL:  snowflake.import_shards lists shard 100, which is not in datacenter 3/,
	'the log says which shard and which setting');
$dc->append_conf('postgresql.conf', "snowflake.import_shards = ''\n");
$dc->append_conf('postgresql.conf', "snowflake.shard_id = 300\n");
ok(!$dc->start(fail_ok => 1), 'a shard_id outside the datacenter: the server does not start');
like(slurp_file($dc->logfile), qr/FATAL:  snowflake.shard_id 300 is not in datacenter 3\n.*DETAIL:  .*datacenter 3 has shards 192 to 255/,
	'the log names the datacenter\'s shards');

###########################################################################
# (e) sonyflake_v2
###########################################################################

my $any = node('any', preload => 0, extension => 1);
# composed as Sonyflake v2 does: 2025-06-01 12:00:00 UTC, sequence 5, machine 42
is($any->safe_psql('postgres', q{
	WITH c(id) AS (SELECT ((((extract(epoch FROM timestamptz '2025-06-01 12:00:00+00') -
	                          extract(epoch FROM timestamptz '2025-01-01 00:00:00+00')) * 100)::bigint << 24)
	                       | (5 << 16) | 42))
	SELECT snowflake_timestamp(id, 'sonyflake_v2') = '2025-06-01 12:00:00+00',
	       snowflake_sequence(id, 'sonyflake_v2'), snowflake_shard_id(id, 'sonyflake_v2')
	FROM c}), 't|5|42', 'sonyflake_v2: time from 2025-01-01 in 10 ms, sequence, machine');
$any->stop;

done_testing();
