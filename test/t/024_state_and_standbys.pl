# What the code promised and did not do (issue 17: defects 9 and 10), each on
# a real server:
#  (a) a damaged pg_snowflake/mark stops generation only: the decoders keep
#      working, and the refusal's hint is about the mark, not the layout; a
#      mark beyond what the layout can represent is damaged too;
#  (b) a mark far ahead of the clock at start is logged as a WARNING;
#  (c) nonsense in a reloadable setting at start stops the server, as nonsense
#      in every other snowflake.* setting does (one rule);
#  (d) a refusal before the epoch is counted in snowflake_stats.refusals;
#  (e) standbys with snowflake.allow_on_standby: one with its primary's shard
#      is refused (the primary's shards reach it in WAL); one with a shard of
#      its own generates for it, but not for a logical shard its primary has.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use Time::HiRes qw(time sleep);


sub write_mark
{
	my ($node, $ms) = @_;
	my $file = $node->data_dir . '/pg_snowflake/mark';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh "format 1\nmark_unix_ms $ms\n";
	close $fh;
	return;
}

###########################################################################
# (a) a damaged mark refuses generation, not decoding
###########################################################################

my $node = node('state', conf => "snowflake.shard_id = 7\n", extension => 1);
my $id = $node->safe_psql('postgres', 'SELECT snowflake_nextval()');
$node->stop;

my $mark_file = $node->data_dir . '/pg_snowflake/mark';
open my $fh, '>', $mark_file or die $!;
print $fh "this is not a mark\n";
close $fh;
$node->start;
like(slurp_file($node->logfile),
	qr/WARNING:  could not read the recorded snowflake high-water mark.*\n.*\n.*HINT:  snowflake_nextval\(\) will refuse to run; the decoding functions work/,
	'damaged mark: a WARNING at start says only generation refuses');
my ($rc, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: could not read the recorded snowflake high-water mark/,
	'damaged mark: generation refuses (55000)');
like($err, qr/HINT:  Generation refuses until the file is fixed or restored/,
	'damaged mark: the hint is about the file, not the layout');
unlike($err, qr/Restore the previous settings/, 'damaged mark: no hint about the layout');
is($node->safe_psql('postgres', "SELECT snowflake_shard_id($id), snowflake_timestamp($id) < now()"),
	'7|t', 'damaged mark: the decoders work');
is($node->safe_psql('postgres', "SELECT snowflake_min_id(now()) > 0, (SELECT shard_bits FROM snowflake_layout())"),
	't|10', 'damaged mark: time-range bounds and the layout work');
$node->stop;

# a mark the layout cannot represent (year 97036): damaged as well
write_mark($node, 3_000_000_000_000_000);
$node->start;
($rc, $out, $err) = $node->psql('postgres', 'SELECT snowflake_nextval()');
like($err, qr/ERROR:  could not read the recorded snowflake high-water mark\nDETAIL:  File "pg_snowflake\/mark" holds .* outside the times this layout can represent/,
	'a mark beyond the layout is refused as damaged');
is($node->safe_psql('postgres', "SELECT snowflake_shard_id($id)"), '7',
	'a mark beyond the layout: the decoders work');
$node->stop;

###########################################################################
# (b) a mark far ahead of the clock at start: a WARNING
###########################################################################

write_mark($node, int(time * 1000) + 3_600_000);
my $log_offset = -s $node->logfile;
$node->start;
like(substr(slurp_file($node->logfile), $log_offset),
	qr/WARNING:  the snowflake high-water mark is \d+ ms ahead of the clock/,
	'a mark an hour ahead: a WARNING at start');
$node->stop;
unlink $mark_file;

###########################################################################
# (c) nonsense in a reloadable setting at start stops the server
###########################################################################

