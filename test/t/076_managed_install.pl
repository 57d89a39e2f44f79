# Installing the SQL edition with the plain script (managed/install.sql,
# issue 34) on a server that never loads snowflake.so, as a non-superuser
# database owner:
#  (a) into public, and into a second schema of the same database: the two
#      do not collide (each decodes with its own layout);
#  (b) refusals: no schema on the search_path (3F000); a second install into
#      the same schema fails and changes nothing (one transaction).  (The
#      refusal of a schema where the extension is: 075_managed_parity.)
#  (c) the planner inlines the decoders and the time filters: an expression
#      index on snowflake_timestamp(id) is used, and snowflake_created_between
#      on the key is an index range scan with constant bounds;
#  (d) other roles: they decode and make public IDs, but cannot read the keys,
#      set them, or regenerate the decoders (42501).

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
# A refused install is read with -f, not from stdin: psql stops at the first
# error, and the rest of a script written to its stdin would then break the
# pipe (IPC::Run dies with EPIPE).
my $install_file = "$root/managed/install.sql";

my $node = node('plain', preload => 0, start => 1);
$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE ROLE other LOGIN;
	CREATE DATABASE appdb OWNER app;});
my $app = sub { $node->safe_psql('appdb', $_[0], extra_params => [ '-U', 'app' ]) };
my $app_try = sub { $node->psql('appdb', $_[0], extra_params => [ '-U', 'app', '-f', $install_file ], on_error_stop => 1) };

