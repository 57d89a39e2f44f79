# Partitioning by the key with pg_partman (Debian's postgresql-NN-partman):
# daily partitions of a table whose primary key is the snowflake ID, made and
# maintained by pg_partman itself, as docs/operations.md describes.
#
#  (a) default layout (epoch 2024-01-01, a UTC midnight): create_parent() on
#      the ID column with snowflake_partition_interval() (one day of IDs),
#      premade partitions from today on; each partition's bounds, read from
#      the catalog (pg_get_expr of relpartbound), are
#      snowflake_min_id(day) .. snowflake_min_id(day + 1) for a UTC midnight
#      `day`, and are exactly those snowflake_partition_bounds() gives;
#  (b) days pass (the server's clock moved forward a day at a time with
#      libfaketime, around noon UTC): rows with DEFAULT snowflake_nextval()
#      land in the partition of their own day, none in the default partition;
#      run_maintenance() keeps `premake` days ahead of the newest row, and
#      retention (two days of IDs) drops the older days and their rows;
#  (c) wrong intervals: one day in milliseconds given to pg_partman makes
#      partitions of 20 ms, which snowflake_partition_span() refuses with a
#      clear error when the configuration is checked; create_parent() on an
#      empty table without p_start_partition starts at ID 0 (the epoch's
#      day), which is why the documented call passes it;
#  (d) another layout, epoch at a UTC midnight (2025-03-01, 6 shard bits, 14
#      sequence bits): the same properties with that layout's interval, and
#      the interval of the default layout reads as four days there;
#  (e) an epoch that is not a UTC midnight (08:00 UTC, 8 shard bits, 13
#      sequence bits): snowflake_partition_interval() refuses it (55000);
#      with require_alignment => false pg_partman's partitions run from 08:00
#      UTC to 08:00 UTC, as snowflake_partition_bounds() says, and rows land
#      by that day; pg_partman 5.5 and later (p_offset_id) shift them back to
#      UTC midnights, maintenance included.
#
# Skips when pg_partman is not installed (install-deps.sh installs it where
# the Debian release packages it for that PostgreSQL).  pg_partman 4 (Debian
# 12, PostgreSQL 15) takes p_type => 'native'; 5 takes the range type by
# default.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;
use Time::HiRes ();

plan skip_all => "libfaketime is not installed ($libfaketime)" unless -f $libfaketime;

my $day_ms = 86_400_000;

# A server with snowflake preloaded and the given extra settings.
sub new_node
{
	my ($name, $conf) = @_;
	return node(
		$name, conf => qq{
shared_buffers = 16MB
$conf
});
}

my $node = new_node('partman', 'snowflake.shard_id = 5');
start_faked($node);
# The server's days are simulated around noon UTC (the next one), far from
# midnight, so that a run near midnight cannot spread one day's inserts over
# two days; the clock only ever moves forward, before any ID is made.
my $now_ms  = int(Time::HiRes::time() * 1000);
my $noon_ms = $now_ms - $now_ms % $day_ms + $day_ms / 2;
$noon_ms += $day_ms if $noon_ms < $now_ms;
my $base_ms = $noon_ms - $now_ms;
set_clock_ms($node, $base_ms);

my $partman = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'pg_partman'");
if ($partman eq '')
{
	$node->stop;
	plan skip_all => 'pg_partman is not installed for PostgreSQL '
	  . $node->pg_version
	  . ' (Debian package postgresql-' . $node->pg_version->major . '-partman)';
}
my ($partman_major) = $partman =~ /^(\d+)/;
note("pg_partman $partman");

# pg_partman 4 needs the type of partitioning spelled out
my $type_arg = $partman_major < 5 ? ", p_type => 'native'" : '';

# the documented set-up: a schema for pg_partman, a table keyed by the ID
my $setup = q{
	CREATE EXTENSION snowflake;
	CREATE SCHEMA partman;
	CREATE EXTENSION pg_partman SCHEMA partman;
	CREATE TABLE events (
		id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
		payload text)
	PARTITION BY RANGE (id);
};

