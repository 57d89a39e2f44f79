/*-------------------------------------------------------------------------
 *
 * etcd.cpp
 *		The etcd v3 client of the registry: libcurl against the JSON gateway.
 *		See etcd.hpp.  Answers are read with etcd_json.hpp (PostgreSQL's own
 *		JSON parser and base64).
 *
 * libcurl is C: it neither throws nor longjmps.  This file never includes
 * postgres.h, never throws, and allocates only the answer buffer (malloc,
 * bounded by kMaxResponse) and libcurl's own handle and header list, all
 * owned by the Client and freed by close().
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <strings.h>

#include <curl/curl.h>

#include "registry/etcd.hpp"

namespace etcd
{

/*---- endpoints ----*/

bool
parse_endpoints(const char *csv, char out[][kMaxEndpointLen + 1], int capacity,
				int *count, char *err, size_t errlen) noexcept
{
	const char *p = csv ? csv : "";

	*count = 0;
	while (*p)
	{
		const char *start, *end;
		size_t		len;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		start = p;
		while (*p && *p != ',' && *p != ' ')
			p++;
		end = p;
		len = (size_t) (end - start);
		if (*count >= capacity)
		{
			snprintf(err, errlen, "at most %d endpoints are supported", capacity);
			return false;
		}
		if (len > kMaxEndpointLen)
		{
			snprintf(err, errlen, "an endpoint is longer than %d characters", (int) kMaxEndpointLen);
			return false;
		}
		size_t		scheme = strncmp(start, "http://", 7) == 0 ? 7 :
			strncmp(start, "https://", 8) == 0 ? 8 : 0;

		/* never the endpoint's text: it may hold a password (user:password@) */
		if (scheme == 0 || len <= scheme)
		{
			snprintf(err, errlen, "endpoint %d is not an http:// or https:// URL", *count + 1);
			return false;
		}
		for (const char *q = start + scheme; q < end; q++)
		{
			unsigned char ch = (unsigned char) *q;

			if (ch == '@')
			{
				snprintf(err, errlen, "endpoint %d holds user information (user:password@), "
						 "which is not supported", *count + 1);
				return false;
			}
			if (ch <= 0x20 || ch >= 0x7f || ch == '?' || ch == '#' || ch == '"' || ch == '\\')
			{
				snprintf(err, errlen, "endpoint %d contains a character not allowed in an "
						 "endpoint (a control character, a quote, a backslash, \"?\" or \"#\")",
						 *count + 1);
				return false;
			}
		}
		memcpy(out[*count], start, len);
		/* no trailing slash: paths are appended */
		while (len > scheme && out[*count][len - 1] == '/')
			len--;
		out[*count][len] = '\0';
		(*count)++;
	}
	return true;
}

/*---- HTTP ----*/

namespace
{

int64_t
mono_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

size_t
on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	Client	   *c = (Client *) userdata;
	size_t		len = size * nmemb;

