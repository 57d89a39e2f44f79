/*-------------------------------------------------------------------------
 *
 * pgconn.cpp
 *		The PostgreSQL registry's transport (see pgconn.hpp): a libpq
 *		connection over the asynchronous API, every wait bounded by the
 *		request's deadline, and the notes taken from each answer (the
 *		registry's clock, how it replicates).
 *
 * Plain C++ over libpq-fe.h: no postgres.h.  Nothing here throws or raises
 * an error; only the registry worker uses it.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>

#include "registry/pgconn.hpp"

namespace pgconn
{

namespace
{

/* The registry's now() we believe (Unix ms, about 285,000 years): no arithmetic on it overflows. */
constexpr long long kMaxClockMs = 1LL << 53;

/* The request's deadline: its timeout, cut to the budget. */
int64_t
request_deadline(const Conn *c)
{
	int64_t		d = mono_ns() + (int64_t) c->timeout_ms * 1000000;

	if (c->budget_ns > 0 && c->budget_ns < d)
		d = c->budget_ns;
	return d;
}

/* Adds the bytes of the current socket since the last count (TCP_INFO), or estimates. */
void
count_traffic(Conn *c, size_t sent_estimate, size_t received_estimate)
{
	struct tcp_info info;
	socklen_t	len = sizeof(info);
	int			fd = c->conn ? PQsocket(c->conn) : -1;

	memset(&info, 0, sizeof(info));
	if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
		len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received))
	{
		if (info.tcpi_bytes_acked >= c->counted_sent)
			c->bytes_sent += info.tcpi_bytes_acked - c->counted_sent;
		if (info.tcpi_bytes_received >= c->counted_received)
			c->bytes_received += info.tcpi_bytes_received - c->counted_received;
		c->counted_sent = info.tcpi_bytes_acked;
		c->counted_received = info.tcpi_bytes_received;
		return;
	}
	/* a Unix-domain socket: the messages' sizes */
	c->bytes_sent += sent_estimate;
	c->bytes_received += received_estimate;
}

/* Waits until the socket is readable (or writable); false at the deadline. */
bool
wait_socket(Conn *c, bool for_write, int64_t deadline)
{
	for (;;)
	{
		int64_t		left_ms = (deadline - mono_ns()) / 1000000;
		struct pollfd p;
		int			rc;

		if (left_ms <= 0)
			return false;
		p.fd = PQsocket(c->conn);
		p.events = for_write ? POLLOUT : POLLIN;
		p.revents = 0;
		if (p.fd < 0)
			return true;		/* libpq reports the broken connection */
		rc = poll(&p, 1, (int) (left_ms > 1000 ? 1000 : left_ms));
		if (rc > 0)
			return true;
		if (rc < 0 && errno != EINTR)
			return true;		/* let libpq find out */
	}
}

void
ignore_notice(void *, const char *)
{
}

/* A message of a failed result: "SQLSTATE: message". */
void
result_error(Conn *c, const char *what, const PGresult *res)
{
	char		msg[400];
	const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *text = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	snprintf(msg, sizeof(msg), "%s%s%s%s", code ? code : "", code ? ": " : "",
			 text ? text : PQresultErrorMessage(res),
			 code && strcmp(code, "25006") == 0 ?
			 " (a read-only server: list the registry's hosts with "
			 "target_session_attrs=read-write)" : "");
	set_error(c, what, msg);
}

/* Error what: msg, the session dropped and *a emptied; false. */
bool
fail(Conn *c, const char *what, const char *msg, Answer *a)
{
	set_error(c, what, msg);
	clear(a);
	drop(c);
	return false;
}

/* Sends the query and flushes it within the deadline; false with error, the session dropped. */
bool
send_query(Conn *c, const char *what, const char *sql, int nparams,
		   const char *const *params, int64_t deadline)
{
	if (!(nparams >= 0 ? PQsendQueryParams(c->conn, sql, nparams, NULL, params, NULL, NULL, 0)
		  : PQsendQuery(c->conn, sql)))
	{
		set_error(c, what, PQerrorMessage(c->conn));
		drop(c);
		return false;
	}
	for (;;)
	{
		int			f = PQflush(c->conn);

		if (f == 0)
			return true;
		if (f < 0 || !wait_socket(c, true, deadline))
		{
			set_error(c, what, f < 0 ? PQerrorMessage(c->conn) : "no answer in time");
			drop(c);
			return false;
		}
	}
}

