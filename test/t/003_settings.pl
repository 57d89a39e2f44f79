# Settings: invalid layouts stop the server, the shard ID can only come from
# the configuration, the library must be preloaded, a changed layout is
# refused, and a hot standby does not generate IDs.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $preload = "shared_preload_libraries = 'snowflake'\n";

# Runs $sql, expecting it to fail; returns its stderr.
sub psql_fails
{
	my ($node, $sql, $name) = @_;
	my $ret = $node->psql('postgres', $sql, stderr => \my $err);
	isnt($ret, 0, "$name: fails");
	return $err;
}

# Writes the per-case settings file included by postgresql.conf.
sub set_case_conf
{
	my ($node, $text) = @_;
	my $file = $node->data_dir . '/snowflake_case.conf';
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $text;
	close $fh;
}

###########################################################################
# (a) Invalid settings: the server refuses to start and says why.
###########################################################################

# the included file comes last, so its settings win
my $node = node('settings', conf => "include_if_exists = 'snowflake_case.conf'\n");

# [name, settings, FATAL line, reason given in the log]
my @bad = (
	[
		'sequence_bits out of range',
		"snowflake.shard_id = 7\nsnowflake.sequence_bits = 30\n",
		qr/FATAL:  invalid value for parameter "snowflake\.sequence_bits": "30"/,
		qr/30 is outside the valid range for parameter "snowflake\.sequence_bits" \(1 \.\. 24\)/
	],
	[
		'shard_bits + sequence_bits too large',
		"snowflake.shard_id = 7\nsnowflake.shard_bits = 10\nsnowflake.sequence_bits = 20\n",
		qr/FATAL:  snowflake\.shard_bits \+ snowflake\.sequence_bits must be at most 25/,
		qr/less 10 \+ 20 leaves 33 timestamp bits of 1 ms: IDs would run out on 2024-04-09/
	],
	[
		'unparseable epoch',
		"snowflake.shard_id = 7\nsnowflake.epoch = 'yesterday'\n",
		qr/FATAL:  invalid value for parameter "snowflake\.epoch": "yesterday"/,
		qr/snowflake\.epoch must be a date or date-time in ISO 8601 form/
	],
	[
		'shard_id beyond 10 shard bits',
		"snowflake.shard_id = 5000\n",
		qr/FATAL:  invalid value for parameter "snowflake\.shard_id": "5000"/,
		qr/snowflake\.shard_id must be between 0 and 1023 because snowflake\.shard_bits is 10/
	],);

foreach my $case (@bad)
{
	my ($name, $conf, $fatal, $reason) = @$case;

	set_case_conf($node, $conf);
	my $offset = -s $node->logfile // 0;
	my $started = $node->start(fail_ok => 1);
	ok(!$started, "$name: server refuses to start");
	my $log = slurp_file($node->logfile, $offset);
	like($log, $fatal,  "$name: log has the FATAL line");
	like($log, $reason, "$name: log gives the reason");
	unlike($log, qr/database system is ready to accept connections/,
		"$name: server never accepted connections");
	$node->stop if $started;

	# the same node starts with a good configuration
	set_case_conf($node, "snowflake.shard_id = 7\n");
	ok($node->start(fail_ok => 1), "$name: good configuration starts again");
	$node->stop;
}

# An epoch later than the clock at start may be the clock's fault (a host not
# yet synchronised): the server starts, logs why, and only generation refuses.
set_case_conf($node, "snowflake.shard_id = 7\nsnowflake.epoch = '2999-01-01'\n");
{
	my $offset = -s $node->logfile // 0;
	ok($node->start(fail_ok => 1), 'epoch in the future: the server starts');
	like(
		slurp_file($node->logfile, $offset),
		qr/WARNING:  the system clock reads earlier than snowflake\.epoch/,
		'epoch in the future: the log says why generation will refuse');
	my ($rc, $out, $err) = $node->psql('postgres',
		"CREATE EXTENSION snowflake; SELECT snowflake_nextval();",
		extra_params => ['-v', 'VERBOSITY=verbose']);
	like($err, qr/ERROR:  58000: could not generate a snowflake ID: the clock reads earlier than snowflake\.epoch/,
		'epoch in the future: generation refuses with SQLSTATE 58000');
	like($err, qr/DETAIL:  snowflake\.epoch is 2999-01-01 00:00:00\.000\+00 and the clock reads /,
		'epoch in the future: the error shows the epoch and the clock');
	is($node->safe_psql('postgres', 'SELECT 1 + 1'), '2',
		'epoch in the future: the database works for everything else');
	ok(!-e $node->data_dir . '/pg_snowflake/layout',
		'epoch in the future: CREATE EXTENSION records no layout (it may be a mistake)');
	$node->safe_psql('postgres', 'DROP EXTENSION snowflake');
	$node->stop;
}

