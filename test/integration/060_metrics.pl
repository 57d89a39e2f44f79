# The metrics surface for Prometheus (issue 19; docs/monitoring.md), end to
# end with Debian's own binaries: prometheus-postgres-exporter scraping a
# preloaded server through monitoring/snowflake.queries.yml, and promtool
# testing monitoring/snowflake.rules.yml.
#
#  (a) promtool: the rules load, their unit tests (snowflake.rules.test.yml)
#      pass, and a changed threshold makes those tests fail;
#  (b) known activity on a server whose clock libfaketime moves: IDs on
#      shards 7 and 8, a call that waits for the clock (a step back beyond
#      max_clock_lead), a call refused after it (max_clock_wait = 0), a call
#      on a fresh shard 9 refused because the clock reads before the epoch;
#  (c) the exporter, connected as a role with pg_monitor only, exports every
#      series of the query file with its type, one per shard (and cause), and
#      the values that activity must give; they agree with snowflake_stats;
#  (d) the alert rules, evaluated by promtool on the two real scrapes (before
#      and after the activity), fire for the lead and the refusal;
#  (e) a wrong query file or set-up, and what the exporter does: a wrong
#      schema (a query error, logged, pg_exporter_last_scrape_error), a role
#      without pg_monitor, YAML that does not parse
#      (pg_exporter_user_queries_load_error), two mistakes it accepts
#      silently (a misspelled usage, a renamed column), and rows with the
#      same labels, which fail the whole scrape; a damaged durable mark
#      (generation refused at start) shown by its gauge;
#  (f) with a registry (a real etcd): the registry's series while it holds a
#      shard, and after etcd is gone (not generating, the state, no time left,
#      failed requests, a refused call), and the alerts on those scrapes;
#  (g) a layout with 10 ms time units: lead, steps and headroom still come
#      in seconds.

use strict;
use warnings;

use IPC::Run;
use HTTP::Tiny;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use SnowflakeTest;
use EtcdCluster;
use RegistryTest;
use Time::HiRes qw(time sleep);

my $exporter = '/usr/bin/prometheus-postgres-exporter';
my $promtool = '/usr/bin/promtool';
plan skip_all => "prometheus-postgres-exporter is not installed ($exporter)"
  unless -x $exporter;
plan skip_all => "promtool (Debian's prometheus) is not installed ($promtool)"
  unless -x $promtool;
plan skip_all => "libfaketime is not installed ($libfaketime)"
  unless -f $libfaketime;

my $monitoring = "$FindBin::RealBin/../../monitoring";
my $queries    = "$monitoring/snowflake.queries.yml";
my $rules      = "$monitoring/snowflake.rules.yml";
my $rules_test = "$monitoring/snowflake.rules.test.yml";
my $tmp        = PostgreSQL::Test::Utils::tempdir();

# Reads a file; writes one.
sub slurp { my ($f) = @_; open my $fh, '<', $f or die "$f: $!"; local $/; return <$fh>; }
sub spew
{
	my ($f, $text) = @_;
	open my $fh, '>', $f or die "$f: $!";
	print $fh $text;
	close $fh or die "$f: $!";
	return;
}

# Runs promtool; returns (exit code, output).
sub promtool
{
	my (@args) = @_;
	my $out = '';
	IPC::Run::run([ $promtool, @args ], '>', \$out, '2>&1');
	return ($? >> 8, $out);
}

###########################################################################
# (a) the rules and their unit tests
###########################################################################

my ($rc, $out) = promtool('check', 'rules', $rules);
is($rc, 0, 'promtool check rules: the rules file loads') or diag($out);
like($out, qr/SUCCESS: 13 rules found/, 'all 13 rules are there');

($rc, $out) = promtool('test', 'rules', $rules_test);
is($rc, 0, 'promtool test rules: every alert fires, and stays quiet, as its tests say')
  or diag($out);
like($out, qr/SUCCESS/, 'promtool reports SUCCESS');

# the tests are not blind: a changed threshold fails them
my $mutant = slurp($rules);
ok($mutant =~ s/0\.8 \* snowflake_server_max_clock_lead_seconds/0.95 * snowflake_server_max_clock_lead_seconds/,
	'the lead threshold can be changed in a copy');
spew("$tmp/snowflake.rules.yml", $mutant);
spew("$tmp/snowflake.rules.test.yml", slurp($rules_test));
($rc, $out) = promtool('test', 'rules', "$tmp/snowflake.rules.test.yml");
isnt($rc, 0, 'with the lead threshold at 95% the unit tests fail');
like($out, qr/FAILED.*\n(?s:.*)alertname: SnowflakeLeadNearLimit/,
	'and name the alert whose test failed');

