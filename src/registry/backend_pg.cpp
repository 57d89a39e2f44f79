/*-------------------------------------------------------------------------
 *
 * backend_pg.cpp
 *		The registry backend on a PostgreSQL database (backend.hpp): the
 *		claims, renewals, marks and releases, as the SQL the registry runs,
 *		over the transport of pgconn.hpp.
 *
 * Tables, in the schema snowflake_registry of the registry database (the
 * shipped script extension/snowflake_registry.sql makes them; the worker runs it
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
 * The transport (the libpq connection, its deadlines, the notes taken from
 * each answer) is pgconn.cpp; this file is the SQL the registry runs.
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
#include <sys/random.h>

#include "registry/backend_pg.hpp"

namespace
{

using pgconn::Answer;
using pgconn::Notes;

/* What the operations keep; the connection is pg.*/
struct State
{
	pgconn::Conn pg;
	char		prefix[256];
	int64_t		datacenter;
	int			worker_bits;
	char		script[1024];
	char		host[128];
	int			pid;
	int64_t		ttl_s;			/* of the lease drawn last */
	int64_t		claimed_lease;	/* a claim was made under it (0: none) */
	const int  *lead_ms;		/* snowflake.max_clock_lead */
};

State		st;

void
set_error(const char *what, const char *msg)
{
	pgconn::set_error(&st.pg, what, msg);
}

/* How far past its deadline a holder's marks reach: the lead and lease.cpp's 1 s margin. */
long
mark_lead_ms()
{
	return (st.lead_ms ? *st.lead_ms : 1000) + 1000;
}

/*---- the registry's tables ----*/

/* Reads the shipped schema script into a malloc'd string; NULL with the error. */
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
 * Whether the tables present are of our version (schema_version is there);
 * false with the error when they are of another, or it could not be read.
 */
bool
check_version(int64_t deadline)
{
	Answer		v;
	long		version = -1;
	char		msg[900];

	if (!pgconn::run(&st.pg, "reading the registry's schema version",
					 "SELECT version FROM " SF_PG_SCHEMA ".schema_version", -1, NULL, &v, deadline))
		return false;
	if (v.count == 1 && PQntuples(v.res[0]) == 1 && !PQgetisnull(v.res[0], 0, 0))
		version = strtol(PQgetvalue(v.res[0], 0, 0), NULL, 10);
	pgconn::clear(&v);
	if (version == SF_PG_SCHEMA_VERSION)
		return true;
	snprintf(msg, sizeof(msg), "the registry's tables (schema " SF_PG_SCHEMA ") are "
			 "version %ld, this server needs version %d: give servers of this version "
			 "a registry database of their own, or upgrade them all", version,
			 SF_PG_SCHEMA_VERSION);
	snprintf(st.pg.error, sizeof(st.pg.error), "%.200s: %.700s", st.pg.endpoint, msg);
	return false;
}

/*
 * Looks for the registry's tables: *missing names the first one absent
 * (NULL: all there, of our version); false with the error when the answer
 * could not be had or the tables are of another version.
 */
bool
find_missing(int64_t deadline, const char **missing)
{
	Answer		a;
	const PGresult *r;

	*missing = NULL;
	if (!pgconn::run(&st.pg, "checking the registry's tables",
					 "SELECT to_regclass('" SF_PG_SCHEMA ".schema_version') IS NOT NULL,"
					 " to_regclass('" SF_PG_SCHEMA ".claims') IS NOT NULL,"
					 " to_regclass('" SF_PG_SCHEMA ".shards') IS NOT NULL,"
					 " to_regclass('" SF_PG_SCHEMA ".epochs') IS NOT NULL"
					 "  AND to_regclass('" SF_PG_SCHEMA ".limits') IS NOT NULL"
					 "  AND (SELECT count(*) FROM pg_catalog.pg_trigger"
					 "   WHERE tgrelid = to_regclass('" SF_PG_SCHEMA ".claims')"
					 "    AND tgname IN ('claims_guard_insert', 'claims_guard_expire',"
					 "                   'claims_limits')) = 3",
					 -1, NULL, &a, deadline))
		return false;
	if (a.count != 1 || PQntuples(a.res[0]) != 1 || PQnfields(a.res[0]) != 4)
	{
		pgconn::clear(&a);
		set_error("checking the registry's tables", "unexpected answer");
		return false;
	}
	r = a.res[0];
	if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
	{
		if (!check_version(deadline))
		{
			pgconn::clear(&a);
			return false;
		}
	}
	else
		*missing = SF_PG_SCHEMA ".schema_version";
	if (strcmp(PQgetvalue(r, 0, 1), "t") != 0)
		*missing = SF_PG_SCHEMA ".claims";
	else if (strcmp(PQgetvalue(r, 0, 2), "t") != 0)
		*missing = SF_PG_SCHEMA ".shards";
	else if (strcmp(PQgetvalue(r, 0, 3), "t") != 0)
		*missing = SF_PG_SCHEMA ".epochs, .limits and their triggers (new in 1.3)";
	pgconn::clear(&a);
	return true;
}

