# The SQL edition's backfill: snowflake_nextval_at(created_at, shard_id) on
# import shards: the decoded time is the original one, IDs of a shard
# distinct and increasing, times that decrease refused (22023), a unit's
# sequence used up refused (54000), times out of range refused (22008), a
# shard cannot be live and an import shard at once, EXECUTE only where
# granted.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $install_sql = managed_install_sql();

my $node = node('managed_backfill', preload => 0, start => 1);
$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE DATABASE appdb OWNER app;
	CREATE ROLE mallory LOGIN;
});

sub ok_as
{
	my ($role, $sql) = @_;
	return $node->safe_psql('appdb', $sql, extra_params => [ '-U', $role ]);
}

sub err_as
{
	my ($role, $sql) = @_;
	my ($rc, $out, $err) = $node->psql('appdb', $sql,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
	return $rc == 0 ? '' : $err;
}

ok_as('app', "\\set ON_ERROR_STOP 1\n" . $install_sql);
like(err_as('app', 'SELECT snowflake_configure(shard_id => 1, import_shards => ARRAY[1, 900])'),
	qr/22023.*both live and reserved for imports/s, 'a shard both live and for imports: refused (22023)');
ok_as('app', 'SELECT snowflake_configure(shard_id => 1, import_shards => ARRAY[900, 901])');
like(err_as('app', 'SELECT snowflake_nextval(900)'), qr/55000/, 'live generation on an import shard: refused (55000)');
like(err_as('app', q{SELECT snowflake_nextval_at(now() - interval '1 day', 1)}), qr/55000.*not an import shard/s,
	'backfill on a live shard: refused (55000)');
like(err_as('mallory', q{SELECT snowflake_nextval_at(now() - interval '1 day', 900)}), qr/42501/,
	'backfill without EXECUTE: refused (42501)');

# 5,000 rows of 2024-2025, several per millisecond, imported in time order.
ok_as('app', q{
	CREATE TABLE legacy AS
	SELECT timestamptz '2024-03-01 00:00:00+00' + (n / 3) * interval '1.5 ms' + (n % 3) * interval '0.1 ms' AS created_at
	FROM generate_series(1, 5000) n;
	CREATE TABLE imported AS
	SELECT snowflake_nextval_at(created_at, 900) AS id, created_at FROM (SELECT * FROM legacy ORDER BY created_at) s;
});
is( ok_as(
		'app', q{
	SELECT count(*), count(DISTINCT id),
	       count(*) FILTER (WHERE (id >> 22) + 1704067200000 <> floor(extract(epoch FROM created_at) * 1000)),
	       count(*) FILTER (WHERE (id >> 12) & 1023 <> 900)
	FROM imported}),
	'5000|5000|0|0',
	'5,000 imported IDs: distinct, the decoded time equals created_at to the ms, shard 900');
is( ok_as(
		'app', q{
	SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY created_at, id) AS prev FROM imported) s WHERE id <= prev}),
	'0', 'imported IDs increase with created_at');

like(err_as('app', q{SELECT snowflake_nextval_at(timestamptz '2024-02-01 00:00:00+00', 900)}),
	qr/22023.*earlier than the last ID of import shard 900/s, 'an earlier time: refused (22023)');
like(err_as('app', q{SELECT snowflake_nextval_at(now() + interval '1 hour', 900)}), qr/22008/,
	'a time in the future: refused (22008)');
like(err_as('app', q{SELECT snowflake_nextval_at(timestamptz '2023-12-31 00:00:00+00', 901)}), qr/22008/,
	'a time before the epoch: refused (22008)');
like(
	err_as('app', q{SELECT count(*) FROM (SELECT snowflake_nextval_at(timestamptz '2025-01-01 00:00:00+00', 901) FROM generate_series(1, 4097)) s}),
	qr/54000.*more than 4096 IDs in one time unit/s,
	'4,097 rows in one millisecond: refused (54000)');
is( ok_as(
		'app', q{
	SELECT count(*), count(DISTINCT b), bool_and((b >> 22) + 1704067200000 >= 1735689600001)
	FROM snowflake_nextval_at_batch(ARRAY[timestamptz '2025-01-01 00:00:00.001+00', '2025-01-01 00:00:00.001+00', '2025-01-02 00:00:00+00'], 901) b}),
	'3|3|t',
	'snowflake_nextval_at_batch on a sorted array: 3 distinct IDs, after the refused millisecond');
# Live IDs are untouched by imports.
is(ok_as('app', 'SELECT (snowflake_nextval() >> 12) & 1023'), '1', 'live generation continues on shard 1');

$node->stop;
done_testing();
