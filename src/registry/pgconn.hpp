/*-------------------------------------------------------------------------
 *
 * pgconn.hpp
 *		The PostgreSQL registry's transport (as etcd.hpp is etcd's): a libpq
 *		connection to the registry's servers, made and used without ever
 *		blocking past a deadline, and the one request helper the registry's
 *		operations (backend_pg.cpp) run their SQL through.  Also what the
 *		settings and the view need of a libpq connection string: which
 *		backend it names, its check, and a form to show with no password.
 *
 * Every request is bounded: the connection is made with PQconnectStart and
 * PQconnectPoll, queries sent with PQsendQuery(Params), and the socket polled
 * with the time left (the request timeout, cut to the budget); on timeout the
 * connection is dropped (the server's statement_timeout, set to the same
 * timeout, ends whatever it still runs) and the next request connects again.
 * Which server of a multi-host string answers is libpq's choice
 * (target_session_attrs); a failed request drops the session, so the next
 * one finds the writable server again.
 *
 * Nothing here includes postgres.h, throws or raises an error: a failure is
 * false with Conn::error saying why.  Only the registry worker uses a Conn.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PGCONN_HPP
#define SNOWFLAKE_PGCONN_HPP

#include <cstddef>
#include <cstdint>

#include <libpq-fe.h>

/*
 * Whether target is meant for the PostgreSQL registry: a postgresql:// or
 * postgres:// URI, or a key=value connection string.
 */
bool		sf_pg_target_is(const char *target);

/* Checks a connection string with libpq's parser; false with err (no password in it). */
bool		sf_pg_target_check(const char *target, char *err, size_t errlen);

/* Whether a connection string holds a password (a keyword, or a URI's user:password@). */
bool		sf_pg_target_has_password(const char *target);

/* The connection string as key=value pairs, passwords masked. */
void		sf_pg_target_display(const char *target, char *buf, size_t buflen);

/*
 * Two columns an answer may carry after others (SF_PG_REPLICATION_COLUMNS,
 * or alone for Notes.durability_col): the settings the statement ran under
 * that decide whether its commit survives a crash of the registry's server,
 * fsync and synchronous_commit.  An answer under fsync = off is refused (the
 * registry is), one under synchronous_commit = off or local too (the session
 * lost the setting pgconn gives it: the next request makes a new one).
 */
#define SF_PG_DURABILITY_COLUMNS \
	" current_setting('fsync'), current_setting('synchronous_commit')"

/*
 * Four columns an answer may carry for Notes.replication_col: the
 * registry's walsenders (its standbys: all any role sees of
 * pg_stat_replication), whether its commits wait for a synchronous one, and
 * SF_PG_DURABILITY_COLUMNS.
 */
#define SF_PG_REPLICATION_COLUMNS \
	" (SELECT count(*) FROM pg_catalog.pg_stat_replication)," \
	" current_setting('synchronous_standby_names') <> ''" \
	" AND current_setting('synchronous_commit') NOT IN ('off', 'local')," \
	SF_PG_DURABILITY_COLUMNS