/*
 * Runs the shipped script, which takes an advisory lock and creates only
 * what is missing; false with the error (saying what to do when this role
 * may not), the session dropped.
 */
bool
create_tables(const char *missing, int64_t deadline)
{
	char	   *script = read_script();
	Answer		a;
	bool		made;
	char		user[64];
	char		sqlstate[6];

	if (script == NULL)
		return false;
	snprintf(user, sizeof(user), "%s", PQuser(st.pg.conn));
	made = pgconn::run(&st.pg, "creating the registry's tables", script, -1, NULL, &a, deadline,
					   sqlstate);
	free(script);
	pgconn::clear(&a);
	if (made)
		return true;
	if (strcmp(sqlstate, "42501") == 0 || strcmp(sqlstate, "25006") == 0)
		snprintf(st.pg.error, sizeof(st.pg.error), "%.200s: the registry database lacks %s and "
				 "role \"%.64s\" may not create it (%s): run %.400s there as a role that may, "
				 "then grant this role what the operations guide lists", st.pg.endpoint,
				 missing, user,
				 strcmp(sqlstate, "25006") == 0 ? "the server is read-only" :
				 "permission denied", st.script);
	pgconn::drop(&st.pg);
	return false;
}

/*
 * The registry's tables, checked on each new session: true when they are
 * there, of our version.  Missing ones are made with the shipped script if
 * this role may (servers starting together make them once); tables of
 * another version are refused.
 */
bool
check_schema(pgconn::Conn *, int64_t deadline)
{
	for (int attempt = 0; attempt < 2; attempt++)
	{
		const char *missing;

		if (!find_missing(deadline, &missing))
			return false;
		if (missing == NULL)
			return true;
		if (attempt > 0)
		{
			set_error("checking the registry's tables", "the schema script did not make them");
			return false;
		}
		if (!create_tables(missing, deadline))
			return false;
	}
	return false;
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
	snprintf(st.prefix, sizeof(st.prefix), "%s", config->prefix);
	st.datacenter = config->datacenter;
	st.worker_bits = config->worker_bits;
	snprintf(st.script, sizeof(st.script), "%s", config->schema_script ? config->schema_script : "");
	snprintf(st.host, sizeof(st.host), "%s", config->host);
	st.pid = config->pid;
	st.lead_ms = config->max_clock_lead_ms;
	return pgconn::open(&st.pg, config->target, config->timeout_ms, check_schema, err, errlen);
}

void
p_close(void)
{
	pgconn::drop(&st.pg);
}

const char *
p_endpoint(void)
{
	return st.pg.conn ? st.pg.endpoint : "";
}

const char *
p_error(void)
{
	return st.pg.error;
}

void
p_traffic(uint64_t *requests, uint64_t *sent, uint64_t *received)
{
	*requests = st.pg.requests;
	*sent = st.pg.bytes_sent;
	*received = st.pg.bytes_received;
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
	return st.pg.sent_ns;
}

bool
p_clock_sample(int64_t *lo_ms, int64_t *hi_ms)
{
	if (!st.pg.sample_new)
		return false;
	st.pg.sample_new = false;
	*lo_ms = st.pg.sample_lo_ms;
	*hi_ms = st.pg.sample_hi_ms;
	return true;
}