# The checks also accept what they should: a valid non-default layout.
set_case_conf($node,
	"snowflake.shard_id = 7\nsnowflake.shard_bits = 5\nsnowflake.sequence_bits = 20\n"
	  . "snowflake.epoch = '2020-06-01 12:00:00+02'\n");
ok($node->start(fail_ok => 1), 'valid non-default layout starts');
$node->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is( $node->safe_psql(
		'postgres',
		"SELECT epoch = '2020-06-01 10:00:00+00', shard_bits, sequence_bits, timestamp_bits, max_shard_id FROM snowflake_layout()"
	),
	't|5|20|38|31',
	'snowflake_layout() reports the configured layout');
is( $node->safe_psql(
		'postgres',
		'SELECT shard_id, snowflake_shard_id(x), snowflake_sequence(x) < 1048576, '
		  . "snowflake_timestamp(x) BETWEEN now() - interval '5 minutes' AND now() + interval '5 minutes' "
		  . 'FROM snowflake_layout(), snowflake_nextval() x'),
	'7|7|t|t',
	'IDs of the non-default layout decode with it');
$node->stop;

###########################################################################
# (b) The shard ID comes from the configuration only.
###########################################################################

# Fresh data directory for this part: no shard ID set.
my $sh = node('shard', extension => 1);

my $err = psql_fails($sh, 'SELECT snowflake_nextval()', 'nextval without shard_id');
like($err, qr/ERROR:  snowflake\.shard_id is not set/,
	'nextval without shard_id: error message');
like($err, qr/HINT:  .*ALTER SYSTEM SET snowflake\.shard_id/,
	'nextval without shard_id: hint shows ALTER SYSTEM');
is($sh->safe_psql('postgres', 'SELECT shard_id IS NULL FROM snowflake_layout()'),
	't', 'snowflake_layout() shows no shard');

# An out-of-range shard ID is rejected by ALTER SYSTEM itself.
$err = psql_fails($sh, 'ALTER SYSTEM SET snowflake.shard_id = 5000',
	'ALTER SYSTEM with shard_id beyond 10 bits');
like($err, qr/invalid value for parameter "snowflake\.shard_id": 5000/,
	'ALTER SYSTEM with shard_id beyond 10 bits: error message');
like($err, qr/must be between 0 and 1023/,
	'ALTER SYSTEM with shard_id beyond 10 bits: detail gives the range');

$sh->safe_psql('postgres',
	'ALTER SYSTEM SET snowflake.shard_id = 5; SELECT pg_reload_conf()');
ok( $sh->poll_query_until(
		'postgres', 'SELECT snowflake_shard_id(snowflake_nextval())', '5'),
	'after ALTER SYSTEM and reload, IDs carry shard 5');

$err = psql_fails($sh, 'SET snowflake.shard_id = 3', 'SET shard_id');
like(
	$err,
	qr/parameter "snowflake\.shard_id" cannot be changed now/,
	'SET shard_id: error message');
$err = psql_fails(
	$sh,
	"SELECT set_config('snowflake.shard_id', '3', false)",
	'set_config shard_id');
like(
	$err,
	qr/parameter "snowflake\.shard_id" cannot be changed now/,
	'set_config shard_id: error message');
$err = psql_fails(
	$sh,
	"BEGIN; SET LOCAL snowflake.shard_id = 3; COMMIT;",
	'SET LOCAL shard_id');
like(
	$err,
	qr/parameter "snowflake\.shard_id" cannot be changed now/,
	'SET LOCAL shard_id: error message');
$err = psql_fails($sh, 'ALTER ROLE CURRENT_USER SET snowflake.shard_id = 3',
	'ALTER ROLE SET shard_id');
like(
	$err,
	qr/parameter "snowflake\.shard_id" cannot be changed now/,
	'ALTER ROLE SET shard_id: error message');
$err = psql_fails($sh, 'ALTER DATABASE postgres SET snowflake.shard_id = 3',
	'ALTER DATABASE SET shard_id');
like(
	$err,
	qr/parameter "snowflake\.shard_id" cannot be changed now/,
	'ALTER DATABASE SET shard_id: error message');
is( $sh->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') LIKE '%snowflake%'"
	),
	0,
	'no per-role or per-database snowflake setting was stored');
# A new connection can't bring its own shard ID either.
{
	local $ENV{PGOPTIONS} = '-c snowflake.shard_id=3';
	my $ret = $sh->psql('postgres', 'SELECT snowflake_shard_id(snowflake_nextval())',
		stdout => \my $out, stderr => \my $cerr);
	isnt($ret, 0, 'connection option snowflake.shard_id=3 is refused');
	like($cerr, qr/parameter "snowflake\.shard_id" cannot be changed now/,
		'connection option snowflake.shard_id=3: error message');
}