/* Waits for the next result within the deadline; false with error, *a emptied, the session dropped. */
bool
await_result(Conn *c, const char *what, Answer *a, int64_t deadline)
{
	while (PQisBusy(c->conn))
	{
		if (!wait_socket(c, false, deadline))
		{
			char		msg[64];

			snprintf(msg, sizeof(msg), "no answer within %ld ms", (long) c->timeout_ms);
			return fail(c, what, msg, a);
		}
		if (!PQconsumeInput(c->conn))
			return fail(c, what, PQerrorMessage(c->conn), a);
	}
	return true;
}

/*
 * Collects the results of the query sent; false when one failed (the first
 * failure's message in error, its SQLSTATE in *sqlstate) or the wait for
 * one did.  *received_estimate grows by the size of the rows.
 */
bool
collect(Conn *c, const char *what, Answer *a, int64_t deadline, char *sqlstate,
		size_t *received_estimate, bool *waited)
{
	bool		ok = true;

	*waited = true;
	for (;;)
	{
		PGresult   *res;

		if (!await_result(c, what, a, deadline))
		{
			*waited = false;
			return false;
		}
		res = PQgetResult(c->conn);
		if (res == NULL)
			return ok;
		if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			if (ok)
			{
				result_error(c, what, res);
				if (sqlstate)
				{
					const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

					snprintf(sqlstate, 6, "%s", code ? code : "");
				}
			}
			ok = false;
			PQclear(res);
			continue;
		}
		for (int r = 0; r < PQntuples(res); r++)
			for (int col = 0; col < PQnfields(res); col++)
				*received_estimate += (size_t) PQgetlength(res, r, col) + 4;
		if (a->count < kMaxResults)
			a->res[a->count++] = res;
		else
			PQclear(res);
	}
}

/* Notes the registry's clock: now() there (Unix ms) was read between sent and answered. */
void
note_clock(Conn *c, const char *now_text, int64_t sent_wall, int64_t answered_wall)
{
	char	   *end;
	long long	now;

	if (now_text == NULL)
		return;
	errno = 0;
	now = strtoll(now_text, &end, 10);
	if (end == now_text || *end != '\0' || errno != 0 || now > kMaxClockMs || now < -kMaxClockMs)
		return;					/* no clock: a garbled (or hostile) answer */
	/* now() truncated to the ms: the registry's clock read [now, now + 1) */
	c->sample_lo_ms = sent_wall - ((int64_t) now + 1);
	c->sample_hi_ms = answered_wall - (int64_t) now;
	c->sample_new = true;
}

/* Notes how the registry replicates, from SF_PG_REPLICATION_COLUMNS at col. */
void
note_replication(Conn *c, const PGresult *res, int col)
{
	if (PQnfields(res) < col + 2 || PQgetisnull(res, 0, col) || PQgetisnull(res, 0, col + 1))
		return;
	if (strcmp(PQgetvalue(res, 0, col), "0") == 0)
		c->replication = "no standby";
	else if (strcmp(PQgetvalue(res, 0, col + 1), "t") == 0)
		c->replication = "synchronous";
	else
		c->replication = "asynchronous";
}

/* Polls a connection started with PQconnectStartParams until it is made; false with error. */
bool
poll_connection(Conn *c, int64_t deadline)
{
	/* as libpq's manual says: first as if PQconnectPoll had asked to write */
	for (PostgresPollingStatusType s = PGRES_POLLING_WRITING;;)
	{
		if (!wait_socket(c, s == PGRES_POLLING_WRITING, deadline))
		{
			char		msg[64];

			snprintf(msg, sizeof(msg), "no connection within %ld ms", (long) c->timeout_ms);
			set_error(c, "connecting", msg);
			drop(c);
			return false;
		}
		s = PQconnectPoll(c->conn);
		if (s == PGRES_POLLING_OK)
			return true;
		if (s == PGRES_POLLING_FAILED)
		{
			set_error(c, "connecting", PQerrorMessage(c->conn));
			drop(c);
			return false;
		}
	}
}