# create_parent() on events-like $table with one day of IDs (or $interval),
# $premake days ahead, starting at the partition that holds $start (SQL).
sub create_parent
{
	my ($n, $table, $interval, $premake, $start) = @_;
	my $start_arg = defined $start ? ", p_start_partition => ($start)::text" : '';
	return $n->safe_psql(
		'postgres', qq{
		SELECT partman.create_parent(p_parent_table => 'public.$table', p_control => 'id',
		                             p_interval => ($interval)::text, p_premake => $premake
		                             $start_arg $type_arg)});
}

# The range partitions of a table: bounds read back from the catalog.
sub parts_cte
{
	my ($table) = @_;
	return qq{
	WITH parts AS (
		SELECT c.oid AS part, b.v[1]::bigint AS lo, b.v[2]::bigint AS hi,
		       snowflake_timestamp(b.v[1]::bigint) AS starts
		FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
			'^FOR VALUES FROM \\(''?([0-9]+)''?\\) TO \\(''?([0-9]+)''?\\)\$') AS b(v)
		WHERE i.inhparent = '$table'::regclass AND b.v IS NOT NULL)};
}

# Checks every range partition of $table: it starts $offset after a UTC
# midnight, its bounds are snowflake_min_id() of its start and of a day
# later, and they are the rows snowflake_partition_bounds() gives for that
# span; returns the partitions' first and last day.
sub check_bounds
{
	my ($n, $what, $table, $offset, $align) = @_;
	my ($count, $bad, $unknown, $first, $last) = split /\|/, $n->safe_psql(
		'postgres', parts_cte($table) . qq{
		SELECT count(*),
		       count(*) FILTER (WHERE starts <> date_trunc('day', starts, 'UTC') + interval '$offset'
		                           OR lo <> snowflake_min_id(starts)
		                           OR hi <> snowflake_min_id(starts + interval '24 hours')),
		       count(*) FILTER (WHERE NOT EXISTS (
		           SELECT 1 FROM snowflake_partition_bounds(
		               (SELECT min(starts) FROM parts), (SELECT max(starts) FROM parts) + interval '24 hours',
		               '1 day', $align) AS b
		           WHERE b.from_id = lo AND b.to_id = hi)),
		       to_char(min(starts) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'),
		       to_char(max(starts) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
		FROM parts});
	cmp_ok($count, '>', 0, "$what: $count range partitions, $first .. $last UTC");
	is($bad, 0, "$what: every partition starts at a UTC midnight + $offset and its bounds are "
		  . 'snowflake_min_id(day) .. snowflake_min_id(day + 1)');
	is($unknown, 0, "$what: every partition is one that snowflake_partition_bounds() lists");
	return ($first, $last);
}

# Rows of $table outside the partition of their own day (starting $offset
# after UTC midnight), and rows in its default partition.
sub check_rows
{
	my ($n, $what, $table, $offset) = @_;
	my ($rows, $misplaced, $in_default) = split /\|/, $n->safe_psql(
		'postgres', parts_cte($table) . qq{
		SELECT count(*),
		       count(*) FILTER (WHERE p.part IS NULL OR p.lo <> snowflake_min_id(
		           date_trunc('day', snowflake_timestamp(e.id) - interval '$offset', 'UTC') + interval '$offset')),
		       count(*) FILTER (WHERE p.part IS NULL)
		FROM $table e LEFT JOIN parts p ON p.part = e.tableoid});
	cmp_ok($rows, '>', 0, "$what: $rows rows");
	is($misplaced, 0, "$what: every row is in the partition of its own day");
	is($in_default, 0, "$what: no row in the default partition");
	return $rows;
}

###########################################################################
# (a) create_parent with one day of IDs.
###########################################################################

$node->safe_psql('postgres', $setup);
is($node->safe_psql('postgres',
		q{SELECT snowflake_partition_interval() = snowflake_min_id('2026-11-02 00:00+00') - snowflake_min_id('2026-11-01 00:00+00')}),
	't', 'one day of IDs: snowflake_partition_interval() of the default layout');
create_parent($node, 'events', 'snowflake_partition_interval()', 2, 'snowflake_min_id(now())');
is( $node->safe_psql('postgres',
		q{SELECT snowflake_partition_span(partition_interval::bigint) FROM partman.part_config
		  WHERE parent_table = 'public.events'}),
	'1 day', 'pg_partman holds an interval of one day of IDs (snowflake_partition_span)');
my ($first, $last) = check_bounds($node, 'created', 'events', '0 hours', 'true');
is( $node->safe_psql('postgres',
		qq{SELECT date_trunc('day', now(), 'UTC') = '$first+00' AND '$last+00' = date_trunc('day', now(), 'UTC') + interval '2 days'}),
	't', 'created: today and the two premade days');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		  WHERE i.inhparent = 'events'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'}),
	1, 'created: with a default partition');

# retention: keep two days of IDs behind the newest row, drop the tables
$node->safe_psql(
	'postgres', q{
	UPDATE partman.part_config
	SET retention = snowflake_partition_interval('2 days')::text, retention_keep_table = false
	WHERE parent_table = 'public.events'});

###########################################################################
# (b) Days pass: inserts, maintenance, retention.
###########################################################################

my $days = 5;
for my $d (0 .. $days)
{
	set_clock_ms($node, $base_ms + $d * $day_ms) if $d > 0;
	$node->safe_psql('postgres',
		"INSERT INTO events (payload) SELECT 'day $d' FROM generate_series(1, 200)");
	$node->safe_psql('postgres', 'SELECT partman.run_maintenance()');
}
my $rows = check_rows($node, "after $days days", 'events', '0 hours');
($first, $last) = check_bounds($node, "after $days days", 'events', '0 hours', 'true');
is( $node->safe_psql(
		'postgres', qq{
		SELECT date_trunc('day', snowflake_timestamp(max(id)), 'UTC') - '$first+00'::timestamptz,
		       '$last+00'::timestamptz - date_trunc('day', snowflake_timestamp(max(id)), 'UTC')
		FROM events}),
	'2 days|2 days',
	"after $days days: retention kept the newest row's day and two before, maintenance premade two after");
is( $node->safe_psql(
		'postgres', q{
		SELECT count(DISTINCT payload), min(payload), max(payload),
		       count(*) = 600 AND count(DISTINCT date_trunc('day', snowflake_timestamp(id), 'UTC')) = 3
		FROM events}),
	"3|day 3|day 5|t",
	"after $days days: the rows of days 3, 4 and 5 remain (200 each, one day each); older days were dropped with their partitions");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_tables WHERE tablename ~ '^events_p'}),
	5, 'dropped partitions are gone, not detached (retention_keep_table = false)');