$err = psql_fails($sh, "SET snowflake.epoch = '2020-01-01'", 'SET epoch');
like(
	$err,
	qr/parameter "snowflake\.epoch" cannot be changed without restarting the server/,
	'SET epoch: error message');

$err = psql_fails($sh, 'SET snowflake.nonexistent = 1', 'SET unknown snowflake.* setting');
like(
	$err,
	qr/invalid configuration parameter name "snowflake\.nonexistent"/,
	'SET unknown snowflake.* setting: error message');
like($err, qr/"snowflake" is a reserved prefix/,
	'SET unknown snowflake.* setting: the prefix is reserved');

is( $sh->safe_psql(
		'postgres',
		'SELECT current_setting($$snowflake.shard_id$$), snowflake_shard_id(snowflake_nextval())'),
	'5|5',
	'after all attempts the shard is still 5');
$sh->stop;

###########################################################################
# (c) Without shared_preload_libraries.
###########################################################################

# Runs $sql in a session that goes on afterwards: the call must fail with
# the preload error (an ERROR, not a FATAL that ends the session).
sub fails_with_preload_error
{
	my ($n, $sql, $name) = @_;
	my $ret = $n->psql(
		'postgres', "$sql;\nSELECT 'session-alive';",
		on_error_stop => 0,
		stdout        => \my $out,
		stderr        => \my $err);
	like(
		$err,
		qr/ERROR:  snowflake must be loaded via shared_preload_libraries/,
		"$name: fails with the preload error");
	like($err, qr/HINT:  Add snowflake to shared_preload_libraries/,
		"$name: hint says how to fix it");
	like($out, qr/session-alive/, "$name: the session survives the error");
}

my $np = node('nopreload', preload => 0, start => 1,
	conf => "snowflake.shard_id = 7\ninclude_if_exists = 'snowflake_case.conf'\n");
my $ret = $np->psql('postgres', 'CREATE EXTENSION snowflake', stderr => \$err);
is($ret, 0, 'CREATE EXTENSION works without the preload')
  or diag("CREATE EXTENSION said: $err");
SKIP:
{
	# without the extension the calls below would only find no function
	skip 'CREATE EXTENSION failed', 6 if $ret != 0;
	fails_with_preload_error($np, 'SELECT snowflake_nextval()',
		'nextval, extension created without the preload');
	fails_with_preload_error($np, 'SELECT snowflake_timestamp(1)',
		'snowflake_timestamp, extension created without the preload');
}
ok(!-e $np->data_dir . '/pg_snowflake/layout',
	'no layout recorded without the preload');

# The extension was created with the preload, which was removed later.
$np->stop;
set_case_conf($np, $preload);
$np->start;
$np->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS snowflake');
$np->stop;
set_case_conf($np, '');
$np->start;
fails_with_preload_error($np, 'SELECT snowflake_nextval()',
	'nextval after the preload was removed');
fails_with_preload_error($np, 'SELECT snowflake_timestamp(1)',
	'snowflake_timestamp after the preload was removed');
$np->stop;

###########################################################################
# (d) A changed layout is refused until restored or deliberately reset.
###########################################################################

my $ly = node('layout', start => 1,
	conf => "snowflake.shard_id = 7\ninclude_if_exists = 'snowflake_case.conf'\n");
$ly->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase int);
	INSERT INTO ids (phase) SELECT 1 FROM generate_series(1, 100);
});
my $layout_file = $ly->data_dir . '/pg_snowflake/layout';
ok(-f $layout_file, 'CREATE EXTENSION (or the first ID) recorded pg_snowflake/layout');
like(slurp_file($layout_file), qr/^sequence_bits 12$/m,
	'layout file records sequence_bits 12');
my $old_id = $ly->safe_psql('postgres', 'SELECT max(id) FROM ids');

$ly->stop;
set_case_conf($ly, "snowflake.sequence_bits = 14\n");
my $offset = -s $ly->logfile;
$ly->start;
my $start_log = slurp_file($ly->logfile, $offset);
like(
	$start_log,
	qr/WARNING:  the snowflake ID layout differs from the one this data directory generated with/,
	'start with a changed layout logs a WARNING');
like($start_log, qr/DETAIL:  snowflake\.sequence_bits was 12 and is now 14/,
	'the WARNING names the changed setting');

