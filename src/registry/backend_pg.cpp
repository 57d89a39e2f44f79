/*-------------------------------------------------------------------------
 *
 * backend_pg.cpp
 *		The registry backend on a PostgreSQL database (backend.hpp), over
 *		libpq's asynchronous API.
 *
 * Tables, in the schema snowflake_registry of the registry database (the
 * shipped script sql/snowflake_registry.sql makes them; the worker runs it
 * when the schema is absent and its role may create it):
 *	schema_version	one row: the version of these tables (1)
 *	claims			one row per claim, never deleted by snowflake: the ID
 *					space (snowflake.registry_prefix), datacenter and worker,
 *					the holder's lease (a random 63-bit token it drew), who
 *					it is, status active/released/expired, when it was
 *					allocated, its last heartbeat and release (all on the
 *					registry's clock, now() there), the holder's own clock at
 *					its last heartbeat, and the last mark it published.  A
 *					partial unique index allows one active row per shard.
 *	shards			one row per shard ever claimed: its freshness mark.
 *	epochs			(1.3) one row per (system identifier, timeline) the
 *					database was seen under, and when claims may start in it.
 *
 * Failover (1.3).  A standby promoted after asynchronous replication may
 * lack the old primary's last writes (heartbeats, marks, whole claims): by
 * its clock a holder's row expires before the holder's own deadline, and the
 * shard's mark there is stale.  So the script's triggers on claims, which
 * every claimer's statements fire whatever its version, take no claim and
 * mark no active row expired until the epoch's claims_from (a lease + lead
 * + margin after the first claim that saw the new timeline), and raise the
 * claimed shard's mark to claims_from.  A claim made in that pause returns
 * it (SfClaim.paused_until_ms), for the worker to say why it waits.
 *
 * Expiry is decided by the registry's clock alone: an active row whose
 * last_heartbeat + lease_ttl_s lies at or before now() there is over; the
 * next claimer marks it expired (never deletes it) in the transaction that
 * inserts its own row.  No two hosts' clocks are ever compared for it.  The
 * heartbeat's now() is taken when the registry starts the statement, after
 * the holder sent it, so the holder's deadline (its send time + TTL - TTL/5,
 * lease.cpp) falls before the registry can expire the row.
 *
 * Every request is bounded: the connection is made with PQconnectStart and
 * PQconnectPoll, queries sent with PQsendQuery(Params), and the socket polled
 * with the time left (the request timeout, cut to the budget); on timeout the
 * connection is dropped (the server's statement_timeout, set to the same
 * timeout, ends whatever it still runs) and the next request connects again.
 * Nothing here throws or raises an error; only the registry worker uses it.
 * Plain C++ over libpq-fe.h: no postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>

#include <libpq-fe.h>

#include "registry/backend_pg.hpp"

namespace
{

/* At most this many results per request (the claim sends four statements). */
constexpr int kMaxResults = 8;

struct State
{
	PGconn	   *conn;
	bool		ready;			/* connected, session set, schema checked */
	const char *target;
	char		prefix[256];
	int64_t		datacenter;
	int			worker_bits;
	long		timeout_ms;
	char		script[1024];
	char		host[128];
	int			pid;
	int64_t		ttl_s;			/* of the lease drawn last */
	int64_t		claimed_lease;	/* a claim was made under it (0: none) */
	int64_t		sent_ns;
	int64_t		budget_ns;
	char		error[1024];
	char		endpoint[256];
	uint64_t	requests;
	uint64_t	bytes_sent;
	uint64_t	bytes_received;
	uint64_t	counted_sent;	/* of the current socket, by TCP_INFO */
	uint64_t	counted_received;
	const int  *lead_ms;		/* snowflake.max_clock_lead */
	const char *replication;	/* as the last answer showed, NULL: unknown */
	bool		sample_new;
	int64_t		sample_lo_ms;
	int64_t		sample_hi_ms;
};

State		st;

int64_t
mono_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
wall_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The request's deadline: its timeout, cut to the budget. */
int64_t
request_deadline()
{
	int64_t		d = mono_ns() + (int64_t) st.timeout_ms * 1000000;

	if (st.budget_ns > 0 && st.budget_ns < d)
		d = st.budget_ns;
	return d;
}