###########################################################################
# (c) Wrong intervals.
###########################################################################

# one day in milliseconds, not in IDs
$node->safe_psql('postgres',
	'CREATE TABLE wrong (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id)');
create_parent($node, 'wrong', $day_ms, 2, 'snowflake_min_id(now())');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SELECT snowflake_partition_span(partition_interval::bigint) FROM partman.part_config
	  WHERE parent_table = 'public.wrong'}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'an interval of one day in milliseconds: checking the configuration fails');
like($err, qr/ERROR:  22023: a partition interval of 86400000 IDs is not a whole number of milliseconds in this layout/,
	'... with SQLSTATE 22023 and a message that says why');
like($err, qr/DETAIL:  A millisecond holds 4194304 IDs .*; 86400000 IDs is 20\.599 ms\./,
	'... a detail with the real span');
like($err, qr/HINT:  Take the interval from snowflake_partition_interval\(\)/, '... and the cure');
is( $node->safe_psql(
		'postgres', parts_cte('wrong') . q{
		SELECT max(hi - lo) < snowflake_min_id('2026-11-01 00:00:00.021+00') - snowflake_min_id('2026-11-01 00:00+00')
		FROM parts}),
	't', 'and indeed pg_partman made partitions of about 20 ms each');

# no p_start_partition on an empty table: pg_partman starts at ID 0
$node->safe_psql('postgres',
	'CREATE TABLE nostart (id bigint PRIMARY KEY DEFAULT snowflake_nextval()) PARTITION BY RANGE (id)');
