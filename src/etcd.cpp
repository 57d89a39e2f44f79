/*-------------------------------------------------------------------------
 *
 * etcd.cpp
 *		The etcd v3 client of the registry: libcurl against the JSON gateway,
 *		a strict JSON reader and base64.  See etcd.hpp.
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

#include <curl/curl.h>

#include "etcd.hpp"

namespace etcd
{

/*---- JSON ----*/

namespace
{

constexpr int kMaxDepth = 64;

typedef bool (*JsonCallback) (void *arg, JsonType type, const char *start, const char *end);

struct Parser
{
	const char *p;
	const char *end;
	int			depth;
	bool		found;
	JsonType	type;
	const char *vstart;			/* the target value, as written */
	const char *vend;
	JsonCallback fn;			/* called for every match, if set */
	void	   *arg;
	bool		stopped;		/* fn asked to stop */
};

void
skip_ws(Parser &ps)
{
	while (ps.p < ps.end && (*ps.p == ' ' || *ps.p == '\t' || *ps.p == '\n' || *ps.p == '\r'))
		ps.p++;
}

int
hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Reads 4 hex digits at p (p + 4 <= end checked by the caller). */
long
read_hex4(const char *p)
{
	long		v = 0;

	for (int i = 0; i < 4; i++)
	{
		int			h = hex_value(p[i]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Skips a string starting at '"'; false if malformed. */
bool
skip_string(Parser &ps)
{
	ps.p++;						/* opening quote */
	while (ps.p < ps.end)
	{
		unsigned char ch = (unsigned char) *ps.p;

		if (ch == '"')
		{
			ps.p++;
			return true;
		}
		if (ch < 0x20)
			return false;
		if (ch == '\\')
		{
			if (ps.p + 1 >= ps.end)
				return false;
			switch (ps.p[1])
			{
				case '"':
				case '\\':
				case '/':
				case 'b':
				case 'f':
				case 'n':
				case 'r':
				case 't':
					ps.p += 2;
					break;
				case 'u':
					if (ps.p + 6 > ps.end || read_hex4(ps.p + 2) < 0)
						return false;
					ps.p += 6;
					break;
				default:
					return false;
			}
			continue;
		}
		ps.p++;
	}
	return false;
}

/* Appends one code point as UTF-8; false if no room. */
bool
put_utf8(unsigned long cp, char *out, size_t outlen, size_t *n)
{
	char		buf[4];
	size_t		len;

	if (cp < 0x80)
	{
		buf[0] = (char) cp;
		len = 1;
	}
	else if (cp < 0x800)
	{
		buf[0] = (char) (0xC0 | (cp >> 6));
		buf[1] = (char) (0x80 | (cp & 0x3F));
		len = 2;
	}
	else if (cp < 0x10000)
	{
		buf[0] = (char) (0xE0 | (cp >> 12));
		buf[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		buf[2] = (char) (0x80 | (cp & 0x3F));
		len = 3;
	}
	else
	{
		buf[0] = (char) (0xF0 | (cp >> 18));
		buf[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
		buf[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
		buf[3] = (char) (0x80 | (cp & 0x3F));
		len = 4;
	}
	if (*n + len >= outlen)
		return false;
	memcpy(out + *n, buf, len);
	*n += len;
	return true;
}

/*
 * Unescapes a validated string [start, end) (quotes included) into out,
 * NUL-terminated; false if it does not fit or a surrogate is unpaired.
 */
bool
unescape(const char *start, const char *end, char *out, size_t outlen, size_t *outn)
{
	const char *p = start + 1;
	size_t		n = 0;

	end--;						/* closing quote */
	if (outlen == 0)
		return false;
	while (p < end)
	{
		if (*p != '\\')
		{
			if (n + 1 >= outlen)
				return false;
			out[n++] = *p++;
			continue;
		}
		char		e = p[1];

		p += 2;
		if (e == 'u')
		{
			unsigned long cp = (unsigned long) read_hex4(p);

			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF)
			{
				long		lo;

				if (p + 6 > end || p[0] != '\\' || p[1] != 'u' ||
					(lo = read_hex4(p + 2)) < 0xDC00 || lo > 0xDFFF)
					return false;
				cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long) lo - 0xDC00);
				p += 6;
			}
			else if (cp >= 0xDC00 && cp <= 0xDFFF)
				return false;
			if (!put_utf8(cp, out, outlen, &n))
				return false;
			continue;
		}
		if (n + 1 >= outlen)
			return false;
		switch (e)
		{
			case 'b':
				out[n++] = '\b';
				break;
			case 'f':
				out[n++] = '\f';
				break;
			case 'n':
				out[n++] = '\n';
				break;
			case 'r':
				out[n++] = '\r';
				break;
			case 't':
				out[n++] = '\t';
				break;
			default:
				out[n++] = e;	/* " \ / */
				break;
		}
	}
	out[n] = '\0';
	if (outn)
		*outn = n;
	return true;
}

bool
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

bool
skip_number(Parser &ps)
{
	if (ps.p < ps.end && *ps.p == '-')
		ps.p++;
	if (ps.p >= ps.end || !is_digit(*ps.p))
		return false;
	if (*ps.p == '0')
		ps.p++;
	else
		while (ps.p < ps.end && is_digit(*ps.p))
			ps.p++;
	if (ps.p < ps.end && *ps.p == '.')
	{
		ps.p++;
		if (ps.p >= ps.end || !is_digit(*ps.p))
			return false;
		while (ps.p < ps.end && is_digit(*ps.p))
			ps.p++;
	}
	if (ps.p < ps.end && (*ps.p == 'e' || *ps.p == 'E'))
	{
		ps.p++;
		if (ps.p < ps.end && (*ps.p == '+' || *ps.p == '-'))
			ps.p++;
		if (ps.p >= ps.end || !is_digit(*ps.p))
			return false;
		while (ps.p < ps.end && is_digit(*ps.p))
			ps.p++;
	}
	return true;
}

bool
skip_literal(Parser &ps, const char *word)
{
	size_t		len = strlen(word);

	if ((size_t) (ps.end - ps.p) < len || memcmp(ps.p, word, len) != 0)
		return false;
	ps.p += len;
	return true;
}

/* Length of the first segment of a dotted path. */
size_t
segment_len(const char *seg)
{
	const char *dot = strchr(seg, '.');

	return dot ? (size_t) (dot - seg) : strlen(seg);
}

/* The path after the first segment ("" at its end). */
const char *
next_segment(const char *seg)
{
	size_t		len = segment_len(seg);

	return seg[len] == '.' ? seg + len + 1 : seg + len;
}

bool parse_value(Parser &ps, const char *seg);

/* An object member's key matches the segment: compare the unescaped key. */
bool
key_matches(const char *kstart, const char *kend, const char *seg)
{
	char		key[256];
	size_t		n = 0;
	size_t		len = segment_len(seg);

	if (!unescape(kstart, kend, key, sizeof(key), &n))
		return false;			/* too long to be one of ours */
	return n == len && memcmp(key, seg, len) == 0;
}

/* What follows an element of an object or array. */
enum class Separator
{
	Comma,						/* another element follows */
	Close,						/* the closing bracket: the container ends */
	Bad
};

/* Reads the "," or closing bracket after an element. */
Separator
after_element(Parser &ps, char close)
{
	skip_ws(ps);
	if (ps.p < ps.end && (*ps.p == ',' || *ps.p == close))
		return *ps.p++ == ',' ? Separator::Comma : Separator::Close;
	return Separator::Bad;
}

bool
parse_object(Parser &ps, const char *seg)
{
	ps.p++;						/* { */
	skip_ws(ps);
	if (ps.p < ps.end && *ps.p == '}')
	{
		ps.p++;
		return true;
	}
	for (;;)
	{
		const char *kstart;
		const char *child = NULL;

		skip_ws(ps);
		if (ps.p >= ps.end || *ps.p != '"')
			return false;
		kstart = ps.p;
		if (!skip_string(ps))
			return false;
		if (seg != NULL && *seg != '\0' && key_matches(kstart, ps.p, seg))
			child = next_segment(seg);
		skip_ws(ps);
		if (ps.p >= ps.end || *ps.p != ':')
			return false;
		ps.p++;
		if (!parse_value(ps, child))
			return false;
		switch (after_element(ps, '}'))
		{
			case Separator::Comma:
				continue;
			case Separator::Close:
				return true;
			case Separator::Bad:
				return false;
		}
	}
}

/* Whether array element "index" matches the segment (a number or "*"). */
bool
index_matches(long index, const char *seg)
{
	size_t		len = segment_len(seg);
	long		v = 0;

	if (len == 1 && seg[0] == '*')
		return true;
	if (len == 0 || len > 9)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		if (!is_digit(seg[i]))
			return false;
		v = v * 10 + (seg[i] - '0');
	}
	return v == index;
}

bool
parse_array(Parser &ps, const char *seg)
{
	long		index = 0;

	ps.p++;						/* [ */
	skip_ws(ps);
	if (ps.p < ps.end && *ps.p == ']')
	{
		ps.p++;
		return true;
	}
	for (;; index++)
	{
		const char *child = NULL;

		if (seg != NULL && *seg != '\0' && index_matches(index, seg))
			child = next_segment(seg);
		if (!parse_value(ps, child))
			return false;
		switch (after_element(ps, ']'))
		{
			case Separator::Comma:
				continue;
			case Separator::Close:
				return true;
			case Separator::Bad:
				return false;
		}
	}
}

/* Parses one value; seg is the rest of the path if this value is on it. */
bool
parse_value(Parser &ps, const char *seg)
{
	const char *start;
	JsonType	type;
	bool		ok;

	skip_ws(ps);
	if (ps.p >= ps.end || ++ps.depth > kMaxDepth)
		return false;
	start = ps.p;
	switch (*ps.p)
	{
		case '{':
			type = JsonType::Object;
			ok = parse_object(ps, seg);
			break;
		case '[':
			type = JsonType::Array;
			ok = parse_array(ps, seg);
			break;
		case '"':
			type = JsonType::String;
			ok = skip_string(ps);
			break;
		case 't':
			type = JsonType::True;
			ok = skip_literal(ps, "true");
			break;
		case 'f':
			type = JsonType::False;
			ok = skip_literal(ps, "false");
			break;
		case 'n':
			type = JsonType::Null;
			ok = skip_literal(ps, "null");
			break;
		default:
			type = JsonType::Number;
			ok = skip_number(ps);
			break;
	}
	ps.depth--;
	if (ok && seg != NULL && *seg == '\0' && !ps.stopped)
	{
		if (ps.fn != NULL)
			ps.stopped = !ps.fn(ps.arg, type, start, ps.p);
		else if (!ps.found)
		{
			ps.found = true;
			ps.type = type;
			ps.vstart = start;
			ps.vend = ps.p;
		}
	}
	return ok;
}

/* Parses a whole document (trailing white space allowed). */
bool
parse_document(Parser &ps, const char *path)
{
	if (!parse_value(ps, path))
		return false;
	skip_ws(ps);
	return ps.p == ps.end;
}

Parser
make_parser(const char *doc, size_t len)
{
	Parser		ps;

	memset(&ps, 0, sizeof(ps));
	ps.p = doc;
	ps.end = doc + len;
	return ps;
}

/* Copies a found value into out (strings unescaped). */
bool
copy_value(JsonType type, const char *start, const char *end, char *out, size_t outlen)
{
	size_t		len = (size_t) (end - start);

	if (out == NULL)
		return true;
	if (type == JsonType::String)
		return unescape(start, end, out, outlen, NULL);
	if (type == JsonType::Object || type == JsonType::Array)
	{
		if (outlen > 0)
			out[0] = '\0';
		return true;
	}
	if (len + 1 > outlen)
		return false;
	memcpy(out, start, len);
	out[len] = '\0';
	return true;
}

/* Parses a decimal int64 (optionally signed), the whole string. */
bool
parse_int64(const char *s, int64_t *value)
{
	char	   *end;

	if (*s == '\0' || !(is_digit(*s) || *s == '-'))
		return false;
	errno = 0;
	long long	v = strtoll(s, &end, 10);

	if (errno != 0 || *end != '\0')
		return false;
	*value = (int64_t) v;
	return true;
}

}								/* namespace */

JsonFound
json_lookup(const char *doc, size_t len, const char *path, JsonType *type,
			char *out, size_t outlen) noexcept
{
	Parser		ps = make_parser(doc, len);

	if (!parse_document(ps, path))
		return JsonFound::Invalid;
	if (!ps.found)
		return JsonFound::Absent;
	if (type)
		*type = ps.type;
	if (!copy_value(ps.type, ps.vstart, ps.vend, out, outlen))
		return JsonFound::Invalid;
	return JsonFound::Found;
}

JsonFound
json_int64(const char *doc, size_t len, const char *path, int64_t *value) noexcept
{
	char		text[32];
	JsonType	type;
	JsonFound	f = json_lookup(doc, len, path, &type, text, sizeof(text));

	if (f != JsonFound::Found)
		return f;
	if ((type != JsonType::String && type != JsonType::Number) || !parse_int64(text, value))
		return JsonFound::Invalid;
	return JsonFound::Found;
}

/*---- base64 ----*/

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

long
base64_encode(const void *data, size_t len, char *out, size_t outlen) noexcept
{
	const unsigned char *in = (const unsigned char *) data;
	size_t		need = (len + 2) / 3 * 4;
	size_t		n = 0;

	if (need + 1 > outlen)
		return -1;
	for (size_t i = 0; i < len; i += 3)
	{
		unsigned long v = (unsigned long) in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned long) in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[n++] = kB64[(v >> 18) & 63];
		out[n++] = kB64[(v >> 12) & 63];
		out[n++] = i + 1 < len ? kB64[(v >> 6) & 63] : '=';
		out[n++] = i + 2 < len ? kB64[v & 63] : '=';
	}
	out[n] = '\0';
	return (long) n;
}

static int
b64_value(char ch)
{
	const char *pos = ch ? strchr(kB64, ch) : NULL;

	return pos ? (int) (pos - kB64) : -1;
}

long
base64_decode(const char *text, size_t len, char *out, size_t outlen) noexcept
{
	size_t		n = 0;

	if (len % 4 != 0)
		return -1;
	for (size_t i = 0; i < len; i += 4)
	{
		int			v[4];
		int			pad = 0;

		for (int k = 0; k < 4; k++)
		{
			if (text[i + k] == '=' && i + 4 == len && k >= 2)
			{
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad > 0 || (v[k] = b64_value(text[i + k])) < 0)
				return -1;
		}
		unsigned long w = ((unsigned long) v[0] << 18) | ((unsigned long) v[1] << 12) |
			((unsigned long) v[2] << 6) | (unsigned long) v[3];
		int			bytes = 3 - pad;

		if (n + (size_t) bytes + 1 > outlen)
			return -1;
		out[n++] = (char) (w >> 16);
		if (bytes > 1)
			out[n++] = (char) (w >> 8);
		if (bytes > 2)
			out[n++] = (char) w;
	}
	if (outlen < 1)
		return -1;
	out[n] = '\0';
	return (long) n;
}

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