namespace pgconn
{

/* At most this many results per request (the claim sends four statements). */
constexpr int kMaxResults = 8;

/* The results of one request, in the order of its statements. */
struct Answer
{
	PGresult   *res[kMaxResults];
	int			count;
};

/* Frees an answer's results (count becomes 0). */
void clear(Answer *a) noexcept;

struct Conn;

/*
 * Called on each new session once it is set up (search_path,
 * statement_timeout), before its first request: the registry's tables are
 * checked there; false (with Conn::error) drops the session.
 */
typedef bool (*SessionCheck) (Conn *c, int64_t deadline);

struct Conn
{
	PGconn	   *conn;
	bool		ready;			/* connected, session set, on_session passed */
	const char *target;			/* the connection string (snowflake.registry) */
	long		timeout_ms;		/* of each request */
	SessionCheck on_session;
	int64_t		sent_ns;		/* CLOCK_MONOTONIC just before the last request */
	int64_t		budget_ns;		/* no request starts or goes on past it (0: none) */
	char		error[1024];	/* why the last call failed */
	char		endpoint[256];	/* host:port/dbname of the session */
	uint64_t	requests;
	uint64_t	bytes_sent;
	uint64_t	bytes_received;
	uint64_t	counted_sent;	/* of the current socket, by TCP_INFO */
	uint64_t	counted_received;
	const char *replication;	/* as the last answer showed, NULL: unknown */
	/*
	 * The last failure was a refusal of the registry's settings (it cannot
	 * keep a commit: fsync = off), not a failure to reach it.
	 */
	bool		refused;
	/*
	 * The registry's clock from the last answer that carried it: this
	 * server's wall clock minus the registry's lay within [sample_lo_ms,
	 * sample_hi_ms]; sample_new until taken.
	 */
	bool		sample_new;
	int64_t		sample_lo_ms;
	int64_t		sample_hi_ms;
};

/* Which columns of a one-row answer carry the notes (-1: none). */
struct Notes
{
	int			clock_col;		/* the registry's now(), Unix ms */
	int			replication_col;	/* SF_PG_REPLICATION_COLUMNS */
	int			durability_col = -1;	/* SF_PG_DURABILITY_COLUMNS alone */
};

/* CLOCK_MONOTONIC in ns, CLOCK_REALTIME in ms. */
int64_t		mono_ns() noexcept;
int64_t		wall_ms() noexcept;

/* Sets a connection up (no request yet); false with err when target does not parse. */
bool		open(Conn *c, const char *target, long timeout_ms, SessionCheck on_session,
				 char *err, size_t errlen) noexcept;

/* Closes the session (counting its traffic); the next request connects again. */
void		drop(Conn *c) noexcept;

/* error = "endpoint: what: msg", on one line (msg may be libpq's, or NULL). */
void		set_error(Conn *c, const char *what, const char *msg) noexcept;

/*
 * Starts a request: its deadline (the timeout, cut to the budget) and a
 * session ready for it; false with error when there is no time left or no
 * session.
 */
bool		begin(Conn *c, const char *what, int64_t *deadline) noexcept;

/*
 * Sends sql (with params when nparams >= 0, else as a simple query that may
 * hold several statements, one transaction) on the session and collects its
 * results into *a; false on any failure (error says why, *sqlstate the
 * error's or ""), the session then dropped and *a empty.
 */
bool		run(Conn *c, const char *what, const char *sql, int nparams,
				const char *const *params, Answer *a, int64_t deadline,
				char *sqlstate = nullptr) noexcept;

/*
 * Whether the row's SF_PG_DURABILITY_COLUMNS at col show a commit that
 * survives a crash of the registry's server; false with error (refused when
 * fsync is off), the session dropped.
 */
bool		durable(Conn *c, const char *what, const PGresult *row, int col) noexcept;

/* begin() then run() of one statement with params. */
bool		request(Conn *c, const char *what, const char *sql, int nparams,
					const char *const *params, Answer *a) noexcept;

/*
 * Checks that *a holds `results` results, the last one a single row (of
 * nfields columns; 0: any), and notes what that row tells of the registry's
 * clock (sent_wall: this server's wall clock before the request) and
 * replication.  Otherwise error "unexpected answer", *a cleared, false; so
 * too when the row shows settings under which the registry may lose the
 * commit (SF_PG_DURABILITY_COLUMNS), the session then dropped.
 */
bool		one_row(Conn *c, const char *what, Answer *a, int results, int nfields,
					Notes notes, int64_t sent_wall) noexcept;

/* request() of a statement whose answer is one row, then one_row() on it. */
bool		request_row(Conn *c, const char *what, const char *sql, int nparams,
						const char *const *params, Notes notes, int64_t sent_wall,
						Answer *a) noexcept;

}								/* namespace pgconn */

#endif							/* SNOWFLAKE_PGCONN_HPP */
