# The SQL edition (managed/install.sql, issue 34) gives the extension's
# answers bit for bit.  For each layout preset, one server with the extension
# preloaded (the layout is per data directory), the extension in schema ext
# (installed by a superuser) and the SQL edition in schema sqled of the same
# database, installed by its non-superuser owner and configured with the
# extension's own layout (snowflake__define_decoders, read back from
# ext.snowflake_layout()):
#  (a) every decoder, the text form and the time filters over a spread of IDs
#      (0, 1, the largest, the ends of the timestamp field, powers of two and
#      their neighbours, and random ones): the default layout over 1,000,000
#      IDs, the other presets over 100,000 each (run time); the decoders of
#      named layouts (twitter ... mastodon, and "snowflake") over 5,000 IDs
#      of the default and 1,000 of the others (PL/pgSQL, slower);
#  (b) the time bounds (min_id, max_id, time_bound, with and without a shard)
#      over a spread of times from the epoch to the layout's last time, to the
#      microsecond, and snowflake_layout();
#  (c) the SQLSTATE of every function for bad input (negative IDs, IDs wider
#      than the layout, times outside it and infinities, shards out of range,
#      bad text, bad public IDs) is the extension's;
#  (c2) the partition helpers: the same value, or the same SQLSTATE, for a
#      list of spans (aligned or not, months, negative, sub-millisecond, too
#      long), numbers of IDs and ranges (empty, at the layout's ends);
#  (d) the default preset only: public IDs of 10,000 IDs under two keys and a
#      tweak, both ways, and decoding each other's;
#  (e) the functions' labels (IMMUTABLE/STABLE, STRICT, PARALLEL SAFE) are
#      the extension's, except the documented ones (decoders of an ID declared
#      not STRICT so that the planner inlines them), and the functions of the
#      extension the SQL edition does not offer are exactly the documented
#      ones (docs/managed.md, the parity table).
# A mismatch count of 0 is what every check asserts; each check also asserts
# that it compared the number of rows it meant to (no vacuous pass).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my $root = "$FindBin::RealBin/../..";
my $install = slurp_file("$root/managed/install.sql");

my %presets = (
	'a_default' => '',
	'js53_10ms' => "snowflake.id_bits = 53\nsnowflake.time_unit = '10ms'\n"
	  . "snowflake.shard_bits = 6\nsnowflake.sequence_bits = 8\n",
	'js53_1s' => "snowflake.id_bits = 53\nsnowflake.time_unit = '1s'\n"
	  . "snowflake.shard_bits = 12\nsnowflake.sequence_bits = 12\n",
	'datacenters' => "snowflake.datacenter_bits = 4\nsnowflake.datacenter_id = 5\nsnowflake.shard_id = 323\n",
	'odd_epoch' => "snowflake.epoch = '2020-03-15 12:34:56.789+00'\n",
	'w45_4ms' => "snowflake.id_bits = 45\nsnowflake.time_unit = '4ms'\n"
	  . "snowflake.shard_bits = 4\nsnowflake.sequence_bits = 5\n",
	# 62 timestamp bits from 1970: IDs past what a timestamptz holds
	'wide_1970' => "snowflake.epoch = '1970-01-01'\nsnowflake.shard_bits = 0\n"
	  . "snowflake.sequence_bits = 1\nsnowflake.shard_id = 0\n",
);

my $key1 = '00112233445566778899aabbccddeeff';
my $key2 = 'f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff';

