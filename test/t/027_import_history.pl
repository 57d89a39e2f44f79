# A shard's imports and its live IDs across runs (issue 25, defect 2), on
# real servers, under the generator of SNOWFLAKE_GENERATOR (scripts/test.sh
# runs this file once per generator):
#  (a) an import shard that goes live after a clean restart: its live IDs
#      resume above every ID it imported, though imports carried times up to
#      the clock + max_clock_lead (here 20 s ahead, with a lead of 60 s and
#      sequence_start = 'zero', so that a repeated timestamp is a repeated
#      ID);
#  (b) the same after a crash (pg_ctl stop -m immediate);
#  (c) an import reservation too far ahead to wait for (max_clock_lead
#      lowered since): live generation is refused with a clear error saying
#      when it works and what allows it sooner; with the lead raised again it
#      works, above every imported ID;
#  (d) the reverse: a shard that generated live IDs, then listed for imports,
#      after a crash and on a promoted standby: imports with times within its
#      live history are refused (never an ID equal to a live one), older and
#      later times are imported.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SnowflakeTest;
use Test::More;

my $node = node('history', start => 1, conf => q{
snowflake.shard_id = 1
snowflake.import_shards = '7-9'
snowflake.sequence_start = 'zero'
snowflake.max_clock_lead = '60s'
});
check_generator($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (id bigint NOT NULL, shard int NOT NULL, live boolean NOT NULL);
});

# Imports 20,000 rows on an import shard, one a millisecond from the clock to
# 20 s ahead of it (the lead allows more).
sub import_ahead
{
	my ($n, $shard) = @_;
	$n->safe_psql('postgres', qq{
		INSERT INTO ids SELECT id, $shard, false FROM snowflake_nextval_at_batch(
			(SELECT array_agg(t0 + g * interval '1 ms' ORDER BY g)
			 FROM (SELECT clock_timestamp() AS t0) c, generate_series(0, 19990) g), $shard) id});
	return;
}

# Generates live IDs for 1.5 s on this server's shard.
sub generate_live
{
	my ($n, $shard) = @_;
	$n->safe_psql('postgres', qq{
		DO \$\$
		DECLARE t0 timestamptz := clock_timestamp();
		BEGIN
			WHILE clock_timestamp() < t0 + interval '1.5 s' LOOP
				INSERT INTO ids SELECT snowflake_nextval(), $shard, true FROM generate_series(1, 100);
			END LOOP;
		END \$\$});
	return;
}

# Checks one shard: live IDs were issued, none equals an imported one, and
# every live ID lies above every imported ID of the shard.
sub check_shard
{
	my ($n, $shard, $what) = @_;
	my $live = $n->safe_psql('postgres', "SELECT count(*) FROM ids WHERE shard = $shard AND live");
	cmp_ok($live, '>', 0, "$what: live IDs were issued on shard $shard ($live)");
	is($n->safe_psql('postgres', qq{
		SELECT count(*) FROM ids l JOIN ids i USING (id)
		WHERE l.live AND NOT i.live AND i.shard = $shard}), '0',
		"$what: no live ID equals an imported one");
	is($n->safe_psql('postgres', qq{
		SELECT (SELECT min(id) FROM ids WHERE shard = $shard AND live)
		     > (SELECT max(id) FROM ids WHERE shard = $shard AND NOT live)}), 't',
		"$what: every live ID of shard $shard lies above every ID imported on it");
	is($n->safe_psql('postgres', qq{
		SELECT count(*) FROM ids WHERE shard = $shard AND snowflake_shard_id(id) <> $shard}), '0',
		"$what: the IDs carry shard $shard");
	return;
}

###########################################################################
# (a) and (b): import shards that go live after a crash, and after a restart
###########################################################################

import_ahead($node, 7);
import_ahead($node, 8);

# (b) shard 7 goes live after a crash: no live ID has moved the mark yet
$node->append_conf('postgresql.conf', "snowflake.import_shards = '8-9'\nsnowflake.shard_id = 7\n");
$node->stop('immediate');
$node->start;
generate_live($node, 7);
check_shard($node, 7, 'live after a crash');

