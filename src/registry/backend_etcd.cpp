/*-------------------------------------------------------------------------
 *
 * backend_etcd.cpp
 *		The registry backend on etcd's v3 API (backend.hpp), over the etcd
 *		client (etcd.hpp).
 *
 * Keys, under snowflake.registry_prefix P:
 *	P/shards/<id>/holder	created only if absent, attached to the holder's
 *							lease; says who holds the shard.  It disappears
 *							when the lease expires or is revoked.
 *	P/shards/<id>/mark		the freshness mark: Unix ms at or above every ID
 *							the holder may issue.  Written only while the
 *							holder key is attached to the writer's lease.
 * With datacenters (snowflake.datacenter_bits > 0) the same keys carry the
 * datacenter and the worker: P/dc/<datacenter>/shards/<worker>/...; without,
 * the layout is 1.1's, which fleets still on 1.1 share.
 *
 * The client lives in this file's memory, in the registry worker alone (the
 * only process that opens it); it has no destructor, and close() frees what
 * libcurl holds.  Plain C++: no postgres.h; it may call etcd.hpp only.
 *
 *-------------------------------------------------------------------------
 */
#include <cstdio>
#include <cstring>

#include "registry/backend_etcd.hpp"
#include "registry/etcd.hpp"

namespace
{

etcd::Client client;
char		prefix[256];
bool		datacenters;		/* keys P/dc/<dc>/shards/<worker>/... */
int64_t		datacenter;			/* the one listed */
int			worker_bits;
uint64_t	samples_taken;	/* clock samples handed out by e_clock_sample */

SfBackendResult
result(etcd::Result r)
{
	switch (r)
	{
		case etcd::Result::Ok:
			return SF_BACKEND_OK;
		case etcd::Result::NotFound:
			return SF_BACKEND_NOT_FOUND;
		case etcd::Result::Failed:
			break;
	}
	return SF_BACKEND_FAILED;
}

void
key(char *buf, size_t len, int64_t shard, const char *what)
{
	if (datacenters)
		snprintf(buf, len, "%s/dc/%lld/shards/%lld/%s", prefix, (long long) (shard >> worker_bits),
				 (long long) (shard & ((INT64_C(1) << worker_bits) - 1)), what);
	else
		snprintf(buf, len, "%s/shards/%lld/%s", prefix, (long long) shard, what);
}

/* Where the held shards of this server's datacenter (or of the flat field) are listed. */
void
list_prefix(char *buf, size_t len)
{
	if (datacenters)
		snprintf(buf, len, "%s/dc/%lld/shards/", prefix, (long long) datacenter);
	else
		snprintf(buf, len, "%s/shards/", prefix);
}

bool
e_open(const SfBackendConfig *config, char *err, size_t errlen)
{
	snprintf(prefix, sizeof(prefix), "%s", config->prefix);
	datacenters = config->datacenters;
	datacenter = config->datacenter;
	worker_bits = config->worker_bits;
	samples_taken = 0;
	if (etcd::open(&client, config->target, config->timeout_ms))
		return true;
	snprintf(err, errlen, "%s", client.error);
	return false;
}

void
e_close(void)
{
	etcd::close(&client);
}

const char *
e_endpoint(void)
{
	return client.count > 0 ? client.endpoints[client.current] : "";
}

const char *
e_error(void)
{
	return client.error;
}

void
e_traffic(uint64_t *requests, uint64_t *sent, uint64_t *received)
{
	*requests = client.traffic.requests;
	*sent = client.traffic.bytes_sent;
	*received = client.traffic.bytes_received;
}

void
e_describe_mark(int64_t shard, char *buf, size_t buflen)
{
	key(buf, buflen, shard, "mark");
}

int64_t
e_sent_ns(void)
{
	return client.sent_ns;
}

/* The Date header of etcd's answers: whole seconds of the member's clock. */
bool
e_clock_sample(int64_t *lo_ms, int64_t *hi_ms)
{
	if (client.clock_samples == samples_taken)
		return false;
	samples_taken = client.clock_samples;
	*lo_ms = client.clock_lo_ms;
	*hi_ms = client.clock_hi_ms;
	return true;
}

void
e_set_budget(int64_t budget_ns)
{
	client.budget_ns = budget_ns;
}

SfBackendResult
e_grant(int64_t ttl_s, int64_t *lease, int64_t *granted_ttl)
{
	return result(etcd::lease_grant(&client, ttl_s, lease, granted_ttl));
}

SfBackendResult
e_renew(int64_t lease, int64_t *ttl)
{
	return result(etcd::lease_keepalive(&client, lease, ttl));
}

SfBackendResult
e_revoke(int64_t lease)
{
	return result(etcd::lease_revoke(&client, lease));
}

struct ListState
{
	void		(*fn) (void *arg, int64_t shard);
	void	   *arg;
};

/*
 * A listed key: <list prefix><digits>/holder names a held shard (a worker of
 * the datacenter, with datacenters); the rest is ignored.
 */
bool
on_key(void *arg, const char *k, size_t len)
{
	ListState  *st = (ListState *) arg;
	char		lp[300];
	size_t		plen;
	const char *suffix = "/holder";
	size_t		slen = strlen(suffix);
	long long	shard = 0;

	list_prefix(lp, sizeof(lp));
	plen = strlen(lp);
	if (len <= plen + slen || memcmp(k, lp, plen) != 0 ||
		memcmp(k + len - slen, suffix, slen) != 0)
		return true;
	for (size_t i = plen; i < len - slen; i++)
	{
		if (k[i] < '0' || k[i] > '9' || shard > (1LL << 40))
			return true;		/* not a shard number, or absurdly large */
		shard = shard * 10 + (k[i] - '0');
	}
	if (datacenters)
	{
		if (shard > (INT64_C(1) << worker_bits) - 1)
			return true;		/* not a worker of this layout */
		shard |= datacenter << worker_bits;
	}
	st->fn(st->arg, (int64_t) shard);
	return true;
}

SfBackendResult
e_list_held(void (*fn) (void *arg, int64_t shard), void *arg)
{
	char		p[300];
	ListState	st = {fn, arg};

	list_prefix(p, sizeof(p));
	return result(etcd::list_keys(&client, p, on_key, &st));
}

SfBackendResult
e_claim(int64_t shard, int64_t lease, const char *identity, SfClaim *out)
{
	char		k[300], mk[300];

	key(k, sizeof(k), shard, "holder");
	key(mk, sizeof(mk), shard, "mark");
	memset(out, 0, sizeof(*out));
	return result(etcd::create_if_absent(&client, k, identity, lease, mk, &out->created,
										 out->holder, sizeof(out->holder), &out->holder_lease,
										 out->mark, sizeof(out->mark), &out->mark_found));
}

SfBackendResult
e_give_back(int64_t shard, int64_t lease, bool *done)
{
	char		k[300];

	key(k, sizeof(k), shard, "holder");
	return result(etcd::delete_if_lease(&client, k, lease, done));
}

SfBackendResult
e_publish(int64_t shard, int64_t lease, int64_t mark_ms, bool *applied)
{
	char		guard[300], k[300], value[32];

	key(guard, sizeof(guard), shard, "holder");
	key(k, sizeof(k), shard, "mark");
	snprintf(value, sizeof(value), "%lld", (long long) mark_ms);
	return result(etcd::put_if_lease(&client, guard, lease, k, value, applied));
}

SfBackendResult
e_holder(int64_t shard, bool *found, int64_t *lease)
{
	char		k[300], value[256];

	key(k, sizeof(k), shard, "holder");
	return result(etcd::get(&client, k, value, sizeof(value), found, lease));
}

/* etcd's writes are quorum writes: a new leader has them all. */
const char *
e_replication(void)
{
	return NULL;
}

/* Nothing of etcd's settings is checked (docs/registry.md). */
bool
e_refused(void)
{
	return false;
}

}								/* namespace */

const SfRegistryBackend sf_etcd_backend = {
	"etcd",
	e_open,
	e_close,
	e_endpoint,
	e_error,
	e_traffic,
	e_describe_mark,
	e_sent_ns,
	e_clock_sample,
	e_set_budget,
	e_grant,
	e_renew,
	e_revoke,
	e_list_held,
	e_claim,
	e_give_back,
	e_publish,
	e_holder,
	e_replication,
	e_refused,
};