$err = psql_fails($ly, 'SELECT snowflake_nextval()', 'nextval with changed layout');
like(
	$err,
	qr/ERROR:  the snowflake ID layout differs from the one this data directory generated with/,
	'nextval with changed layout: error message');
like($err, qr/DETAIL:  snowflake\.sequence_bits was 12 and is now 14/,
	'nextval with changed layout: detail names sequence_bits 12 -> 14');
$err = psql_fails($ly, "SELECT snowflake_timestamp($old_id)",
	'snowflake_timestamp with changed layout');
like(
	$err,
	qr/ERROR:  the snowflake ID layout differs from the one this data directory generated with/,
	'snowflake_timestamp with changed layout: error message');
like($err, qr/DETAIL:  snowflake\.sequence_bits was 12 and is now 14/,
	'snowflake_timestamp with changed layout: detail names sequence_bits 12 -> 14');
$err = psql_fails($ly, "SELECT * FROM snowflake_decode($old_id)",
	'snowflake_decode with changed layout');
like($err, qr/the snowflake ID layout differs/,
	'snowflake_decode with changed layout: error message');
psql_fails($ly, 'INSERT INTO ids (phase) VALUES (2)',
	'insert with an ID default under a changed layout');
like(slurp_file($layout_file), qr/^sequence_bits 12$/m,
	'the refused start left the recorded layout alone');

# Restoring the old layout makes everything work again.
$ly->stop;
set_case_conf($ly, '');
$ly->start;
$ly->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 3 FROM generate_series(1, 100)');
is( $ly->safe_psql(
		'postgres',
		'SELECT (SELECT min(id) FROM ids WHERE phase = 3) > (SELECT max(id) FROM ids WHERE phase = 1)'
	),
	't',
	'restored layout: generation works and continues above the old IDs');
is( $ly->safe_psql(
		'postgres',
		"SELECT snowflake_shard_id($old_id), snowflake_timestamp($old_id) BETWEEN now() - interval '5 minutes' AND now()"
	),
	'7|t',
	'restored layout: old IDs decode again');

# The deliberate way to change the layout: remove the record while stopped.
$ly->stop;
unlink $layout_file or die "could not remove $layout_file: $!";
set_case_conf($ly, "snowflake.sequence_bits = 14\n");
$offset = -s $ly->logfile;
$ly->start;
unlike(
	slurp_file($ly->logfile, $offset),
	qr/layout differs/,
	'no layout WARNING after removing the record');
is( $ly->safe_psql(
		'postgres',
		'SELECT l.sequence_bits, snowflake_shard_id(x), snowflake_sequence(x) < 16384, '
		  . "snowflake_timestamp(x) BETWEEN now() - interval '5 minutes' AND now() + interval '5 minutes' "
		  . 'FROM snowflake_layout() l, snowflake_nextval() x'),
	'14|7|t|t',
	'new layout accepted after removing the record: IDs generate and decode');
like(slurp_file($layout_file), qr/^sequence_bits 14$/m,
	'the new layout was recorded');
$ly->stop;

###########################################################################
# (e) Hot standby: no generation, but decoding works.
###########################################################################

my $primary = node('primary', allows_streaming => 1, start => 1,
	conf => "snowflake.shard_id = 7\n");
$primary->safe_psql(
	'postgres', q{
	CREATE EXTENSION snowflake;
	CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), phase int);
	INSERT INTO ids (phase) SELECT 1 FROM generate_series(1, 100);
});
$primary->backup('bkp');

my $standby = node('standby', standby => [ $primary, 'bkp' ], start => 1);
$primary->safe_psql('postgres',
	'INSERT INTO ids (phase) SELECT 2 FROM generate_series(1, 100)');
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'standby is in recovery');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	200, 'standby has the replicated IDs');
$err = psql_fails($standby, 'SELECT snowflake_nextval()', 'nextval on standby');
like(
	$err,
	qr/ERROR:  cannot generate snowflake IDs on a standby server/,
	'nextval on standby: error message');

my $decode_sql = q{
	SELECT string_agg(format('%s %s %s %s', id, snowflake_timestamp(id),
	                         snowflake_shard_id(id), snowflake_sequence(id)), ',' ORDER BY id)
	FROM ids};
my $on_primary = $primary->safe_psql('postgres', $decode_sql);
my $on_standby = $standby->safe_psql('postgres', $decode_sql);
isnt($on_standby, '', 'standby decodes replicated IDs');
is($on_standby, $on_primary, 'standby decodes IDs exactly as the primary');
is( $standby->safe_psql(
		'postgres', 'SELECT count(*) FROM ids WHERE snowflake_shard_id(id) <> 7'),
	0,
	'replicated IDs decode to shard 7 on the standby');

$standby->stop;
$primary->stop;

done_testing();
