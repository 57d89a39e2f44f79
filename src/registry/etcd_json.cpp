/*-------------------------------------------------------------------------
 *
 * etcd_json.cpp
 *		JSON lookups and base64 for the etcd client, on PostgreSQL's own
 *		common/ parser and codec (see etcd_json.hpp).
 *
 * Why PostgreSQL's code: the server already carries it, so the library and
 * the Debian package need no new dependency; it never throws (it reports
 * through return codes, or in the server through ereport, which is caught
 * here); and it allocates with palloc in a context this file resets, so a
 * garbled answer leaks nothing.  A packaged C++ JSON library would bring
 * exceptions (nlohmann/json) or another runtime dependency (jansson, json-c)
 * for reading a handful of fields.
 *
 * What is ours: the walk that follows a dotted path through the parser's
 * callbacks, and a depth check before parsing (PostgreSQL's parser recurses;
 * in the server it stops itself at the stack limit, in a unit test it would
 * not), so any answer deeper than kMaxJsonDepth is refused up front.
 *
 *-------------------------------------------------------------------------
 */
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern "C"
{
#ifdef FRONTEND
#else
#endif
}

#include "registry/etcd_json.hpp"

extern "C"
{
#include "postgres.h"
#include "common/base64.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "postgres_fe.h"
#include "utils/memutils.h"
}

/* The parser's callbacks return an error code from PostgreSQL 16 on. */
#if PG_VERSION_NUM >= 160000
#define SF_JSON_CB JsonParseErrorType
#define SF_JSON_DONE return JSON_SUCCESS
#else
#define SF_JSON_CB void
#define SF_JSON_DONE return
#endif

/* base64 takes bytes as uint8 from PostgreSQL 18 on. */
#if PG_VERSION_NUM >= 180000
#define SF_B64_IN(p) ((const uint8 *) (p))
#define SF_B64_OUT(p) ((uint8 *) (p))
#else
#define SF_B64_IN(p) ((const char *) (p))
#define SF_B64_OUT(p) ((char *) (p))
#endif

namespace etcd
{

namespace
{

/* One level of the document around the value being parsed. */
struct Level
{
	bool		is_array;
	long		index;			/* arrays: the current element */
	const char *field;			/* objects: the current member's name */
};

/* What the walk looks for and what it found. */
struct Walk
{
	const char *segs[kMaxJsonDepth + 1];	/* the path, split at dots */
	size_t		seglens[kMaxJsonDepth + 1];
	int			nsegs;
	Level		levels[kMaxJsonDepth + 2];
	int			depth;

	/* json_lookup */
	bool		found;
	JsonType	type;
	char	   *out;
	size_t		outlen;
	bool		too_long;

