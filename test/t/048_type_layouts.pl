# The snowflake type's time comparisons under several layouts (issue 28): for
# each layout, on a real server,
#  (a) "id >= t", "id > t", "id < t", "id <= t" and the bigint functions
#      snowflake_created_after/before() give exactly the answers of filtering
#      on snowflake_timestamp(id), for IDs at both ends of the units around a
#      unit boundary and times from just over a unit before it to just over a
#      unit after it, to the microsecond; with the time as a column (the
#      operator's own comparison) and as a constant (which the planner turns
#      into the first ID at or after it);
#  (b) partition pruning of a key of the type keeps exactly the partition of a
#      range of whole units, and snowflake_created_between() on a bigint key
#      the same;
#  (c) outside the layout: before the epoch every ID is at or after and none
#      before; past the layout's last unit every ID is before and none after
#      (values wider than the layout after), and snowflake_time_bound() says
#      the time is out of range;
#  (d) integer and smallint keys converted with as_type, against the first ID
#      of a layout whose epoch is a minute old.
# The layouts: the default; the JavaScript preset (53 bits, 10 ms units); one
# second units; an epoch that is not a whole second; 45 bits of 4 ms units,
# which end in 2032.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;

my %layouts = (
	'default' => '',
	'js53_10ms' => "snowflake.id_bits = 53\nsnowflake.time_unit = '10ms'\n"
	  . "snowflake.shard_bits = 6\nsnowflake.sequence_bits = 8\n",
	'unit_1s' => "snowflake.time_unit = '1s'\n",
	'odd_epoch' => "snowflake.epoch = '2020-03-15 12:34:56.789+00'\n",
	'w45_4ms' => "snowflake.id_bits = 45\nsnowflake.time_unit = '4ms'\n"
	  . "snowflake.shard_bits = 4\nsnowflake.sequence_bits = 5\n",
);