void
p_set_budget(int64_t budget_ns)
{
	st.pg.budget_ns = budget_ns;
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
	st.pg.sent_ns = pgconn::mono_ns();
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
		" (extract(epoch FROM now()) * 1000)::bigint," SF_PG_REPLICATION_COLUMNS;
	char		l[24], clock[24], lead[24];
	const char *params[3] = {l, clock, lead};
	Answer		a;
	int64_t		sent_wall = pgconn::wall_ms();
	const PGresult *row;

	snprintf(l, sizeof(l), "%lld", (long long) lease);
	snprintf(clock, sizeof(clock), "%lld", (long long) sent_wall);
	snprintf(lead, sizeof(lead), "%ld", mark_lead_ms());
	if (!pgconn::request_row(&st.pg, "renewing the lease", sql, 3, params, Notes{2, 3},
							 sent_wall, &a))
		return SF_BACKEND_FAILED;
	row = a.res[0];
	if (!PQgetisnull(row, 0, 0))
	{
		*ttl = strtoll(PQgetvalue(row, 0, 0), NULL, 10);
		pgconn::clear(&a);
		return *ttl > 0 ? SF_BACKEND_OK : SF_BACKEND_NOT_FOUND;
	}
	if (strcmp(PQgetvalue(row, 0, 1), "0") != 0 || st.claimed_lease == lease)
	{
		char		msg[128];

		pgconn::clear(&a);
		snprintf(msg, sizeof(msg), "lease %" PRIx64 " has expired or its claim was released",
				 (uint64_t) lease);
		set_error("renewing the lease", msg);
		*ttl = 0;
		return SF_BACKEND_NOT_FOUND;
	}
	pgconn::clear(&a);
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
	Answer		a;

	snprintf(l, sizeof(l), "%lld", (long long) lease);
	if (!pgconn::request(&st.pg, "releasing the lease", sql, 1, params, &a))
		return SF_BACKEND_FAILED;
	pgconn::clear(&a);
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
		"   AND last_heartbeat + lease_ttl_s * interval '1 second' > now()), ','),"
		SF_PG_REPLICATION_COLUMNS;
	char		dc[24];
	const char *params[2] = {st.prefix, dc};
	Answer		a;
	int64_t		sent_wall = pgconn::wall_ms();
	const char *p;

	snprintf(dc, sizeof(dc), "%lld", (long long) st.datacenter);
	if (!pgconn::request_row(&st.pg, "listing the held shards", sql, 2, params, Notes{0, 2},
							 sent_wall, &a))
		return SF_BACKEND_FAILED;
	p = PQgetvalue(a.res[0], 0, 1);
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
	pgconn::clear(&a);
	return SF_BACKEND_OK;
}

/*
 * The claim's transaction as one simple query of four statements, in a
 * malloc'd string (NULL with the error); *sent_wall the holder's clock it
 * carries.  The triggers of claims (snowflake_registry.sql) skip the expiry
 * and the insert while the registry's epoch pauses claims, and raise the
 * shard's mark to the end of the pause; the last statement reads the epoch
 * (made on first sight by the first of these to run).
 */
char *
claim_sql(int64_t shard, int64_t lease, const char *identity, int64_t *sent_wall)
{
	char		dc[24], worker[24];
	char	   *space = PQescapeLiteral(st.pg.conn, st.prefix, strlen(st.prefix));
	char	   *who = PQescapeLiteral(st.pg.conn, identity, strlen(identity));
	char	   *host = PQescapeLiteral(st.pg.conn, st.host, strlen(st.host));
	char	   *sql = NULL;
	size_t		len;

	split(shard, dc, worker);
	if (space == NULL || who == NULL || host == NULL)
		set_error("claiming a shard", PQerrorMessage(st.pg.conn));
	else if ((sql = (char *) malloc(len = 4096 + 3 * strlen(space) + strlen(who) + strlen(host)))
			 == NULL)
		set_error("claiming a shard", "out of memory");
	else
	{
		*sent_wall = pgconn::wall_ms();
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
				 " e.claims_from > e.first_seen_at," SF_PG_REPLICATION_COLUMNS
				 " FROM " SF_PG_SCHEMA ".epoch() e, " SF_PG_SCHEMA ".shards s"
				 " LEFT JOIN " SF_PG_SCHEMA ".claims c"
				 " ON c.id_space = s.id_space AND c.datacenter = s.datacenter"
				 " AND c.worker = s.worker AND c.status = 'active'"
				 " WHERE s.id_space = %s AND s.datacenter = %s AND s.worker = %s",
				 space, dc, worker,
				 space, dc, worker,
				 space, dc, worker, (long long) lease, who, host, st.pid, (long long) st.ttl_s,
				 (long long) *sent_wall, mark_lead_ms(),
				 space, dc, worker);
	}
	PQfreemem(space);
	PQfreemem(who);
	PQfreemem(host);
	return sql;
}