	/* json_each_string */
	bool		(*fn) (void *arg, const char *value, size_t len);
	void	   *arg;
	bool		stopped;
	bool		bad;
};

/* Splits a dotted path into w->segs; false if it has too many segments. */
bool
split_path(Walk *w, const char *path)
{
	w->nsegs = 0;
	if (*path == '\0')
		return true;
	for (const char *p = path;;)
	{
		const char *dot = strchr(p, '.');
		size_t		len = dot ? (size_t) (dot - p) : strlen(p);

		if (w->nsegs > kMaxJsonDepth)
			return false;
		w->segs[w->nsegs] = p;
		w->seglens[w->nsegs] = len;
		w->nsegs++;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

/* Whether the value now being parsed sits at the path (segment "*": any index). */
bool
at_path(const Walk *w)
{
	if (w->depth != w->nsegs)
		return false;
	for (int i = 0; i < w->nsegs; i++)
	{
		const Level *l = &w->levels[i];
		const char *seg = w->segs[i];
		size_t		len = w->seglens[i];

		if (l->is_array)
		{
			char		num[24];
			int			n;

			if (len == 1 && seg[0] == '*')
				continue;
			n = snprintf(num, sizeof(num), "%ld", l->index);
			if ((size_t) n != len || memcmp(num, seg, len) != 0)
				return false;
		}
		else if (l->field == NULL || strlen(l->field) != len || memcmp(l->field, seg, len) != 0)
			return false;
	}
	return true;
}

/* Records the first match of a lookup; copies scalars into the caller's buffer. */
void
note_value(Walk *w, JsonType type, const char *text)
{
	if (w->fn != NULL)
	{
		if (w->stopped || w->bad)
			return;
		if (type != JsonType::String)
			w->bad = true;
		else if (!w->fn(w->arg, text, strlen(text)))
			w->stopped = true;
		return;
	}
	if (w->found)
		return;
	w->found = true;
	w->type = type;
	if (w->out == NULL)
		return;
	if (text == NULL)
	{
		if (w->outlen > 0)
			w->out[0] = '\0';
		return;
	}
	if (strlen(text) + 1 > w->outlen)
	{
		w->too_long = true;
		return;
	}
	memcpy(w->out, text, strlen(text) + 1);
}

SF_JSON_CB
on_struct_start(void *state, bool is_array)
{
	Walk	   *w = (Walk *) state;

	if (at_path(w))
		note_value(w, is_array ? JsonType::Array : JsonType::Object, NULL);
	/* the depth check before parsing keeps this within bounds */
	if (w->depth < kMaxJsonDepth + 1)
	{
		w->levels[w->depth].is_array = is_array;
		w->levels[w->depth].index = -1;
		w->levels[w->depth].field = NULL;
	}
	w->depth++;
	SF_JSON_DONE;
}

SF_JSON_CB
on_object_start(void *state)
{
	return on_struct_start(state, false);
}

SF_JSON_CB
on_array_start(void *state)
{
	return on_struct_start(state, true);
}

SF_JSON_CB
on_struct_end(void *state)
{
	((Walk *) state)->depth--;
	SF_JSON_DONE;
}

SF_JSON_CB
on_field_start(void *state, char *fname, bool)
{
	Walk	   *w = (Walk *) state;

	if (w->depth > 0 && w->depth <= kMaxJsonDepth + 1)
		w->levels[w->depth - 1].field = fname;
	SF_JSON_DONE;
}

SF_JSON_CB
on_element_start(void *state, bool)
{
	Walk	   *w = (Walk *) state;

	if (w->depth > 0 && w->depth <= kMaxJsonDepth + 1)
		w->levels[w->depth - 1].index++;
	SF_JSON_DONE;
}

SF_JSON_CB
on_scalar(void *state, char *token, JsonTokenType tokentype)
{
	Walk	   *w = (Walk *) state;
	JsonType	type;

	if (!at_path(w))
		SF_JSON_DONE;
	switch (tokentype)
	{
		case JSON_TOKEN_STRING:
			type = JsonType::String;
			break;
		case JSON_TOKEN_NUMBER:
			type = JsonType::Number;
			break;
		case JSON_TOKEN_TRUE:
			type = JsonType::True;
			break;
		case JSON_TOKEN_FALSE:
			type = JsonType::False;
			break;
		default:
			type = JsonType::Null;
			break;
	}
	note_value(w, type, token ? token : "");
	SF_JSON_DONE;
}

/* The nesting depth of a document, counted outside strings (no validation). */
int
nesting_depth(const char *doc, size_t len)
{
	int			depth = 0, deepest = 0;
	bool		in_string = false;

	for (size_t i = 0; i < len; i++)
	{
		char		c = doc[i];

		if (in_string)
		{
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		}
		else if (c == '"')
			in_string = true;
		else if (c == '[' || c == '{')
		{
			if (++depth > deepest)
				deepest = depth;
		}
		else if (c == ']' || c == '}')
			depth--;
	}
	return deepest;
}

#ifndef FRONTEND
/* Where the parser allocates; reset after every document. */
MemoryContext json_context = NULL;
#endif

/* Parses a whole document, calling the walk's callbacks; false if invalid. */
bool
parse(const char *doc, size_t len, Walk *w)
{
	JsonSemAction sem;
	JsonLexContext *lex;
	volatile JsonParseErrorType err = JSON_SUCCESS;

	if (nesting_depth(doc, len) > kMaxJsonDepth || len > (size_t) INT32_MAX)
		return false;
	memset(&sem, 0, sizeof(sem));
	sem.semstate = w;
	sem.object_start = on_object_start;
	sem.object_end = on_struct_end;
	sem.array_start = on_array_start;
	sem.array_end = on_struct_end;
	sem.object_field_start = on_field_start;
	sem.array_element_start = on_element_start;
	sem.scalar = on_scalar;

#ifdef FRONTEND
	/* a unit test: the parser reports everything through err */
#if PG_VERSION_NUM >= 170000
	lex = makeJsonLexContextCstringLen(NULL, doc, len, PG_UTF8, true);
	err = pg_parse_json(lex, &sem);
	freeJsonLexContext(lex);
#else
	lex = makeJsonLexContextCstringLen((char *) doc, (int) len, PG_UTF8, true);
	err = pg_parse_json(lex, &sem);
#endif
#else
	{
		/*
		 * In the server the parser may also ereport (the stack depth check,
		 * out of memory, a \u escape the database encoding cannot hold):
		 * caught here, it makes the answer invalid, never an error of the
		 * registry worker.  No frame between here and the parser holds a C++
		 * object with a destructor.
		 */
		MemoryContext old;
		volatile bool failed = false;

		if (json_context == NULL)
			json_context = AllocSetContextCreate(TopMemoryContext, "snowflake etcd JSON",
												 ALLOCSET_SMALL_SIZES);
		old = MemoryContextSwitchTo(json_context);
		PG_TRY();
		{
#if PG_VERSION_NUM >= 170000
			lex = makeJsonLexContextCstringLen(NULL, doc, len, PG_UTF8, true);
#else
			lex = makeJsonLexContextCstringLen((char *) doc, (int) len, PG_UTF8, true);
#endif
			err = pg_parse_json(lex, &sem);
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(json_context);
			FlushErrorState();
			failed = true;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		/* the walk copied what it keeps: nothing of the context is needed */
		MemoryContextReset(json_context);
		if (failed)
			return false;
	}
#endif
	return err == JSON_SUCCESS;
}

/* Parses a decimal int64 (optionally signed), the whole string. */
bool
parse_int64(const char *s, int64_t *value)
{
	char	   *end;
	long long	v;

	if (*s == '\0' || !((*s >= '0' && *s <= '9') || *s == '-'))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
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
	Walk		w;

	memset(&w, 0, sizeof(w));
	if (!split_path(&w, path))
		return JsonFound::Invalid;
	w.out = out;
	w.outlen = outlen;
	if (!parse(doc, len, &w) || w.too_long)
		return JsonFound::Invalid;
	if (!w.found)
		return JsonFound::Absent;
	if (type)
		*type = w.type;
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

bool
json_each_string(const char *doc, size_t len, const char *pattern,
				 bool (*fn)(void *arg, const char *value, size_t len), void *arg) noexcept
{
	Walk		w;

	memset(&w, 0, sizeof(w));
	if (!split_path(&w, pattern))
		return false;
	w.fn = fn;
	w.arg = arg;
	return parse(doc, len, &w) && !w.bad;
}

long
base64_encode(const void *data, size_t len, char *out, size_t outlen) noexcept
{
	int			n;

	if (outlen < 1 || len > (size_t) INT32_MAX / 2 ||
		(size_t) pg_b64_enc_len((int) len) + 1 > outlen)
		return -1;
	n = pg_b64_encode(SF_B64_IN(data), (int) len, out, (int) outlen - 1);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return n;
}

long
base64_decode(const char *text, size_t len, char *out, size_t outlen) noexcept
{
	int			n;

	/* whole groups of four only: the codec itself would accept some short ends */
	if (outlen < 1 || len % 4 != 0 || len > (size_t) INT32_MAX)
		return -1;
	/*
	 * The codec skips white space and accepts padding anywhere; an answer has
	 * no white space, and padding only as the last one or two characters.
	 */
	for (size_t i = 0; i < len; i++)
		if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r' ||
			(text[i] == '=' && !(i + 2 >= len && text[len - 1] == '=')))
			return -1;
	n = pg_b64_decode(text, (int) len, SF_B64_OUT(out), (int) outlen - 1);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return n;
}

}								/* namespace etcd */