foreach my $name (sort keys %layouts)
{
	my $node = node($name, conf => "snowflake.shard_id = 3\n" . $layouts{$name}, extension => 1);
	my $unit_ms = $node->safe_psql('postgres', 'SELECT time_unit_ms FROM snowflake_layout()');

	# (a) times around the start of the unit that holds now(), IDs around them
	$node->safe_psql('postgres', qq{
		CREATE TABLE times AS
		SELECT snowflake_timestamp(snowflake_min_id(now())) + d * interval '1 microsecond' AS t
		FROM unnest(ARRAY[-$unit_ms * 1000 - 1, -$unit_ms * 1000, -$unit_ms * 1000 + 1,
		                  -1000, -1, 0, 1, 999, 1000, $unit_ms * 500,
		                  $unit_ms * 1000 - 1, $unit_ms * 1000, $unit_ms * 1000 + 1,
		                  2 * $unit_ms * 1000]) d;
		CREATE TABLE ids AS
		SELECT DISTINCT x::snowflake AS id
		FROM times, LATERAL (VALUES (snowflake_min_id(t)), (snowflake_min_id(t) + 1),
		                            (snowflake_max_id(t)), (snowflake_max_id(t) - 1),
		                            (snowflake_min_id(t, 2) + 3)) v(x);
		INSERT INTO ids SELECT snowflake_nextval() FROM generate_series(1, 100);});
	is($node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE (id >= t) IS DISTINCT FROM (snowflake_timestamp(id) >= t))
		     + count(*) FILTER (WHERE (id > t) IS DISTINCT FROM (snowflake_timestamp(id) >= t))
		     + count(*) FILTER (WHERE (id < t) IS DISTINCT FROM (snowflake_timestamp(id) < t))
		     + count(*) FILTER (WHERE (id <= t) IS DISTINCT FROM (snowflake_timestamp(id) < t))
		     + count(*) FILTER (WHERE (t <= id) IS DISTINCT FROM (snowflake_timestamp(id) >= t))
		     + count(*) FILTER (WHERE (t > id) IS DISTINCT FROM (snowflake_timestamp(id) < t))
		     + count(*) FILTER (WHERE snowflake_created_after(id::bigint, t)
		                              IS DISTINCT FROM (snowflake_timestamp(id) >= t))
		     + count(*) FILTER (WHERE snowflake_created_before(id::bigint, t)
		                              IS DISTINCT FROM (snowflake_timestamp(id) < t)),
		       count(*) FILTER (WHERE id >= t) > 0 AND count(*) FILTER (WHERE id < t) > 0
		FROM ids, times}),
		'0|t', "$name: time comparisons with a column of times equal filtering on snowflake_timestamp(id)");
	# the same with each time as a constant (the planner's rewrite)
	is($node->safe_psql('postgres', q{
		CREATE FUNCTION differences(t timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
		DECLARE n bigint; total bigint := 0; q text;
		BEGIN
			FOREACH q IN ARRAY ARRAY[
				'(id >= %1$L::timestamptz) IS DISTINCT FROM (snowflake_timestamp(id) >= %1$L::timestamptz)',
				'(id > %1$L::timestamptz) IS DISTINCT FROM (snowflake_timestamp(id) >= %1$L::timestamptz)',
				'(id < %1$L::timestamptz) IS DISTINCT FROM (snowflake_timestamp(id) < %1$L::timestamptz)',
				'(id <= %1$L::timestamptz) IS DISTINCT FROM (snowflake_timestamp(id) < %1$L::timestamptz)',
				'(%1$L::timestamptz < id) IS DISTINCT FROM (snowflake_timestamp(id) >= %1$L::timestamptz)'] LOOP
				EXECUTE format('SELECT count(*) FROM ids WHERE ' || q, t) INTO n;
				total := total + n;
			END LOOP;
			RETURN total;
		END $$;
		SELECT sum(differences(t)) FROM times}),
		'0', "$name: time comparisons with constant times equal filtering on snowflake_timestamp(id)");

	# (b) three partitions of ten units each around now; a range of whole
	# units is the middle one alone
	$node->safe_psql('postgres', q{
		CREATE TABLE p (id snowflake PRIMARY KEY) PARTITION BY RANGE (id);
		CREATE TABLE pb (id bigint PRIMARY KEY) PARTITION BY RANGE (id);
		CREATE TABLE edges AS
		SELECT k, snowflake_timestamp(snowflake_min_id(now())) + k * 10 * (time_unit_ms * interval '1 ms') AS t
		FROM snowflake_layout(), generate_series(-1, 2) k;
		DO $$
		DECLARE tbl text; i int; lo timestamptz; hi timestamptz;
		BEGIN
			FOREACH tbl IN ARRAY ARRAY['p', 'pb'] LOOP
				FOR i IN -1 .. 1 LOOP
					SELECT t INTO lo FROM edges WHERE k = i;
					SELECT t INTO hi FROM edges WHERE k = i + 1;
					EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
					               tbl || '_' || (i + 1), tbl, snowflake_min_id(lo), snowflake_min_id(hi));
				END LOOP;
			END LOOP;
		END $$;});
	my ($lo, $hi) = split /\|/, $node->safe_psql('postgres',
		q{SELECT (SELECT t FROM edges WHERE k = 0), (SELECT t FROM edges WHERE k = 1)});
	like($node->safe_psql('postgres',
			"EXPLAIN (COSTS OFF) SELECT * FROM p WHERE id >= timestamptz '$lo' AND id < timestamptz '$hi'"),
		qr/\bp_1\b(?![\s\S]*\bp_[02]\b)/, "$name: a range of whole units prunes to its partition (snowflake key)");
	unlike($node->safe_psql('postgres',
			"EXPLAIN (COSTS OFF) SELECT * FROM p WHERE id >= timestamptz '$lo' AND id < timestamptz '$hi'"),
		qr/\bp_[02]\b/, "$name: no other partition is scanned (snowflake key)");
	my $plan = $node->safe_psql('postgres',
		"EXPLAIN (COSTS OFF) SELECT * FROM pb WHERE snowflake_created_between(id, '$lo', '$hi')");
	ok($plan =~ /\bpb_1\b/ && $plan !~ /\bpb_[02]\b/,
		"$name: snowflake_created_between() prunes to the same partition (bigint key)") or diag($plan);

	# (c) outside the layout
	my ($last) = $node->safe_psql('postgres', 'SELECT last_timestamp FROM snowflake_layout()');
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE id >= timestamptz '1960-01-01') = count(*),
		       count(*) FILTER (WHERE id < timestamptz '1960-01-01'),
		       count(*) FILTER (WHERE id < timestamptz '$last' + interval '1 second') = count(*),
		       count(*) FILTER (WHERE id >= timestamptz '$last' + interval '1 second'),
		       (SELECT max_id + 1 FROM (SELECT CASE WHEN id_bits = 63 THEN NULL
		                                            ELSE (1::bigint << id_bits) - 1 END AS max_id
		                                FROM snowflake_layout()) m)::snowflake
		         >= timestamptz '$last' + interval '1 second' IS NOT FALSE
		FROM ids}),
		't|0|t|0|t', "$name: outside the layout, times compare as before or after every ID");
	my ($rc, $out, $err) = $node->psql('postgres',
		"SELECT snowflake_time_bound(timestamptz '$last' + interval '1 second')");
	like($err, qr/ERROR:  timestamp out of range for snowflake IDs/,
		"$name: snowflake_time_bound() past the layout says the time is out of range");
	is($node->safe_psql('postgres', q{SELECT snowflake_time_bound('1960-01-01')}), '0',
		"$name: snowflake_time_bound() before the epoch is 0");
	$node->stop;
}