	if (c->body_len + len + 1 > kMaxResponse)
	{
		c->body_overflow = true;
		return 0;				/* makes curl fail the transfer */
	}
	if (c->body_len + len + 1 > c->body_cap)
	{
		size_t		cap = c->body_cap ? c->body_cap : 4096;
		char	   *grown;

		while (cap < c->body_len + len + 1)
			cap *= 2;
		grown = (char *) realloc(c->body, cap);
		if (grown == NULL)
		{
			c->body_overflow = true;
			return 0;
		}
		c->body = grown;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	c->body[c->body_len] = '\0';
	return len;
}

/* The wall clock in Unix ms. */
int64_t
wall_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A header line of the answer: notes the Date (the member's clock, whole seconds). */
size_t
on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	Client	   *c = (Client *) userdata;
	size_t		len = size * nmemb;
	char		line[128];

	if (len > 5 && len < sizeof(line) && strncasecmp(data, "date:", 5) == 0)
	{
		time_t		t;

		memcpy(line, data + 5, len - 5);
		line[len - 5] = '\0';
		t = curl_getdate(line, NULL);
		if (t > 0)
			c->date_ms = (int64_t) t * 1000;
	}
	return len;
}

/* Error codes of the gRPC status etcd's gateway puts in "code". */
constexpr int64_t kGrpcNotFound = 5;
constexpr int64_t kGrpcDeadlineExceeded = 4;
constexpr int64_t kGrpcUnavailable = 14;

/*
 * Notes the member's clock from the Date of an answer: it was read between
 * the request's send and its answer, and Date is truncated to the second,
 * so this server's clock minus the member's lies in [sent - (date + 1 s),
 * answered - date].
 */
void
note_clock(Client *c, int64_t sent_wall, int64_t answered_wall)
{
	if (c->date_ms < 0)
		return;
	c->clock_lo_ms = sent_wall - (c->date_ms + 1000);
	c->clock_hi_ms = answered_wall - c->date_ms;
	c->clock_samples++;
}

/*
 * POSTs json to path on the endpoints in turn until one gives a definite
 * answer: Ok (HTTP 200 with a valid JSON body), NotFound (etcd's
 * NotFound), or Failed (c->error says why; from the last endpoint tried).
 */
Result
request(Client *c, const char *path, const char *json)
{
	CURL	   *curl = (CURL *) c->curl;

	for (int k = 0; k < c->count; k++)
	{
		int			idx = (c->current + k) % c->count;
		char		url[kMaxEndpointLen + 64];
		CURLcode	rc;
		long		status = 0;
		curl_off_t	up = 0;
		long		req_size = 0, header_size = 0;
		int64_t		code = 0;
		char		message[160];

		long		timeout_ms = c->timeout_ms;

		if (c->budget_ns > 0)
		{
			int64_t		left_ms = (c->budget_ns - mono_ns()) / 1000000;

			if (left_ms <= 0)
			{
				snprintf(c->error, sizeof(c->error), "%s: no time left before the lease "
						 "deadline", c->endpoints[idx]);
				return Result::Failed;
			}
			if (left_ms < timeout_ms)
				timeout_ms = (long) left_ms;
		}
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
						 c->connect_timeout_ms < timeout_ms ? c->connect_timeout_ms : timeout_ms);
		snprintf(url, sizeof(url), "%s%s", c->endpoints[idx], path);
		c->body_len = 0;
		c->body_overflow = false;
		if (c->body)
			c->body[0] = '\0';
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long) strlen(json));

		c->date_ms = -1;
		int64_t		sent_wall = wall_ms();

		c->sent_ns = mono_ns();
		rc = curl_easy_perform(curl);
		int64_t		answered_wall = wall_ms();

		c->traffic.requests++;
		curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &req_size);
		curl_easy_getinfo(curl, CURLINFO_SIZE_UPLOAD_T, &up);
		curl_easy_getinfo(curl, CURLINFO_HEADER_SIZE, &header_size);
		c->traffic.bytes_sent += (uint64_t) req_size + (uint64_t) up;
		c->traffic.bytes_received += (uint64_t) header_size + c->body_len;

		if (rc != CURLE_OK)
		{
			snprintf(c->error, sizeof(c->error), "%s: %s", c->endpoints[idx],
					 c->body_overflow ? "answer too large" : curl_easy_strerror(rc));
			continue;
		}
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		if (c->body == NULL)
		{
			/* an empty body is never a valid answer */
			snprintf(c->error, sizeof(c->error), "%s: empty answer (HTTP %ld)",
					 c->endpoints[idx], status);
			continue;
		}
		if (status == 200)
		{
			if (json_lookup(c->body, c->body_len, "", NULL, NULL, 0) != JsonFound::Found)
			{
				snprintf(c->error, sizeof(c->error), "%s: the answer is not valid JSON",
						 c->endpoints[idx]);
				continue;
			}
			c->current = idx;
			note_clock(c, sent_wall, answered_wall);
			return Result::Ok;
		}
		/* an error answer: {"error":..., "message":..., "code":N} */
		if (json_int64(c->body, c->body_len, "code", &code) != JsonFound::Found)
			code = -1;
		if (json_lookup(c->body, c->body_len, "message", NULL, message, sizeof(message)) !=
			JsonFound::Found)
			snprintf(message, sizeof(message), "%s", "no message");
		snprintf(c->error, sizeof(c->error), "%s: HTTP %ld: %s", c->endpoints[idx], status,
				 message);
		if (code == kGrpcNotFound)
		{
			c->current = idx;
			note_clock(c, sent_wall, answered_wall);
			return Result::NotFound;
		}
		if (code == kGrpcUnavailable || code == kGrpcDeadlineExceeded || code == -1 ||
			status >= 500)
			continue;			/* this member cannot answer now: try the next */
		return Result::Failed;
	}
	return Result::Failed;
}