/* Makes a new connection, non-blocking, within the deadline; false with error. */
bool
connect_session(Conn *c, int64_t deadline)
{
	static const char *const keywords[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {c->target, "snowflake registry worker", NULL};

	c->endpoint[0] = '\0';
	c->requests++;				/* a connection attempt is a request too */
	c->conn = PQconnectStartParams(keywords, values, 1);
	if (c->conn == NULL)
	{
		set_error(c, "connecting", "out of memory");
		return false;
	}
	if (PQstatus(c->conn) == CONNECTION_BAD)
	{
		set_error(c, "connecting", PQerrorMessage(c->conn));
		drop(c);
		return false;
	}
	PQsetNoticeProcessor(c->conn, ignore_notice, NULL);
	c->sent_ns = mono_ns();
	if (!poll_connection(c, deadline))
		return false;
	if (PQsetnonblocking(c->conn, 1) != 0)
	{
		set_error(c, "connecting", PQerrorMessage(c->conn));
		drop(c);
		return false;
	}
	snprintf(c->endpoint, sizeof(c->endpoint), "%s:%s/%s", PQhost(c->conn),
			 PQport(c->conn), PQdb(c->conn));
	return true;
}

/*
 * Connects (if need be) and sets the session up; false with error.  The
 * registry's own writes must survive a crash of its server whatever that
 * server's settings: the session raises synchronous_commit off or local to
 * on (never lowers remote_write or remote_apply), and a server running with
 * fsync = off, which can lose any commit, is refused.
 */
bool
ensure_connected(Conn *c, int64_t deadline)
{
	static const char *const what = "setting up the session";
	Answer		a;
	char		setup[512];

	if (c->conn && c->ready)
		return true;
	if (c->conn == NULL && !connect_session(c, deadline))
		return false;
	/* our names schema-qualified, operators and functions from pg_catalog only */
	snprintf(setup, sizeof(setup),
			 "SET search_path = pg_catalog, pg_temp; SET statement_timeout = %ld; "
			 "SET client_min_messages = warning; "
			 "SELECT set_config('synchronous_commit', 'on', false)"
			 " WHERE current_setting('synchronous_commit') IN ('off', 'local'); "
			 "SELECT" SF_PG_DURABILITY_COLUMNS, (long) c->timeout_ms);
	if (!run(c, what, setup, -1, NULL, &a, deadline))
		return false;
	if (a.count != 5 || PQntuples(a.res[4]) != 1 || PQnfields(a.res[4]) != 2)
		return fail(c, what, "unexpected answer", &a);
	if (!durable(c, what, a.res[4], 0))
	{
		clear(&a);
		return false;
	}
	clear(&a);
	if (c->on_session && !c->on_session(c, deadline))
		return false;
	c->ready = true;
	return true;
}

}								/* namespace */

int64_t
mono_ns() noexcept
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
wall_ms() noexcept
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
clear(Answer *a) noexcept
{
	for (int i = 0; i < a->count; i++)
		PQclear(a->res[i]);
	a->count = 0;
}

bool
open(Conn *c, const char *target, long timeout_ms, SessionCheck on_session, char *err,
	 size_t errlen) noexcept
{
	memset(c, 0, sizeof(*c));
	c->target = target;
	c->timeout_ms = timeout_ms;
	c->on_session = on_session;
	return sf_pg_target_check(target, err, errlen);
}

void
drop(Conn *c) noexcept
{
	if (c->conn)
	{
		count_traffic(c, 0, 0);
		PQfinish(c->conn);
	}
	c->conn = NULL;
	c->ready = false;
	c->counted_sent = c->counted_received = 0;
}

