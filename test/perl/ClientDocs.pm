# ClientDocs.pm
#	The examples of docs/clients.md, for the client-library tests
#	(test/integration/050_clients.pl), and the properties every ID a client
#	got back must have.
#
#	Each example in the document is a fenced code block right after a line
#	<!-- example: NAME -->; the test runs the block's text as it stands.  A
#	fenced block without that line is an error unless it is output or a
#	shell transcript (```text, ```console), so nothing in the document can
#	escape the test; asking for a name the document lacks is an error, and
#	done_examples() fails when the document has a marked block no test ran.
#
#	use ClientDocs;
#	my $docs = ClientDocs->load("$FindBin::RealBin/../../docs/clients.md");
#	my $code = $docs->example('psycopg-insert');      # dies when missing
#	check_ids($node, 'app', 'psycopg', \@ids, table => 'orders', shard => 7);
#	$docs->done_examples;                             # every block was run

package ClientDocs;

use strict;
use warnings;

use Exporter 'import';
use Test::More;

our @EXPORT = qw(check_ids write_file);

# Languages a block may have without a marker: output and transcripts.
my %unmarked_ok = map { $_ => 1 } qw(text console);

sub load
{
	my ($class, $path) = @_;
	open my $fh, '<', $path or die "could not read $path: $!";
	my @lines = <$fh>;
	close $fh;
	my (%blocks, @order, @unmarked);
	my $i = 0;
	while ($i < @lines)
	{
		my $line = $lines[$i];
		if ($line =~ /^<!-- example: ([a-z0-9][a-z0-9-]*) -->\s*$/)
		{
			my $name = $1;
			die "$path:" . ($i + 1) . ": example $name is not followed by a fenced block\n"
			  unless $i + 1 < @lines && $lines[ $i + 1 ] =~ /^```(\w+)\s*$/;
			my $lang = $1;
			die "$path:" . ($i + 1) . ": example $name appears twice\n"
			  if exists $blocks{$name};
			my $j    = $i + 2;
			my $text = '';
			while ($j < @lines && $lines[$j] !~ /^```\s*$/)
			{
				$text .= $lines[$j];
				$j++;
			}
			die "$path: example $name has no closing fence\n" if $j >= @lines;
			$blocks{$name} = { lang => $lang, text => $text, line => $i + 1, ran => 0 };
			push @order, $name;
			$i = $j + 1;
			next;
		}
		if ($line =~ /^```(\w*)\s*$/)
		{
			my $lang = $1;
			push @unmarked, ($i + 1) . " ($lang)"
			  unless $unmarked_ok{$lang};
			my $j = $i + 1;
			$j++ while $j < @lines && $lines[$j] !~ /^```\s*$/;
			$i = $j + 1;
			next;
		}
		$i++;
	}
	my $self = bless { path => $path, blocks => \%blocks, order => \@order }, $class;
	ok(!@unmarked,
		"docs/clients.md: every code block is a marked example or output"
		  . (@unmarked ? " (unmarked blocks at lines @unmarked)" : ''));
	return $self;
}

# The text of example NAME; dies when the document has no such example,
# which fails the test.
sub example
{
	my ($self, $name) = @_;
	my $b = $self->{blocks}{$name}
	  or die "docs/clients.md has no example \"$name\" (<!-- example: $name --> before a fenced block)\n";
	$b->{ran} = 1;
	return $b->{text};
}

# Marks examples as accounted for without running them (a skipped client).
sub skip_examples
{
	my ($self, @names) = @_;
	$self->example($_) for @names;
	return;
}

# Fails unless every marked example of the document was asked for.
sub done_examples
{
	my ($self) = @_;
	my @left = grep { !$self->{blocks}{$_}{ran} } @{ $self->{order} };
	ok(!@left, 'every example of docs/clients.md was run'
		  . (@left ? " (not run: @left)" : ''));
	return;
}

sub write_file
{
	my ($path, $text) = @_;
	open my $fh, '>', $path or die "could not write $path: $!";
	print $fh $text;
	close $fh or die "could not close $path: $!";
	return;
}

# Checks the IDs a client got back (decimal strings, in the order the client
# received them): there are some, they are positive, distinct, increasing,
# decode to a time within a minute of now and to the server's shard, and the
# table holds a row for each.  ordered => 0 leaves out the order (a client
# that does not promise it).
sub check_ids
{
	my ($node, $db, $label, $ids, %o) = @_;
	my @ids = @$ids;
	ok(scalar(@ids) >= ($o{count} // 1),
		"$label: the client got back " . scalar(@ids) . " ID(s)"
		  . (defined $o{count} ? " (expected $o{count})" : ''));
	return unless @ids;
	my @bad = grep { !/^[0-9]+$/ } @ids;
	ok(!@bad, "$label: every ID is a decimal integer" . (@bad ? " (got '$bad[0]')" : ''));
	return if @bad;
	my %seen;
	$seen{$_}++ for @ids;
	is(scalar(keys %seen), scalar(@ids), "$label: the IDs are distinct");
	my $list  = join(',', @ids);
	my $table = $o{table};
	my $shard = $o{shard};
	my $res   = $node->safe_psql(
		$db, qq{
WITH got AS (
    SELECT x, n FROM unnest('{$list}'::bigint[]) WITH ORDINALITY AS g(x, n)
)
SELECT bool_and(x > 0),
       coalesce(bool_and(x > prev), true),
       bool_and(abs(extract(epoch FROM snowflake_timestamp(x) - now())) < 60),
       bool_and(snowflake_shard_id(x) = $shard),
       (SELECT count(*) FROM $table t WHERE t.id IN (SELECT x FROM got))
FROM (SELECT x, lag(x) OVER (ORDER BY n) AS prev FROM got) s});
	my ($positive, $increasing, $recent, $shard_ok, $rows) = split /\|/, $res;
	is($positive,   't', "$label: the IDs are positive");
	is($increasing, 't', "$label: the IDs increase in the order the client got them")
	  if $o{ordered} // 1;
	is($recent,     't', "$label: the IDs decode to a time within a minute of now");
	is($shard_ok,   't', "$label: the IDs decode to the server's shard $shard");
	is($rows, scalar(@ids), "$label: $table has a row for each ID");
	return;
}

1;