is($node->safe_psql('appdb', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app'}), 'f',
	'the owner is not a superuser');

# (a) public, then a second schema with another layout
$app->($install);
$app->("CREATE SCHEMA js;\nSET search_path = js;\n" . $install);
# not configured: no decoding with a layout nobody chose
my ($rc, $out, $err) = $node->psql('appdb', q{SELECT snowflake_timestamp(1)},
	extra_params => [ '-U', 'app', '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55000: the snowflake SQL edition is not configured/,
	'(a) before snowflake_configure, a decoder raises 55000');
$app->(q{SELECT count(*) FROM public.snowflake_configure()});
$app->(q{SELECT count(*) FROM js.snowflake_configure(preset => 'javascript')});
is($app->(q{SELECT id_bits || ',' || time_unit_ms FROM public.snowflake_layout()}), '63,1',
	'(a) public has the default layout');
is($app->(q{SELECT id_bits || ',' || time_unit_ms FROM js.snowflake_layout()}), '53,10',
	'(a) the second schema has its own');
is($app->(q{SELECT public.snowflake_shard_id(public.snowflake_min_id(now(), 1000)) || ','
            || js.snowflake_shard_id(js.snowflake_min_id(now(), 60))}), '1000,60',
	'(a) each decodes with its own layout');
is($app->(q{SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto'}), '1',
	'(a) the owner created pgcrypto (trusted)');

# (b) refusals
($rc, $out, $err) = $app_try->("SET search_path = nowhere;");
like($err, qr/ERROR:  no schema to install the snowflake SQL edition into/,
	'(b) no schema on the search_path: refused');
($rc, $out, $err) = $app_try->('');
isnt($rc, 0, '(b) a second install into the same schema fails');
is($app->(q{SELECT id_bits FROM public.snowflake_layout()}), '63', '(b) ... changing nothing');
# a schema other roles may create objects in: refused (they could shadow the
# owner-only functions' calls by name), and nothing is installed there
$app->(q{CREATE SCHEMA open; GRANT CREATE ON SCHEMA open TO PUBLIC;});
($rc, $out, $err) = $app_try->("SET search_path = open;");
like($err, qr/ERROR:  schema open is writable by roles other than its owner/,
	'(b) a schema every role may create objects in: refused');
is($app->(q{SELECT count(*) FROM pg_proc WHERE pronamespace = 'open'::regnamespace}), '0',
	'(b) ... and nothing installed there');
$app->(q{REVOKE CREATE ON SCHEMA open FROM PUBLIC; DROP SCHEMA open;});

# (c) the planner: expression index, range scan
$app->(q{
	CREATE TABLE t (id bigint PRIMARY KEY);
	INSERT INTO t SELECT snowflake_min_id(now() - g * interval '1 second') + g % 4096
	FROM generate_series(1, 50000) g;
	CREATE INDEX t_ts ON t (snowflake_timestamp(id));
	ANALYZE t;});
my $plan = $app->(q{EXPLAIN (COSTS OFF) SELECT * FROM t
                    WHERE snowflake_created_between(id, now() - interval '2 hours', now() - interval '1 hour')});
like($plan, qr/Index Only Scan using t_pkey/, '(c) snowflake_created_between is an index scan of the key');
like($plan, qr/Index Cond: \(\(id >= .*\) AND \(id < .*\)\)/, '(c) ... with two bounds on id');
$plan = $app->(q{EXPLAIN (COSTS OFF) SELECT * FROM t
                 WHERE snowflake_created_between(id, '2026-01-01', '2026-01-02')});
like($plan, qr/Index Cond: \(\(id >= '\d+'::bigint\) AND \(id < '\d+'::bigint\)\)/,
	'(c) constant times fold to constant bounds');
like($app->(q{EXPLAIN (COSTS OFF) SELECT * FROM t WHERE snowflake_timestamp(id) >= now() - interval '1 minute'}),
	qr/Index Scan using t_ts/, '(c) the expression index on snowflake_timestamp(id) is used');
is($app->(q{SELECT count(*) FROM t WHERE snowflake_created_between(id, now() - interval '2 hours', now() - interval '1 hour')}),
	$app->(q{SELECT count(*) FROM t WHERE snowflake_timestamp(id) >= now() - interval '2 hours'
	          AND snowflake_timestamp(id) < now() - interval '1 hour'}),
	'(c) the range scan finds what the decoder does');
unlike($app->(q{EXPLAIN (VERBOSE, COSTS OFF) SELECT snowflake_timestamp(id), snowflake_shard_id(id),
                snowflake_sequence(id), snowflake_to_text(id) FROM t}),
	qr/snowflake_(timestamp|shard_id|sequence|to_text)\(/, '(c) the decoders are inlined');

# (d) other roles
$app->(q{SELECT snowflake_set_public_id_keys('1:00112233445566778899aabbccddeeff')});
my $other = sub { $node->psql('appdb', $_[0], extra_params => [ '-U', 'other' ]) };
is($node->safe_psql('appdb', q{SELECT snowflake_shard_id(snowflake_min_id(now(), 5)),
                               snowflake_from_public_id(snowflake_public_id(12345))},
		extra_params => [ '-U', 'other' ]),
	'5|12345', '(d) another role decodes and makes public IDs');
($rc, $out, $err) = $other->('SELECT * FROM snowflake__public_id_keys');
like($err, qr/permission denied for table snowflake__public_id_keys/, '(d) ... but cannot read the keys');
($rc, $out, $err) = $other->(q{SELECT snowflake_set_public_id_keys('1:ffeeddccbbaa99887766554433221100')});
like($err, qr/permission denied for function snowflake_set_public_id_keys/, '(d) ... nor set them');
($rc, $out, $err) = $other->(q{SELECT snowflake__define_decoders(1704067200000, 1, 63, 0, 12, 0)});
like($err, qr/ERROR:  permission denied for function snowflake__define_decoders/,
	'(d) ... nor regenerate the decoders');
($rc, $out, $err) = $other->(q{SELECT snowflake__public_id_cipher('\x00', 1, '', 1, true)});
like($err, qr/permission denied/, '(d) ... nor call the cipher with a key of its own choosing');
is($app->(q{SELECT snowflake_from_public_id(snowflake_public_id(12345))}), '12345',
	'(d) the keys are unchanged');

$node->stop;
done_testing();