create_parent($node, 'nostart', 'snowflake_partition_interval()', 2, undef);
is( $node->safe_psql('postgres',
		parts_cte('nostart') . q{SELECT min(lo), min(starts) = (SELECT epoch FROM snowflake_layout()) FROM parts}),
	'0|t', 'an empty table without p_start_partition: the partitions start at ID 0, the epoch\'s day');
$node->stop;

###########################################################################
# (d) Another layout, epoch at a UTC midnight.
###########################################################################

my $other = new_node('other_layout', q{
snowflake.shard_id = 5
snowflake.epoch = '2025-03-01'
snowflake.shard_bits = 6
snowflake.sequence_bits = 14
});
$other->start;
$other->safe_psql('postgres', $setup);
is( $other->safe_psql('postgres',
		q{SELECT snowflake_partition_interval() = (86400000::bigint << 20),
		         snowflake_partition_span(362387865600000)}),
	't|4 days',
	'6 + 14 bits: a day is 86,400,000 << 20 IDs, and the default layout\'s day reads as four days here');
create_parent($other, 'events', 'snowflake_partition_interval()', 3, 'snowflake_min_id(now())');
check_bounds($other, 'epoch 2025-03-01, 6 + 14 bits', 'events', '0 hours', 'true');
$other->safe_psql('postgres', q{
	INSERT INTO events (payload) SELECT 'now' FROM generate_series(1, 100);
	INSERT INTO events (id, payload)
	SELECT snowflake_min_id(date_trunc('day', now(), 'UTC') + interval '1 day' + g * interval '1 hour', 5), 'tomorrow'
	FROM generate_series(0, 23) AS g;
});
check_rows($other, 'epoch 2025-03-01, 6 + 14 bits', 'events', '0 hours');
$other->stop;

###########################################################################
# (e) An epoch at 08:00 UTC.
###########################################################################

my $offset = new_node('offset_epoch', q{
snowflake.shard_id = 5
snowflake.epoch = '2024-01-01T08:00:00+00:00'
snowflake.shard_bits = 8
snowflake.sequence_bits = 13
});
$offset->start;
$offset->safe_psql('postgres', $setup);
($ret, $out, $err) = $offset->psql('postgres', 'SELECT snowflake_partition_interval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: snowflake.epoch is not aligned to partitions of "1 day"/,
	'epoch 08:00 UTC: snowflake_partition_interval() refuses (SQLSTATE 55000)');
like($err, qr/DETAIL:  .*the epoch \(2024-01-01 08:00:00.000\+00\); every partition would start 08:00:00 after a UTC midnight\./,
	'... and says where partitions would start');
like($err, qr/HINT:  Pass require_alignment => false/, '... and how to accept it');
is($offset->safe_psql('postgres',
		q{SELECT snowflake_partition_interval(require_alignment => false) = (86400000::bigint << 21)}),
	't', '... and with require_alignment => false gives one day of IDs (8 + 13 bits)');
create_parent($offset, 'events', 'snowflake_partition_interval(require_alignment => false)', 2,
	'snowflake_min_id(now())');