/* Copies a message of libpq's, without its trailing newline. */
void
set_error(Conn *c, const char *what, const char *msg) noexcept
{
	size_t		len;

	snprintf(c->error, sizeof(c->error), "%s%s%s", c->endpoint[0] ? c->endpoint : "",
			 c->endpoint[0] ? ": " : "", what);
	len = strlen(c->error);
	if (msg && *msg && len + 2 < sizeof(c->error))
	{
		snprintf(c->error + len, sizeof(c->error) - len, ": %s", msg);
		len = strlen(c->error);
	}
	while (len > 0 && (c->error[len - 1] == '\n' || c->error[len - 1] == ' '))
		c->error[--len] = '\0';
	/* one line: libpq's messages may hold several */
	for (char *p = c->error; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

bool
durable(Conn *c, const char *what, const PGresult *row, int col) noexcept
{
	const char *fsync = PQgetvalue(row, 0, col);
	const char *commit = PQgetvalue(row, 0, col + 1);
	char		msg[400];

	if (strcmp(fsync, "on") == 0 && strcmp(commit, "off") != 0 && strcmp(commit, "local") != 0)
		return true;
	if (strcmp(fsync, "on") != 0)
	{
		c->refused = true;
		snprintf(msg, sizeof(msg), "the registry server runs with fsync = off: a crash of its "
				 "host can lose claims it acknowledged, and two servers would then issue the "
				 "same IDs; set fsync = on there");
	}
	else
		snprintf(msg, sizeof(msg), "the answer ran under synchronous_commit = %.20s, not the "
				 "\"on\" this session was given (a connection pooler that does not keep "
				 "session settings?): it could be lost in a crash, so it is not used",
				 commit);
	set_error(c, what, msg);
	drop(c);
	return false;
}

bool
begin(Conn *c, const char *what, int64_t *deadline) noexcept
{
	c->refused = false;
	*deadline = request_deadline(c);
	if (*deadline <= mono_ns())
	{
		set_error(c, what, "no time left before the lease deadline");
		return false;
	}
	return ensure_connected(c, *deadline);
}

bool
run(Conn *c, const char *what, const char *sql, int nparams, const char *const *params,
	Answer *a, int64_t deadline, char *sqlstate) noexcept
{
	size_t		sent_estimate = strlen(sql) + 64;
	size_t		received_estimate = 32;
	bool		ok;
	bool		waited;

	a->count = 0;
	if (sqlstate)
		sqlstate[0] = '\0';
	c->requests++;
	c->sent_ns = mono_ns();
	for (int i = 0; i < nparams; i++)
		sent_estimate += (params[i] ? strlen(params[i]) : 0) + 4;
	if (!send_query(c, what, sql, nparams, params, deadline))
		return false;
	ok = collect(c, what, a, deadline, sqlstate, &received_estimate, &waited);
	if (!waited)
		return false;
	count_traffic(c, sent_estimate, received_estimate);
	if (PQstatus(c->conn) == CONNECTION_BAD)
	{
		if (ok)
			set_error(c, what, PQerrorMessage(c->conn));
		ok = false;
	}
	if (!ok)
	{
		/*
		 * A new session for the next request: this one may carry what made
		 * the error (a server turned read-only, a database's settings since
		 * changed), and libpq's host list finds the writable server again.
		 */
		drop(c);
		clear(a);
	}
	return ok;
}

bool
request(Conn *c, const char *what, const char *sql, int nparams, const char *const *params,
		Answer *a) noexcept
{
	int64_t		deadline;

	a->count = 0;
	if (!begin(c, what, &deadline))
		return false;
	return run(c, what, sql, nparams, params, a, deadline);
}

bool
one_row(Conn *c, const char *what, Answer *a, int results, int nfields, Notes notes,
		int64_t sent_wall) noexcept
{
	const PGresult *row = a->count == results ? a->res[results - 1] : NULL;

	if (row == NULL || PQntuples(row) != 1 || (nfields > 0 && PQnfields(row) != nfields))
	{
		clear(a);
		set_error(c, what, "unexpected answer");
		return false;
	}
	if (notes.clock_col >= 0)
		note_clock(c, PQgetvalue(row, 0, notes.clock_col), sent_wall, wall_ms());
	if (notes.replication_col >= 0)
	{
		note_replication(c, row, notes.replication_col);
		if (PQnfields(row) < notes.replication_col + 4)
		{
			clear(a);
			set_error(c, what, "unexpected answer");
			return false;
		}
		if (!durable(c, what, row, notes.replication_col + 2))
		{
			clear(a);
			return false;
		}
	}
	if (notes.durability_col >= 0 &&
		(PQnfields(row) < notes.durability_col + 2 || !durable(c, what, row, notes.durability_col)))
	{
		if (PQnfields(row) < notes.durability_col + 2)
			set_error(c, what, "unexpected answer");
		clear(a);
		return false;
	}
	return true;
}

bool
request_row(Conn *c, const char *what, const char *sql, int nparams, const char *const *params,
			Notes notes, int64_t sent_wall, Answer *a) noexcept
{
	return request(c, what, sql, nparams, params, a) &&
		one_row(c, what, a, 1, 0, notes, sent_wall);
}

}								/* namespace pgconn */

/*---- connection strings, for the settings and the view ----*/

bool
sf_pg_target_is(const char *target)
{
	while (*target == ' ')
		target++;
	if (strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0)
		return false;			/* etcd's */
	return strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0 ||
		strchr(target, '=') != NULL;
}

/* The value of a hex digit, -1 if it is none. */
static int
sf_hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Whether "word" (lowercase) begins at p, in any case, each letter plain or percent-encoded. */
static bool
sf_decoded_word_at(const char *p, const char *word)
{
	for (; *word; word++)
	{
		int			ch;

		if (p[0] == '%' && sf_hex_value(p[1]) >= 0 && sf_hex_value(p[2]) >= 0)
		{
			ch = sf_hex_value(p[1]) * 16 + sf_hex_value(p[2]);
			p += 3;
		}
		else if (*p)
			ch = (unsigned char) *p++;
		else
			return false;
		if (ch >= 'A' && ch <= 'Z')
			ch += 'a' - 'A';
		if (ch != *word)
			return false;
	}
	return true;
}

/*
 * Whether a connection string may hold a password: "password" anywhere, in
 * any case and percent-encoded too (libpq decodes a URI's parameter names:
 * "pass%77ord=" is "password="), or a URI's user:password@.
 */
bool
sf_pg_target_has_password(const char *target)
{
	const char *at = strchr(target, '@');

	for (const char *p = target; *p; p++)
		if (sf_decoded_word_at(p, "password"))
			return true;
	if (at && (strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0))
	{
		const char *userinfo = strstr(target, "://") + 3;

		for (const char *p = userinfo; p < at; p++)
			if (*p == ':')
				return true;
	}
	return false;
}

bool
sf_pg_target_check(const char *target, char *err, size_t errlen)
{
	char	   *msg = NULL;
	PQconninfoOption *opts = PQconninfoParse(target, &msg);

	if (opts != NULL)
	{
		PQconninfoFree(opts);
		return true;
	}
	if (msg == NULL)
		snprintf(err, errlen, "out of memory");
	else if (sf_pg_target_has_password(target))
		snprintf(err, errlen, "libpq cannot parse it (its message is not shown: the string "
				 "holds a password)");
	else
	{
		size_t		len;

		snprintf(err, errlen, "%s", msg);
		len = strlen(err);
		while (len > 0 && err[len - 1] == '\n')
			err[--len] = '\0';
	}
	PQfreemem(msg);
	return false;
}

void
sf_pg_target_display(const char *target, char *buf, size_t buflen)
{
	PQconninfoOption *opts = PQconninfoParse(target, NULL);
	size_t		used = 0;

	buf[0] = '\0';
	if (opts == NULL)
		return;
	for (PQconninfoOption *o = opts; o->keyword; o++)
	{
		bool		secret = o->dispchar && o->dispchar[0] == '*';
		const char *v = secret ? "********" : o->val;
		bool		quote;

		if (o->val == NULL || used + 1 >= buflen)
			continue;
		quote = v[0] == '\0' || strpbrk(v, " '\\") != NULL;
		used += (size_t) snprintf(buf + used, buflen - used, "%s%s=%s", used ? " " : "",
								  o->keyword, quote ? "'" : "");
		for (const char *p = v; *p && used + 3 < buflen; p++)
		{
			if (quote && (*p == '\'' || *p == '\\'))
				buf[used++] = '\\';
			buf[used++] = *p;
		}
		if (quote && used + 1 < buflen)
			buf[used++] = '\'';
		buf[used < buflen ? used : buflen - 1] = '\0';
	}
	PQconninfoFree(opts);
}