/* What the claim's last statement read (row), into *out. */
void
read_claim(const PGresult *row, bool created, SfClaim *out)
{
	out->created = created;
	if (!PQgetisnull(row, 0, 0))
	{
		snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(row, 0, 0));
		out->holder_lease = strtoll(PQgetvalue(row, 0, 1), NULL, 10);
	}
	out->mark_found = !PQgetisnull(row, 0, 2);
	if (out->mark_found)
		snprintf(out->mark, sizeof(out->mark), "%s", PQgetvalue(row, 0, 2));
	if (!out->created && strcmp(PQgetvalue(row, 0, 7), "t") == 0)
	{
		out->timeline = strtoll(PQgetvalue(row, 0, 4), NULL, 10);
		out->failover_ms = strtoll(PQgetvalue(row, 0, 5), NULL, 10);
		out->paused_until_ms = strtoll(PQgetvalue(row, 0, 6), NULL, 10);
	}
	if (strcmp(PQgetvalue(row, 0, 8), "t") == 0)
		out->epoch_floor_ms = strtoll(PQgetvalue(row, 0, 6), NULL, 10);
}

/*
 * One transaction (claim_sql): marks the shard's active row expired if its
 * lease ran out by the registry's clock, makes sure the shard has a row for
 * its mark, inserts this server's active row unless another is active (the
 * partial unique index decides), and reads the active row and the mark.
 */
SfBackendResult
p_claim(int64_t shard, int64_t lease, const char *identity, SfClaim *out)
{
	char	   *sql;
	Answer		a;
	int64_t		deadline;
	int64_t		sent_wall = 0;
	bool		ok;

	memset(out, 0, sizeof(*out));
	if (!pgconn::begin(&st.pg, "claiming a shard", &deadline))
		return SF_BACKEND_FAILED;
	sql = claim_sql(shard, lease, identity, &sent_wall);
	if (sql == NULL)
		return SF_BACKEND_FAILED;
	ok = pgconn::run(&st.pg, "claiming a shard", sql, -1, NULL, &a, deadline);
	free(sql);
	if (!ok || !pgconn::one_row(&st.pg, "claiming a shard", &a, 4, 13, Notes{3, 9}, sent_wall))
		return SF_BACKEND_FAILED;
	read_claim(a.res[3], PQntuples(a.res[2]) == 1, out);
	pgconn::clear(&a);
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
	Answer		a;

	split(shard, dc, worker);
	snprintf(l, sizeof(l), "%lld", (long long) lease);
	if (!pgconn::request(&st.pg, "giving a shard back", sql, 4, params, &a))
		return SF_BACKEND_FAILED;
	*done = a.count == 1 && PQntuples(a.res[0]) == 1;
	pgconn::clear(&a);
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
		" AND s.worker = c.worker RETURNING 1," SF_PG_DURABILITY_COLUMNS;
	char		dc[24], worker[24], l[24], m[24];
	const char *params[5] = {st.prefix, dc, worker, l, m};
	Answer		a;

	split(shard, dc, worker);
	snprintf(l, sizeof(l), "%lld", (long long) lease);
	snprintf(m, sizeof(m), "%lld", (long long) mark_ms);
	if (!pgconn::request(&st.pg, "publishing the freshness mark", sql, 5, params, &a))
		return SF_BACKEND_FAILED;
	*applied = a.count == 1 && PQntuples(a.res[0]) == 1;
	/* a mark the registry may lose in a crash is no mark */
	if (*applied && !pgconn::one_row(&st.pg, "publishing the freshness mark", &a, 1, 3,
									 Notes{-1, -1, 1}, 0))
		return SF_BACKEND_FAILED;
	pgconn::clear(&a);
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
	Answer		a;

	split(shard, dc, worker);
	if (!pgconn::request(&st.pg, "reading the shard's claim", sql, 3, params, &a))
		return SF_BACKEND_FAILED;
	*found = a.count == 1 && PQntuples(a.res[0]) == 1;
	*lease = *found ? strtoll(PQgetvalue(a.res[0], 0, 0), NULL, 10) : 0;
	pgconn::clear(&a);
	return SF_BACKEND_OK;
}

const char *
p_replication(void)
{
	return st.pg.replication;
}

bool
p_refused(void)
{
	return st.pg.refused;
}

}								/* namespace */

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
	p_refused,
};