		if (scheme == 0 || len <= scheme)
		{
			snprintf(err, errlen, "\"%.*s\" is not an http:// or https:// URL",
					 (int) len, start);
			return false;
		}
		for (const char *q = start + scheme; q < end; q++)
		{
			unsigned char ch = (unsigned char) *q;

			if (ch <= 0x20 || ch >= 0x7f || ch == '?' || ch == '#' || ch == '@' || ch == '"' ||
				ch == '\\')
			{
				snprintf(err, errlen, "\"%.*s\" contains a character not allowed in an endpoint",
						 (int) len, start);
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

/* Error codes of the gRPC status etcd's gateway puts in "code". */
constexpr int64_t kGrpcNotFound = 5;
constexpr int64_t kGrpcDeadlineExceeded = 4;
constexpr int64_t kGrpcUnavailable = 14;

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

		c->sent_ns = mono_ns();
		rc = curl_easy_perform(curl);

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

bool
on_listed_key(void *arg, JsonType type, const char *start, const char *end)
{
	ListState  *st = (ListState *) arg;
	char		text[1024];
	char		key[768];
	long		n;

	if (type != JsonType::String || !unescape(start, end, text, sizeof(text), NULL) ||
		(n = base64_decode(text, strlen(text), key, sizeof(key))) < 0)
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
	Parser		ps;

	if (!b64(prefix, k, sizeof(k)) || !b64_range_end(prefix, e, sizeof(e)))
	{
		snprintf(c->error, sizeof(c->error), "prefix too long");
		return Result::Failed;
	}
	snprintf(req, sizeof(req), "{\"key\":\"%s\",\"range_end\":\"%s\",\"keys_only\":true}", k, e);
	if ((r = request(c, "/v3/kv/range", req)) != Result::Ok)
		return r == Result::NotFound ? Result::Failed : r;
	ps = make_parser(c->body, c->body_len);
	ps.fn = on_listed_key;
	ps.arg = &st;
	if (!parse_document(ps, "kvs.*.key") || st.bad)
		return garbage(c, "a listing");
	return Result::Ok;
}

}								/* namespace etcd */