###########################################################################
# (b) a server, known activity
###########################################################################

my $node = node(
	'metrics', conf => qq{
snowflake.shard_id = 7
snowflake.shard_ids = '8-9'
snowflake.max_shards = 16
include_if_exists = 'snowflake_clock.conf'
});
clock_settings($node, 1000, 5000, 0);
start_faked($node);
$node->safe_psql('postgres', q{
	CREATE EXTENSION snowflake;
	CREATE ROLE prometheus LOGIN;
	GRANT pg_monitor TO prometheus;
	CREATE ROLE outsider LOGIN;
});

# Runs SQL in a new session; returns (exit code, stdout, stderr).
sub run_sql
{
	my ($sql) = @_;
	my ($o, $e);
	my $r = $node->psql('postgres', $sql, stdout => \$o, stderr => \$e,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($r, $o, $e);
}

$node->safe_psql('postgres', q{
	SELECT count(snowflake_nextval()) FROM generate_series(1, 5000);
	SELECT count(snowflake_nextval(8)) FROM generate_series(1, 3);
});

###########################################################################
# (c) the exporter
###########################################################################

my $dsn_user = 'prometheus';
my $target   = $node;
my @exporters;

# Starts the exporter with a query file, as $dsn_user; returns its port and log file.
sub start_exporter
{
	my ($file, $name) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $log  = "$tmp/exporter-$name.log";
	my $dir  = "$tmp/exporter-$name";
	mkdir $dir;
	local $ENV{DATA_SOURCE_NAME} = sprintf('host=%s port=%d user=%s dbname=postgres sslmode=disable',
		$target->host, $target->port, $dsn_user);
	my $h = IPC::Run::start(
		[ $exporter, "--web.listen-address=127.0.0.1:$port", "--extend.query-path=$file" ],
		'<', \undef, '>', $log, '2>', $log, init => sub { chdir $dir or die $!; });
	push @exporters, $h;
	my $http = HTTP::Tiny->new(timeout => 10);
	for (1 .. 300)
	{
		last if $http->get("http://127.0.0.1:$port/")->{status} == 200;
		sleep 0.1;
	}
	return ($port, $log, $h);
}

sub stop_exporter
{
	my ($h) = @_;
	$h->signal('TERM');
	$h->finish;
	@exporters = grep { $_ != $h } @exporters;
	return;
}

# Scrapes /metrics: (HTTP status, body, {name => {labels => value}}, {name => type}).
# Labels are "k=v,..." sorted, without the exporter's "server" label and
# without empty ones.
sub scrape
{
	my ($port) = @_;
	my $r = HTTP::Tiny->new(timeout => 60)->get("http://127.0.0.1:$port/metrics");
	my (%series, %type);
	for my $line (split /\n/, $r->{status} == 200 ? $r->{content} : '')
	{
		if ($line =~ /^# TYPE (\S+) (\S+)$/) { $type{$1} = $2; next; }
		next if $line =~ /^#/ or $line !~ /\S/;
		my ($name, $labels, $value) = $line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
		  or die "unparsed line: $line";
		my %l;
		while (($labels // '') =~ /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) { $l{$1} = $2; }
		delete $l{server};
		delete @l{ grep { $l{$_} eq '' } keys %l };    # as Prometheus stores them
		$series{$name}{ join(',', map { "$_=$l{$_}" } sort keys %l) } = $value;
	}
	return ($r->{status}, $r->{content} // '', \%series, \%type);
}

my ($port, $log, $main) = start_exporter($queries, 'main');
my ($status, $body, $a_series, $a_type) = scrape($port);
is($status, 200, 'the exporter answers /metrics');
is($a_series->{pg_up}{''}, 1, 'it reaches PostgreSQL as a role with pg_monitor (pg_up 1)');
is($a_series->{snowflake_ids_issued_total}{'shard=7'}, 5000, 'first scrape: 5000 IDs of shard 7');
is($a_series->{snowflake_ids_issued_total}{'shard=8'}, 3, 'and 3 of shard 8');
like($body, qr/\{[^}]*server="\Q${\ $node->host }:${\ $node->port }\E"/,
	'series carry the exporter\'s server label');

# The steps below are made on a running clock: a call sees a step less the
# real time between the clock readings around it (the size it reports),
# which a loaded machine stretches (psql alone can take a second or two to
# start).  So the steps are large enough to stay beyond max_clock_lead
# whatever the scheduling, and what the metrics must show is compared with
# the sizes the calls reported.

# a call that waits: the clock steps back 8 s (beyond max_clock_lead = 1 s,
# within max_clock_wait = 20 s), right after an ID was issued; it waits at
# least the step it saw less the lead
clock_settings($node, 1000, 20000, 1);
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
set_clock_ms($node, -8000);
my $t0 = time;
my ($r, $o, $e) = run_sql('SELECT snowflake_shard_id(snowflake_nextval())');
my $waited = time - $t0;
is($o, '7', 'after an 8 s step back a call issues an ID of shard 7') or diag($e);
my ($wait_step_ms) = $e =~ /WARNING:  01000: the system clock moved backwards by (\d+) ms/;
ok(defined $wait_step_ms && $wait_step_ms > 1000 && $wait_step_ms <= 8001,
	'and warns of the step, beyond max_clock_lead (' . ($wait_step_ms // 'none') . ' ms)');
cmp_ok($waited, '>=', (($wait_step_ms // 1000) - 1000) / 1000,
	'after waiting for the clock, at least the step it saw less the lead');
set_clock_ms($node, 0);

# a call refused: max_clock_wait = 0 and a 20 s step back
clock_settings($node, 1000, 0, 1);
$node->safe_psql('postgres', 'SELECT snowflake_nextval()');
set_clock_ms($node, -20000);
($r, $o, $e) = run_sql('SELECT snowflake_nextval()');
like($e, qr/ERROR:  58000: could not generate a snowflake ID: the clock moved backwards by \d+ ms/,
	'with max_clock_wait = 0 a call after a 20 s step back is refused (58000)');
my ($refused_step_ms) = $e =~ /the clock moved backwards by (\d+) ms/;
my $largest_step_ms = $refused_step_ms // 0;
$largest_step_ms = $wait_step_ms
  if defined $wait_step_ms && $wait_step_ms > $largest_step_ms;

# a fresh shard while the clock reads before the epoch (2024-01-01)
set_clock_ms($node, -int((time - 1703980800) * 1000));    # 2023-12-31 00:00 UTC
($r, $o, $e) = run_sql('SELECT snowflake_nextval(9)');
like($e, qr/ERROR:  58000: could not generate a snowflake ID: the clock reads earlier than snowflake.epoch/,
	'the first call of shard 9 with the clock before the epoch is refused');
# 60 s back for the scrape: shard 7's last ID stays ahead of the clock by
# more than max_clock_lead however long the queries and the scrape take
my $back_s = 60;
set_clock_ms($node, -$back_s * 1000);

# what snowflake_stats says, for comparison
my %stats;
for my $row (split /\n/, $node->safe_psql('postgres', q{
	SELECT shard_id, ids_issued, waits, refusals, clock_steps_back, sequence_exhausted,
	       inline_mark_writes FROM snowflake_stats ORDER BY shard_id}))
{
	my @v = split /\|/, $row;
	$stats{ $v[0] } = { ids => $v[1], waits => $v[2], refusals => $v[3], steps => $v[4],
		exhausted => $v[5], inline => $v[6] };
}
my $seconds_left = $node->safe_psql('postgres', q{
	SELECT extract(epoch FROM (SELECT last_timestamp FROM snowflake_layout()) - clock_timestamp())});

my ($b_status, $b_body, $b_series, $b_type) = scrape($port);
is($b_status, 200, "second scrape, after the activity, with the clock $back_s s back");
is($b_series->{pg_exporter_last_scrape_error}{''}, 0, 'no query failed (pg_exporter_last_scrape_error 0)');
is_deeply([ values %{ $b_series->{pg_exporter_user_queries_load_error} } ], [0],
	'the query file loaded (pg_exporter_user_queries_load_error 0)');

# every series of the query file, with its type, and nothing else of ours
my %expected_type = (
	(map { ("snowflake_$_" => 'counter') } qw(ids_issued_total sequence_exhausted_total
	  clock_steps_back_total waits_total wait_seconds_total registry_waits_total
	  registry_wait_seconds_total inline_mark_writes_total refusals_total
	  server_mark_writes_total)),
	(map { ("snowflake_$_" => 'gauge') } qw(largest_clock_step_back_seconds lead_seconds
	  mark_headroom_seconds server_shards server_max_shards server_max_clock_lead_seconds
	  server_max_clock_wait_seconds server_timestamp_seconds_left server_generation_refused
	  server_registry_enabled)));
is_deeply([ sort grep { /^snowflake_/ } keys %$b_series ], [ sort keys %expected_type ],
	'the exporter exports exactly the series of the query file (no registry: none of its series)');
is_deeply({ map { ($_ => $b_type->{$_}) } keys %expected_type }, \%expected_type,
	'each with its type: counters end in _total, the rest are gauges');
for my $name (grep { !/^snowflake_(server_|refusals)/ } sort keys %expected_type)
{
	is_deeply([ sort keys %{ $b_series->{$name} } ], [ 'shard=7', 'shard=8', 'shard=9' ],
		"$name: one series per shard used (7, 8 and the refused 9)");
}
my %refusal = map { my $c = $_; map { ("cause=$c,shard=$_" => 0) } 7 .. 9 }
  qw(clock before_epoch timestamp_end registry_mark);
$refusal{'cause=clock,shard=7'}        = 1;
$refusal{'cause=before_epoch,shard=9'} = 1;
is_deeply($b_series->{snowflake_refusals_total}, \%refusal,
	'refusals by shard and cause: clock on shard 7, before_epoch on shard 9, none else');

my $m = sub { my ($name, $shard) = @_; return $b_series->{"snowflake_$name"}{ defined $shard ? "shard=$shard" : '' }; };
is($m->('ids_issued_total', 7), 5003, 'shard 7: 5003 IDs (5000, two single calls, the call that waited)');
is($m->('ids_issued_total', 8), 3, 'shard 8: 3 IDs');
is($m->('ids_issued_total', 9), 0, 'shard 9: none');
is($m->('waits_total', 7), 2, 'shard 7: two calls waited (the one that got its ID, the refused one with max_clock_wait 0)');
cmp_ok($m->('wait_seconds_total', 7), '>=', (($wait_step_ms // 1000) - 1000) / 1000 - 0.01,
	'shard 7 waited at least the step the waiting call saw less the lead');
cmp_ok($m->('wait_seconds_total', 7), '<=', $waited + 0.5, 'no more than the call took');
is($m->('waits_total', $_), 0, "shard $_: no waits") for 8, 9;
is($m->('clock_steps_back_total', 7), 2, 'shard 7 saw two backward steps of the clock');
cmp_ok($m->('largest_clock_step_back_seconds', 7), '>=', $largest_step_ms / 1000 - 0.01,
	"the larger, as the calls reported it ($largest_step_ms ms)");
cmp_ok($m->('largest_clock_step_back_seconds', 7), '<=', 20.1, 'and not more than the 20 s step');
cmp_ok($m->('lead_seconds', 7), '>', 1, "with the clock $back_s s back, shard 7's lead exceeds max_clock_lead");
cmp_ok($m->('lead_seconds', 7), '<=', $back_s + 0.1, 'and is at most the step');
is($m->('lead_seconds', 9), 0, 'shard 9, which issued nothing, has no lead');
cmp_ok($m->('mark_headroom_seconds', 7), '>', 0, 'the durable mark lies ahead of the (stepped back) clock');
cmp_ok($m->('mark_headroom_seconds', 7), '<=', $back_s + 1 + 1 + 1, 'by at most the step + lead + 1 s + slack');
# the first ID's mark is written by the call itself or, when the mark worker
# saw the new slot first, by the worker: either way before the ID (331), and
# every inline write is one of the server's
cmp_ok($m->('inline_mark_writes_total', 7), '<=', $m->('server_mark_writes_total'),
	'shard 7\'s inline mark writes are among the server\'s mark writes');
is($m->('server_shards'), 3, 'the server used 3 shards');
is($m->('server_max_shards'), 16, 'of snowflake.max_shards = 16');
is($m->('server_max_clock_lead_seconds'), 1, 'max_clock_lead 1 s');
is($m->('server_max_clock_wait_seconds'), 0, 'max_clock_wait 0 s (reloaded)');
cmp_ok(abs($m->('server_timestamp_seconds_left') - $seconds_left), '<', 120,
	'seconds left in the timestamp field: snowflake_layout()\'s last_timestamp minus the clock');
is($m->('server_generation_refused'), 0, 'generation is not refused');
is($m->('server_registry_enabled'), 0, 'no registry');
cmp_ok($m->('server_mark_writes_total'), '>=', 1, 'the mark was written');
for my $shard (7, 8, 9)
{
	my $s = $stats{$shard};
	is_deeply(
		[ map { $m->($_, $shard) } qw(ids_issued_total waits_total clock_steps_back_total
			  sequence_exhausted_total inline_mark_writes_total) ],
		[ @$s{qw(ids waits steps exhausted inline)} ],
		"shard $shard: the exported counters are snowflake_stats'");
	is($s->{refusals}, (grep { /shard=$shard$/ && $refusal{$_} } keys %refusal) ? 1 : 0,
		"shard $shard: snowflake_stats' refusals are the sum of the causes");
}

###########################################################################
# (d) the alert rules on the two real scrapes
###########################################################################

# the rules without annotations (the unit tests in (a) check those), so that
# alerts are compared by labels alone
my $bare = '';
my $skip_indent;
for my $line (split /\n/, slurp($rules))
{
	my ($indent) = $line =~ /^(\s*)/;
	if (defined $skip_indent)
	{
		next if $line !~ /\S/ or length($indent) > $skip_indent;
		undef $skip_indent;
	}
	if ($line =~ /^(\s*)annotations:\s*$/) { $skip_indent = length $1; next; }
	$bare .= "$line\n";
}
spew("$tmp/bare.rules.yml", $bare);

# Evaluates the bare rules with promtool on two scrapes, the first at 0m and
# the second from 1m on (a series the first did not have is missing there,
# "_", as Prometheus would have it), with the alert_rule_test entries given;
# returns promtool's exit code (its output goes to the log on failure).
sub alerts_on_scrapes
{
	my ($first, $second, $name, $checks) = @_;
	my $input = '';
	for my $metric (sort grep { /^snowflake_/ || $_ eq 'pg_up' } keys %$second)
	{
		for my $labels (sort keys %{ $second->{$metric} })
		{
			my $l = join(',', 'job="snowflake"', 'instance="exporter"',
				map { my ($k, $v) = split /=/, $_, 2; qq{$k="$v"} } grep { length } split /,/, $labels);
			$input .= "      - series: '$metric\{$l}'\n"
			  . "        values: '" . ($first->{$metric}{$labels} // '_')
			  . " $second->{$metric}{$labels}" x 10 . "'\n";    # NaN has no "x10" form
		}
	}
	spew("$tmp/$name.test.yml",
		"rule_files:\n  - bare.rules.yml\nevaluation_interval: 30s\ntests:\n  - interval: 1m\n"
		  . "    input_series:\n$input    alert_rule_test:\n$checks");
	my ($rc, $out) = promtool('test', 'rules', "$tmp/$name.test.yml");
	diag($out . "\n" . slurp("$tmp/$name.test.yml")) if $rc;
	return $rc;
}

my $exp_lead = '';
for my $shard (7, 8, 9)
{
	next unless $m->('lead_seconds', $shard) > 0.8 * $m->('server_max_clock_lead_seconds');
	$exp_lead .= "          - exp_labels: {severity: warning, job: snowflake, instance: exporter, shard: \"$shard\"}\n";
}
like($exp_lead, qr/shard: "7"/, 'shard 7\'s scraped lead is above 80% of max_clock_lead');
is(alerts_on_scrapes($a_series, $b_series, 'live', <<"EOT"), 0,
      - eval_time: 3m
        alertname: SnowflakeLeadNearLimit
        exp_alerts:
$exp_lead
      - eval_time: 3m
        alertname: SnowflakeRefusals
        exp_alerts:
          - exp_labels: {severity: critical, job: snowflake, instance: exporter, shard: "7", cause: clock}
      - eval_time: 3m
        alertname: SnowflakeGenerationRefused
        exp_alerts: []
      - eval_time: 3m
        alertname: SnowflakeTimestampFieldEnding
        exp_alerts: []
      - eval_time: 6m
        alertname: SnowflakeMetricsMissing
        exp_alerts: []
EOT
	'on the scraped series the lead and the clock refusal alert; the refusal of shard 9, '
	  . 'whose series appeared with it, does not (docs/monitoring.md)');

stop_exporter($main);

###########################################################################
# (e) wrong query files and set-ups
###########################################################################

my $good = slurp($queries);

# a wrong schema (the extension created elsewhere): a query error
my $wrong = $good;
is(($wrong =~ s/public\.snowflake_/nosuchschema.snowflake_/g), 6, 'the six calls name their schema');
spew("$tmp/wrong-schema.yml", $wrong);
my $h;
($port, $log, $h) = start_exporter("$tmp/wrong-schema.yml", 'schema');
(undef, undef, my $s) = scrape($port);
is($s->{pg_up}{''}, 1, 'wrong schema: the exporter still reaches PostgreSQL');
is($s->{pg_exporter_last_scrape_error}{''}, 1, 'and reports a failed scrape (pg_exporter_last_scrape_error 1)');
is_deeply([ grep { /^snowflake_/ } keys %$s ], [], 'no snowflake series at all (SnowflakeMetricsMissing fires)');
stop_exporter($h);
like(slurp($log), qr/namespace: snowflake\w* error: .*schema \\?"nosuchschema\\?" does not exist/,
	'its log names the query and PostgreSQL\'s error');

# a role without pg_monitor: the server metrics are refused
$dsn_user = 'outsider';
($port, $log, $h) = start_exporter($queries, 'outsider');
(undef, undef, $s) = scrape($port);
$dsn_user = 'prometheus';
is($s->{pg_exporter_last_scrape_error}{''}, 1, 'without pg_monitor: a failed scrape');
ok(!exists $s->{snowflake_server_max_shards}, 'no server series (SnowflakeMetricsMissing fires)');
is($s->{snowflake_ids_issued_total}{'shard=7'}, 5003,
	'the per-shard counters, PUBLIC like snowflake_stats, are still there');
stop_exporter($h);
like(slurp($log), qr/permission denied for function snowflake_server_metrics/,
	'its log says which function was refused');

# YAML that does not parse: nothing of the file runs
spew("$tmp/broken.yml", $good =~ s/^snowflake_server:\n/snowflake_server:\n\t  broken/mr);
($port, $log, $h) = start_exporter("$tmp/broken.yml", 'broken');
(undef, undef, $s) = scrape($port);
is_deeply([ values %{ $s->{pg_exporter_user_queries_load_error} } ], [1],
	'YAML that does not parse: pg_exporter_user_queries_load_error 1 (SnowflakeQueryFileInvalid fires)');
is_deeply([ grep { /^snowflake_/ } keys %$s ], [], 'and no snowflake series');
stop_exporter($h);
like(slurp($log), qr/Failed to reload user queries.*yaml/, 'its log has the YAML error');

# mistakes the exporter accepts without a word (documented in docs/monitoring.md)
my $typo = $good;
ok($typo =~ s/(- lead_seconds:\n\s+usage: )"GAUGE"/$1"GAGUE"/, 'a usage can be misspelled in a copy');
$typo =~ s/m\.mark_headroom_seconds,/m.mark_headroom_seconds AS mark_headroom_second,/ or die;
spew("$tmp/typo.yml", $typo);
($port, $log, $h) = start_exporter("$tmp/typo.yml", 'typo');
(undef, my $typo_body, $s, my $t) = scrape($port);
stop_exporter($h);
is($s->{pg_exporter_last_scrape_error}{''}, 0, 'a misspelled usage and a renamed column: no error');
is_deeply([ values %{ $s->{pg_exporter_user_queries_load_error} } ], [0], 'the file "loads"');
ok(!exists $s->{snowflake_lead_seconds}, 'the column with the misspelled usage is silently dropped');
ok(!exists $s->{snowflake_mark_headroom_seconds}, 'the renamed column\'s metric is missing');
is($t->{snowflake_mark_headroom_second}, 'untyped',
	'and it comes out under the new name, untyped ("Unknown metric")');
like($typo_body, qr/# HELP snowflake_mark_headroom_second Unknown metric from snowflake/,
	'with the exporter\'s "Unknown metric" help');

# two rows with the same labels (the shard label dropped): the whole scrape fails
my $dup = $good;
ok($dup =~ s/(- shard:\n\s+usage: )"LABEL"/$1"DISCARD"/, 'the shard label can be dropped in a copy');
spew("$tmp/duplicate.yml", $dup);
($port, $log, $h) = start_exporter("$tmp/duplicate.yml", 'duplicate');
my ($dup_status, $dup_body) = scrape($port);
stop_exporter($h);
is($dup_status, 500, 'rows with the same labels: /metrics fails (HTTP 500; Prometheus sees up == 0)');
like($dup_body, qr/snowflake_ids_issued_total.*was collected before with the same name and label values/s,
	'naming the duplicated series');

# a damaged durable mark: every call refused at start, which the gauge shows
# (such calls fail before they reach a shard, so no refusal counter moves)
$node->stop;
spew($node->data_dir . '/pg_snowflake/mark', "this is not a mark\n");
set_clock_ms($node, 0);
start_faked($node);
($r, $o, $e) = run_sql('SELECT snowflake_nextval()');
like($e, qr/ERROR:  55000: could not read the recorded snowflake high-water mark/,
	'damaged mark: generation is refused');
($port, $log, $h) = start_exporter($queries, 'refused');
(undef, undef, $s) = scrape($port);
stop_exporter($h);
is($s->{snowflake_server_generation_refused}{''}, 1,
	'and the exporter, still answering, shows snowflake_server_generation_refused 1');
is($s->{pg_exporter_last_scrape_error}{''}, 0, 'with no query error');
$node->stop;

###########################################################################
# (f) with a registry: its series, while it holds a shard and after etcd is gone
###########################################################################

SKIP:
{
	skip "etcd is not installed ($EtcdCluster::etcd)", 1 unless -x $EtcdCluster::etcd;

	my $etcd = EtcdCluster->new(1);
	my $reg = registry_node('registry', $etcd, prefix => '/metrics', lease => 3, shards => '20-23');
	$reg->start;
	$reg->safe_psql('postgres', q{
		CREATE EXTENSION snowflake;
		CREATE ROLE prometheus LOGIN;
		GRANT pg_monitor TO prometheus;
	});
	wait_generating($reg);
	$reg->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 10)');
	my $held = held_shard($reg);
	$target = $reg;
	($port, $log, $h) = start_exporter($queries, 'registry');
	my ($st, undef, $held_series) = scrape($port);
	is($st, 200, 'registry: the exporter answers');
	my $g = sub { my ($set, $name, $labels) = @_; return $set->{"snowflake_$name"}{ $labels // '' }; };
	is($g->($held_series, 'server_registry_enabled'), 1, 'registry: snowflake_server_registry_enabled 1');
	is($g->($held_series, 'registry_shard'), $held, "the shard held, $held, as snowflake_registry shows it");
	is($g->($held_series, 'registry_generating'), 1, 'generating 1');
	is_deeply($held_series->{snowflake_registry_state_active},
		{ map { ("state=$_" => ($_ eq 'held' ? 1 : 0)) }
			  ('claiming', 'held', 'expired', 'pool full', 'unreachable', 'mark refused', 'clock skew') },
		'the state as a labelled gauge: held 1, every other state 0');
	is($g->($held_series, 'registry_lease_ttl_seconds'), 3, 'the lease TTL, 3 s');
	cmp_ok($g->($held_series, 'registry_lease_seconds_left'), '>', 0, 'time left on the lease');
	cmp_ok($g->($held_series, 'registry_lease_seconds_left'), '<=', 2.4 + 0.05,
		'at most TTL - TTL/5 (the fencing deadline)');
	cmp_ok($g->($held_series, 'registry_mark_ahead_seconds'), '>', 0,
		'the freshness mark published ahead of the clock');
	is($g->($held_series, 'registry_errors_total'), 0, 'no failed request');
	# one host, one clock: the measured skew lies within its own error, which
	# with etcd's Date header (whole seconds) is at most a second and the trip
	my ($skew, $skew_err) = map { $g->($held_series, "registry_clock_skew$_") } ('_seconds', '_error_seconds');
	ok(defined $skew && $skew == $skew && defined $skew_err && $skew_err == $skew_err, 'the clock skew and its error are measured')
	  or diag(explain($held_series));
	cmp_ok(abs($skew), '<=', $skew_err + 0.001, "one clock: the skew ($skew s) lies within its error ($skew_err s)");
	cmp_ok($skew_err, '<=', 1.5, 'the error at most a second and half the round trip');
	is($g->($held_series, 'registry_max_skew_seconds'), 1, 'snowflake.registry_max_skew, 1 s by default');
	is($g->($held_series, 'refusals_total', 'cause=registry_lease'), 0,
		'the registry_lease refusals, a series without a shard, at 0');
	is($g->($held_series, 'ids_issued_total', "shard=$held"), 10, "10 IDs of shard $held");

	# etcd gone: the lease runs out, a call is refused
	$etcd->stop;
	ok($reg->poll_query_until('postgres',
			q{SELECT state = 'expired' AND NOT generating FROM snowflake_registry}),
		'registry: without etcd the lease expires at its deadline and generation stops');
	my ($r2, $o2, $e2);
	$reg->psql('postgres', 'SELECT snowflake_nextval()', stdout => \$o2, stderr => \$e2,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($e2, qr/ERROR:  55000: cannot generate snowflake IDs: the registry lease of shard $held is not known to be valid/,
		'and refuses a call (55000)');
	my ($st2, undef, $gone) = scrape($port);
	stop_exporter($h);
	is($g->($gone, 'registry_generating'), 0, 'then generating 0');
	is($gone->{snowflake_registry_state_active}{'state=expired'}, 1, 'the state gauge shows "expired"');
	is((grep { $_ } values %{ $gone->{snowflake_registry_state_active} }), 1, 'and no other state');
	is($g->($gone, 'registry_lease_seconds_left'), 0, 'no time left on the lease');
	cmp_ok($g->($gone, 'registry_errors_total'), '>=', 1, 'failed requests counted');
	is($g->($gone, 'refusals_total', 'cause=registry_lease'), 1, 'the refused call counted under registry_lease');
	is($g->($gone, 'registry_shard'), $held, 'the shard is still the one it held (until it claims again)');

	# the alerts on these two scrapes
	is(alerts_on_scrapes($held_series, $gone, 'registry', <<"EOT"), 0,
      - eval_time: 30s
        alertname: SnowflakeRegistryNotGenerating
        exp_alerts: []
      - eval_time: 3m
        alertname: SnowflakeRegistryNotGenerating
        exp_alerts:
          - exp_labels: {severity: critical, job: snowflake, instance: exporter}
      - eval_time: 3m
        alertname: SnowflakeRegistryLeaseLow
        exp_alerts:
          - exp_labels: {severity: warning, job: snowflake, instance: exporter}
      - eval_time: 3m
        alertname: SnowflakeRefusals
        exp_alerts:
          - exp_labels: {severity: critical, job: snowflake, instance: exporter, cause: registry_lease}
      - eval_time: 3m
        alertname: SnowflakeMetricsMissing
        exp_alerts: []
EOT
		'registry: on the scraped series, not generating, lease low and the registry_lease refusal alert');
	$reg->stop;
}

###########################################################################
# (g) a layout with 10 ms time units: the metrics are still in seconds
###########################################################################

my $units = node(
	'units', conf => qq{
snowflake.shard_id = 5
snowflake.time_unit = '10ms'
include_if_exists = 'snowflake_clock.conf'
});
clock_settings($units, 1000, 0, 0);
start_faked($units);
$units->safe_psql('postgres', 'CREATE EXTENSION snowflake');
is($units->safe_psql('postgres', 'SELECT time_unit_ms FROM snowflake_layout()'), '10',
	'units: the layout counts time in 10 ms units');
$units->safe_psql('postgres', 'SELECT count(snowflake_nextval()) FROM generate_series(1, 100)');
# 30 s back (a running clock: the call sees the step less the time psql took
# to start, and the lead shrinks while the queries run; 30 s leaves a loaded
# machine room), compared with the step the call reported; in units of 10 ms
# every value would be 100 times larger
set_clock_ms($units, -30000);
my ($ur, $uo, $ue);
$units->psql('postgres', 'SELECT snowflake_nextval()', stdout => \$uo, stderr => \$ue);
like($ue, qr/ERROR:  could not generate a snowflake ID/, 'units: a call after a 30 s step back is refused');
my ($u_step_ms) = $ue =~ /the clock moved backwards by (\d+) ms/;
my ($lead, $steps, $largest, $headroom, $refused) = split /\|/, $units->safe_psql('postgres', q{
	SELECT lead_seconds, clock_steps_back, largest_step_back_seconds, mark_headroom_seconds,
	       refusals_clock FROM snowflake_metrics() WHERE shard_id = 5});
cmp_ok($lead, '>', 3, 'units: the lead is many seconds, in seconds (not units)');
cmp_ok($lead, '<=', 30.1, 'units: and no more than the step');
is($steps, 1, 'units: one step back seen');
ok(defined $u_step_ms && $largest >= $u_step_ms / 1000 - 0.02,
	"units: the step, in seconds, is the one the call reported ($largest s, "
	  . ($u_step_ms // 'none') . ' ms)');
cmp_ok($largest, '<=', 30.1, 'units: and not counted in units');
cmp_ok($headroom, '>', $lead, 'units: the mark lies beyond the last ID');
cmp_ok($headroom, '<=', 30 + 1 + 1 + 1, 'units: by at most the step + lead + 1 s + slack, in seconds');
is($refused, 1, 'units: the refusal counted under clock');
$units->stop;

done_testing();

END
{
	$_->kill_kill for @exporters;
}