check_bounds($offset, 'epoch 08:00 UTC', 'events', '8 hours', 'false');
$offset->safe_psql('postgres', q{
	INSERT INTO events (payload) SELECT 'now' FROM generate_series(1, 100);
	INSERT INTO events (id, payload)
	SELECT snowflake_min_id(date_trunc('day', now() - interval '8 hours', 'UTC') + interval '32 hours' + g * interval '1 hour', 5), 'next'
	FROM generate_series(0, 23) AS g;
});
check_rows($offset, 'epoch 08:00 UTC', 'events', '8 hours');
is( $offset->safe_psql(
		'postgres', parts_cte('events') . q{
		SELECT count(DISTINCT e.tableoid) FROM events e
		WHERE e.payload = 'next' AND snowflake_timestamp(e.id) >= date_trunc('day', now() - interval '8 hours', 'UTC') + interval '32 hours'}),
	1, 'epoch 08:00 UTC: the 24 hours from 08:00 UTC on share one partition');

# pg_partman 5.5 and later shift integer partitions by p_offset_id: one that
# is the IDs from the epoch to the next UTC midnight brings them back to UTC
# midnights.  Its first partition is computed from p_start_partition without
# the offset, hence the start one offset earlier.
my $has_offset = $offset->safe_psql('postgres',
	q{SELECT count(*) FROM pg_proc WHERE oid = 'partman.create_parent'::regproc AND 'p_offset_id' = ANY (proargnames)});
SKIP:
{
	skip "pg_partman $partman has no p_offset_id (5.5 and later)", 8 unless $has_offset;

	my $offset_sql = q{(SELECT snowflake_min_id(date_trunc('day', epoch, 'UTC') + interval '1 day')
	                   % snowflake_partition_interval(require_alignment => false) FROM snowflake_layout())};
	is($offset->safe_psql('postgres', "SELECT snowflake_partition_span($offset_sql)"),
		'16:00:00', 'p_offset_id: the IDs of the 16 hours from the epoch (08:00) to the next UTC midnight');
	$offset->safe_psql(
		'postgres', qq{
		CREATE TABLE shifted (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text)
		PARTITION BY RANGE (id);
		SELECT partman.create_parent(p_parent_table => 'public.shifted', p_control => 'id',
		    p_interval => snowflake_partition_interval(require_alignment => false)::text,
		    p_offset_id => $offset_sql, p_premake => 2,
		    p_start_partition => (snowflake_min_id(date_trunc('day', now(), 'UTC')) - $offset_sql)::text);
		INSERT INTO shifted (payload) SELECT 'now' FROM generate_series(1, 100);
		INSERT INTO shifted (id, payload)
		SELECT snowflake_min_id(date_trunc('day', now(), 'UTC') + interval '1 day' + g * interval '1 hour', 5), 'tomorrow'
		FROM generate_series(0, 23) AS g;
		SELECT partman.run_maintenance();
	});
	my ($count, $bad, $first, $last) = split /\|/, $offset->safe_psql(
		'postgres', parts_cte('shifted') . q{
		SELECT count(*),
		       count(*) FILTER (WHERE starts <> date_trunc('day', starts, 'UTC')
		                           OR lo <> snowflake_min_id(starts)
		                           OR hi <> snowflake_min_id(starts + interval '24 hours')),
		       min(starts) = date_trunc('day', now(), 'UTC'),
		       max(starts) = date_trunc('day', now(), 'UTC') + interval '4 days'
		FROM parts});
	is($bad, 0, "p_offset_id: all $count partitions start at UTC midnights, bounds snowflake_min_id(day) .. snowflake_min_id(day + 1)");
	is($first, 't', 'p_offset_id: the first partition is today\'s');
	# pg_partman finds the newest row's partition without the offset (at
	# 08:00 tomorrow for a row at 23:00 tomorrow), so it counts one premade
	# partition less than there is and makes one more
	is($last, 't', 'p_offset_id: run_maintenance() premade three days after the newest row\'s day (tomorrow): premake + 1');
	check_rows($offset, 'p_offset_id', 'shifted', '0 hours');
	is( $offset->safe_psql(
			'postgres', q{
			SELECT count(DISTINCT tableoid) FROM shifted
			WHERE payload = 'tomorrow'}),
		1, 'p_offset_id: tomorrow\'s 24 hours (UTC) share one partition');
}
$offset->stop;

done_testing();