# (a) shard 8 goes live after a clean restart (the mark settles to the last live ID)
$node->append_conf('postgresql.conf', "snowflake.import_shards = '9'\nsnowflake.shard_id = 8\n");
$node->restart;
generate_live($node, 8);
check_shard($node, 8, 'live after a restart');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'), '0',
	'no duplicate among all IDs');

###########################################################################
# (c) a reservation too far ahead to wait for
###########################################################################

import_ahead($node, 9);
$node->append_conf('postgresql.conf', q{
snowflake.import_shards = ''
snowflake.shard_id = 9
include 'snowflake_clock.conf'
});
clock_settings($node, 1000, 2000, 0);
$node->restart;
my $err = check_refused($node, 'SELECT snowflake_nextval()',
	qr/ERROR:  55000: shard 9 cannot generate live IDs before .*\nDETAIL:  It was an import shard/,
	'live generation on a shard whose imports run ahead of the clock');
like($err, qr/HINT:  Retry after .*raise snowflake.max_clock_lead/,
	'the hint says when it works, and what would allow it sooner');
clock_settings($node, 60000, 2000, 1);
generate_live($node, 9);
check_shard($node, 9, 'live once the imports are passed');
$node->stop;

###########################################################################
# (d) the reverse: a shard that generated live IDs, then listed for imports
###########################################################################

my $primary = node('history_primary', allows_streaming => 1, start => 1, conf => q{
snowflake.shard_id = 5
snowflake.sequence_start = 'zero'
});
$primary->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (id bigint NOT NULL, shard int NOT NULL, live boolean NOT NULL);
});
$primary->backup('b');
my $standby = node('history_standby', standby => [ $primary, 'b' ], start => 1,
	conf => "snowflake.shard_id = 6\nsnowflake.import_shards = '5'\n");

# live IDs on shard 5, over a few hundred milliseconds
$primary->safe_psql('postgres', q{
	DO $$
	DECLARE t0 timestamptz := clock_timestamp();
	BEGIN
		WHILE clock_timestamp() < t0 + interval '0.3 s' LOOP
			INSERT INTO ids SELECT snowflake_nextval(), 5, true FROM generate_series(1, 100);
		END LOOP;
	END $$});
$primary->wait_for_catchup($standby);

# imports with exactly the times of the live IDs: each would be an ID a live one has
my $overlap = q{
	SELECT count(*) FROM snowflake_nextval_at_batch(
		(SELECT array_agg(DISTINCT snowflake_timestamp(id) ORDER BY snowflake_timestamp(id))
		 FROM ids WHERE live AND shard = 5), 5)};
my $older = q{INSERT INTO ids SELECT snowflake_nextval_at('2025-01-01 00:00:00+00', 5), 5, false};
my $present = q{INSERT INTO ids SELECT snowflake_nextval_at(clock_timestamp(), 5), 5, false};

$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()');
$standby->safe_psql('postgres', $older);
check_refused($standby, $overlap,
	qr/ERROR:  55000: shard 5 generated live IDs from .* to .*/,
	'a promoted standby: imports within the live history of shard 5');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM ids WHERE NOT live}), '1',
	'a promoted standby: an import older than the live history of shard 5 is issued');
$standby->stop;

$primary->append_conf('postgresql.conf', "snowflake.shard_id = 1\nsnowflake.import_shards = '5'\n");
$primary->stop('immediate');
$primary->start;
$primary->safe_psql('postgres', $older);
check_refused($primary, $overlap,
	qr/ERROR:  55000: shard 5 generated live IDs from .* to .*/,
	'after a crash: imports within the live history of shard 5');
ok($primary->poll_query_until('postgres', qq{WITH i AS ($present RETURNING 1) SELECT count(*) FROM i}, '1'),
	'after a crash: imports at the present are issued once the clock passes the live history');
is($primary->safe_psql('postgres', q{SELECT count(*) FROM ids WHERE NOT live}), '2',
	'after a crash: the older import and the present one, nothing else');
is($primary->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'), '0',
	'no imported ID equals a live one');
$primary->stop;

done_testing();