/* A key or value as base64, for a request body. */
bool
b64(const char *text, char *out, size_t outlen)
{
	return base64_encode(text, strlen(text), out, outlen) >= 0;
}

/* The smallest key above every key with this prefix, as base64. */
bool
b64_range_end(const char *prefix, char *out, size_t outlen)
{
	char		end[512];
	size_t		len = strlen(prefix);

	if (len == 0 || len >= sizeof(end))
		return false;
	memcpy(end, prefix, len);
	end[len - 1]++;				/* prefixes end in '/', never in 0xff */
	return base64_encode(end, len, out, outlen) >= 0;
}

/* Decodes a base64 JSON string at path into out; Absent if missing. */
JsonFound
b64_field(const char *doc, size_t len, const char *path, char *out, size_t outlen)
{
	char		text[2048];
	JsonType	type;
	JsonFound	f = json_lookup(doc, len, path, &type, text, sizeof(text));

	if (f != JsonFound::Found)
		return f;
	if (type != JsonType::String || base64_decode(text, strlen(text), out, outlen) < 0)
		return JsonFound::Invalid;
	return JsonFound::Found;
}

Result
garbage(Client *c, const char *what)
{
	snprintf(c->error, sizeof(c->error), "%s: unexpected answer to %s",
			 c->endpoints[c->current], what);
	return Result::Failed;
}

}								/* namespace */

bool
open(Client *c, const char *endpoints_csv, long timeout_ms) noexcept
{
	memset(c, 0, sizeof(*c));
	if (!parse_endpoints(endpoints_csv, c->endpoints, kMaxEndpoints, &c->count,
						 c->error, sizeof(c->error)))
		return false;
	if (c->count == 0)
	{
		snprintf(c->error, sizeof(c->error), "no endpoints");
		return false;
	}
	c->timeout_ms = timeout_ms;
	c->connect_timeout_ms = timeout_ms / 2 > 0 ? timeout_ms / 2 : 1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
		(c->curl = curl_easy_init()) == NULL)
	{
		snprintf(c->error, sizeof(c->error), "could not initialise libcurl");
		return false;
	}
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (c->headers == NULL)
	{
		close(c);
		snprintf(c->error, sizeof(c->error), "out of memory");
		return false;
	}

	CURL	   *curl = (CURL *) c->curl;

	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, (struct curl_slist *) c->headers);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
	/* the server's certificate is verified (system CAs) for https:// */
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	return true;
}

void
close(Client *c) noexcept
{
	if (c->curl)
		curl_easy_cleanup((CURL *) c->curl);
	if (c->headers)
		curl_slist_free_all((struct curl_slist *) c->headers);
	free(c->body);
	c->curl = NULL;
	c->headers = NULL;
	c->body = NULL;
	c->body_cap = c->body_len = 0;
}