# (d) integer and smallint keys converted with as_type (issue 33): the
# function does not read them and checks their type's largest value against
# the first ID it can issue.  With an epoch a minute ago and one second
# units, IDs start at about 60 << 22 (below 2^31, above 32767): an integer
# key is refused, a smallint key converts.  (The margin: 2^31 >> 22 is 512 s
# after the epoch.)
{
	my $epoch = time() - 60;
	my $node = node('fresh_epoch',
		conf => "snowflake.shard_id = 3\nsnowflake.time_unit = '1s'\n"
		  . "snowflake.epoch = '" . gmtime_iso($epoch) . "'\n",
		extension => 1);
	$node->safe_psql('postgres', q{
		CREATE TABLE ti (id serial PRIMARY KEY, v text);
		CREATE TABLE ts (id smallserial PRIMARY KEY, v text);
		INSERT INTO ti (v) VALUES ('a'); INSERT INTO ts (v) VALUES ('a');});
	ok($node->safe_psql('postgres', 'SELECT snowflake_min_id(now()) BETWEEN 32768 AND 2147483647') eq 't',
		'fresh epoch: the first IDs lie between the largest smallint and the largest integer');
	my ($rc, $out, $err) = $node->psql('postgres',
		"SELECT snowflake_convert_column('ti', 'id', as_type => true)",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  55000: existing values of column "id" of public\.ti could collide with snowflake IDs.*\n.*DETAIL:  Its largest value may be \(as its type allows\) 2147483647;/,
		'fresh epoch: an integer key is refused, its type reaching the IDs');
	is($node->safe_psql('postgres', q{SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'ti'::regclass AND attname = 'id'}),
		'integer', 'fresh epoch: the refused integer key is unchanged');
	$node->safe_psql('postgres', q{SELECT snowflake_convert_column('ts', 'id', as_type => true);
		INSERT INTO ts (v) VALUES ('b');});
	is($node->safe_psql('postgres', q{
		SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = 'ts'::regclass AND attname = 'id';
		SELECT count(*) FILTER (WHERE v = 'b' AND id > 32767 AND snowflake_shard_id(id) = 3) FROM ts}),
		"snowflake\n1", 'fresh epoch: a smallint key converts, its new IDs above the old values');
	$node->stop;
}

done_testing();

# The UTC time of a Unix time, as snowflake.epoch takes it.
sub gmtime_iso
{
	my @t = gmtime(shift);
	return sprintf('%04d-%02d-%02d %02d:%02d:%02d+00', $t[5] + 1900, $t[4] + 1, @t[3, 2, 1, 0]);
}
