/*-------------------------------------------------------------------------
 *
 * etcd.hpp
 *		A small etcd v3 client in plain C++ over libcurl and etcd's JSON
 *		gateway (HTTP POST to /v3/...): leases, a create-if-absent
 *		transaction, a put guarded by a lease, reads.  The answers are read
 *		with etcd_json.hpp (PostgreSQL's JSON parser and base64).
 *
 * Nothing here includes postgres.h, throws, or waits without a bound: every
 * request has a total timeout and a connect timeout, and a garbage,
 * oversized or slow answer is an error.  Each call tries the endpoints in
 * turn, starting with the one that answered last, and stops at the first
 * that gives a definite answer.  Only the registry worker uses a Client.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_ETCD_HPP
#define SNOWFLAKE_ETCD_HPP

#include <cstddef>
#include <cstdint>

#include "registry/etcd_json.hpp"

namespace etcd
{

constexpr int kMaxEndpoints = 8;
constexpr size_t kMaxEndpointLen = 200;
/* Answers larger than this are an error (a full pool of 2^20 keys is far less). */
constexpr size_t kMaxResponse = 8 * 1024 * 1024;

/* Parses "http://h:p,https://h2:p2" (spaces allowed); false with *err. */
bool parse_endpoints(const char *csv, char out[][kMaxEndpointLen + 1], int capacity,
					 int *count, char *err, size_t errlen) noexcept;

/* Traffic counters, for the view and the closing note. */
struct Traffic
{
	uint64_t	requests;
	uint64_t	bytes_sent;		/* request lines, headers and bodies */
	uint64_t	bytes_received; /* status lines, headers and bodies */
};

struct Client
{
	char		endpoints[kMaxEndpoints][kMaxEndpointLen + 1];
	int			count;
	int			current;		/* index of the endpoint that answered last */
	long		timeout_ms;		/* whole request, per endpoint */
	long		connect_timeout_ms;
	void	   *curl;			/* CURL * */
	void	   *headers;		/* struct curl_slist * */
	char	   *body;			/* the last answer, NUL-terminated */
	size_t		body_len;
	size_t		body_cap;
	bool		body_overflow;
	int64_t		sent_ns;		/* CLOCK_MONOTONIC just before the answered request */
	/*
	 * The member's clock, from the Date header of the last answer (whole
	 * seconds): this server's wall clock minus the member's lay within
	 * [clock_lo_ms, clock_hi_ms] (clock_samples counts such answers).
	 */
	int64_t		date_ms;		/* of the answer being read, -1: none */
	int64_t		clock_lo_ms;
	int64_t		clock_hi_ms;
	uint64_t	clock_samples;
	int64_t		budget_ns;		/* CLOCK_MONOTONIC after which no request starts or
								 * goes on (each is cut to fit); 0: no budget */
	Traffic		traffic;
	char		error[256];		/* why the last call failed */
};

/* Sets up a client; false with client->error filled. */
bool open(Client *client, const char *endpoints_csv, long timeout_ms) noexcept;
void close(Client *client) noexcept;

/* The result of a call: Ok, a definite "no" from etcd, or no answer. */
enum class Result
{
	Ok,
	NotFound,					/* the lease does not exist (any more) */
	Failed						/* no endpoint gave a usable answer: see error */
};

Result lease_grant(Client *c, int64_t ttl_s, int64_t *id, int64_t *granted_ttl) noexcept;
/* *ttl > 0: renewed for that many seconds (from c->sent_ns at the latest). */
Result lease_keepalive(Client *c, int64_t id, int64_t *ttl) noexcept;
Result lease_revoke(Client *c, int64_t id) noexcept;

/*
 * Creates key = value attached to lease if the key does not exist, and reads
 * read_key in the same transaction.  *created tells which; when the key
 * existed, its value goes to holder (truncated) and its lease to
 * *holder_lease.  Either way read_key's value goes to read_value
 * (*read_found), truncated to read_len - 1 bytes.
 */
Result create_if_absent(Client *c, const char *key, const char *value, int64_t lease,
						const char *read_key, bool *created,
						char *holder, size_t holder_len, int64_t *holder_lease,
						char *read_value, size_t read_len, bool *read_found) noexcept;

/* Puts key = value only while guard_key exists attached to lease; *applied. */
Result put_if_lease(Client *c, const char *guard_key, int64_t lease, const char *key,
					const char *value, bool *applied) noexcept;

/* Deletes key only while it is attached to lease; *deleted. */
Result delete_if_lease(Client *c, const char *key, int64_t lease, bool *deleted) noexcept;

/* Reads one key: *found, its value (truncated) and its lease. */
Result get(Client *c, const char *key, char *value, size_t value_len, bool *found,
		   int64_t *lease) noexcept;

/*
 * Lists the keys under a prefix (keys only), calling fn for each decoded
 * key; stops early if fn returns false.
 */
Result list_keys(Client *c, const char *prefix,
				 bool (*fn)(void *arg, const char *key, size_t len), void *arg) noexcept;

}								/* namespace etcd */

#endif							/* SNOWFLAKE_ETCD_HPP */