Result
lease_grant(Client *c, int64_t ttl_s, int64_t *id, int64_t *granted_ttl) noexcept
{
	char		req[128];
	Result		r;

	snprintf(req, sizeof(req), "{\"TTL\":\"%" PRId64 "\"}", ttl_s);
	if ((r = request(c, "/v3/lease/grant", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	if (json_int64(c->body, c->body_len, "ID", id) != JsonFound::Found || *id == 0 ||
		json_int64(c->body, c->body_len, "TTL", granted_ttl) != JsonFound::Found ||
		*granted_ttl <= 0)
		return garbage(c, "a lease grant");
	return Result::Ok;
}

Result
lease_keepalive(Client *c, int64_t id, int64_t *ttl) noexcept
{
	char		req[128];
	Result		r;
	int64_t		answered_id = 0;

	snprintf(req, sizeof(req), "{\"ID\":\"%" PRId64 "\"}", id);
	if ((r = request(c, "/v3/lease/keepalive", req)) != Result::Ok)
		return r;
	/* a stream of one message: {"result":{...,"ID":...,"TTL":...}} */
	if (json_int64(c->body, c->body_len, "result.ID", &answered_id) != JsonFound::Found ||
		answered_id != id)
		return garbage(c, "a lease keep-alive");
	switch (json_int64(c->body, c->body_len, "result.TTL", ttl))
	{
		case JsonFound::Found:
			break;
		case JsonFound::Absent:
			*ttl = 0;			/* the lease is gone */
			break;
		case JsonFound::Invalid:
			return garbage(c, "a lease keep-alive");
	}
	if (*ttl <= 0)
	{
		*ttl = 0;
		snprintf(c->error, sizeof(c->error), "%s: lease %" PRIx64 " has expired",
				 c->endpoints[c->current], (uint64_t) id);
		return Result::NotFound;
	}
	return Result::Ok;
}

Result
lease_revoke(Client *c, int64_t id) noexcept
{
	char		req[128];

	snprintf(req, sizeof(req), "{\"ID\":\"%" PRId64 "\"}", id);
	return request(c, "/v3/lease/revoke", req);
}

Result
create_if_absent(Client *c, const char *key, const char *value, int64_t lease,
				 const char *read_key, bool *created,
				 char *holder, size_t holder_len, int64_t *holder_lease,
				 char *read_value, size_t read_len, bool *read_found) noexcept
{
	char		k[512], v[2048], rk[512];
	char		req[8192];
	Result		r;
	JsonType	type;
	JsonFound	f;

	if (!b64(key, k, sizeof(k)) || !b64(value, v, sizeof(v)) || !b64(read_key, rk, sizeof(rk)))
	{
		snprintf(c->error, sizeof(c->error), "key or value too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req),
			 "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"createRevision\":\"0\"}],"
			 "\"success\":[{\"requestPut\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}},"
			 "{\"requestRange\":{\"key\":\"%s\"}}],"
			 "\"failure\":[{\"requestRange\":{\"key\":\"%s\"}},"
			 "{\"requestRange\":{\"key\":\"%s\"}}]}",
			 k, k, v, lease, rk, k, rk);
	if ((r = request(c, "/v3/kv/txn", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;

	f = json_lookup(c->body, c->body_len, "succeeded", &type, NULL, 0);
	if (f == JsonFound::Invalid || (f == JsonFound::Found && type != JsonType::True &&
									type != JsonType::False))
		return garbage(c, "a transaction");
	*created = f == JsonFound::Found && type == JsonType::True;

	/* responses[1] is the range on read_key, in both branches */
	if (json_lookup(c->body, c->body_len, "responses.1.response_range", NULL, NULL, 0) !=
		JsonFound::Found)
		return garbage(c, "a transaction");
	f = b64_field(c->body, c->body_len, "responses.1.response_range.kvs.0.value",
				  read_value, read_len);
	if (f == JsonFound::Invalid)
		return garbage(c, "a transaction");
	*read_found = f == JsonFound::Found;
	if (!*read_found && read_len > 0)
		read_value[0] = '\0';
	if (*created)
		return Result::Ok;
	f = b64_field(c->body, c->body_len, "responses.0.response_range.kvs.0.value", holder,
				  holder_len);
	if (f == JsonFound::Invalid)
		return garbage(c, "a transaction");
	if (f == JsonFound::Absent)
	{
		/* the key vanished between compare and read: impossible in one txn */
		return garbage(c, "a transaction");
	}
	if (json_int64(c->body, c->body_len, "responses.0.response_range.kvs.0.lease",
				   holder_lease) != JsonFound::Found)
		*holder_lease = 0;
	return Result::Ok;
}

Result
put_if_lease(Client *c, const char *guard_key, int64_t lease, const char *key,
			 const char *value, bool *applied) noexcept
{
	char		g[512], k[512], v[512];
	char		req[2048];
	Result		r;
	JsonType	type;
	JsonFound	f;

	if (!b64(guard_key, g, sizeof(g)) || !b64(key, k, sizeof(k)) || !b64(value, v, sizeof(v)))
	{
		snprintf(c->error, sizeof(c->error), "key or value too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req),
			 "{\"compare\":[{\"key\":\"%s\",\"target\":\"LEASE\",\"lease\":\"%" PRId64 "\"}],"
			 "\"success\":[{\"requestPut\":{\"key\":\"%s\",\"value\":\"%s\"}}]}",
			 g, lease, k, v);
	if ((r = request(c, "/v3/kv/txn", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	f = json_lookup(c->body, c->body_len, "succeeded", &type, NULL, 0);
	if (f == JsonFound::Invalid || (f == JsonFound::Found && type != JsonType::True &&
									type != JsonType::False))
		return garbage(c, "a transaction");
	*applied = f == JsonFound::Found && type == JsonType::True;
	return Result::Ok;
}

Result
delete_if_lease(Client *c, const char *key, int64_t lease, bool *deleted) noexcept
{
	char		k[512];
	char		req[1200];
	Result		r;
	JsonType	type;
	JsonFound	f;

	if (!b64(key, k, sizeof(k)))
	{
		snprintf(c->error, sizeof(c->error), "key too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req),
			 "{\"compare\":[{\"key\":\"%s\",\"target\":\"LEASE\",\"lease\":\"%" PRId64 "\"}],"
			 "\"success\":[{\"requestDeleteRange\":{\"key\":\"%s\"}}]}",
			 k, lease, k);
	if ((r = request(c, "/v3/kv/txn", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	f = json_lookup(c->body, c->body_len, "succeeded", &type, NULL, 0);
	if (f == JsonFound::Invalid || (f == JsonFound::Found && type != JsonType::True &&
									type != JsonType::False))
		return garbage(c, "a transaction");
	*deleted = f == JsonFound::Found && type == JsonType::True;
	return Result::Ok;
}

Result
get(Client *c, const char *key, char *value, size_t value_len, bool *found,
	int64_t *lease) noexcept
{
	char		k[512];
	char		req[1024];
	Result		r;
	JsonFound	f;

	if (!b64(key, k, sizeof(k)))
	{
		snprintf(c->error, sizeof(c->error), "key too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req), "{\"key\":\"%s\"}", k);
	if ((r = request(c, "/v3/kv/range", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	f = b64_field(c->body, c->body_len, "kvs.0.value", value, value_len);
	if (f == JsonFound::Invalid)
		return garbage(c, "a read");
	*found = f == JsonFound::Found;
	if (!*found)
	{
		if (value_len > 0)
			value[0] = '\0';
		*lease = 0;
		/* a valid answer must at least carry its header */
		if (json_lookup(c->body, c->body_len, "header", NULL, NULL, 0) != JsonFound::Found)
			return garbage(c, "a read");
	}
	else if (json_int64(c->body, c->body_len, "kvs.0.lease", lease) != JsonFound::Found)
		*lease = 0;
	return Result::Ok;
}

namespace
{

struct ListState
{
	bool		(*fn) (void *arg, const char *key, size_t len);
	void	   *arg;
	bool		bad;
};

/* A listed key, base64 in the answer: decoded and handed on. */
bool
on_listed_key(void *arg, const char *value, size_t len)
{
	ListState  *st = (ListState *) arg;
	char		key[768];
	long		n = base64_decode(value, len, key, sizeof(key));

	if (n < 0)
	{
		st->bad = true;
		return false;
	}
	return st->fn(st->arg, key, (size_t) n);
}

}								/* namespace */

Result
list_keys(Client *c, const char *prefix,
		  bool (*fn)(void *arg, const char *key, size_t len), void *arg) noexcept
{
	char		k[512], e[512];
	char		req[1200];
	Result		r;
	ListState	st = {fn, arg, false};

	if (!b64(prefix, k, sizeof(k)) || !b64_range_end(prefix, e, sizeof(e)))
	{
		snprintf(c->error, sizeof(c->error), "prefix too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req), "{\"key\":\"%s\",\"range_end\":\"%s\",\"keys_only\":true}", k, e);
	if ((r = request(c, "/v3/kv/range", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	if (!json_each_string(c->body, c->body_len, "kvs.*.key", on_listed_key, &st) || st.bad)
		return garbage(c, "a listing");
	return Result::Ok;
}

}								/* namespace etcd */
