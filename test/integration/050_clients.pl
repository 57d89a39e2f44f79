# The client libraries and ORMs of docs/clients.md, each with the real
# library from Debian's packages against a real preloaded server: every
# example of the document is taken from it (ClientDocs.pm) and run as it
# stands, as a role that owns its database and is not a superuser.
#
# - psycopg 3 and psycopg2: IDs back through RETURNING, single rows and many;
#   psycopg2's lastrowid is 0.
# - SQLAlchemy 2.0: the INSERT statements actually sent, counted with an
#   event listener: one per object for the server-side key, one for 1,000
#   objects with a sentinel column, one for a bulk insert(); the DDL of
#   autoincrement=True is BIGSERIAL and the table gets a sequence.
# - Django 5.2: migrations (CreateExtension, makemigrations, RunSQL with
#   snowflake_convert_column) create the tables with the defaults;
#   bulk_create() leaves a db_default key unset and fills a converted
#   BigAutoField; manage.py test passes as a non-superuser with the trusted
#   extension, fails with an untrusted copy of the control file (what 1.1
#   and earlier do), and passes again with the extension in template1.
# - node-postgres: bigint as strings; JSON built on the server rounded by
#   JSON.parse, a rounded ID that finds another row; the text forms.
# - pgjdbc: getGeneratedKeys() of a batch; the column's metadata.
# - the snowflake type (1.3): node-postgres gets strings from the column and
#   from JSON built on the server, none rounded; psycopg 3 and psycopg2 get
#   str, and int once the type is registered; pgjdbc reads it with getLong()
#   and binds it with setLong(); SQLAlchemy reads it as int through a
#   UserDefinedType.
#
# - the JavaScript ORMs (npm): Prisma 7, drizzle-orm, Kysely, Knex, TypeORM,
#   Sequelize, MikroORM, each with
#   a bigint and a snowflake key: the schema, insert/find/batch, 1,000 keys
#   through JSON and back, what rounds or throws without the fix, and the
#   plan of the time-range query (auto_explain): an index condition.
#
# Every ID a client got back is checked: positive, distinct, increasing in
# the order received, decoding to the server's shard and to a time near now,
# and present in the table.

use strict;
use warnings;

use File::Copy qw(copy);
use File::Path qw(make_path);
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use ClientDocs;

my $docs  = ClientDocs->load("$FindBin::RealBin/../../docs/clients.md");
my $shard = 7;
my $tmp   = PostgreSQL::Test::Utils::tempdir('clients');

# pgjdbc speaks TCP only
my $node = node(
	'clients', start => 1, conf => qq{
snowflake.shard_id = $shard
listen_addresses = '127.0.0.1'
});
$node->safe_psql('postgres', q{
CREATE ROLE app LOGIN CREATEDB;
CREATE DATABASE app OWNER app;
CREATE DATABASE shop OWNER app;
});

# The npm packages of test/integration/clients-npm (scripts/install-deps.sh):
# the JavaScript ORMs, and node-postgres (pg) for every Node.js example.
my $npm = $ENV{SNOWFLAKE_NPM_DIR} // '/var/cache/snowflake/npm/clients';