/* Copies a message of libpq's, without its trailing newline. */
void
set_error(const char *what, const char *msg)
{
	size_t		len;

	snprintf(st.error, sizeof(st.error), "%s%s%s", st.endpoint[0] ? st.endpoint : "",
			 st.endpoint[0] ? ": " : "", what);
	len = strlen(st.error);
	if (msg && *msg && len + 2 < sizeof(st.error))
	{
		snprintf(st.error + len, sizeof(st.error) - len, ": %s", msg);
		len = strlen(st.error);
	}
	while (len > 0 && (st.error[len - 1] == '\n' || st.error[len - 1] == ' '))
		st.error[--len] = '\0';
	/* one line: libpq's messages may hold several */
	for (char *p = st.error; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

/* Adds the bytes of the current socket since the last count (TCP_INFO), or estimates. */
void
count_traffic(size_t sent_estimate, size_t received_estimate)
{
	struct tcp_info info;
	socklen_t	len = sizeof(info);
	int			fd = st.conn ? PQsocket(st.conn) : -1;

	memset(&info, 0, sizeof(info));
	if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
		len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received))
	{
		if (info.tcpi_bytes_acked >= st.counted_sent)
			st.bytes_sent += info.tcpi_bytes_acked - st.counted_sent;
		if (info.tcpi_bytes_received >= st.counted_received)
			st.bytes_received += info.tcpi_bytes_received - st.counted_received;
		st.counted_sent = info.tcpi_bytes_acked;
		st.counted_received = info.tcpi_bytes_received;
		return;
	}
	/* a Unix-domain socket: the messages' sizes */
	st.bytes_sent += sent_estimate;
	st.bytes_received += received_estimate;
}

void
drop_connection()
{
	if (st.conn)
	{
		count_traffic(0, 0);
		PQfinish(st.conn);
	}
	st.conn = NULL;
	st.ready = false;
	st.counted_sent = st.counted_received = 0;
}

