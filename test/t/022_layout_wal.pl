# The recorded layout travels to standbys through WAL (issue 11, defect 3;
# issue 33: recorded at CREATE EXTENSION).
#
# Two standbys are made from a base backup taken before the extension was
# created, so the backup holds no pg_snowflake/layout.  One runs with the
# primary's layout, the other with another snowflake.sequence_bits.  When the
# primary records its layout (CREATE EXTENSION, before any ID), both replay
# its layout record: both record the primary's layout; the matching one
# decodes the primary's IDs, the other refuses to decode them (instead of
# decoding them wrongly), and once promoted refuses to generate (instead of
# recording its own layout for data made under the primary's).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $primary = node('primary', allows_streaming => 1, conf => "snowflake.shard_id = 1\n",
	start => 1);
$primary->backup('before_extension');
ok(!-e $primary->data_dir . '/pg_snowflake/layout',
	'the backup is taken before CREATE EXTENSION: no layout recorded yet');

my $same = node('same', standby => [ $primary, 'before_extension' ], start => 1);

my $other = node('other', standby => [ $primary, 'before_extension' ],
	conf => "snowflake.sequence_bits = 14\n", start => 1);

# CREATE EXTENSION records the layout, before any ID: the record reaches both
$primary->safe_psql('postgres', 'CREATE EXTENSION snowflake');
$primary->wait_for_catchup($same);
$primary->wait_for_catchup($other);

my $recorded = slurp_file($primary->data_dir . '/pg_snowflake/layout');
is(slurp_file($same->data_dir . '/pg_snowflake/layout'),
	$recorded, 'standby with the same layout: it recorded the primary\'s layout');
is(slurp_file($other->data_dir . '/pg_snowflake/layout'),
	$recorded, 'standby with another layout: it recorded the primary\'s layout too');

$primary->safe_psql('postgres',
	'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);'
	  . 'INSERT INTO t (n) SELECT g FROM generate_series(1, 100) g');
$primary->wait_for_catchup($same);
$primary->wait_for_catchup($other);
is(slurp_file($primary->data_dir . '/pg_snowflake/layout'),
	$recorded, 'the first ID leaves the layout recorded at CREATE EXTENSION');

my $decoded = q{SELECT count(*) FILTER (WHERE snowflake_shard_id(id) = 1),
       count(*) FILTER (WHERE abs(extract(epoch FROM snowflake_timestamp(id) - now())) < 300)
FROM t};
is($same->safe_psql('postgres', $decoded),
	'100|100', 'standby with the same layout: decodes the primary\'s IDs');

my ($rc, $out, $err) = $other->psql('postgres', $decoded,
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($rc, 0, 'standby with another layout: decoding is refused');
like(
	$err,
	qr/ERROR:  55000: the snowflake ID layout differs from the one this data directory generated with\nDETAIL:  snowflake\.sequence_bits was 12 and is now 14\./,
	'standby with another layout: the error names the difference');
like(
	slurp_file($other->logfile),
	qr/WARNING:  the snowflake ID layout differs from the one this data directory generated with/,
	'standby with another layout: replay logged the refusal');

# promoted, the mismatched standby refuses to generate; the other generates
$other->promote;
$other->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion of "other" did not finish';
($rc, $out, $err) = $other->psql('postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: the snowflake ID layout differs/,
	'promoted with another layout: generation is refused');
is(slurp_file($other->data_dir . '/pg_snowflake/layout'),
	$recorded, 'promoted with another layout: the recorded layout is still the primary\'s');

$primary->stop;
$same->promote;
$same->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion of "same" did not finish';
$same->safe_psql('postgres', "ALTER SYSTEM SET snowflake.shard_id = 2; SELECT pg_reload_conf()");
$same->poll_query_until('postgres', q{SELECT current_setting('snowflake.shard_id') = '2'})
  or die 'shard_id did not reload';
is( $same->safe_psql(
		'postgres',
		'INSERT INTO t (n) VALUES (101) RETURNING id > (SELECT max(id) FROM t WHERE n <= 100)'),
	't',
	'promoted with the same layout: generates above the primary\'s IDs');

$same->stop;
$other->stop;
done_testing();