foreach my $preset (sort keys %presets)
{
	my $default = $preset eq 'a_default';
	my $n_ids = $default ? 1_000_000 : 100_000;
	my $n_times = $default ? 100_000 : 10_000;
	my $conf = "snowflake.shard_id = 3\n" . $presets{$preset};
	$conf .= "snowflake.public_id_keys = '2:$key2,1:$key1'\n" if $default;
	my $node = node($preset, conf => $conf, start => 1);

	$node->safe_psql('postgres', q{
		CREATE ROLE app LOGIN;
		CREATE DATABASE appdb OWNER app;});
	$node->safe_psql('appdb', q{
		CREATE SCHEMA ext;
		CREATE EXTENSION snowflake SCHEMA ext;
		GRANT USAGE ON SCHEMA ext TO app;});
	$node->safe_psql('appdb', "CREATE SCHEMA sqled;\nSET search_path = sqled;\n" . $install,
		extra_params => [ '-U', 'app' ]);
	# the extension's layout, given to the SQL edition
	$node->safe_psql('appdb', q{
		SELECT sqled.snowflake__define_decoders(
		    (EXTRACT(epoch FROM epoch) * 1000)::bigint, time_unit_ms, id_bits, shard_bits,
		    sequence_bits, datacenter_bits, shard_id, datacenter_id)
		FROM ext.snowflake_layout();}, extra_params => [ '-U', 'app' ]);

	my $q = sub { $node->safe_psql('appdb', $_[0], extra_params => [ '-U', 'app' ]) };
	$q->("SELECT sqled.snowflake_set_public_id_keys('2:$key2, 1:$key1')") if $default;

	is($q->('SELECT row(l.*)::text FROM ext.snowflake_layout() l'),
		$q->('SELECT row(l.*)::text FROM sqled.snowflake_layout() l'),
		"$preset: snowflake_layout() is the extension's");

	# (a) IDs: the largest whose time a timestamptz holds, the edges, random
	my ($max_id, $limit, $shift) = split /\|/, $q->(q{
		SELECT CASE WHEN id_bits = 63 THEN 9223372036854775807 ELSE (1::bigint << id_bits) - 1 END,
		       ext.snowflake_max_id(last_timestamp), shard_bits + sequence_bits
		FROM ext.snowflake_layout()});
	$q->(qq{
		SELECT setseed(0.34);
		CREATE TABLE ids AS
		SELECT DISTINCT least(greatest(v, 0), $limit) AS id FROM (
		    SELECT unnest(ARRAY[0, 1, 2, $limit, $limit - 1, $max_id,
		                        1::bigint << $shift, (1::bigint << $shift) - 1,
		                        (1::bigint << $shift) + 1]) AS v
		    UNION ALL
		    SELECT (1::bigint << b) + d FROM generate_series(0, 62) b, generate_series(-1, 1) d
		    UNION ALL
		    SELECT CASE g % 4
		        WHEN 0 THEN (random() * $limit)::bigint
		        WHEN 1 THEN g
		        WHEN 2 THEN $limit - g
		        ELSE ((random() * ($limit >> $shift))::bigint << $shift) | (g & ((1::bigint << $shift) - 1))
		        END
		    FROM generate_series(1, $n_ids) g) s;
		ANALYZE ids;});
	my $n = $q->('SELECT count(*) FROM ids');
	cmp_ok($n, '>=', $n_ids * 0.9, "$preset: $n distinct IDs to compare");

	my $now = $q->(q{SELECT least(now(), (SELECT last_timestamp FROM ext.snowflake_layout()))});
	is( $q->(qq{
		SELECT count(*) FILTER (WHERE ext.snowflake_timestamp(id) IS DISTINCT FROM sqled.snowflake_timestamp(id))
		     + count(*) FILTER (WHERE ext.snowflake_shard_id(id) IS DISTINCT FROM sqled.snowflake_shard_id(id))
		     + count(*) FILTER (WHERE ext.snowflake_sequence(id) IS DISTINCT FROM sqled.snowflake_sequence(id))
		     + count(*) FILTER (WHERE ext.snowflake_datacenter(id) IS DISTINCT FROM sqled.snowflake_datacenter(id))
		     + count(*) FILTER (WHERE ext.snowflake_worker(id) IS DISTINCT FROM sqled.snowflake_worker(id))
		     + count(*) FILTER (WHERE ext.snowflake_decode(id) IS DISTINCT FROM sqled.snowflake_decode(id))
		     + count(*) FILTER (WHERE ext.snowflake_to_text(id) IS DISTINCT FROM sqled.snowflake_to_text(id))
		     + count(*) FILTER (WHERE sqled.snowflake_from_text(ext.snowflake_to_text(id)) IS DISTINCT FROM id)
		     + count(*) FILTER (WHERE sqled.snowflake_from_text(lower(ext.snowflake_to_text(id))) IS DISTINCT FROM id)
		     + count(*) FILTER (WHERE ext.snowflake_created_after(id, '$now') IS DISTINCT FROM sqled.snowflake_created_after(id, '$now'))
		     + count(*) FILTER (WHERE ext.snowflake_created_before(id, '$now') IS DISTINCT FROM sqled.snowflake_created_before(id, '$now'))
		     + count(*) FILTER (WHERE ext.snowflake_created_between(id, '2025-06-01', '$now')
		                              IS DISTINCT FROM sqled.snowflake_created_between(id, '2025-06-01', '$now'))
		FROM ids}),
		'0', "$preset: decoders, text form and time filters agree on every ID");
	# other systems' layouts by name, and this one's as "snowflake"
	my $n_named = $default ? 5_000 : 1_000;
	is( $q->(qq{
		SELECT count(*) FILTER (WHERE ext.snowflake_decode(id, l) IS DISTINCT FROM sqled.snowflake_decode(id, l))
		     + count(*) FILTER (WHERE ext.snowflake_timestamp(id, l) IS DISTINCT FROM sqled.snowflake_timestamp(id, l))
		     + count(*) FILTER (WHERE ext.snowflake_shard_id(id, l) IS DISTINCT FROM sqled.snowflake_shard_id(id, l))
		     + count(*) FILTER (WHERE ext.snowflake_sequence(id, l) IS DISTINCT FROM sqled.snowflake_sequence(id, l))
		FROM (SELECT id FROM ids ORDER BY id % 7919, id LIMIT $n_named) s,
		     unnest(ARRAY['twitter', 'Discord', 'instagram', 'sonyflake', 'SONYFLAKE_V2', 'mastodon', 'snowflake']) l}),
		'0', "$preset: decoders of named layouts agree on $n_named IDs each");

	# NULL in, NULL out, as the extension's STRICT functions
	is( $q->(q{
		SELECT sqled.snowflake_timestamp(NULL) IS NULL AND sqled.snowflake_shard_id(NULL) IS NULL
		   AND sqled.snowflake_sequence(NULL) IS NULL AND sqled.snowflake_worker(NULL) IS NULL
		   AND sqled.snowflake_datacenter(NULL) IS NULL AND sqled.snowflake_to_text(NULL) IS NULL
		   AND sqled.snowflake_from_text(NULL) IS NULL AND sqled.snowflake_decode(NULL) IS NULL
		   AND sqled.snowflake_min_id(NULL) IS NULL AND sqled.snowflake_time_bound(NULL) IS NULL}),
		't', "$preset: NULL gives NULL");

	# (b) times: microseconds from the epoch to the layout's last time
	$q->(qq{
		SELECT setseed(0.57);
		CREATE TABLE times AS
		WITH l AS (SELECT epoch, last_timestamp + interval '999 microseconds' AS last, time_unit_ms FROM ext.snowflake_layout())
		SELECT t FROM l, LATERAL (
		    SELECT unnest(ARRAY[epoch, epoch + interval '1 microsecond', last, last - interval '1 microsecond',
		                        now(), last - interval '1 millisecond' * time_unit_ms]) AS t
		    UNION ALL
		    SELECT least(ext.snowflake_timestamp((random() * $limit)::bigint)
		                 + (random() * time_unit_ms * 1000)::bigint * interval '1 microsecond', last)
		    FROM generate_series(1, $n_times / 2)
		    UNION ALL
		    SELECT least(now() + (random() - 0.5) * interval '3 years', last) FROM generate_series(1, $n_times / 4)
		    UNION ALL
		    SELECT epoch + (random() * 100000)::bigint * interval '1 microsecond' FROM generate_series(1, $n_times / 4)) s
		WHERE t BETWEEN epoch AND last;});
	my $shard = $q->('SELECT max_shard_id / 2 FROM ext.snowflake_layout()');
	is( $q->(qq{
		SELECT count(*) FILTER (WHERE ext.snowflake_min_id(t) IS DISTINCT FROM sqled.snowflake_min_id(t))
		     + count(*) FILTER (WHERE ext.snowflake_max_id(t) IS DISTINCT FROM sqled.snowflake_max_id(t))
		     + count(*) FILTER (WHERE ext.snowflake_min_id(t, $shard) IS DISTINCT FROM sqled.snowflake_min_id(t, $shard))
		     + count(*) FILTER (WHERE ext.snowflake_max_id(t, $shard) IS DISTINCT FROM sqled.snowflake_max_id(t, $shard))
		     + count(*) FILTER (WHERE t <= last_timestamp
		                              AND ext.snowflake_time_bound(t) IS DISTINCT FROM sqled.snowflake_time_bound(t))
		FROM times, ext.snowflake_layout()}),
		'0', "$preset: min_id, max_id and time_bound agree at every time");
	cmp_ok($q->('SELECT count(*) FROM times'), '>=', $n_times * 0.9, "$preset: times compared");
	# time_bound before the epoch (0) and past the end (an error below)
	is($q->(q{SELECT sqled.snowflake_time_bound(epoch - interval '1 microsecond') = ext.snowflake_time_bound(epoch - interval '1 microsecond')
	          AND sqled.snowflake_time_bound('-infinity') = ext.snowflake_time_bound('-infinity') FROM ext.snowflake_layout()}),
		't', "$preset: time_bound before the epoch");

	# (c) the SQLSTATEs of bad input
	$q->(q{
		CREATE FUNCTION state(q text) RETURNS text LANGUAGE plpgsql AS $$
		BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;});
	my @probes = (
		map({ ("snowflake_timestamp($_)", "snowflake_shard_id($_)", "snowflake_sequence($_)",
				"snowflake_datacenter($_)", "snowflake_worker($_)", "snowflake_decode($_)",
				"snowflake_to_text($_)") }
			('-1', '-9223372036854775808', $max_id, "${max_id}::bigint + (CASE WHEN $max_id < 9223372036854775807 THEN 1 ELSE 0 END)",
			 "$limit", "${limit}::bigint + (CASE WHEN $limit < $max_id THEN 1 ELSE 0 END)")),
		map({ ("snowflake_min_id($_)", "snowflake_max_id($_)", "snowflake_min_id($_, 0)",
				"snowflake_max_id($_, 0)", "snowflake_time_bound($_)") }
			("'infinity'", "'-infinity'", "(SELECT epoch - interval '1 microsecond' FROM ext.snowflake_layout())",
			 "(SELECT last_timestamp + interval '999 microseconds' FROM ext.snowflake_layout())",
			 "(SELECT last_timestamp + interval '1 millisecond' FROM ext.snowflake_layout())",
			 "'294276-12-31 23:59:59.999999+00'")),
		map({ ("snowflake_min_id(now(), $_)", "snowflake_max_id(now(), $_)") }
			('-1', '0', "$shard", '(SELECT max_shard_id FROM ext.snowflake_layout())',
			 '(SELECT max_shard_id + 1 FROM ext.snowflake_layout())', '2147483647')),
		map({ ("snowflake_decode($_)", "snowflake_timestamp($_)", "snowflake_shard_id($_)", "snowflake_sequence($_)") }
			("1, 'nope'", "1, ''", "-1, 'twitter'", "-1, 'nope'", "${max_id}::bigint + (CASE WHEN $max_id < 9223372036854775807 THEN 1 ELSE 0 END), 'snowflake'",
			 "${limit}::bigint + (CASE WHEN $limit < $max_id THEN 1 ELSE 0 END), 'snowflake'", "9223372036854775807, 'mastodon'",
			 "9223372036854775807, 'snowflake'", "1, 'twitter '", "1, 'snow flake'")),
		map({ "snowflake_from_text($_)" }
			("''", "'0'", "'0000000000000'", "'7ZZZZZZZZZZZZ'", "'8000000000000'", "'ZZZZZZZZZZZZZ'",
			 "'00000000000000'", "'000000000000I'", "'U000000000000'", "'00000000000-0'",
			 "'0000000000000 '", "' 0000000000000'", "'ÄÄÄÄÄÄÄÄÄÄÄÄÄ'", "'00000000000é'")),);
	if ($default)
	{
		push @probes, map({ ("snowflake_from_public_id($_)", "snowflake_from_public_id($_, 'users')") }
			("''", "'1'", "'10000000000000'", "'1g000000000000'", "'1f000000000000'", "'3000000000000'",
			 "'30000000000000'", "'10000000000000x'", "'i0000000000000'", "'1ZZZZZZZZZZZZZ'",
			 "'2" . ('z' x 13) . "'", "repeat('x', 100)")),
		  map({ ("snowflake_public_id($_)", "snowflake_public_id($_, '')") }
			('-1', '0', '9223372036854775807', '-9223372036854775808'));
	}
	my $values = join ",\n", map { my $p = $_; $p =~ s/'/''/g; "('$p')" } @probes;
	my $diff = $q->(qq{
		SELECT string_agg(format('%s: extension %s, SQL edition %s', p, e, s), E'\\n')
		FROM (SELECT p, state('SELECT ext.' || p) AS e, state('SELECT sqled.' || p) AS s
		      FROM (VALUES $values) v(p)) x
		WHERE e IS DISTINCT FROM s});
	is($diff, '', "$preset: the same SQLSTATE as the extension for " . scalar(@probes) . " probes");
	# partitioning helpers: value or SQLSTATE, for spans, IDs and ranges
	$q->(q{
		CREATE FUNCTION res(q text) RETURNS text LANGUAGE plpgsql AS $$
		DECLARE r text;
		BEGIN EXECUTE 'SELECT (' || q || ')::text' INTO r; RETURN coalesce(r, 'NULL');
		EXCEPTION WHEN OTHERS THEN RETURN 'ERROR ' || SQLSTATE; END $$;});
	my @spans = ('1 day', '1 hour', '6 hours', '7 days', '10 minutes', '1 millisecond', '10 milliseconds',
		'1 second', '1 day 2 hours', '5 hours', '25 hours', '1 day -1 hour', '1 month', '-1 day', '0',
		'1.5 milliseconds', '1 microsecond', '1000000000 days', '100000 days', '2 years');
	my @exprs = (
		map({ ("\@snowflake_partition_interval('$_')", "\@snowflake_partition_interval('$_', false)",
				"\@snowflake_partition_span(\@snowflake_partition_interval('$_', false))") } @spans),
		map({ "\@snowflake_partition_span($_)" }
			('1', '0', '-1', '9223372036854775807', '(SELECT ids_per_unit_per_shard * (max_shard_id + 1) FROM ext.snowflake_layout())',
			 '(SELECT 3 * ids_per_unit_per_shard * (max_shard_id + 1) + 1 FROM ext.snowflake_layout())',
			 '(SELECT 1000000007 * ids_per_unit_per_shard * (max_shard_id + 1) FROM ext.snowflake_layout())')),
		map({ "(SELECT string_agg(row(b.*)::text, ';') FROM \@snowflake_partition_bounds($_) b)" }
			("now() - interval '30 days', now()", "now() - interval '30 days', now(), '1 day', false",
			 "now() - interval '2 hours', now(), '10 minutes'", "now(), now() - interval '1 day'",
			 "(SELECT epoch FROM ext.snowflake_layout()), (SELECT epoch + interval '3 days' FROM ext.snowflake_layout()), '1 day', false",
			 "(SELECT last_timestamp - interval '3 days' FROM ext.snowflake_layout()), (SELECT last_timestamp FROM ext.snowflake_layout()), '1 day', false",
			 "(SELECT last_timestamp - interval '3 hours' FROM ext.snowflake_layout()), 'infinity', '1 hour', false",
			 "'-infinity', now()", "now() - interval '1 day', now(), '1 month'", "now() - interval '5 days', now(), '7 days', false")));
	my $evalues = join ",\n", map { my $p = $_; $p =~ s/'/''/g; "('$p')" } @exprs;
	is( $q->(qq{
		SELECT string_agg(format('%s: extension %s, SQL edition %s', e, x, y), E'\\n')
		FROM (SELECT e, res(replace(e, '\@', 'ext.')) AS x, res(replace(e, '\@', 'sqled.')) AS y
		      FROM (VALUES $evalues) v(e)) r
		WHERE x IS DISTINCT FROM y}),
		'', "$preset: partition helpers give the same values and SQLSTATEs for " . scalar(@exprs) . " calls");

	# the probes do fail where they should
	cmp_ok($q->(qq{SELECT count(*) FROM (VALUES $values) v(p) WHERE state('SELECT sqled.' || p) <> 'ok'}),
		'>=', 40, "$preset: the probes include failures");

	if ($default)
	{
		# (d) public IDs: the same keys in both editions (set above)
		is( $q->(q{
			WITH s AS ((SELECT id FROM ids ORDER BY id LIMIT 5000)
			           UNION ALL (SELECT id FROM ids ORDER BY id DESC LIMIT 5000))
			SELECT count(*) FILTER (WHERE ext.snowflake_public_id(id) IS DISTINCT FROM sqled.snowflake_public_id(id))
			     + count(*) FILTER (WHERE ext.snowflake_public_id(id, 'users') IS DISTINCT FROM sqled.snowflake_public_id(id, 'users'))
			     + count(*) FILTER (WHERE sqled.snowflake_from_public_id(ext.snowflake_public_id(id)) IS DISTINCT FROM id)
			     + count(*) FILTER (WHERE sqled.snowflake_from_public_id(upper(ext.snowflake_public_id(id, 'users')), 'users') IS DISTINCT FROM id)
			     + count(*) FILTER (WHERE ext.snowflake_from_public_id(sqled.snowflake_public_id(id, 'ü'), 'ü') IS DISTINCT FROM id)
			FROM s}),
			'0', "$preset: public IDs agree both ways on 10,000 IDs");
		# a key version the extension lists second decodes too
		$q->("SELECT sqled.snowflake_set_public_id_keys('1:$key1')");
		is( $q->(q{SELECT count(*) FILTER (WHERE ext.snowflake_from_public_id(sqled.snowflake_public_id(id)) IS DISTINCT FROM id)
		           FROM (SELECT id FROM ids LIMIT 1000) s}),
			'0', "$preset: a public ID of key version 1 decodes in the extension");
		is($q->(q{SELECT state('SELECT sqled.snowflake_from_public_id(''' || ext.snowflake_public_id(7) || ''')')}),
			'22023', "$preset: a key version no longer listed: 22023");

		# the keys are the owner's only
		$node->safe_psql('appdb', 'CREATE ROLE other LOGIN; GRANT USAGE ON SCHEMA sqled TO other');
		my ($rc, $out, $err) = $node->psql('appdb', 'SELECT * FROM sqled.snowflake__public_id_keys',
			extra_params => [ '-U', 'other' ]);
		like($err, qr/permission denied/, "$preset: another role cannot read the keys");
		($rc, $out, $err) = $node->psql('appdb', "SELECT sqled.snowflake_set_public_id_keys('1:$key2')",
			extra_params => [ '-U', 'other' ]);
		like($err, qr/permission denied/, "$preset: another role cannot set the keys");
		is($node->safe_psql('appdb', 'SELECT sqled.snowflake_from_public_id(sqled.snowflake_public_id(42))',
				extra_params => [ '-U', 'other' ]),
			'42', "$preset: another role makes and reads public IDs");

		# the SQL edition refuses a schema where the extension is
		# (-f, not stdin: psql stops at the error, which would break the pipe)
		($rc, $out, $err) = $node->psql('appdb', "SET search_path = ext;",
			extra_params => [ '-U', 'app', '-f', "$root/managed/install.sql" ], on_error_stop => 1);
		like($err, qr/the snowflake extension is already installed in schema ext/,
			"$preset: installing into the extension's schema is refused");

		# (e) labels, and what is not offered.  Generation and its statistics
		# (managed/src/20_generate.sql, 40_stats.sql; tests 070-074) are
		# compared when present, and not listed when absent.
		my $generation = join ', ', map { "'$_'" }
		  qw(snowflake_nextval snowflake_nextval_batch snowflake_nextval_at
		  snowflake_nextval_at_batch snowflake_stats snowflake_stats_reset);
		my $labels = q{
			SELECT p.oid::regprocedure::text AS sig, p.proname, pg_get_function_identity_arguments(p.oid) AS args,
			       p.provolatile, p.proisstrict, p.proparallel, pg_get_function_result(p.oid) AS result
			FROM pg_proc p WHERE p.pronamespace = '%s'::regnamespace AND p.proname LIKE 'snowflake%%'
			  AND p.proname NOT LIKE 'snowflake\_\_%%'};
		my $cmp = $q->(sprintf(q{
			WITH e AS (%s), s AS (%s)
			SELECT string_agg(format('%%s(%%s): %%s', e.proname, e.args,
			           CASE WHEN s.proname IS NULL THEN 'not offered'
			                ELSE format('volatile %%s/%%s strict %%s/%%s parallel %%s/%%s result %%s/%%s',
			                            e.provolatile, s.provolatile, e.proisstrict, s.proisstrict,
			                            e.proparallel, s.proparallel, e.result, s.result) END),
			           E'\n' ORDER BY 1)
			FROM e LEFT JOIN s USING (proname, args)
			WHERE (s.proname IS NULL AND e.proname NOT IN (%s)) OR e.provolatile <> s.provolatile OR e.proisstrict <> s.proisstrict
			   OR e.proparallel <> s.proparallel OR e.result <> s.result},
			sprintf($labels, 'ext'), sprintf($labels, 'sqled'), $generation));
		note "labels that differ, functions not offered:\n$cmp";
		my $expected = slurp_file("$FindBin::RealBin/075_managed_parity.expected");
		chomp $expected;
		is($cmp, $expected,
			"$preset: the differences of labels and the functions not offered are the documented ones");
	}
	$node->stop;
}

done_testing();