my $bad = node('bad_settings', conf => "snowflake.shard_id = 1\ninclude_if_exists = 'bad.conf'\n");
foreach my $case (
	[ 'snowflake.max_clock_lead', "'2h'" ],
	[ 'snowflake.max_clock_wait', "'-5s'" ],
	[ 'snowflake.allow_on_standby', 'maybe' ],
	[ 'snowflake.sequence_start', 'bogus' ])
{
	my ($name, $value) = @$case;
	append_to_file($bad->data_dir . '/bad.conf', "$name = $value\n");
	my $offset = -s $bad->logfile // 0;
	my $started = $bad->start(fail_ok => 1);
	ok(!$started, "$name = $value: the server does not start");
	like(substr(slurp_file($bad->logfile), $offset),
		qr/FATAL:  invalid value for parameter "\Q$name\E"/,
		"$name = $value: FATAL names the setting");
	unlink $bad->data_dir . '/bad.conf';
}
ok($bad->start(fail_ok => 1), 'without the bad line the server starts');
$bad->stop;

###########################################################################
# (d) a refusal before the epoch is counted
###########################################################################

{
	# the epoch a day ahead of the clock
	my @t = gmtime(time + 86400);
	my $epoch = sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]);
	my $early = node('early', conf => "snowflake.shard_id = 2\nsnowflake.epoch = '$epoch'\n",
		extension => 1);
	($rc, $out, $err) = $early->psql('postgres', 'SELECT snowflake_nextval()');
	like($err, qr/the clock reads earlier than snowflake.epoch/, 'before the epoch: refused');
	is($early->safe_psql('postgres', 'SELECT refusals FROM snowflake_stats WHERE shard_id = 2'),
		'1', 'before the epoch: the refusal is counted');
	$early->stop;
}

###########################################################################
# (e) standbys refuse their primary's shards
###########################################################################

my $primary = node('primary', allows_streaming => 1, extension => 1,
	conf => "snowflake.shard_id = 1\nsnowflake.shard_ids = '10-12'\n");
$primary->safe_psql('postgres', 'SELECT snowflake_nextval()');
$primary->backup('base');

my $same = node('standby_same', standby => [ $primary, 'base' ],
	conf => "snowflake.allow_on_standby = on\n", start => 1);

my $own = node('standby_own', standby => [ $primary, 'base' ], start => 1,
	conf => "snowflake.allow_on_standby = on\nsnowflake.shard_id = 2\nsnowflake.shard_ids = '11, 20'\n");

# the primary logs its shards at its start and again while WAL is written
$primary->safe_psql('postgres', 'CREATE TABLE t (id bigint DEFAULT snowflake_nextval())');
$primary->safe_psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 10)');
$primary->wait_for_catchup($same);
$primary->wait_for_catchup($own);
ok( $own->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM (SELECT snowflake_nextval()) s}, 't'),
	'a standby with a shard of its own generates once it knows its primary\'s shards');

($rc, $out, $err) = $same->psql('postgres', 'SELECT snowflake_nextval()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: cannot generate snowflake IDs for shard 1 on this standby/,
	'a standby with its primary\'s shard_id is refused (55000)');
like($err, qr/Its primary generates for that shard/, 'the detail says why');

is($own->safe_psql('postgres', q{
	SELECT count(*) = 1000 AND bool_and(snowflake_shard_id(x) = 2)
	FROM snowflake_nextval_batch(1000) x}), 't',
	'the standby with shard 2 generates for shard 2');
is($own->safe_psql('postgres', 'SELECT snowflake_shard_id(snowflake_nextval(20))'), '20',
	'and for a logical shard its primary does not have');
($rc, $out, $err) = $own->psql('postgres', 'SELECT snowflake_nextval(11)');
like($err, qr/cannot generate snowflake IDs for shard 11 on this standby/,
	'but not for a logical shard of its primary (snowflake.shard_ids 10-12)');

# a reload of the primary that takes shard 2 reaches the standby
$primary->append_conf('postgresql.conf', "snowflake.shard_ids = '2'\n");
$primary->reload;
# wait for the record to be replayed: retried until the refusal appears
my $refused = 0;
for (1 .. 100)
{
	$primary->safe_psql('postgres', 'INSERT INTO t DEFAULT VALUES');
	($rc, $out, $err) = $own->psql('postgres', 'SELECT snowflake_nextval()');
	if ($rc != 0 && $err =~ /cannot generate snowflake IDs for shard 2 on this standby/)
	{
		$refused = 1;
		last;
	}
	sleep 0.2;
}
ok($refused, 'once the primary generates for shard 2 too, the standby refuses it');

$_->stop for ($same, $own, $primary);
done_testing();