/* Waits until the socket is readable (or writable); false at the deadline. */
bool
wait_socket(bool for_write, int64_t deadline)
{
	for (;;)
	{
		int64_t		left_ms = (deadline - mono_ns()) / 1000000;
		struct pollfd p;
		int			rc;

		if (left_ms <= 0)
			return false;
		p.fd = PQsocket(st.conn);
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
result_error(const char *what, const PGresult *res)
{
	char		msg[400];
	const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *text = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	snprintf(msg, sizeof(msg), "%s%s%s%s", code ? code : "", code ? ": " : "",
			 text ? text : PQresultErrorMessage(res),
			 code && strcmp(code, "25006") == 0 ?
			 " (a read-only server: list the registry's hosts with "
			 "target_session_attrs=read-write)" : "");
	set_error(what, msg);
}

/*
 * Sends sql (with params when nparams >= 0, else as a simple query that may
 * hold several statements, one transaction) and collects its results.
 * false on any failure (st.error says why; *sqlstate the error's, or "").
 */
bool
run(const char *what, const char *sql, int nparams, const char *const *params,
	PGresult **results, int *nresults, int64_t deadline, char *sqlstate = NULL)
{
	bool		ok = true;
	size_t		sent_estimate = strlen(sql) + 64;
	size_t		received_estimate = 32;

	*nresults = 0;
	if (sqlstate)
		sqlstate[0] = '\0';
	st.requests++;
	st.sent_ns = mono_ns();
	for (int i = 0; i < nparams; i++)
		sent_estimate += (params[i] ? strlen(params[i]) : 0) + 4;
	if (!(nparams >= 0 ? PQsendQueryParams(st.conn, sql, nparams, NULL, params, NULL, NULL, 0)
		  : PQsendQuery(st.conn, sql)))
	{
		set_error(what, PQerrorMessage(st.conn));
		drop_connection();
		return false;
	}
	for (;;)
	{
		int			f = PQflush(st.conn);

		if (f == 0)
			break;
		if (f < 0 || !wait_socket(true, deadline))
		{
			set_error(what, f < 0 ? PQerrorMessage(st.conn) : "no answer in time");
			drop_connection();
			return false;
		}
	}
	for (;;)
	{
		PGresult   *res;

		while (PQisBusy(st.conn))
		{
			if (!wait_socket(false, deadline))
			{
				char		msg[64];

				snprintf(msg, sizeof(msg), "no answer within %ld ms",
						 (long) st.timeout_ms);
				set_error(what, msg);
				for (int i = 0; i < *nresults; i++)
					PQclear(results[i]);
				*nresults = 0;
				drop_connection();
				return false;
			}
			if (!PQconsumeInput(st.conn))
			{
				set_error(what, PQerrorMessage(st.conn));
				for (int i = 0; i < *nresults; i++)
					PQclear(results[i]);
				*nresults = 0;
				drop_connection();
				return false;
			}
		}
		res = PQgetResult(st.conn);
		if (res == NULL)
			break;
		if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			if (ok)
			{
				result_error(what, res);
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
			for (int c = 0; c < PQnfields(res); c++)
				received_estimate += (size_t) PQgetlength(res, r, c) + 4;
		if (*nresults < kMaxResults)
			results[(*nresults)++] = res;
		else
			PQclear(res);
	}
	count_traffic(sent_estimate, received_estimate);
	if (PQstatus(st.conn) == CONNECTION_BAD)
	{
		if (ok)
			set_error(what, PQerrorMessage(st.conn));
		ok = false;
	}
	if (!ok)
	{
		/*
		 * A new session for the next request: this one may carry what made
		 * the error (a server turned read-only, a database's settings since
		 * changed), and libpq's host list finds the writable server again.
		 */
		drop_connection();
		for (int i = 0; i < *nresults; i++)
			PQclear(results[i]);
		*nresults = 0;
	}
	return ok;
}

void
clear(PGresult **results, int n)
{
	for (int i = 0; i < n; i++)
		PQclear(results[i]);
}

/* Notes the registry's clock: now() there (Unix ms) was read between sent and answered. */
void
note_clock(const char *now_text, int64_t sent_wall, int64_t answered_wall)
{
	char	   *end;
	long long	now;

	if (now_text == NULL)
		return;
	errno = 0;
	now = strtoll(now_text, &end, 10);
	if (end == now_text || *end != '\0' || errno != 0)
		return;
	/* now() truncated to the ms: the registry's clock read [now, now + 1) */
	st.sample_lo_ms = sent_wall - ((int64_t) now + 1);
	st.sample_hi_ms = answered_wall - (int64_t) now;
	st.sample_new = true;
}

/*
 * Two columns for an answer: the registry's walsenders (its standbys: all
 * any role sees of pg_stat_replication) and whether its commits wait for a
 * synchronous one.
 */
#define REPLICATION_COLUMNS \
	" (SELECT count(*) FROM pg_catalog.pg_stat_replication)," \
	" current_setting('synchronous_standby_names') <> ''" \
	" AND current_setting('synchronous_commit') NOT IN ('off', 'local')"

/* Notes how the registry replicates, from REPLICATION_COLUMNS at col. */
void
note_replication(const PGresult *res, int col)
{
	if (PQnfields(res) < col + 2 || PQgetisnull(res, 0, col) || PQgetisnull(res, 0, col + 1))
		return;
	if (strcmp(PQgetvalue(res, 0, col), "0") == 0)
		st.replication = "no standby";
	else if (strcmp(PQgetvalue(res, 0, col + 1), "t") == 0)
		st.replication = "synchronous";
	else
		st.replication = "asynchronous";
}

/* How far past its deadline a holder's marks reach: the lead and lease.cpp's 1 s margin. */
long
mark_lead_ms()
{
	return (st.lead_ms ? *st.lead_ms : 1000) + 1000;
}

/* Reads the shipped schema script into a malloc'd string; NULL with st.error. */
char *
read_script()
{
	FILE	   *f = fopen(st.script, "r");
	char	   *buf;
	long		len;

	if (f == NULL)
	{
		char		msg[600];

		snprintf(msg, sizeof(msg), "could not open %.400s: %.100s", st.script, strerror(errno));
		set_error("creating the registry's schema", msg);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || len > 1024 * 1024 ||
		fseek(f, 0, SEEK_SET) != 0 || (buf = (char *) malloc((size_t) len + 1)) == NULL)
	{
		fclose(f);
		set_error("creating the registry's schema", "could not read the schema script");
		return NULL;
	}
	if (fread(buf, 1, (size_t) len, f) != (size_t) len)
	{
		free(buf);
		fclose(f);
		set_error("creating the registry's schema", "could not read the schema script");
		return NULL;
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/*
 * The registry's tables: true when they are there, of our version.  Missing
 * ones are made with the shipped script if this role may (the script takes
 * an advisory lock and creates only what is missing, so servers starting
 * together make them once); tables of another version are refused.
 */
bool
check_schema(int64_t deadline)
{
	PGresult   *r[kMaxResults];
	int			n;
	char		sqlstate[6];
	char		msg[900];

	for (int attempt = 0; attempt < 2; attempt++)
	{
		const char *missing = NULL;

		if (!run("checking the registry's tables",
				 "SELECT to_regclass('" SF_PG_SCHEMA ".schema_version') IS NOT NULL,"
				 " to_regclass('" SF_PG_SCHEMA ".claims') IS NOT NULL,"
				 " to_regclass('" SF_PG_SCHEMA ".shards') IS NOT NULL,"
				 " to_regclass('" SF_PG_SCHEMA ".epochs') IS NOT NULL"
				 "  AND (SELECT count(*) FROM pg_catalog.pg_trigger"
				 "   WHERE tgrelid = to_regclass('" SF_PG_SCHEMA ".claims')"
				 "    AND tgname IN ('claims_guard_insert', 'claims_guard_expire')) = 2",
				 -1, NULL, r, &n, deadline))
			return false;
		if (n != 1 || PQntuples(r[0]) != 1 || PQnfields(r[0]) != 4)
		{
			clear(r, n);
			set_error("checking the registry's tables", "unexpected answer");
			return false;
		}
		if (strcmp(PQgetvalue(r[0], 0, 0), "t") == 0)
		{
			PGresult   *v[kMaxResults];
			int			nv;
			long		version = -1;

			if (!run("reading the registry's schema version",
					 "SELECT version FROM " SF_PG_SCHEMA ".schema_version", -1, NULL, v, &nv,
					 deadline))
			{
				clear(r, n);
				return false;
			}
			if (nv == 1 && PQntuples(v[0]) == 1 && !PQgetisnull(v[0], 0, 0))
				version = strtol(PQgetvalue(v[0], 0, 0), NULL, 10);
			clear(v, nv);
			if (version != SF_PG_SCHEMA_VERSION)
			{
				clear(r, n);
				snprintf(msg, sizeof(msg), "the registry's tables (schema " SF_PG_SCHEMA ") are "
						 "version %ld, this server needs version %d: give servers of this version "
						 "a registry database of their own, or upgrade them all", version,
						 SF_PG_SCHEMA_VERSION);
				snprintf(st.error, sizeof(st.error), "%.200s: %.700s", st.endpoint, msg);
				return false;
			}
		}
		else
			missing = SF_PG_SCHEMA ".schema_version";
		if (strcmp(PQgetvalue(r[0], 0, 1), "t") != 0)
			missing = SF_PG_SCHEMA ".claims";
		else if (strcmp(PQgetvalue(r[0], 0, 2), "t") != 0)
			missing = SF_PG_SCHEMA ".shards";
		else if (strcmp(PQgetvalue(r[0], 0, 3), "t") != 0)
			missing = SF_PG_SCHEMA ".epochs and its triggers (new in 1.3)";
		clear(r, n);
		if (missing == NULL)
			return true;
		if (attempt > 0)
		{
			set_error("checking the registry's tables", "the schema script did not make them");
			return false;
		}

		char	   *script = read_script();
		bool		made;
		char		user[64];

		if (script == NULL)
			return false;
		snprintf(user, sizeof(user), "%s", PQuser(st.conn));
		made = run("creating the registry's tables", script, -1, NULL, r, &n, deadline,
				   sqlstate);
		free(script);
		clear(r, n);
		if (!made)
		{
			if (strcmp(sqlstate, "42501") == 0 || strcmp(sqlstate, "25006") == 0)
				snprintf(st.error, sizeof(st.error), "%.200s: the registry database lacks %s and "
						 "role \"%.64s\" may not create it (%s): run %.400s there as a role that may, "
						 "then grant this role what the operations guide lists", st.endpoint,
						 missing, user,
						 strcmp(sqlstate, "25006") == 0 ? "the server is read-only" :
						 "permission denied", st.script);
			drop_connection();
			return false;
		}
	}
	return false;
}

/* Connects (if need be) and sets the session up; false with st.error. */
bool
ensure_connected(int64_t deadline)
{
	static const char *const keywords[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {st.target, "snowflake registry worker", NULL};
	PGresult   *r[kMaxResults];
	int			n;
	char		setup[256];

	if (st.conn && st.ready)
		return true;
	if (st.conn == NULL)
	{
		st.endpoint[0] = '\0';
		st.requests++;			/* a connection attempt is a request too */
		st.conn = PQconnectStartParams(keywords, values, 1);
		if (st.conn == NULL)
		{
			set_error("connecting", "out of memory");
			return false;
		}
		if (PQstatus(st.conn) == CONNECTION_BAD)
		{
			set_error("connecting", PQerrorMessage(st.conn));
			drop_connection();
			return false;
		}
		PQsetNoticeProcessor(st.conn, ignore_notice, NULL);
		st.sent_ns = mono_ns();
		/* as libpq's manual says: first as if PQconnectPoll had asked to write */
		for (PostgresPollingStatusType s = PGRES_POLLING_WRITING;;)
		{
			if (!wait_socket(s == PGRES_POLLING_WRITING, deadline))
			{
				char		msg[64];

				snprintf(msg, sizeof(msg), "no connection within %ld ms", (long) st.timeout_ms);
				set_error("connecting", msg);
				drop_connection();
				return false;
			}
			s = PQconnectPoll(st.conn);
			if (s == PGRES_POLLING_OK)
				break;
			if (s == PGRES_POLLING_FAILED)
			{
				set_error("connecting", PQerrorMessage(st.conn));
				drop_connection();
				return false;
			}
		}
		if (PQsetnonblocking(st.conn, 1) != 0)
		{
			set_error("connecting", PQerrorMessage(st.conn));
			drop_connection();
			return false;
		}
		snprintf(st.endpoint, sizeof(st.endpoint), "%s:%s/%s", PQhost(st.conn),
				 PQport(st.conn), PQdb(st.conn));
	}
	/* our names schema-qualified, operators and functions from pg_catalog only */
	snprintf(setup, sizeof(setup),
			 "SET search_path = pg_catalog, pg_temp; SET statement_timeout = %ld; "
			 "SET client_min_messages = warning", (long) st.timeout_ms);
	if (!run("setting up the session", setup, -1, NULL, r, &n, deadline))
		return false;
	clear(r, n);
	if (!check_schema(deadline))
		return false;
	st.ready = true;
	return true;
}

/* Connects if need be, then runs one statement with params. */
bool
request(const char *what, const char *sql, int nparams, const char *const *params,
		PGresult **results, int *nresults)
{
	int64_t		deadline = request_deadline();

	*nresults = 0;
	if (deadline <= mono_ns())
	{
		set_error(what, "no time left before the lease deadline");
		return false;
	}
	if (!ensure_connected(deadline))
		return false;
	return run(what, sql, nparams, params, results, nresults, deadline);
}

/* The datacenter and worker of a shard. */
void
split(int64_t shard, char *dc, char *worker)
{
	snprintf(dc, 24, "%lld", (long long) (shard >> st.worker_bits));
	snprintf(worker, 24, "%lld",
			 (long long) (shard & ((INT64_C(1) << st.worker_bits) - 1)));
}

/*---- the interface ----*/

bool
p_open(const SfBackendConfig *config, char *err, size_t errlen)
{
	memset(&st, 0, sizeof(st));
	st.target = config->target;
	snprintf(st.prefix, sizeof(st.prefix), "%s", config->prefix);
	st.datacenter = config->datacenter;
	st.worker_bits = config->worker_bits;
	st.timeout_ms = config->timeout_ms;
	snprintf(st.script, sizeof(st.script), "%s", config->schema_script ? config->schema_script : "");
	snprintf(st.host, sizeof(st.host), "%s", config->host);
	st.pid = config->pid;
	st.lead_ms = config->max_clock_lead_ms;
	if (!sf_pg_target_check(st.target, err, errlen))
		return false;
	return true;
}

void
p_close(void)
{
	drop_connection();
}

const char *
p_endpoint(void)
{
	return st.conn ? st.endpoint : "";
}

const char *
p_error(void)
{
	return st.error;
}

void
p_traffic(uint64_t *requests, uint64_t *sent, uint64_t *received)
{
	*requests = st.requests;
	*sent = st.bytes_sent;
	*received = st.bytes_received;
}

void
p_describe_mark(int64_t shard, char *buf, size_t buflen)
{
	char		dc[24], worker[24];

	split(shard, dc, worker);
	snprintf(buf, buflen, "(mark_ms of " SF_PG_SCHEMA ".shards, id_space '%s', datacenter %s, "
			 "worker %s)", st.prefix, dc, worker);
}

int64_t
p_sent_ns(void)
{
	return st.sent_ns;
}

bool
p_clock_sample(int64_t *lo_ms, int64_t *hi_ms)
{
	if (!st.sample_new)
		return false;
	st.sample_new = false;
	*lo_ms = st.sample_lo_ms;
	*hi_ms = st.sample_hi_ms;
	return true;
}

void
p_set_budget(int64_t budget_ns)
{
	st.budget_ns = budget_ns;
}

/* A lease is a random 63-bit token of ours: nothing to ask the registry. */
SfBackendResult
p_grant(int64_t ttl_s, int64_t *lease, int64_t *granted_ttl)
{
	uint64_t	v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v))
	{
		set_error("drawing a lease", strerror(errno));
		return SF_BACKEND_FAILED;
	}
	v &= INT64_MAX;
	*lease = v == 0 ? 1 : (int64_t) v;
	*granted_ttl = ttl_s;
	st.ttl_s = ttl_s;
	st.sent_ns = mono_ns();
	return SF_BACKEND_OK;
}

/*
 * The heartbeat: last_heartbeat = now() there and the holder's clock, for
 * the active row under lease, if it has not expired by the registry's clock.
 * One that has is marked expired, and the lease is gone.  A lease no claim
 * was ever made under has nothing to renew.
 */
SfBackendResult
p_renew(int64_t lease, int64_t *ttl)
{
	static const char *sql =
		"WITH renewed AS ("
		" UPDATE " SF_PG_SCHEMA ".claims SET last_heartbeat = now(),"
		"  holder_clock = to_timestamp($2::float8 / 1000), lead_ms = $3"
		" WHERE lease = $1 AND status = 'active'"
		"  AND last_heartbeat + lease_ttl_s * interval '1 second' > now()"
		" RETURNING lease_ttl_s),"
		" lapsed AS ("
		" UPDATE " SF_PG_SCHEMA ".claims SET status = 'expired',"
		"  released_at = last_heartbeat + lease_ttl_s * interval '1 second'"
		" WHERE lease = $1 AND status = 'active'"
		"  AND last_heartbeat + lease_ttl_s * interval '1 second' <= now()"
		" RETURNING 1)"
		" SELECT (SELECT max(lease_ttl_s) FROM renewed), (SELECT count(*) FROM lapsed),"
		" (extract(epoch FROM now()) * 1000)::bigint," REPLICATION_COLUMNS;
	char		l[24], clock[24], lead[24];
	const char *params[3] = {l, clock, lead};
	PGresult   *r[kMaxResults];
	int			n;
	int64_t		sent_wall = wall_ms();

	snprintf(l, sizeof(l), "%lld", (long long) lease);
	snprintf(clock, sizeof(clock), "%lld", (long long) sent_wall);
	snprintf(lead, sizeof(lead), "%ld", mark_lead_ms());
	if (!request("renewing the lease", sql, 3, params, r, &n))
		return SF_BACKEND_FAILED;
	if (n != 1 || PQntuples(r[0]) != 1)
	{
		clear(r, n);
		set_error("renewing the lease", "unexpected answer");
		return SF_BACKEND_FAILED;
	}
	note_clock(PQgetvalue(r[0], 0, 2), sent_wall, wall_ms());
	note_replication(r[0], 3);
	if (!PQgetisnull(r[0], 0, 0))
	{
		*ttl = strtoll(PQgetvalue(r[0], 0, 0), NULL, 10);
		clear(r, n);
		return *ttl > 0 ? SF_BACKEND_OK : SF_BACKEND_NOT_FOUND;
	}
	if (strcmp(PQgetvalue(r[0], 0, 1), "0") != 0 || st.claimed_lease == lease)
	{
		char		msg[128];

		clear(r, n);
		snprintf(msg, sizeof(msg), "lease %" PRIx64 " has expired or its claim was released",
				 (uint64_t) lease);
		set_error("renewing the lease", msg);
		*ttl = 0;
		return SF_BACKEND_NOT_FOUND;
	}
	clear(r, n);
	*ttl = st.ttl_s;
	return SF_BACKEND_OK;
}

SfBackendResult
p_revoke(int64_t lease)
{
	static const char *sql =
		"UPDATE " SF_PG_SCHEMA ".claims SET"
		" status = CASE WHEN last_heartbeat + lease_ttl_s * interval '1 second' > now()"
		"  THEN 'released' ELSE 'expired' END,"
		" released_at = least(now(), last_heartbeat + lease_ttl_s * interval '1 second')"
		" WHERE lease = $1 AND status = 'active'";
	char		l[24];
	const char *params[1] = {l};
	PGresult   *r[kMaxResults];
	int			n;

	snprintf(l, sizeof(l), "%lld", (long long) lease);
	if (!request("releasing the lease", sql, 1, params, r, &n))
		return SF_BACKEND_FAILED;
	clear(r, n);
	if (st.claimed_lease == lease)
		st.claimed_lease = 0;
	return SF_BACKEND_OK;
}

SfBackendResult
p_list_held(void (*fn) (void *arg, int64_t shard), void *arg)
{
	static const char *sql =
		"SELECT (extract(epoch FROM now()) * 1000)::bigint,"
		" array_to_string(ARRAY(SELECT worker FROM " SF_PG_SCHEMA ".claims"
		"  WHERE id_space = $1 AND datacenter = $2 AND status = 'active'"
		"   AND last_heartbeat + lease_ttl_s * interval '1 second' > now()), ',')," REPLICATION_COLUMNS;
	char		dc[24];
	const char *params[2] = {st.prefix, dc};
	PGresult   *r[kMaxResults];
	int			n;
	int64_t		sent_wall = wall_ms();
	const char *p;

	snprintf(dc, sizeof(dc), "%lld", (long long) st.datacenter);
	if (!request("listing the held shards", sql, 2, params, r, &n))
		return SF_BACKEND_FAILED;
	if (n != 1 || PQntuples(r[0]) != 1)
	{
		clear(r, n);
		set_error("listing the held shards", "unexpected answer");
		return SF_BACKEND_FAILED;
	}
	note_clock(PQgetvalue(r[0], 0, 0), sent_wall, wall_ms());
	note_replication(r[0], 2);
	p = PQgetvalue(r[0], 0, 1);
	while (*p)
	{
		char	   *end;
		long long	w = strtoll(p, &end, 10);

		if (end == p)
			break;
		if (w >= 0 && w < (INT64_C(1) << st.worker_bits))
			fn(arg, (st.datacenter << st.worker_bits) | w);
		p = *end == ',' ? end + 1 : end;
	}
	clear(r, n);
	return SF_BACKEND_OK;
}

/*
 * One transaction (a simple query of several statements): marks the shard's
 * active row expired if its lease ran out by the registry's clock, makes
 * sure the shard has a row for its mark, inserts this server's active row
 * unless another is active (the partial unique index decides), and reads the
 * active row and the mark.
 */
SfBackendResult
p_claim(int64_t shard, int64_t lease, const char *identity, SfClaim *out)
{
	char		dc[24], worker[24];
	char	   *space = NULL, *who = NULL, *host = NULL;
	char	   *sql;
	size_t		len;
	PGresult   *r[kMaxResults];
	int			n;
	int64_t		deadline = request_deadline();
	int64_t		sent_wall;
	bool		ok;

	memset(out, 0, sizeof(*out));
	split(shard, dc, worker);
	if (deadline <= mono_ns())
	{
		set_error("claiming a shard", "no time left before the lease deadline");
		return SF_BACKEND_FAILED;
	}
	if (!ensure_connected(deadline))
		return SF_BACKEND_FAILED;
	space = PQescapeLiteral(st.conn, st.prefix, strlen(st.prefix));
	who = PQescapeLiteral(st.conn, identity, strlen(identity));
	host = PQescapeLiteral(st.conn, st.host, strlen(st.host));
	if (space == NULL || who == NULL || host == NULL)
	{
		set_error("claiming a shard", PQerrorMessage(st.conn));
		PQfreemem(space);
		PQfreemem(who);
		PQfreemem(host);
		return SF_BACKEND_FAILED;
	}
	len = 4096 + 3 * strlen(space) + strlen(who) + strlen(host);
	sql = (char *) malloc(len);
	if (sql == NULL)
	{
		set_error("claiming a shard", "out of memory");
		PQfreemem(space);
		PQfreemem(who);
		PQfreemem(host);
		return SF_BACKEND_FAILED;
	}
	sent_wall = wall_ms();
	/*
	 * The triggers of claims (snowflake_registry.sql) skip the expiry and
	 * the insert while the registry's epoch pauses claims, and raise the
	 * shard's mark to the end of the pause; the last statement reads the
	 * epoch (made on first sight by the first of these to run).
	 */
	snprintf(sql, len,
			 "UPDATE " SF_PG_SCHEMA ".claims SET status = 'expired',"
			 " released_at = last_heartbeat + lease_ttl_s * interval '1 second'"
			 " WHERE id_space = %s AND datacenter = %s AND worker = %s AND status = 'active'"
			 " AND last_heartbeat + lease_ttl_s * interval '1 second' <= now();"
			 "INSERT INTO " SF_PG_SCHEMA ".shards (id_space, datacenter, worker)"
			 " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING;"
			 "INSERT INTO " SF_PG_SCHEMA ".claims (id_space, datacenter, worker, lease, holder,"
			 " host, pid, status, lease_ttl_s, allocated_at, last_heartbeat, holder_clock, lead_ms)"
			 " VALUES (%s, %s, %s, %lld, %s, %s, %d, 'active', %lld, now(), now(),"
			 " to_timestamp(%lld::float8 / 1000), %ld)"
			 " ON CONFLICT (id_space, datacenter, worker) WHERE status = 'active' DO NOTHING"
			 " RETURNING claim_id;"
			 "SELECT c.holder, c.lease, s.mark_ms::text, (extract(epoch FROM now()) * 1000)::bigint,"
			 " e.timeline, (extract(epoch FROM e.first_seen_at) * 1000)::bigint,"
			 " (extract(epoch FROM e.claims_from) * 1000)::bigint, e.claims_from > now(),"
			 " e.claims_from > e.first_seen_at"
			 " FROM " SF_PG_SCHEMA ".epoch() e, " SF_PG_SCHEMA ".shards s"
			 " LEFT JOIN " SF_PG_SCHEMA ".claims c"
			 " ON c.id_space = s.id_space AND c.datacenter = s.datacenter"
			 " AND c.worker = s.worker AND c.status = 'active'"
			 " WHERE s.id_space = %s AND s.datacenter = %s AND s.worker = %s",
			 space, dc, worker,
			 space, dc, worker,
			 space, dc, worker, (long long) lease, who, host, st.pid, (long long) st.ttl_s,
			 (long long) sent_wall, mark_lead_ms(),
			 space, dc, worker);
	PQfreemem(space);
	PQfreemem(who);
	PQfreemem(host);
	ok = run("claiming a shard", sql, -1, NULL, r, &n, deadline);
	free(sql);
	if (!ok)
		return SF_BACKEND_FAILED;
	if (n != 4 || PQntuples(r[3]) != 1 || PQnfields(r[3]) != 9)
	{
		clear(r, n);
		set_error("claiming a shard", "unexpected answer");
		return SF_BACKEND_FAILED;
	}
	note_clock(PQgetvalue(r[3], 0, 3), sent_wall, wall_ms());
	out->created = PQntuples(r[2]) == 1;
	if (!PQgetisnull(r[3], 0, 0))
	{
		snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(r[3], 0, 0));
		out->holder_lease = strtoll(PQgetvalue(r[3], 0, 1), NULL, 10);
	}
	out->mark_found = !PQgetisnull(r[3], 0, 2);
	if (out->mark_found)
		snprintf(out->mark, sizeof(out->mark), "%s", PQgetvalue(r[3], 0, 2));
	if (!out->created && strcmp(PQgetvalue(r[3], 0, 7), "t") == 0)
	{
		out->timeline = strtoll(PQgetvalue(r[3], 0, 4), NULL, 10);
		out->failover_ms = strtoll(PQgetvalue(r[3], 0, 5), NULL, 10);
		out->paused_until_ms = strtoll(PQgetvalue(r[3], 0, 6), NULL, 10);
	}
	if (strcmp(PQgetvalue(r[3], 0, 8), "t") == 0)
		out->epoch_floor_ms = strtoll(PQgetvalue(r[3], 0, 6), NULL, 10);
	clear(r, n);
	if (out->created || out->holder_lease == lease)
		st.claimed_lease = lease;
	return SF_BACKEND_OK;
}

SfBackendResult
p_give_back(int64_t shard, int64_t lease, bool *done)
{
	static const char *sql =
		"UPDATE " SF_PG_SCHEMA ".claims SET status = 'released', released_at = now()"
		" WHERE id_space = $1 AND datacenter = $2 AND worker = $3 AND lease = $4"
		" AND status = 'active' RETURNING 1";
	char		dc[24], worker[24], l[24];
	const char *params[4] = {st.prefix, dc, worker, l};
	PGresult   *r[kMaxResults];
	int			n;

	split(shard, dc, worker);
	snprintf(l, sizeof(l), "%lld", (long long) lease);
	if (!request("giving a shard back", sql, 4, params, r, &n))
		return SF_BACKEND_FAILED;
	*done = n == 1 && PQntuples(r[0]) == 1;
	clear(r, n);
	if (st.claimed_lease == lease)
		st.claimed_lease = 0;
	return SF_BACKEND_OK;
}

/* The mark, in the claim's row and the shard's, only while the claim is active and in time. */
SfBackendResult
p_publish(int64_t shard, int64_t lease, int64_t mark_ms, bool *applied)
{
	static const char *sql =
		"WITH c AS ("
		" UPDATE " SF_PG_SCHEMA ".claims SET mark_ms = $5"
		" WHERE id_space = $1 AND datacenter = $2 AND worker = $3 AND lease = $4"
		"  AND status = 'active'"
		"  AND last_heartbeat + lease_ttl_s * interval '1 second' > now()"
		" RETURNING id_space, datacenter, worker)"
		" UPDATE " SF_PG_SCHEMA ".shards s SET mark_ms = $5 FROM c"
		" WHERE s.id_space = c.id_space AND s.datacenter = c.datacenter"
		" AND s.worker = c.worker RETURNING 1";
	char		dc[24], worker[24], l[24], m[24];
	const char *params[5] = {st.prefix, dc, worker, l, m};
	PGresult   *r[kMaxResults];
	int			n;

	split(shard, dc, worker);
	snprintf(l, sizeof(l), "%lld", (long long) lease);
	snprintf(m, sizeof(m), "%lld", (long long) mark_ms);
	if (!request("publishing the freshness mark", sql, 5, params, r, &n))
		return SF_BACKEND_FAILED;
	*applied = n == 1 && PQntuples(r[0]) == 1;
	clear(r, n);
	return SF_BACKEND_OK;
}

SfBackendResult
p_holder(int64_t shard, bool *found, int64_t *lease)
{
	static const char *sql =
		"SELECT lease FROM " SF_PG_SCHEMA ".claims"
		" WHERE id_space = $1 AND datacenter = $2 AND worker = $3 AND status = 'active'"
		" AND last_heartbeat + lease_ttl_s * interval '1 second' > now()";
	char		dc[24], worker[24];
	const char *params[3] = {st.prefix, dc, worker};
	PGresult   *r[kMaxResults];
	int			n;

	split(shard, dc, worker);
	if (!request("reading the shard's claim", sql, 3, params, r, &n))
		return SF_BACKEND_FAILED;
	*found = n == 1 && PQntuples(r[0]) == 1;
	*lease = *found ? strtoll(PQgetvalue(r[0], 0, 0), NULL, 10) : 0;
	clear(r, n);
	return SF_BACKEND_OK;
}

const char *
p_replication(void)
{
	return st.replication;
}

}								/* namespace */

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

const SfRegistryBackend sf_pg_backend = {
	"postgresql",
	p_open,
	p_close,
	p_endpoint,
	p_error,
	p_traffic,
	p_describe_mark,
	p_sent_ns,
	p_clock_sample,
	p_set_budget,
	p_grant,
	p_renew,
	p_revoke,
	p_list_held,
	p_claim,
	p_give_back,
	p_publish,
	p_holder,
	p_replication,
};