# Runs a client program as the role app; returns (success, stdout, stderr).
sub run_client
{
	my ($cmd, %o) = @_;
	local %ENV = (
		%ENV,
		NODE_PATH  => "$npm/node_modules",
		PGHOST     => $node->host,
		PGPORT     => $node->port,
		PGUSER     => 'app',
		PGDATABASE => $o{db} // 'app',
		%{ $o{env} // {} });
	my ($out, $err) = ('', '');
	my $ok = eval {
		# init right after the command: bookworm's IPC::Run
		# refuses it anywhere else ("No command before 'init'")
		IPC::Run::run($cmd, init => sub { chdir($o{dir} // $tmp) or die $!; },
			'<', \'', '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	};
	$err .= $@ if $@;
	return ($ok ? 1 : 0, $out, $err);
}

# Whether a command succeeds (a library is importable, a program runs).
sub have
{
	my ($ok) = run_client([@_]);
	return $ok;
}

# Whether psycopg 3 and a Python library of at least the given major
# version import: the guide's SQLAlchemy is 2.0, its Django 5 (db_default).
sub have_python_lib
{
	my ($lib, $major) = @_;
	return have('python3', '-c',
		"import sys, psycopg, $lib; sys.exit(int($lib.__version__.split('.')[0]) < $major)");
}

# The JSON a Python epilogue printed after "@@result ".
sub result_of
{
	my ($out) = @_;
	my ($json) = $out =~ /^\@\@result (.*)$/m;
	return $json ? decode_json($json) : {};
}

sub epilogue
{
	my ($expr) = @_;
	return "\nimport json as _json\nprint('\@\@result', _json.dumps($expr))\n";
}

# Runs a Python program; reports its failure with its output.
sub run_python
{
	my ($label, $code, %o) = @_;
	(my $base = "example_$label") =~ tr/-/_/;
	my $file = "$tmp/$base.py";
	write_file($file, $code);
	my ($ok, $out, $err) = run_client([ 'python3', $file ], %o);
	ok($ok, "$label: the example runs") or diag("stdout:\n$out\nstderr:\n$err");
	return ($ok, $out, $err);
}

# the table of the examples, created by a role that is not a superuser
my $res = $node->psql('app', $docs->example('schema'),
	extra_params => [ '-U', 'app', '-v', 'ON_ERROR_STOP=1' ]);
is($res, 0, 'schema: a non-superuser database owner creates the extension and the table');
is($node->safe_psql('app', q{SELECT extowner::regrole FROM pg_extension WHERE extname = 'snowflake'}),
	'app', 'schema: the extension belongs to the role that created it');

# ---- psycopg 3 and psycopg2
SKIP:
{
	unless (have('python3', '-c', 'import psycopg'))
	{
		$docs->skip_examples('psycopg');
		skip 'python3-psycopg is not installed', 1;
	}
	my ($ok, $out) = run_python('psycopg',
		$docs->example('psycopg') . epilogue('{"ids": [order_id] + ids}'));
	check_ids($node, 'app', 'psycopg', result_of($out)->{ids} // [],
		table => 'orders', shard => $shard, count => 101);
	like($out, qr/^found: book$/m, 'psycopg: the row is found by its ID passed as a parameter');
}

SKIP:
{
	unless (have('python3', '-c', 'import psycopg2'))
	{
		$docs->skip_examples('psycopg2');
		skip 'python3-psycopg2 is not installed', 1;
	}
	my ($ok, $out) = run_python('psycopg2',
		$docs->example('psycopg2') . epilogue('{"ids": [order_id] + ids}'));
	check_ids($node, 'app', 'psycopg2', result_of($out)->{ids} // [],
		table => 'orders', shard => $shard, count => 101);
	like($out, qr/^one: [0-9]+ lastrowid: 0$/m, 'psycopg2: cursor.lastrowid is 0, not the ID');
}

# ---- SQLAlchemy 2.0: the examples run as one program, in the document's order
my @sqlalchemy = qw(sqlalchemy-models sqlalchemy-batching sqlalchemy-bulk sqlalchemy-autoincrement);
SKIP:
{
	unless (have_python_lib('sqlalchemy', 2))
	{
		$docs->skip_examples(@sqlalchemy);
		skip 'python3-psycopg or python3-sqlalchemy 2.0 is not installed (bookworm has 1.4)', 1;
	}
	# after the examples, what the prose says: a bulk insert() asked to keep
	# the parameters' order takes one statement per row, and the key itself
	# cannot be the sentinel
	my $claims = <<'EOF';

inserts.clear()
with Session(engine) as session:
    sorted_ids = session.scalars(insert(Order).returning(Order.id, sort_by_parameter_order=True),
                                 [{"item": f"sorted {i}"} for i in range(1000)]).all()
    session.commit()
sorted_statements = len(inserts)

class KeyAsSentinel(Base):
    __tablename__ = "key_as_sentinel"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, insert_sentinel=True,
                                    server_default=text("snowflake_nextval()"))
    kind: Mapped[str]

KeyAsSentinel.__table__.create(engine)
sentinel_error = None
try:
    with Session(engine) as session:
        session.add_all([KeyAsSentinel(kind="x") for i in range(10)])
        session.commit()
except Exception as err:
    sentinel_error = str(err)
EOF
	my $code = join("\n", map { $docs->example($_) } @sqlalchemy)
	  . $claims
	  . epilogue('{"orders": order_ids, "events": event_ids, "bulk": new_ids, '
		  . '"sorted": sorted_ids, "sorted_statements": sorted_statements, '
		  . '"sentinel_error": sentinel_error, "version": __import__("sqlalchemy").__version__}');
	my ($ok, $out) = run_python('sqlalchemy', $code);
	my $r = result_of($out);
	note("SQLAlchemy $r->{version}") if $r->{version};
	like($out, qr/^1000 orders: 1000 INSERT statements$/m,
		'sqlalchemy: 1,000 objects with a server-side key take 1,000 INSERT statements');
	like($out, qr/^1000 events: 1 INSERT statements$/m,
		'sqlalchemy: with a sentinel column they take one');
	like($out, qr/^bulk insert of 1000: 1 INSERT statement\(s\), 1000 IDs$/m,
		'sqlalchemy: a bulk insert() with returning() takes one and returns 1,000 IDs');
	check_ids($node, 'app', 'sqlalchemy add_all', $r->{orders} // [],
		table => 'orders', shard => $shard, count => 1000);
	check_ids($node, 'app', 'sqlalchemy add_all with a sentinel', $r->{events} // [],
		table => 'events', shard => $shard, count => 1000);
	# insertmanyvalues does not promise the order of an unsorted RETURNING
	check_ids($node, 'app', 'sqlalchemy bulk insert', $r->{bulk} // [],
		table => 'orders', shard => $shard, count => 1000, ordered => 0);
	is( $node->safe_psql('app', q{
			SELECT string_agg(a.attname || '=' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ',' ORDER BY a.attnum)
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = 'events'::regclass AND a.attnum > 0 AND NOT a.attisdropped}),
		'id=snowflake_nextval(),kind=,_sentinel=',
		'sqlalchemy: create_all() made events.id DEFAULT snowflake_nextval() and the sentinel column');
	is($r->{sorted_statements}, 1000,
		'sqlalchemy: with sort_by_parameter_order=True the bulk insert takes one statement per row');
	check_ids($node, 'app', 'sqlalchemy bulk insert in parameter order', $r->{sorted} // [],
		table => 'orders', shard => $shard, count => 1000);
	like($r->{sentinel_error} // '',
		qr/can't be a sentinel column because it uses an explicit server side default that's not the Identity\(\) default/,
		'sqlalchemy: the key itself is refused as the sentinel');
	my ($ddl) = $out =~ /(CREATE TABLE broken .*?\n\))/s;
	ok(defined $ddl && $ddl =~ /\bid BIGSERIAL NOT NULL/ && $ddl !~ /snowflake_nextval/,
		'sqlalchemy: autoincrement=True renders the key as BIGSERIAL without the server default')
	  or diag($out);
	like( $node->safe_psql('app', q{
			SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'broken'::regclass}),
		qr/^nextval\('broken_id_seq'::regclass\)$/,
		'sqlalchemy: and the table it creates draws its key from a sequence');
}

# ---- Django 5.2
my @django = qw(django-migration-extension django-models django-migration-convert django-usage
  django-tests template1);
my $django_dir = "$tmp/django";

# Writes a Django block to the file its first line names ("# orders/models.py").
sub django_file
{
	my ($name) = @_;
	my $code = $docs->example($name);
	my ($path) = $code =~ /\A# (\S+\.py)\n/
	  or die "example $name does not start with the file it belongs in";
	write_file("$django_dir/$path", $code);
	return $path;
}

sub manage
{
	my (@args) = @_;
	return run_client([ 'python3', 'manage.py', @args ],
		db => 'shop', dir => $django_dir, env => { PYTHONPATH => $django_dir });
}

SKIP:
{
	unless (have_python_lib('django', 5))
	{
		$docs->skip_examples(@django);
		skip 'python3-psycopg or python3-django 5 (db_default) is not installed (bookworm has 3.2)', 1;
	}
	make_path("$django_dir/config", "$django_dir/orders/migrations");
	write_file("$django_dir/$_", '')
	  for qw(config/__init__.py orders/__init__.py orders/migrations/__init__.py);
	write_file("$django_dir/config/settings.py", <<'EOF');
import os
SECRET_KEY = "only for the test"
INSTALLED_APPS = ["orders"]
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": os.environ["PGDATABASE"], "USER": os.environ["PGUSER"],
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"],
}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
EOF
	write_file("$django_dir/manage.py", <<'EOF');
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
EOF
	django_file('django-migration-extension');
	django_file('django-models');
	my ($ok, $out, $err) = manage('makemigrations', 'orders');
	ok($ok && -f "$django_dir/orders/migrations/0002_initial.py",
		'django: makemigrations writes 0002_initial after the extension migration')
	  or diag("$out\n$err");
	django_file('django-migration-convert');
	($ok, $out, $err) = manage('migrate', '--noinput');
	ok($ok, 'django: migrate runs every migration as a role that is not a superuser')
	  or diag("$out\n$err");
	is($node->safe_psql('shop', q{SELECT extowner::regrole FROM pg_extension WHERE extname = 'snowflake'}),
		'app', 'django: CreateExtension made the extension, owned by the application role');
	is( $node->safe_psql('shop', q{
			SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
			WHERE adrelid = 'orders_order'::regclass AND adnum = 1}),
		'snowflake_nextval()', 'django: the db_default key has DEFAULT snowflake_nextval()');
	is( $node->safe_psql('shop', q{
			SELECT a.attidentity = '' AS no_identity, pg_get_expr(d.adbin, d.adrelid),
			       (SELECT count(*) FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
			        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = 'orders_invoice'::regclass)
			FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = 'orders_invoice'::regclass AND a.attname = 'id'}),
		't|snowflake_nextval()|0',
		'django: the converted BigAutoField has DEFAULT snowflake_nextval(), no identity, no sequence');

	my $usage = "import django\ndjango.setup()\n"
	  . $docs->example('django-usage')
	  . epilogue('{"order": [order.pk], "orders": [type(o.pk).__name__ for o in orders], '
		  . '"invoices": [invoice.pk] + [i.pk for i in invoices], "version": django.VERSION[0]}');
	($ok, $out) = run_python('django-usage', $usage,
		db => 'shop', dir => $django_dir,
		env => { PYTHONPATH => $django_dir, DJANGO_SETTINGS_MODULE => 'config.settings' });
	my $r = result_of($out);
	check_ids($node, 'shop', 'django create() with db_default', $r->{order} // [],
		table => 'orders_order', shard => $shard, count => 1);
	if (($r->{version} // 0) < 6)
	{
		is_deeply($r->{orders}, [ ('DatabaseDefault') x 3 ],
			"django $r->{version}: bulk_create() leaves a db_default key unset");
	}
	else
	{
		is_deeply($r->{orders}, [ ('int') x 3 ],
			"django $r->{version}: bulk_create() sets a db_default key");
	}
	check_ids($node, 'shop', 'django converted BigAutoField, create() and bulk_create()',
		$r->{invoices} // [], table => 'orders_invoice', shard => $shard, count => 101);

	# Django's sequence resets find no sequence and do nothing; flush works
	($ok, $out, $err) = manage('sqlsequencereset', 'orders');
	ok($ok && $out =~ /pg_get_serial_sequence\('"orders_invoice"','id'\)/,
		'django: sqlsequencereset writes its setval() for the converted column')
	  or diag("$out\n$err");
	my ($reset_out, $reset_err) = ('', '');
	my $reset_ret = $node->psql('shop', $out, stdout => \$reset_out, stderr => \$reset_err,
		extra_params => [ '-U', 'app' ]);
	ok($reset_ret == 0 && $reset_err eq '', 'django: and that SQL runs without an error')
	  or diag($reset_err);
	($ok, $out, $err) = manage('flush', '--noinput');
	ok($ok, 'django: manage.py flush works') or diag("$out\n$err");
	is($node->safe_psql('shop', 'SELECT count(*) FROM orders_invoice'), '0',
		'django: and empties the table');

	# the test runner as a role that is not a superuser, with the trusted extension
	django_file('django-tests');
	($ok, $out, $err) = manage('test', 'orders', '--noinput');
	ok($ok && $err =~ /^Ran 1 test/m && $err =~ /^OK$/m,
		'django: manage.py test passes as a non-superuser (the extension is trusted)')
	  or diag("$out\n$err");

	# the same with an untrusted copy of the extension's files (1.1 and earlier)
	my $pg18 = $node->safe_psql('postgres', q{SELECT current_setting('server_version_num')::int >= 180000});
	if ($pg18 ne 't')
	{
		$docs->skip_examples('template1');
		skip 'extension_control_path (for an untrusted copy of the control file) needs PostgreSQL 18', 1;
	}
	my $sharedir = $node->config_data('--sharedir');
	my $copy     = "$tmp/untrusted";
	make_path("$copy/extension");
	for my $f (glob("$sharedir/extension/snowflake--*"))
	{
		copy($f, "$copy/extension/") or die "could not copy $f: $!";
	}
	my $control = slurp_file("$sharedir/extension/snowflake.control");
	ok($control =~ s/^trusted\s*=\s*true\s*$/trusted = false/m,
		'the installed snowflake.control says trusted = true');
	write_file("$copy/extension/snowflake.control", $control);
	my $path = "$copy:\$system";
	$node->safe_psql('postgres', "ALTER ROLE app SET extension_control_path = '$path'");
	($ok, $out, $err) = manage('test', 'orders', '--noinput');
	ok( !$ok
		  && $err =~ /^django\.db\.utils\.ProgrammingError: permission denied to create extension "snowflake"$/m
		  && $err =~ /HINT:  Must be superuser to create this extension\./,
		'django: with an untrusted extension, manage.py test fails: permission denied to create extension')
	  or diag("$out\n$err");
	# the superuser installs from the same untrusted copy (as on a server
	# that has only 1.1 or earlier)
	$res = $node->psql('template1',
		"SET extension_control_path = '$path';\n" . $docs->example('template1'),
		extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($res, 0, 'template1: a superuser creates the extension in template1');
	($ok, $out, $err) = manage('test', 'orders', '--noinput');
	ok($ok && $err =~ /^Ran 1 test/m && $err =~ /^OK$/m,
		'django: with the extension in template1, manage.py test passes again')
	  or diag("$out\n$err");
	$node->safe_psql('template1', 'DROP EXTENSION snowflake');
	$node->safe_psql('postgres', 'ALTER ROLE app RESET extension_control_path');
}

# ---- node-postgres
my @node = qw(node-basic node-json-trap node-json-fix);
SKIP:
{
	unless (have('node', '-e', 'require("pg")'))
	{
		$docs->skip_examples(@node);
		skip "nodejs, or node-postgres in $npm (scripts/install-deps.sh), is missing", 1;
	}
	my %out;
	for my $name (@node)
	{
		(my $base = "example_$name") =~ tr/-/_/;
		my $file = "$tmp/$base.js";
		write_file($file, $docs->example($name));
		my ($ok, $out, $err) = run_client([ 'node', $file ]);
		ok($ok && $err eq '', "$name: the example runs") or diag("$out\n$err");
		$out{$name} = $out;
	}
	my ($ids, $type) = $out{'node-basic'} =~ /^ids: ([0-9 ]+) (\w+)$/m;
	is($type, 'string', 'node-basic: a bigint arrives as a string');
	check_ids($node, 'app', 'node-basic', [ split ' ', $ids // '' ],
		table => 'orders', shard => $shard, count => 3);
	like($out{'node-basic'}, qr/^found: cup$/m, 'node-basic: the row is found by its ID as a string');

	my ($rounded, $all, $other) =
	  $out{'node-json-trap'} =~ /^rounded: ([0-9]+) of ([0-9]+); finding another row: ([0-9]+)$/m;
	is($all, 256, 'node-json-trap: 256 rows came back');
	ok(($rounded // 0) > 0,
		"node-json-trap: JSON.parse rounded IDs built into JSON on the server ($rounded of 256)");
	ok(($other // 0) > 0,
		"node-json-trap: a rounded ID sent back finds another row ($other times)");

	like($out{'node-json-fix'}, qr/^json: \{"id":"[0-9]+","key":"[0-9A-Z]{13}"\} exact: true$/m,
		'node-json-fix: id::text and snowflake_to_text() keep the ID exact in JSON');
	like($out{'node-json-fix'}, qr/^from text: true BigInt: true$/m,
		'node-json-fix: snowflake_from_text() and BigInt give the same ID back');
	like($out{'node-json-fix'}, qr/^BigInt in JSON: TypeError$/m,
		'node-json-fix: JSON.stringify refuses a BigInt');
	like($out{'node-json-fix'},
		qr/^bad text: 22P02 invalid input syntax for a snowflake ID: "[0-9A-Z]{12}"$/m,
		'node-json-fix: a truncated text form is refused with 22P02');
}

# ---- pgjdbc
SKIP:
{
	my $jar = '/usr/share/java/postgresql.jar';
	unless (-f $jar && have('java', '-version'))
	{
		$docs->skip_examples('pgjdbc');
		skip 'libpostgresql-jdbc-java or a JDK is not installed', 1;
	}
	my $code = $docs->example('pgjdbc');
	my ($class) = $code =~ /^public class (\w+)/m;
	write_file("$tmp/$class.java", $code);
	my $url = 'jdbc:postgresql://127.0.0.1:' . $node->port . '/app?user=app';
	my ($ok, $out, $err) = run_client([ 'java', '-cp', $jar, "$tmp/$class.java" ],
		env => { JDBC_DATABASE_URL => $url });
	ok($ok, 'pgjdbc: the example compiles and runs') or diag("$out\n$err");
	my @keys = $out =~ /^key ([0-9]+)$/mg;
	check_ids($node, 'app', 'pgjdbc getGeneratedKeys()', \@keys,
		table => 'orders', shard => $shard, count => 100);
	like($out, qr/^type bigserial, isAutoIncrement true, class java\.lang\.Long$/m,
		'pgjdbc: the column is reported as an auto-increment bigserial, read as a Long');
	like($out, qr/^getColumns: TYPE_NAME bigserial, IS_AUTOINCREMENT YES, COLUMN_DEF snowflake_nextval\(\)$/m,
		'pgjdbc: DatabaseMetaData.getColumns() says the same, with our default');
	my ($cols, $key) = $out =~ /^RETURN_GENERATED_KEYS: ([0-9]+) columns, key ([0-9]+)$/m;
	is($cols, 2, 'pgjdbc: RETURN_GENERATED_KEYS returns every column of the row (RETURNING *)');
	check_ids($node, 'app', 'pgjdbc RETURN_GENERATED_KEYS', [ $key // () ],
		table => 'orders', shard => $shard, count => 1);
}

# ---- the snowflake type
$res = $node->psql('app', $docs->example('type-schema'),
	extra_params => [ '-U', 'app', '-v', 'ON_ERROR_STOP=1' ]);
is($res, 0, 'type-schema: the table keyed by the snowflake type is created');

SKIP:
{
	unless (have('node', '-e', 'require("pg")'))
	{
		$docs->skip_examples('type-node');
		skip "nodejs, or node-postgres in $npm (scripts/install-deps.sh), is missing", 1;
	}
	write_file("$tmp/example_type_node.js", $docs->example('type-node'));
	my ($ok, $out, $err) = run_client([ 'node', "$tmp/example_type_node.js" ]);
	ok($ok && $err eq '', 'type-node: the example runs') or diag("$out\n$err");
	like($out, qr/^column: string, JSON: string, exact: 256 of 256$/m,
		'type-node: the column and server-built JSON give the same string, never rounded');
	like($out, qr/^found: true$/m, 'type-node: the ID from JSON finds its row');
}

SKIP:
{
	unless (have('python3', '-c', 'import psycopg'))
	{
		$docs->skip_examples('type-psycopg');
		skip 'python3-psycopg is not installed', 1;
	}
	my ($ok, $out) = run_python('type-psycopg', $docs->example('type-psycopg'));
	like($out, qr/^default: str json: str True$/m, 'type-psycopg: a str, the same in JSON');
	like($out, qr/^registered: int True$/m, 'type-psycopg: an int once IntLoader is registered');
}

SKIP:
{
	unless (have('python3', '-c', 'import psycopg2'))
	{
		$docs->skip_examples('type-psycopg2');
		skip 'python3-psycopg2 is not installed', 1;
	}
	my ($ok, $out) = run_python('type-psycopg2', $docs->example('type-psycopg2'));
	like($out, qr/^default: str$/m, 'type-psycopg2: a str');
	like($out, qr/^registered: int True$/m, 'type-psycopg2: an int once a typecaster is registered');
}

SKIP:
{
	unless (have_python_lib('sqlalchemy', 2))
	{
		$docs->skip_examples('type-sqlalchemy');
		skip 'python3-psycopg or python3-sqlalchemy 2.0 is not installed (bookworm has 1.4)', 1;
	}
	my ($ok, $out) = run_python('type-sqlalchemy', $docs->example('type-sqlalchemy'));
	like($out, qr/^sqlalchemy: int typed$/m, 'type-sqlalchemy: the key reads back as an int');
	is($node->safe_psql('app', q{
			SELECT format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = 'notes'::regclass AND attname = 'id'}),
		'snowflake', 'type-sqlalchemy: create_all() made the column of type snowflake');
}

SKIP:
{
	my $jar = '/usr/share/java/postgresql.jar';
	unless (-f $jar && have('java', '-version'))
	{
		$docs->skip_examples('type-pgjdbc');
		skip 'libpostgresql-jdbc-java or a JDK is not installed', 1;
	}
	my $code = $docs->example('type-pgjdbc');
	my ($class) = $code =~ /^public class (\w+)/m;
	write_file("$tmp/$class.java", $code);
	my $url = 'jdbc:postgresql://127.0.0.1:' . $node->port . '/app?user=app';
	my ($ok, $out, $err) = run_client([ 'java', '-cp', $jar, "$tmp/$class.java" ],
		env => { JDBC_DATABASE_URL => $url });
	ok($ok, 'type-pgjdbc: the example compiles and runs') or diag("$out\n$err");
	my ($key) = $out =~ /^getLong ([0-9]+), getString equal true, getObject org\.postgresql\.util\.PGobject$/m;
	check_ids($node, 'app', 'type-pgjdbc getLong()', [ $key // () ],
		table => 'posts', shard => $shard, count => 1);
	like($out, qr/^found jdbc$/m, 'type-pgjdbc: setLong() finds the row');
}
is($node->safe_psql('app', q{SELECT count(*) - count(DISTINCT id) FROM posts}), '0',
	'the snowflake type: no ID twice in posts');

# ---- the JavaScript ORMs (npm packages installed by scripts/install-deps.sh)
my @orms = (
	[ prisma  => qw(prisma-schema prisma-migration prisma-config prisma-app) ],
	[ drizzle => qw(drizzle-schema drizzle-app) ],
	[ kysely  => qw(kysely-migration kysely-app) ],
	[ knex    => qw(knex-migration knex-app) ],
	[ typeorm   => qw(typeorm-migration typeorm-entities typeorm-app) ],
	[ sequelize => qw(sequelize-migration sequelize-models sequelize-app) ],
	[ mikroorm  => qw(mikroorm-entities mikroorm-app) ]);
# the ORMs and the other stacks below get a database of their own, where
# every plan is logged (auto_explain) and sequential scans are off: the
# question is whether the index serves the time range, not whether the table
# is big enough for it to pay
$node->safe_psql('postgres', q{
CREATE DATABASE orm OWNER app;
ALTER DATABASE orm SET session_preload_libraries = 'auto_explain';
ALTER DATABASE orm SET auto_explain.log_min_duration = 0;
ALTER DATABASE orm SET enable_seqscan = off;
});
my $log_start = -s $node->logfile;
# the stacks that ran, whose time-range plans are checked at the end
my @ran;
SKIP:
{
	unless (-x "$npm/node_modules/.bin/tsx" && have('node', '--version'))
	{
		$docs->skip_examples(map { @$_[ 1 .. $#$_ ] } @orms);
		skip "the npm packages of test/integration/clients-npm are not in $npm (scripts/install-deps.sh)", 1;
	}
	for my $orm (@orms)
	{
		my ($name, @examples) = @$orm;
		push @ran, $name;
		my $dir = "$tmp/$name";
		make_path($dir);
		symlink("$npm/node_modules", "$dir/node_modules") or die "symlink: $!";
		write_file("$dir/package.json", qq{{"type": "module"}\n});
		for my $ex (@examples)
		{
			my $code = $docs->example($ex);
			my ($file) = $code =~ m{\A(?://|--) (\S+)\n}
			  or die "example $ex does not start with the file it belongs in";
			$file =~ s{.*/}{};
			write_file("$dir/$file", $code);
		}
		if ($name eq 'prisma')
		{
			my $res = $node->psql('orm', slurp_file("$dir/migration.sql"),
				extra_params => [ '-U', 'app', '-v', 'ON_ERROR_STOP=1' ]);
			is($res, 0, 'prisma: the migration runs as the application role');
			my ($ok, $out, $err) = run_client([ "$dir/node_modules/.bin/prisma", 'generate' ],
				dir => $dir, env => { PRISMA_SCHEMA_ENGINE_BINARY => '/bin/true',
					PRISMA_ENGINES_CHECKSUM_IGNORE_MISSING => 1, PRISMA_HIDE_UPDATE_MESSAGE => 1,
					CHECKPOINT_DISABLE => 1 });
			ok($ok, 'prisma: prisma generate writes the client without the schema engine')
			  or diag("$out\n$err");
		}
		my ($ok, $out, $err) = run_client([ "$dir/node_modules/.bin/tsx", 'app.ts' ],
			db => 'orm', dir => $dir);
		ok($ok, "$name: the example runs") or diag("$out\n$err");
		my ($bigint)    = $out =~ /^bigint: ([0-9 ]+)$/m;
		my ($snowflake) = $out =~ /^snowflake: ([0-9 ]+)$/m;
		check_ids($node, 'orm', "$name bigint key", [ split ' ', $bigint // '' ],
			table => "${name}_orders", shard => $shard, count => 1001);
		check_ids($node, 'orm', "$name snowflake key", [ split ' ', $snowflake // '' ],
			table => "${name}_posts", shard => $shard, count => 1001);
		like($out, qr/^key: (string|bigint) found: cup$/m, "$name: the row is found by its key");
		like($out, qr/^json: 1000 of 1000 exact, 1000 rows found$/m,
			"$name: 1,000 bigint keys through JSON and back, exact, each finding its row");
		like($out, qr/^snowflake json: 1000 of 1000 exact, 1000 rows found$/m,
			"$name: 1,000 snowflake keys through JSON and back, exact, each finding its row");
		like($out, qr/^last hour: 100[0-9] orders, 100[0-9] posts$/m,
			"$name: the time range finds the rows of the last hour");
		if ($name eq 'prisma')
		{
			like($out, qr/^without: bigint, TypeError: Do not know how to serialize a BigInt$/m,
				'prisma: without the extension the key is a BigInt and JSON.stringify throws');
		}
		elsif ($name eq 'typeorm' || $name eq 'mikroorm')
		{
			# rounded keys: rows whose keys round alike become one entity
			my ($entities, $rows) = $out =~ /^without: ([0-9]+) entities for ([0-9]+) rows, [0-9]+ of them/m;
			ok(defined $entities && $entities < $rows / 2,
				"$name: with keys as numbers, $rows rows come back as " . ($entities // '?') . ' entities');
		}
		else
		{
			my ($rounded, $all) = $out =~ /^without: ([0-9]+) of ([0-9]+) rounded$/m;
			ok(($rounded // 0) > ($all // 0) / 2,
				"$name: without it, most keys are rounded (" . ($rounded // '?') . ' of ' . ($all // '?') . ')');
		}
		like($out, qr/^type snowflake: DataTypeNotSupportedError: Data type "snowflake" in "Refused\.id" is not supported by "postgres" database\.$/m,
			'typeorm: an entity column of type snowflake is refused')
		  if $name eq 'typeorm';
		like($out, qr/^default mode: bigint, JSON \{"id":"[0-9]+"\}$/m,
			"mikroorm: BigIntType's default mode gives a BigInt, which the entity writes as a string")
		  if $name eq 'mikroorm';
	}
}


# ---- Go: pgx v4 and database/sql (Debian's golang-github-jackc-pgx-v4-dev)
SKIP:
{
	my $gocode = '/usr/share/gocode';
	unless (-d "$gocode/src/github.com/jackc/pgx/v4" && have('go', 'version') && have('node', '--version'))
	{
		$docs->skip_examples(qw(go-migration go-app api-client));
		skip 'golang-go, golang-github-jackc-pgx-v4-dev or nodejs is not installed', 1;
	}
	push @ran, 'go';
	my $dir = "$tmp/gopath/src/app";
	make_path($dir);
	$res = $node->psql('orm', $docs->example('go-migration'),
		extra_params => [ '-U', 'app', '-v', 'ON_ERROR_STOP=1' ]);
	is($res, 0, 'go: the migration runs as the application role');
	write_file("$dir/main.go", $docs->example('go-app'));
	write_file("$dir/client.js", $docs->example('api-client'));
	# GOPATH mode: the packages Debian installed, nothing fetched; the build
	# cache where the machine keeps it (install-deps.sh), else in the test's tmp
	my $cache = -w '/var/cache/snowflake/go-build' ? '/var/cache/snowflake/go-build' : "$tmp/go-build";
	my ($ok, $out, $err) = run_client([ 'go', 'build', '-o', 'app', '.' ], dir => $dir,
		env => { GO111MODULE => 'off', GOPATH => "$gocode:$tmp/gopath", GOCACHE => $cache,
			GOFLAGS => '', GOTOOLCHAIN => 'local' });
	ok($ok, 'go: the example builds with Debian\'s pgx, nothing fetched') or diag("$out\n$err");
	($ok, $out, $err) = run_client([ "$dir/app" ], db => 'orm', dir => $dir);
	ok($ok, 'go: the example runs') or diag("$out\n$err");
	like($out, qr/^unregistered: can't scan into dest\[0\]: unknown oid [0-9]+ cannot be scanned into \*int64$/m,
		'go: pgx cannot scan an unregistered snowflake into an int64');
	my ($bigint)    = $out =~ /^bigint: ([0-9 ]+)$/m;
	my ($snowflake) = $out =~ /^snowflake: ([0-9 ]+)$/m;
	check_ids($node, 'orm', 'go bigint key', [ split ' ', $bigint // '' ],
		table => 'go_orders', shard => $shard, count => 1001);
	check_ids($node, 'orm', 'go snowflake key (pgx, then database/sql)', [ split ' ', $snowflake // '' ],
		table => 'go_posts', shard => $shard, count => 1002);
	like($out, qr/^found: cup\nfound post: hello\ndatabase\/sql found: sql$/m,
		'go: pgx and database/sql find the rows by their keys');
	like($out, qr/^last hour: 100[0-9] orders, 100[0-9] posts$/m, 'go: the time range finds the rows of the last hour');
	my ($cok, $cout, $cerr) = run_client([ 'node', 'client.js' ], dir => $dir);
	ok($cok, 'go: the JavaScript client runs') or diag("$cout\n$cerr");
	like($cout, qr/^orders\.json: string, 1000 of 1000 exact$/m,
		'go: with json:",string" all 1,000 keys reach JavaScript exact');
	my ($plain_exact) = $cout =~ /^orders-plain\.json: number, ([0-9]+) of 1000 exact$/m;
	ok(defined $plain_exact && $plain_exact < 500,
		'go: without it, JavaScript rounds most keys (' . ($plain_exact // '?') . ' of 1000 exact)');
	($ok, $out, $err) = run_client([ "$dir/app", 'back' ], db => 'orm', dir => $dir);
	my ($same, $other) = $out =~ /^back: ([0-9]+) of 1000 find their row; without the tag ([0-9]+) of 1000 find another row$/m;
	ok($ok && ($same // 0) == 1000, 'go: the 1,000 keys sent back as strings find their rows')
	  or diag("$out\n$err");
	ok(($other // 0) > 0, 'go: sent back as rounded numbers, ' . ($other // '?') . ' of 1,000 find another row');
}

# The JavaScript client of an API's JSON and what it sends back: runs
# client.js in DIR after the app wrote orders.json and orders-plain.json,
# then the app's BACK command; checks what the guide says.
sub api_round_trip
{
	my ($label, $dir, $back, $without) = @_;
	my ($ok, $out, $err) = run_client([ 'node', 'client.js' ], dir => $dir);
	ok($ok, "$label: the JavaScript client runs") or diag("$out\n$err");
	like($out, qr/^orders\.json: string, 1000 of 1000 exact$/m,
		"$label: with the fix all 1,000 keys reach JavaScript exact");
	my ($plain_exact) = $out =~ /^orders-plain\.json: number, ([0-9]+) of 1000 exact$/m;
	ok(defined $plain_exact && $plain_exact < 500,
		"$label: without it, JavaScript rounds most keys (" . ($plain_exact // '?') . ' of 1000 exact)');
	($ok, $out, $err) = run_client($back, db => 'orm', dir => $dir);
	my ($same, $other) =
	  $out =~ /^back: ([0-9]+) of 1000 find their row; without \Q$without\E ([0-9]+) of 1000 find another row$/m;
	ok($ok && ($same // 0) == 1000, "$label: the 1,000 keys sent back as strings find their rows")
	  or diag("$out\n$err");
	ok(($other // 0) > 0, "$label: sent back as rounded numbers, " . ($other // '?') . ' of 1,000 find another row');
	return;
}

# ---- Ruby: Active Record and Sequel, with ruby-pg (Debian's)
for my $stack ([ rails => 'active_record', 'the attribute', 'String' ],
	[ sequel => 'sequel', 'the string', 'Integer' ])
{
	my ($name, $lib, $without, $class) = @$stack;
  SKIP:
	{
		unless (have('ruby', '-e', "require '$lib'; require 'pg'") && have('node', '--version'))
		{
			$docs->skip_examples("$name-app");
			skip "ruby-activerecord, ruby-sequel, ruby-pg or nodejs is not installed", 1;
		}
		push @ran, $name;
		my $dir = "$tmp/$name";
		make_path($dir);
		write_file("$dir/$name.rb", $docs->example("$name-app"));
		write_file("$dir/client.js", $docs->example('api-client'));
		my ($ok, $out, $err) = run_client([ 'ruby', "$name.rb" ], db => 'orm', dir => $dir);
		ok($ok, "$name: the example runs") or diag("$out\n$err");
		my ($bigint)    = $out =~ /^bigint: ([0-9 ]+)$/m;
		my ($snowflake) = $out =~ /^snowflake: ([0-9 ]+)$/m;
		check_ids($node, 'orm', "$name bigint key", [ split ' ', $bigint // '' ],
			table => "${name}_orders", shard => $shard, count => 1001);
		check_ids($node, 'orm', "$name snowflake key", [ split ' ', $snowflake // '' ],
			table => "${name}_posts", shard => $shard, count => 1001);
		like($out, qr/^key: $class found: cup$/m, "$name: the key is a Ruby $class and finds its row");
		like($out, qr/^post: String found: hello$/m, "$name: a snowflake key is a String and finds its row");
		like($out, qr/^last hour: 100[0-9] orders, 100[0-9] posts$/m,
			"$name: the time range finds the rows of the last hour");
		like($err, qr/^unknown OID [0-9]+: failed to recognize type of 'id'\. It will be treated as String\.$/m,
			'rails: Active Record warns that it does not know the snowflake type')
		  if $name eq 'rails';
		api_round_trip($name, $dir, [ 'ruby', "$name.rb", 'back' ], $without);
	}
}

# ---- PHP: PDO pgsql (Debian's php-pgsql)
SKIP:
{
	unless (have('php', '-r', 'exit(in_array("pgsql", PDO::getAvailableDrivers()) ? 0 : 1);')
		&& have('node', '--version'))
	{
		$docs->skip_examples(qw(php-migration php-app));
		skip 'php-cli, php-pgsql or nodejs is not installed', 1;
	}
	push @ran, 'php';
	my $dir = "$tmp/php";
	make_path($dir);
	write_file("$dir/migration.sql", $docs->example('php-migration'));
	write_file("$dir/app.php", $docs->example('php-app'));
	write_file("$dir/client.js", $docs->example('api-client'));
	my ($ok, $out, $err) = run_client([ 'php', 'app.php' ], db => 'orm', dir => $dir);
	ok($ok, 'php: the example runs') or diag("$out\n$err");
	like($out, qr/^lastInsertId: 55000 ERROR:  lastval is not yet defined in this session$/m,
		'php: lastInsertId() fails with 55000: the key comes from no sequence');
	my ($bigint)    = $out =~ /^bigint: ([0-9 ]+)$/m;
	my ($snowflake) = $out =~ /^snowflake: ([0-9 ]+)$/m;
	check_ids($node, 'orm', 'php bigint key', [ split ' ', $bigint // '' ],
		table => 'php_orders', shard => $shard, count => 1001);
	check_ids($node, 'orm', 'php snowflake key', [ split ' ', $snowflake // '' ],
		table => 'php_posts', shard => $shard, count => 1001);
	like($out, qr/^key: integer found: cup$/m, 'php: a bigint key is a PHP int and finds its row');
	like($out, qr/^post: string found: hello$/m, 'php: a snowflake key is a string and finds its row');
	like($out, qr/^last hour: 100[0-9] orders, 100[0-9] posts$/m,
		'php: the time range finds the rows of the last hour');
	api_round_trip('php', $dir, [ 'php', 'app.php', 'back' ], 'the strings');
}

# ---- Rust: tokio-postgres (Debian's crates, built offline)
SKIP:
{
	my $registry = '/usr/share/cargo/registry';
	unless (-x '/usr/bin/cargo' && glob("$registry/tokio-postgres-*") && have('node', '--version'))
	{
		$docs->skip_examples(qw(rust-cargo rust-cargo-config rust-migration rust-app));
		skip 'cargo, librust-tokio-postgres-dev (and its crates) or nodejs is not installed', 1;
	}
	push @ran, 'rust';
	my $dir = "$tmp/rust";
	make_path("$dir/src", "$dir/.cargo");
	write_file("$dir/Cargo.toml", $docs->example('rust-cargo'));
	write_file("$dir/.cargo/config.toml", $docs->example('rust-cargo-config'));
	write_file("$dir/migration.sql", $docs->example('rust-migration'));
	write_file("$dir/src/main.rs", $docs->example('rust-app'));
	write_file("$dir/client.js", $docs->example('api-client'));
	# Debian's cargo (not one on the PATH of whoever runs the test); the build
	# where the machine keeps it (install-deps.sh), else in the test's tmp
	my $target = -w '/var/cache/snowflake/cargo-target' ? '/var/cache/snowflake/cargo-target' : "$tmp/cargo-target";
	my ($ok, $out, $err) = run_client([ '/usr/bin/cargo', 'build', '-q' ], dir => $dir,
		env => { CARGO_TARGET_DIR => $target, CARGO_HOME => "$tmp/cargo-home", RUSTC => '/usr/bin/rustc' });
	ok($ok, 'rust: the example builds from Debian\'s crates, nothing fetched') or diag("$out\n$err");
	($ok, $out, $err) = run_client([ "$target/debug/app" ], db => 'orm', dir => $dir);
	ok($ok, 'rust: the example runs') or diag("$out\n$err");
	like($out, qr/^as i64: cannot convert between the Rust type `i64` and the Postgres type `snowflake`$/m,
		'rust: tokio-postgres refuses to read a snowflake as an i64');
	my ($bigint)    = $out =~ /^bigint: ([0-9 ]+)$/m;
	my ($snowflake) = $out =~ /^snowflake: ([0-9 ]+)$/m;
	check_ids($node, 'orm', 'rust bigint key', [ split ' ', $bigint // '' ],
		table => 'rust_orders', shard => $shard, count => 1001);
	check_ids($node, 'orm', 'rust snowflake key', [ split ' ', $snowflake // '' ],
		table => 'rust_posts', shard => $shard, count => 1001);
	like($out, qr/^found: cup$/m, 'rust: the row is found by its i64 key');
	like($out, qr/^post found: hello$/m, 'rust: the post is found by its Snowflake key');
	like($out, qr/^last hour: 100[0-9] orders, 100[0-9] posts$/m,
		'rust: the time range finds the rows of the last hour');
	api_round_trip('rust', $dir, [ "$target/debug/app", 'back' ], 'serialize_with');
}

# the plans auto_explain logged: the time range of each stack, on each key
# type, is an index condition on the key
my $log = substr(slurp_file($node->logfile), $log_start);
my @plans = map { s/\n\d{4}-\d\d-\d\d .*//sr } split /LOG:  duration: [0-9.]+ ms  plan:\n/, $log;
shift @plans;    # what the log held before the first plan
for my $name (@ran)
{
	for my $table ("${name}_orders", "${name}_posts")
	{
		# the schema as the stack wrote it: the key's type and its default
		is( $node->safe_psql('orm', qq{
				SELECT format_type(a.atttypid, a.atttypmod) || ' ' || pg_get_expr(d.adbin, d.adrelid)
				FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
				WHERE a.attrelid = '$table'::regclass AND a.attname = 'id'}),
			($table =~ /_orders$/ ? 'bigint' : 'snowflake') . ' snowflake_nextval()',
			"$name: $table.id has its type and DEFAULT snowflake_nextval()");
		my @range = grep { /\b$table\b/ && /snowflake_created_between|::timestamptz|\bas timestamptz/i } @plans;
		ok(@range && !grep({ !/Index Cond: \(\(id >= .*\) AND \(id < /s || /Seq Scan/ } @range),
			"$name: the time range on $table is an index condition on the key ("
			  . scalar(@range) . ' plan(s))')
		  or diag(@range ? $range[0] : 'no plan logged');
	}
}

$docs->done_examples;
$node->stop;
done_testing();
