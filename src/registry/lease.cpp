/*-------------------------------------------------------------------------
 *
 * lease.cpp
 *		The registry worker: it holds this server's lease, claims a shard
 *		under it (the explicit one, the one it held before, or a free one of
 *		the pool), keeps the lease alive and its deadline published to the
 *		generating calls (the grant), publishes the shard's freshness mark up
 *		to that deadline, and releases the shard at a clean stop.  It is the
 *		only process that talks to the registry, through the backend chosen
 *		at start (backend.hpp), never under a lock.
 *
 * Errors.  Nothing about the registry is ever an ERROR: a failed or garbled
 * request is a state and a last_error in the view, and the worker retries.
 * Should something else raise an ERROR in the worker (out of memory), the
 * process exits, its exit callback clears the grant, and the postmaster
 * restarts it.
 *
 * The registry layer: it may call the state layer (shmem, fastpath, mark,
 * datadir) and the backend; registry.cpp's shared fields are in
 * registry_shared.hpp.
 *
 *-------------------------------------------------------------------------
 */
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include "state/fastpath.hpp"
#include "state/history.hpp"
#include "state/mark.hpp"
#include "state/datadir.hpp"
#include "registry/registry.hpp"
#include "registry/registry_shared.hpp"
#include "core/skew.hpp"

extern "C"
{
#include "postgres.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"
}

/* Shards with a refused freshness mark, remembered for a while. */
#define SF_MAX_REFUSED 16
/* How far beyond the lease deadline + lead a published mark reaches. */
#define SF_PUBLISH_MARGIN_MS 1000

/* What the worker keeps between ticks (its own memory). */
typedef struct SfWorker
{
	int64		lease;			/* 0: none */
	int64		ttl_s;
	int64		renewed_ns;		/* send time of the last successful renewal */
	int64		deadline_ns;
	int64		held;			/* -1: none */
	ShardSlot  *slot;			/* of the held shard */
	int64		remembered;		/* shard held before, -1 */
	int64		remembered_lease;
	int64		remembered_floor_ms;	/* what it resumed above at that claim (-1:
										 * nothing), -2: not recorded */
	bool		reclaimed_own;	/* the last claim revoked this server's own lease */
	int64		unanswered;		/* a claim sent under the current lease got no answer, -1 */
	int64		floor_ms;		/* what the held shard resumed above (Unix ms), -1 */
	int64		refused[SF_MAX_REFUSED];	/* shards whose mark was refused */
	int64		refused_until_ns[SF_MAX_REFUSED];
	int64		next_keepalive_ns;
	int64		retry_ns;		/* next claim attempt */
	int64		backoff_ms;
	bool		expired;		/* the deadline passed while held */
	bool		failing;		/* keep-alives are failing (logged once) */
	int64		publish_retry_ns;	/* a failed publication is retried from then */
	int64		publish_backoff_ms;
	int64		suspend_ref_ns; /* CLOCK_BOOTTIME - CLOCK_MONOTONIC */
	char		identity[256];
	uint8	   *taken;			/* bitmap of held shards while listing */
	snowflake::SkewEstimate skew;	/* ours minus the registry's clock */
	char		skew_endpoint[256];	/* the samples are of this endpoint's clock */
	bool		skew_warned;	/* a holder's drift was logged */
	int64		failover_logged;	/* the registry's failover whose pause was logged (ms) */
	int64		epoch_floor_ms; /* of the last claim: SfClaim.epoch_floor_ms */
	char		replication[32];	/* how the registry replicates, as last noted */
	bool		refused_warned; /* the registry's refusal (fsync = off) was logged */
} SfWorker;

/* What one claim of a shard came to (sf_try_shard). */
enum class SfClaimOutcome
{
	Claimed,					/* the shard is ours; *fresh_ms its freshness mark, -1 if none */
	HeldElsewhere,				/* another server holds it (its description in holder) */
	MarkRefused,				/* its freshness mark is refused (why in holder; the key is
								 * not kept) */
	FailoverPause,				/* the registry failed over lately and takes no claim yet
								 * (why in holder) */
	Unreachable,				/* the registry did not answer */
};

/* The shards one claim tries, in order. */
typedef struct SfCandidates
{
	int64		shard[8];
	int			count;
	bool		full;			/* every shard of the pool is held by some server */
} SfCandidates;

static const char *const kRegistryName = "registry";
static const char *const kRegistryFile = "pg_snowflake/registry";

static void
sf_set_state(SfRegState state, const char *error)
{
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = state;
	if (error)
	{
		strlcpy(sf_reg->last_error, error, sizeof(sf_reg->last_error));
		sf_reg->errors++;
	}
	SpinLockRelease(&sf_reg->mutex);
}

/*
 * Notes how the registry replicates (the view's registry_replication), and
 * warns when it has standbys but commits wait for none of them: a failover
 * to such a standby may lose the last claims and marks, and claims then
 * pause for a lease and more after the promotion (docs/operations.md).
 */
static void
sf_note_replication(SfWorker *w)
{
	const char *now = sf_backend->replication();

	if (now == NULL || strcmp(now, w->replication) == 0)
		return;
	if (strcmp(now, "asynchronous") == 0)
		ereport(WARNING,
				(errmsg("snowflake registry: %s has standbys, but none is synchronous",
						sf_registry_noun()),
				 errdetail("A standby promoted after asynchronous replication may lack the last "
						   "claims and freshness marks; IDs stay unique, but no server claims a "
						   "shard for the lease and more after such a promotion."),
				 errhint("Replicate the registry synchronously (synchronous_standby_names, or "
						 "Patroni's synchronous_mode_strict); see the operations guide.")));
	strlcpy(w->replication, now, sizeof(w->replication));
	SpinLockAcquire(&sf_reg->mutex);
	strlcpy(sf_reg->replication, now, sizeof(sf_reg->replication));
	SpinLockRelease(&sf_reg->mutex);
}

/* Copies the client's view fields and traffic counters into shared memory. */
static void
sf_publish_view(SfWorker *w)
{
	uint64		requests, sent, received;

	sf_backend->traffic(&requests, &sent, &received);
	SpinLockAcquire(&sf_reg->mutex);
	strlcpy(sf_reg->endpoint, sf_backend->endpoint(), sizeof(sf_reg->endpoint));
	sf_reg->requests = requests;
	sf_reg->bytes_sent = sent;
	sf_reg->bytes_received = received;
	sf_reg->lease_id = w->lease;
	sf_reg->lease_ttl = w->ttl_s;
	sf_reg->deadline_ns = w->held >= 0 ? w->deadline_ns : 0;
	SpinLockRelease(&sf_reg->mutex);
	sf_note_replication(w);
}

/* Sets the grant every generating call checks. */
static void
sf_set_grant(SfWorker *w)
{
	uint64		grant = 0;

	if (w->held >= 0 && !w->expired)
	{
		int64		deadline_ms = w->deadline_ns / 1000000 - sf_coarse_res_ms;

		if (deadline_ms > 0)
			grant = ((uint64) (w->held + 1) << SF_GRANT_SHIFT) | ((uint64) deadline_ms & SF_GRANT_MASK);
	}
	/* a shard claimed or released: calls that passed the checks check again */
	if ((pg_atomic_exchange_u64(&sf_reg->grant, grant) >> SF_GRANT_SHIFT) !=
		(grant >> SF_GRANT_SHIFT))
		sf_invalidate_ready();
	/* the shard held, even past its deadline, for the shards record of standbys */
	pg_atomic_write_u32(&sf_shared->registry_shard, (uint32) (w->held + 1));
}

/* A renewal sent at sent_ns succeeded with ttl seconds. */
static void
sf_renewed(SfWorker *w, int64 sent_ns, int64 ttl)
{
	int64		ttl_ns = ttl * INT64CONST(1000000000);

	pg_atomic_write_u32(&sf_reg->failing, 0);
	w->ttl_s = ttl;
	w->renewed_ns = sent_ns;
	/* the margin: TTL/5 (see the file header) */
	w->deadline_ns = sent_ns + ttl_ns - ttl_ns / 5;
	w->next_keepalive_ns = sent_ns + ttl_ns / 3;
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->last_keepalive = sf_mono_to_timestamptz(sent_ns);
	SpinLockRelease(&sf_reg->mutex);
}

static void
sf_remember(SfWorker *w)
{
	char		record[160];
	int			len = snprintf(record, sizeof(record), "format 2\nshard " INT64_FORMAT
							   "\nlease " INT64_FORMAT "\nfloor_unix_ms " INT64_FORMAT "\n",
							   w->held, w->lease, w->floor_ms);
	snowflake::FileError error = {"", "", 0};
	bool		ok;

	LWLockAcquire(sf_shared->file_lock, LW_EXCLUSIVE);
	ok = snowflake::write_file_durably(kRegistryName, record, (size_t) len, &error);
	LWLockRelease(sf_shared->file_lock);
	if (!ok)
	{
		errno = error.err;
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not record the claimed snowflake shard: could not %s \"%s\": %m",
						error.operation, error.path),
				 errdetail("A restart may claim another shard.")));
	}
}

static void
sf_recall(SfWorker *w)
{
	char		buf[256];
	size_t		len;
	snowflake::FileError error = {"", "", 0};
	long long	shard, lease, floor_ms;

	w->remembered = -1;
	w->remembered_lease = 0;
	w->remembered_floor_ms = -2;
	if (snowflake::read_small_file(kRegistryFile, buf, sizeof(buf), &len, &error) !=
		snowflake::ReadResult::Ok)
		return;
	/* format 1 (1.1) has no floor: a restart then resumes above etcd's mark */
	if (sscanf(buf, "format 2\nshard %lld\nlease %lld\nfloor_unix_ms %lld", &shard, &lease,
			   &floor_ms) == 3 && floor_ms >= -1 &&
		floor_ms <= sf_layout.unix_ms_end_of(sf_layout.max_offset()))
		w->remembered_floor_ms = floor_ms;
	else if (sscanf(buf, "format 1\nshard %lld\nlease %lld", &shard, &lease) != 2)
		return;
	if (shard >= 0 && shard <= sf_layout.max_shard_id())
	{
		w->remembered = shard;
		w->remembered_lease = lease;
	}
	else
		w->remembered_floor_ms = -2;
}

static bool
sf_in_pool(int64 shard)
{
	return sf_pool != NULL && snowflake::shard_in_ranges(sf_pool->ranges, sf_pool->count, shard);
}

/* How many shards the pool has. */
static int64
sf_pool_size(void)
{
	int64		n = 0;

	for (int i = 0; i < sf_pool->count; i++)
		n += sf_pool->ranges[i].hi - sf_pool->ranges[i].lo + 1;
	return n;
}

/*
 * The transport failed, or the registry was refused (it cannot keep a
 * commit: one WARNING until it is taken again): note it and back off.  A
 * shard held stays held until its deadline either way.
 */
static void
sf_unreachable(SfWorker *w, const char *what)
{
	char		error[512];
	bool		refused = sf_backend->refused();

	pg_atomic_write_u32(&sf_reg->failing, 1);
	snprintf(error, sizeof(error), "%s: %s", what, sf_backend->error());
	if (refused && !w->refused_warned)
		ereport(WARNING,
				(errmsg("snowflake registry: refusing %s: %s", sf_registry_noun(), error),
				 errdetail("Every claim, renewal and freshness mark must survive a crash of the "
						   "registry, or two servers may hold the same shard."),
				 errhint("Set fsync = on on the registry's server (a reload); see the "
						 "operations guide.")));
	w->refused_warned = refused;
	sf_set_state(w->held >= 0 ? (w->expired ? REG_EXPIRED : REG_HELD) :
				 refused ? REG_UNSAFE : REG_UNREACHABLE, error);
}

static void
sf_backoff(SfWorker *w, int64 now_ns)
{
	int64		cap = Min((int64) 1000, (int64) sf_registry_lease * 1000 / 2);

	w->backoff_ms = w->backoff_ms == 0 ? 100 : Min(w->backoff_ms * 2, cap);
	w->retry_ns = now_ns + w->backoff_ms * 1000000;
}

/* Marks a shard the registry lists as held (one of this layout's) as taken. */
static void
sf_on_held(void *arg, int64 shard)
{
	SfWorker   *w = (SfWorker *) arg;

	if (shard >= 0 && shard <= sf_layout.max_shard_id())
		w->taken[shard / 8] |= (uint8) (1 << (shard % 8));
}

/*
 * Checks the freshness mark read from the registry.  A mark that is not a plain
 * number, lies outside what the layout can represent, or lies further ahead
 * of the clock than any holder with sane settings could have published (the
 * lease, the lead, the longest wait and the publication margin) was edited by
 * hand or written for another layout: resuming above it could stop
 * generation for years and would write it into the durable mark, so the
 * shard is refused (true: usable, with *fresh_ms; -1 when absent).
 */
static bool
sf_check_fresh(int64 shard, const char *value, bool found, int64 *fresh_ms, char *why,
			   size_t why_len)
{
	char	   *end;
	long long	v;
	int64		now = sf_wall_ms();
	int64		bound = (int64) sf_registry_lease * 1000 + sf_floor_bound_ms() + SF_PUBLISH_MARGIN_MS;
	char		key[300];

	*fresh_ms = -1;
	if (!found)
		return true;
	sf_backend->describe_mark(shard, key, sizeof(key));
	errno = 0;
	v = strtoll(value, &end, 10);
	if (end == value || *end != '\0' || errno != 0 || v < 0)
		snprintf(why, why_len, "The freshness mark %s is \"%.40s\", not a time in Unix "
				 "milliseconds.", key, value);
	else if (v > sf_layout.unix_ms_end_of(sf_layout.max_offset()))
		snprintf(why, why_len, "The freshness mark %s is %lld, beyond the last time this "
				 "layout can represent.", key, v);
	else if (v > now + bound)
		snprintf(why, why_len, "The freshness mark %s is %lld, " INT64_FORMAT " ms ahead of the "
				 "clock; no holder publishes more than " INT64_FORMAT " ms ahead.", key, v,
				 (int64) v - now, bound);
	else
	{
		*fresh_ms = v;
		return true;
	}
	return false;
}

/*
 * Takes the registry's latest clock sample, if an answer carried one, into
 * the estimate of this server's clock minus the registry's (core/skew.hpp),
 * and publishes the estimate to the view.
 */
static void
sf_note_skew(SfWorker *w)
{
	int64		lo, hi;
	const char *endpoint = sf_backend->endpoint();

	if (!sf_backend->clock_sample(&lo, &hi))
		return;
	if (strcmp(endpoint, w->skew_endpoint) != 0)
	{
		/* another member or server: another clock */
		snowflake::skew_forget(w->skew);
		strlcpy(w->skew_endpoint, endpoint, sizeof(w->skew_endpoint));
	}
	snowflake::skew_add(w->skew, sf_clock_ns(CLOCK_MONOTONIC), lo, hi);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->skew_known = true;
	sf_reg->skew_ms = snowflake::skew_mid_ms(w->skew);
	sf_reg->skew_error_ms = snowflake::skew_error_ms(w->skew);
	SpinLockRelease(&sf_reg->mutex);
}

/* Whether this server's clock is surely further from the registry's than allowed. */
static bool
sf_skew_too_large(SfWorker *w)
{
	return snowflake::skew_beyond(w->skew, sf_registry_max_skew);
}

/* The skew as a sentence, for the logs and last_error. */
static void
sf_describe_skew(SfWorker *w, char *buf, size_t len)
{
	int64		mid = snowflake::skew_mid_ms(w->skew);

	snprintf(buf, len, "this server's clock is " INT64_FORMAT " ms %s %s's (give or take "
			 INT64_FORMAT " ms), more than snowflake.registry_max_skew (%d ms)",
			 mid < 0 ? -mid : mid, mid < 0 ? "behind" : "ahead of", sf_registry_noun(),
			 snowflake::skew_error_ms(w->skew), sf_registry_max_skew);
}

/* A holder whose clock drifts keeps its shard (the freshness mark keeps IDs unique) but warns. */
static void
sf_watch_skew(SfWorker *w)
{
	char		what[300];

	if (sf_skew_too_large(w))
	{
		if (!w->skew_warned)
		{
			sf_describe_skew(w, what, sizeof(what));
			ereport(WARNING,
					(errmsg("snowflake registry: %s", what),
					 errdetail("This server keeps shard " INT64_FORMAT "; IDs stay unique, but "
							   "their order across shards follows each server's clock.",
							   w->held),
					 errhint("Check the time synchronisation (NTP) of this server and of the "
							 "registry.")));
			w->skew_warned = true;
		}
	}
	else if (w->skew_warned && w->skew.known)
	{
		ereport(LOG,
				(errmsg("snowflake registry: this server's clock is back within "
						"snowflake.registry_max_skew of %s's", sf_registry_noun())));
		w->skew_warned = false;
	}
}

/*
 * Tries to create the holder key of one shard (SfClaimOutcome says what came
 * of it).
 */
static SfClaimOutcome
sf_try_shard(SfWorker *w, int64 shard, int64 *fresh_ms, char *holder, size_t holder_len)
{
	SfClaim		c;

	if (sf_backend->claim(shard, w->lease, w->identity, &c) != SF_BACKEND_OK)
		return SfClaimOutcome::Unreachable;
	if (c.paused_until_ms > 0)
	{
		char		since[40], until[40];

		snowflake::format_utc(c.failover_ms, since, sizeof(since));
		snowflake::format_utc(c.paused_until_ms, until, sizeof(until));
		snprintf(holder, holder_len, "%s failed over (timeline " INT64_FORMAT ", first seen "
				 "%s): claims wait until %s, when every holder of the old primary is past its "
				 "deadline", sf_registry_noun(), (int64) c.timeline, since, until);
		if (w->failover_logged != c.failover_ms)
		{
			ereport(LOG,
					(errmsg("snowflake registry: %s", holder),
					 errdetail("A standby promoted after asynchronous replication may lack the "
							   "last heartbeats, freshness marks and claims of the old primary.")));
			w->failover_logged = c.failover_ms;
		}
		return SfClaimOutcome::FailoverPause;
	}
	w->epoch_floor_ms = c.epoch_floor_ms;
	strlcpy(holder, c.holder, holder_len);
	if (!c.created && c.holder_lease != 0 && c.holder_lease == w->lease)
	{
		/*
		 * Under this server's current lease: our own claim, whose answer was
		 * lost (a proxy or a timeout dropped it after the registry applied
		 * it).  It is ours, and the mark was read in the same transaction.
		 */
		ereport(LOG,
				(errmsg("snowflake registry: shard " INT64_FORMAT " is already held under this "
						"server's lease %" PRIx64 "; taking it (the answer to an earlier claim "
						"was lost)", shard, (uint64) w->lease)));
		c.created = true;
	}
	if (!c.created)
	{
		/*
		 * Our own holder from before a crash, under the lease we recorded:
		 * that server is gone (this data directory is ours), so revoke its
		 * lease and try again.
		 */
		if (c.holder_lease != 0 && c.holder_lease == w->remembered_lease &&
			strcmp(c.holder, w->identity) == 0)
		{
			ereport(LOG,
					(errmsg("snowflake registry: revoking lease %" PRIx64 " of this server's "
							"previous run, which still holds shard " INT64_FORMAT,
							(uint64) c.holder_lease, shard)));
			w->remembered_lease = 0;
			if (sf_backend->revoke(c.holder_lease) == SF_BACKEND_FAILED)
				return SfClaimOutcome::Unreachable;
			w->reclaimed_own = shard == w->remembered;
			return sf_try_shard(w, shard, fresh_ms, holder, holder_len);
		}
		return SfClaimOutcome::HeldElsewhere;
	}
	if (!sf_check_fresh(shard, c.mark, c.mark_found, fresh_ms, holder, holder_len))
	{
		bool		done = false;

		ereport(LOG,
				(errmsg("snowflake registry: refusing shard " INT64_FORMAT, shard),
				 errdetail("%s", holder),
				 errhint("Set the mark to a time (Unix ms) at or above the last ID any server "
						 "issued on that shard, or remove it only if no server ever did.")));
		/* give the shard back; if the registry cannot be told, drop the lease so it expires */
		if (sf_backend->give_back(shard, w->lease, &done) != SF_BACKEND_OK)
		{
			(void) sf_backend->revoke(w->lease);
			w->lease = 0;
		}
		return SfClaimOutcome::MarkRefused;
	}
	return SfClaimOutcome::Claimed;
}

/* Publishes a freshness mark (Unix ms); false if it could not. */
static bool
sf_publish_mark(SfWorker *w, int64 mark_ms, bool *lost)
{
	bool		applied = false;

	*lost = false;
	if (sf_backend->publish(w->held, w->lease, mark_ms, &applied) != SF_BACKEND_OK)
	{
		sf_unreachable(w, "publishing the freshness mark");
		return false;
	}
	pg_atomic_write_u32(&sf_reg->failing, 0);
	if (!applied)
	{
		*lost = true;
		return false;
	}
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->published_ms = mark_ms;
	SpinLockRelease(&sf_reg->mutex);
	return true;
}

/* Gives up the held shard locally: nothing more is generated for it. */
static void
sf_drop(SfWorker *w, const char *why)
{
	if (w->held >= 0)
		ereport(LOG,
				(errmsg("snowflake registry: lost shard " INT64_FORMAT, w->held),
				 errdetail("%s", why)));
	w->held = -1;
	w->expired = false;
	sf_set_grant(w);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_CLAIMING;
	sf_reg->published_ms = -1;	/* the view shows no mark of a shard no longer held */
	SpinLockRelease(&sf_reg->mutex);
}

/* The lease is gone in etcd: drop the shard and start over with a new lease. */
static void
sf_lease_gone(SfWorker *w)
{
	char		why[300];

	snprintf(why, sizeof(why), "The lease %" PRIx64 " expired in the registry (%s); the shard "
			 "may now belong to another server.", (uint64) w->lease, sf_backend->error());
	if (w->held >= 0)
		w->remembered = w->held;
	sf_drop(w, why);
	w->lease = 0;
	w->unanswered = -1;
	w->retry_ns = 0;
	w->backoff_ms = 0;
}

/*
 * The freshness mark that covers every ID this server may issue under its
 * current lease: the lease deadline as wall-clock time, plus max_clock_lead
 * (IDs may run that far ahead of the clock), plus a margin; at least
 * floor_offset + the margin.  Generation stops at the deadline (fencing), so
 * with this mark published it lasts exactly to the deadline, whatever
 * happens to etcd.  A successor claims only once the lease has expired in
 * etcd, at least TTL/5 after the deadline, so with clocks in step it finds
 * the mark already behind its clock and does not wait.
 */
static int64
sf_fresh_target(SfWorker *w, int64 floor_offset)
{
	int64		now = sf_now_offset();
	int64		to_deadline = Max((int64) 0, (w->deadline_ns - sf_clock_ns(CLOCK_MONOTONIC)) / 1000000);
	int64		target = Max(now + sf_layout.units(to_deadline) + 1 + sf_lead_units(), floor_offset) +
		Max(sf_layout.units(SF_PUBLISH_MARGIN_MS), (int64) 1);

	return Min(target, sf_layout.max_offset());
}

/*
 * Publishes a mark covering the lease (sf_fresh_target), and lets the slot
 * use it.  False when it was not published (the shard may have been lost).
 */
static bool
sf_publish_ahead(SfWorker *w, int64 floor_offset)
{
	int64		target = sf_fresh_target(w, floor_offset);
	bool		lost;

	/* the mark records the last millisecond of its unit */
	if (sf_publish_mark(w, sf_layout.unix_ms_end_of(target), &lost))
	{
		/* the slot may reserve up to it now (under its lock, as reserved_offset) */
		LWLockAcquire(w->slot->lock, LW_EXCLUSIVE);
		pg_atomic_write_u64(&w->slot->cap, (uint64) target);
		LWLockRelease(w->slot->lock);
		sf_reraise_reserved();
		return true;
	}
	if (lost)
	{
		w->remembered = w->held;
		sf_drop(w, "The shard's holder key is no longer attached to this server's lease.");
		w->retry_ns = 0;
	}
	return false;
}

/* Whether a shard's mark was refused lately (sf_try_shard: MarkRefused). */
static bool
sf_refused_now(SfWorker *w, int64 shard, int64 now_ns)
{
	for (int i = 0; i < SF_MAX_REFUSED; i++)
		if (w->refused[i] == shard && w->refused_until_ns[i] > now_ns)
			return true;
	return false;
}

/* Remembers a refused shard until the lease or 10 s have passed, whichever is longer. */
static void
sf_note_refused(SfWorker *w, int64 shard, int64 now_ns)
{
	int			slot = 0;

	for (int i = 0; i < SF_MAX_REFUSED; i++)
		if (w->refused[i] == shard || w->refused_until_ns[i] < w->refused_until_ns[slot])
			slot = i;
	w->refused[slot] = shard;
	w->refused_until_ns[slot] = now_ns + Max((int64) 10, (int64) sf_registry_lease) * INT64CONST(1000000000);
}

/*
 * Makes sure the worker has a lease: grants one when it has none.  False when
 * the registry did not answer.
 */
static bool
sf_ensure_lease(SfWorker *w, int64 now_ns)
{
	int64		id, ttl;

	if (w->lease != 0)
		return true;
	if (sf_backend->grant(sf_registry_lease, &id, &ttl) != SF_BACKEND_OK)
	{
		sf_unreachable(w, "granting a lease");
		sf_backoff(w, now_ns);
		return false;
	}
	w->lease = id;
	sf_renewed(w, sf_backend->sent_ns(), ttl);
	return true;
}

/*
 * The held shards, and with them the registry's clock: a server whose
 * clock is surely further from it than snowflake.registry_max_skew
 * claims nothing (its IDs would carry its wrong time, and its marks
 * would hold up the shard's next holder).  True when the claim may go on.
 */
static bool
sf_list_held_and_check_skew(SfWorker *w, int64 now_ns)
{
	char		what[300];
	bool		first;

	memset(w->taken, 0, (size_t) (sf_layout.max_shard_id() / 8 + 1));
	if (sf_backend->list_held(sf_on_held, w) != SF_BACKEND_OK)
	{
		sf_unreachable(w, "listing the held shards");
		sf_backoff(w, now_ns);
		return false;
	}
	sf_note_skew(w);
	if (!sf_skew_too_large(w))
		return true;
	sf_describe_skew(w, what, sizeof(what));
	SpinLockAcquire(&sf_reg->mutex);
	first = sf_reg->state != REG_SKEW;
	sf_reg->state = REG_SKEW;
	sf_reg->shard = (int32) (sf_shard_id >= 0 ? sf_shard_id : -1);
	sf_reg->holder[0] = '\0';
	snprintf(sf_reg->last_error, sizeof(sf_reg->last_error), "%s", what);
	SpinLockRelease(&sf_reg->mutex);
	if (first)
		ereport(LOG,
				(errmsg("snowflake registry: not claiming a shard: %s", what),
				 errhint("Check the time synchronisation (NTP) of this server and of the "
						 "registry; the worker checks again every few seconds.")));
	w->retry_ns = now_ns + 5 * INT64CONST(1000000000);
	return false;
}

/*
 * An explicit shard whose mark was refused lately is not claimed
 * again until the refusal is forgotten: a claim and a give-back every
 * backoff would keep a holder key flickering in etcd.  The state and
 * last_error set by the refusal stay.  False when there is nothing to try.
 */
static bool
sf_pick_explicit(SfWorker *w, int64 now_ns, SfCandidates *cand)
{
	if (sf_refused_now(w, sf_shard_id, now_ns))
	{
		sf_backoff(w, now_ns);
		return false;
	}
	cand->shard[cand->count++] = sf_shard_id;
	return true;
}

/* Whether shard s of the pool is held by some server (in the last listing). */
static bool
sf_taken(SfWorker *w, int64 s)
{
	return (w->taken[s / 8] & (1 << (s % 8))) != 0;
}

/*
 * Candidates of the pool: the shard of a claim that got no answer, the
 * remembered one, then free shards from a random one on, wrapping around to
 * the first (so that one round tries every free shard, up to 8).  False when every
 * free shard was refused lately (the state says so) and there is nothing to
 * try.
 */
static bool
sf_pick_from_pool(SfWorker *w, int64 now_ns, SfCandidates *cand)
{
	const int	max = (int) lengthof(cand->shard);
	int64		nfree = 0, nrefused = 0, pick;

	/*
	 * A claim that got no answer may have been applied: the registry then
	 * lists the shard as held, under this server's own lease.  Try it
	 * first, so that it is taken (sf_try_shard) rather than left held
	 * and unused for as long as this server lives.
	 */
	if (w->unanswered >= 0 && w->unanswered != w->remembered && sf_in_pool(w->unanswered))
		cand->shard[cand->count++] = w->unanswered;
	if (w->remembered >= 0 && sf_in_pool(w->remembered) &&
		!sf_refused_now(w, w->remembered, now_ns))
		cand->shard[cand->count++] = w->remembered;
	for (int i = 0; i < sf_pool->count; i++)
		for (int64 s = sf_pool->ranges[i].lo; s <= sf_pool->ranges[i].hi; s++)
			if (!sf_taken(w, s) && !sf_import_shard(s))	/* as the walk below */
			{
				if (sf_refused_now(w, s, now_ns))
					nrefused++;
				else
					nfree++;
			}
	/*
	 * From a random free shard (servers starting together rarely collide)
	 * to the end of the pool, then from its start to that shard.
	 */
	pick = nfree > 0 ? (int64) (random() % nfree) : 0;
	for (int pass = 0; pass < 2; pass++)
	{
		int64		index = 0;	/* of the free shard, in the pool's order */

		for (int i = 0; i < sf_pool->count && cand->count < max; i++)
			for (int64 s = sf_pool->ranges[i].lo; s <= sf_pool->ranges[i].hi && cand->count < max; s++)
			{
				if (sf_taken(w, s) || sf_refused_now(w, s, now_ns) || sf_import_shard(s))
					continue;	/* held, refused lately, or kept for imports */
				if ((pass == 0) != (index++ >= pick))
					continue;	/* the other pass's part */
				if (s != w->remembered && s != w->unanswered)
					cand->shard[cand->count++] = s;
			}
	}
	cand->full = nfree == 0 && nrefused == 0;
	if (cand->count == 0 && nrefused > 0 && nfree == 0)
	{
		/* every free shard was refused lately: say so */
		SpinLockAcquire(&sf_reg->mutex);
		sf_reg->state = REG_REFUSED;
		sf_reg->shard = -1;
		sf_reg->holder[0] = '\0';
		SpinLockRelease(&sf_reg->mutex);
		sf_backoff(w, now_ns);
		return false;
	}
	return true;
}

/*
 * Tries the candidates in order, one claim transaction each, until one is
 * claimed, the registry does not answer, or it takes no claim yet.  Returns
 * the outcome of the last one tried (HeldElsewhere when none was: the pool
 * is full or no slot is left), with *tried that shard and *fresh_ms its mark.
 */
static SfClaimOutcome
sf_try_candidates(SfWorker *w, int64 now_ns, const SfCandidates *cand, int64 *tried,
				  int64 *fresh_ms, char *holder, size_t holder_len)
{
	SfClaimOutcome outcome = SfClaimOutcome::HeldElsewhere;

	for (int i = 0; i < cand->count; i++)
	{
		/*
		 * A shard this server has no slot for could not be generated for
		 * (snowflake.max_shards used up by earlier claims): never claim it,
		 * since giving it a slot after the claim would fail with the lease
		 * held.
		 */
		if (!sf_slot_available(cand->shard[i]))
		{
			snprintf(holder, holder_len, "no slot left on this server "
					 "(snowflake.max_shards = %d; restart it to free the slots)",
					 sf_max_shards);
			continue;
		}
		w->reclaimed_own = false;
		*tried = cand->shard[i];
		outcome = sf_try_shard(w, cand->shard[i], fresh_ms, holder, holder_len);
		if (outcome == SfClaimOutcome::FailoverPause)
			break;				/* no claim in this epoch yet, whatever the shard */
		if (outcome == SfClaimOutcome::MarkRefused)
		{
			/* its mark is refused: remember it, and try the next if the lease is left */
			sf_note_refused(w, cand->shard[i], now_ns);
			if (w->lease == 0)
				break;
			continue;
		}
		if (outcome != SfClaimOutcome::HeldElsewhere)
			break;				/* claimed, or the registry did not answer */
	}
	return outcome;
}

/* The registry failed over lately and takes no claim yet: say so, and try again in a second. */
static void
sf_wait_failover(SfWorker *w, int64 now_ns, const char *why)
{
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_FAILOVER;
	sf_reg->shard = (int32) (sf_shard_id >= 0 ? sf_shard_id : -1);
	sf_reg->holder[0] = '\0';
	strlcpy(sf_reg->last_error, why, sizeof(sf_reg->last_error));
	SpinLockRelease(&sf_reg->mutex);
	w->retry_ns = now_ns + INT64CONST(1000000000);
}

/*
 * Nothing was claimed (HeldElsewhere or MarkRefused): says why in the state
 * (the explicit shard held elsewhere, the pool full, its free shards taken
 * meanwhile, or a refused mark), and backs off.
 */
static void
sf_explain_unclaimed(SfWorker *w, int64 now_ns, SfClaimOutcome outcome, bool full,
					 const char *holder)
{
	char		detail[512];
	bool		refused = outcome == SfClaimOutcome::MarkRefused;
	SfRegState	state = refused ? REG_REFUSED :
		sf_shard_id >= 0 ? REG_CLAIMING : REG_POOL_FULL;

	if (refused)
		snprintf(detail, sizeof(detail), "%s", holder);
	else if (sf_shard_id >= 0)
		snprintf(detail, sizeof(detail), "Shard %d is held by %s.", sf_shard_id, holder);
	else if (full)
		snprintf(detail, sizeof(detail), "All " INT64_FORMAT " shards of the pool \"%s\" "
				 "are held by other servers (%s \"%s\").",
				 sf_pool_size(), sf_registry_shards, sf_registry_prefix_noun(),
				 sf_registry_prefix);
	else
		snprintf(detail, sizeof(detail), "The free shards of the pool \"%s\" were taken "
				 "by other servers while this one tried them; the last by %s.",
				 sf_registry_shards, holder);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = state;
	sf_reg->shard = (int32) (sf_shard_id >= 0 ? sf_shard_id : -1);
	strlcpy(sf_reg->holder, refused ? "" : detail, sizeof(sf_reg->holder));
	strlcpy(sf_reg->last_error, detail, sizeof(sf_reg->last_error));
	SpinLockRelease(&sf_reg->mutex);
	sf_backoff(w, now_ns);
}

/*
 * Claimed: resume strictly above the freshness mark, then publish ahead.
 *
 * Except after a crash of this very server: it revoked its own lease,
 * under which the holder key stayed since its claim, so nobody else
 * issued on the shard since then; every ID issued before that claim lies
 * at or below the floor it recorded (pg_snowflake/registry), and every ID
 * it issued itself at or below its own durable mark, which every slot
 * resumes above anyway.  The mark in etcd is only what it had reserved up
 * to its lease deadline; resuming above it would make the restarted
 * server wait up to a lease for nothing.  Not when the data directory
 * came from a backup (its durable mark may be older than what was issued
 * after the backup).
 */
static void
sf_take_shard(SfWorker *w, int64 shard, int64 fresh_ms)
{
	bool		own = w->reclaimed_own && w->remembered_floor_ms >= -1 &&
		w->remembered_floor_ms <= fresh_ms && shard == w->remembered &&
		!sf_shared->started_from_backup;
	/*
	 * After a failover of the registry, a claim of another server that
	 * the promoted standby lacks may have come between: the end of the
	 * pause covers its IDs (and lies in the past: no wait).
	 */
	int64		floor_ms = own ? Max(w->remembered_floor_ms, w->epoch_floor_ms) : fresh_ms;
	int64		fresh_offset = floor_ms >= 0 ? sf_layout.offset_of(floor_ms) : -1;
	ShardSlot  *slot = sf_live_slot(shard, false, false);
	int64		last;
	char		mark[40];

	w->floor_ms = floor_ms;
	LWLockAcquire(slot->lock, LW_EXCLUSIVE);
	sf_slot_resume_above(slot, fresh_offset);
	last = sf_slot_last(slot, NULL);
	fresh_offset = Max(fresh_offset, last);
	/* the cap of the shard is what is published for it: nothing new yet */
	pg_atomic_write_u64(&slot->cap, (uint64) Max(fresh_offset, (int64) -1));
	LWLockRelease(slot->lock);
	w->remembered_floor_ms = -2;
	w->held = shard;
	w->slot = slot;
	w->remembered = shard;
	w->expired = false;
	w->failing = false;
	w->backoff_ms = 0;
	w->publish_retry_ns = 0;
	w->publish_backoff_ms = 0;
	sf_remember(w);

	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_HELD;
	sf_reg->shard = (int32) shard;
	sf_reg->holder[0] = '\0';
	sf_reg->last_error[0] = '\0';	/* the errors before the claim are over */
	sf_reg->published_ms = fresh_ms;
	SpinLockRelease(&sf_reg->mutex);

	if (floor_ms >= 0)
		snowflake::format_utc(floor_ms, mark, sizeof(mark));
	ereport(LOG,
			(errmsg("snowflake registry: claimed shard " INT64_FORMAT " under lease %"
					PRIx64, shard, (uint64) w->lease),
			 own ?
			 errdetail("This server held it before it stopped without releasing it: "
					   "IDs resume above its own durable mark and the floor of its "
					   "earlier claim (%s).", floor_ms >= 0 ? mark : "none") :
			 errdetail("IDs resume above the shard's freshness mark (%s).",
					   floor_ms >= 0 ? mark : "none")));
	sf_publish_ahead(w, fresh_offset);
	if (w->held >= 0)
		sf_set_grant(w);
}

/* Claims a shard: the explicit one, the remembered one, or a free one of the pool. */
static void
sf_claim(SfWorker *w, int64 now_ns)
{
	SfCandidates cand = {{0}, 0, false};
	int64		tried = -1;
	int64		fresh_ms = -1;
	char		holder[256] = "";
	SfClaimOutcome outcome;

	if (!sf_ensure_lease(w, now_ns) || !sf_list_held_and_check_skew(w, now_ns))
		return;
	if (!(sf_shard_id >= 0 ? sf_pick_explicit(w, now_ns, &cand) :
		  sf_pick_from_pool(w, now_ns, &cand)))
		return;
	outcome = sf_try_candidates(w, now_ns, &cand, &tried, &fresh_ms, holder, sizeof(holder));
	if (outcome == SfClaimOutcome::Unreachable)
	{
		/* under this lease only: a new lease owns nothing yet */
		w->unanswered = w->lease != 0 && cand.count > 0 ? tried : -1;
		sf_unreachable(w, "claiming a shard");
		sf_backoff(w, now_ns);
		return;
	}
	w->unanswered = -1;
	if (outcome == SfClaimOutcome::FailoverPause)
		sf_wait_failover(w, now_ns, holder);
	else if (outcome == SfClaimOutcome::Claimed)
		sf_take_shard(w, tried, fresh_ms);
	else
		sf_explain_unclaimed(w, now_ns, outcome, cand.full, holder);
}

/* Keeps the lease alive; handles its loss and its return. */
static void
sf_keep_lease(SfWorker *w, int64 now_ns)
{
	int64		ttl = 0;
	bool		recovered;
	SfBackendResult r;

	if (now_ns < w->next_keepalive_ns)
		return;
	/* while the lease is valid, no request outlasts its deadline, so the loop notes it on time */
	sf_backend->set_budget(w->held >= 0 && !w->expired ? w->deadline_ns : 0);
	r = sf_backend->renew(w->lease, &ttl);
	sf_backend->set_budget(0);
	if (r == SF_BACKEND_NOT_FOUND)
	{
		sf_lease_gone(w);
		return;
	}
	if (r == SF_BACKEND_FAILED)
	{
		if (!w->failing)
			ereport(LOG,
					(errmsg("snowflake registry: could not renew lease %" PRIx64 ": %s",
							(uint64) w->lease, sf_backend->error()),
					 errdetail("Generation goes on until the lease deadline, in %d ms.",
							   (int) Max((int64) 0, (w->deadline_ns - now_ns) / 1000000))));
		w->failing = true;
		sf_unreachable(w, "renewing the lease");
		/* try again soon: a tenth of the TTL, at least 100 ms */
		w->next_keepalive_ns = now_ns + Max((int64) 100, (int64) sf_registry_lease * 100) * 1000000;
		return;
	}

	sf_renewed(w, sf_backend->sent_ns(), ttl);
	recovered = w->failing || w->expired;
	w->failing = false;
	if (w->held >= 0 && w->expired)
	{
		bool		found = false;
		int64		lease = 0;

		/* the lease survived: make sure the claim is still held under it */
		if (sf_backend->holder(w->held, &found, &lease) != SF_BACKEND_OK)
		{
			sf_unreachable(w, "checking the holder key");
			return;
		}
		if (!found || lease != w->lease)
		{
			sf_drop(w, "The lease was renewed after its deadline, but the shard's holder "
					"key is no longer attached to it.");
			return;
		}
		w->expired = false;
		ereport(LOG,
				(errmsg("snowflake registry: regained shard " INT64_FORMAT, w->held),
				 errdetail("Lease %" PRIx64 " was renewed after its deadline had passed; "
						   "generation resumes.", (uint64) w->lease)));
	}
	if (w->held >= 0)
		sf_set_state(REG_HELD, NULL);
	if (w->held >= 0 && recovered)
	{
		/* the errors of the outage are over */
		SpinLockAcquire(&sf_reg->mutex);
		sf_reg->last_error[0] = '\0';
		SpinLockRelease(&sf_reg->mutex);
	}
	sf_set_grant(w);
}

/*
 * Keeps the freshness mark at the lease deadline (sf_fresh_target), and
 * beyond it when a waiting call asks for more: once per renewal, whether or
 * not IDs are being issued, so that an idle holder too generates up to its
 * deadline whatever happens to the registry (docs/operations.md, "The
 * freshness mark").  A publication that fails is retried with a backoff
 * (100 ms doubling to 1 s), not at every tick.
 */
static void
sf_keep_fresh(SfWorker *w, int64 now_ns)
{
	int64		published = (int64) pg_atomic_read_u64(&w->slot->cap);
	int64		wanted = (int64) pg_atomic_read_u64(&sf_reg->wanted) - 1;
	int64		slack = Max(sf_layout.units(SF_PUBLISH_MARGIN_MS / 2), (int64) 1);
	int64		reserved;
	int64		last;
	snowflake::GeneratorState gen;

	if (now_ns < w->publish_retry_ns)
		return;
	sf_slot_snapshot(w->slot, &gen, &reserved, NULL);
	last = gen.last_offset;
	if (wanted <= published && published >= sf_fresh_target(w, last) - slack)
		return;					/* it covers the deadline and every waiting call */
	if (sf_publish_ahead(w, Max(wanted, last)))
		w->publish_backoff_ms = 0;
	else
	{
		w->publish_backoff_ms = w->publish_backoff_ms == 0 ? 100 :
			Min(w->publish_backoff_ms * 2, (int64) 1000);
		w->publish_retry_ns = now_ns + w->publish_backoff_ms * 1000000;
	}
}

/*
 * Releases the held shard: stops generation, lowers the mark to the last ID
 * issued, publishes it, and revokes the lease so the shard is free at once.
 */
static void
sf_release(SfWorker *w)
{
	int64		final_offset;
	bool		lost;

	if (w->held >= 0)
	{
		int64		shard = w->held;

		w->expired = true;		/* grant off first */
		sf_set_grant(w);
		LWLockAcquire(w->slot->lock, LW_EXCLUSIVE);
		/* lowers reserved_offset to the last ID's timestamp, calls in flight too */
		final_offset = sf_slot_seal(w->slot);
		/* from here on no reservation goes above the final mark */
		pg_atomic_write_u64(&w->slot->cap, (uint64) final_offset);
		LWLockRelease(w->slot->lock);
		/*
		 * The mark was published ahead while the shard was held, idle or
		 * not: bring it down to what was really issued, so that the next
		 * holder need not wait for it.  Nothing issued on a shard that had no
		 * mark: the epoch's first unit.
		 */
		(void) sf_publish_mark(w, sf_layout.unix_ms_end_of(Max(final_offset, (int64) 0)), &lost);
		ereport(LOG,
				(errmsg("snowflake registry: released shard " INT64_FORMAT, shard)));
		w->held = -1;
		w->expired = false;
	}
	if (w->lease != 0)
		(void) sf_backend->revoke(w->lease);
	w->lease = 0;
	w->unanswered = -1;
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->state = REG_CLAIMING;
	sf_reg->deadline_ns = 0;
	SpinLockRelease(&sf_reg->mutex);
}

static void
sf_worker_exit(int, Datum)
{
	if (sf_reg == NULL)
		return;
	pg_atomic_write_u64(&sf_reg->grant, 0);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->worker_latch = NULL;
	SpinLockRelease(&sf_reg->mutex);
}

/*
 * The worker's own memory, with its identity (this host and port, data
 * directory and system identifier; the host's name into host) and the shard
 * it held before (pg_snowflake/registry).
 */
static SfWorker *
sf_worker_new(char *host, size_t host_len)
{
	SfWorker   *w;

	w = (SfWorker *) MemoryContextAllocZero(TopMemoryContext, sizeof(SfWorker));
	w->taken = (uint8 *) MemoryContextAllocZero(TopMemoryContext,
												(Size) (sf_layout.max_shard_id() / 8 + 1));
	w->held = -1;
	w->unanswered = -1;
	srandom((unsigned int) (MyProcPid ^ sf_clock_ns(CLOCK_MONOTONIC)));
	{
		struct timespec res;

		if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
			sf_coarse_res_ms = Max((int64) 1, (int64) ((res.tv_nsec + 999999) / 1000000));
	}
	if (gethostname(host, host_len) != 0)
		strlcpy(host, "unknown", host_len);
	host[host_len - 1] = '\0';
	snprintf(w->identity, sizeof(w->identity),
			 "host %s, port %d, data directory %s, system identifier " UINT64_FORMAT,
			 host, PostPortNumber, DataDir, GetSystemIdentifier());
	sf_recall(w);
	return w;
}

/*
 * Opens the registry's client (backend.hpp); exits if it cannot, to be
 * restarted by the postmaster.
 */
static void
sf_open_backend(const char *host)
{
	/* requests must fit well within a keep-alive interval (TTL/3) */
	long		timeout_ms = (long) Min((int64) 2000,
										Max((int64) 200, (int64) sf_registry_lease * 1000 / 8));
	char		err[256];
	char		share[MAXPGPATH];
	char		script[MAXPGPATH + 64];
	SfBackendConfig config;

	get_share_path(my_exec_path, share);
	snprintf(script, sizeof(script), "%s/extension/snowflake_registry.sql", share);
	memset(&config, 0, sizeof(config));
	config.target = sf_registry;
	config.prefix = sf_registry_prefix;
	config.datacenters = sf_layout.datacenter_bits > 0;
	config.datacenter = Max(sf_datacenter_id, 0);
	config.worker_bits = sf_registry_worker_bits();
	config.timeout_ms = timeout_ms;
	config.schema_script = script;
	config.host = host;
	config.pid = PostmasterPid;
	config.max_clock_lead_ms = &sf_max_clock_lead;
	if (!sf_backend->open(&config, err, sizeof(err)))
	{
		ereport(LOG,
				(errmsg("snowflake registry: could not set up the %s client: %s",
						sf_backend->name, err)));
		proc_exit(1);			/* restarted by the postmaster */
	}
}

/* Acts on a shutdown request (release the shard and exit) and a reload of the settings. */
static void
sf_handle_signals(SfWorker *w)
{
	if (ShutdownRequestPending)
	{
		/*
		 * Release the shard.  Exit 1 so that the postmaster restarts the
		 * worker if it is still running (pg_terminate_backend): it then
		 * claims again.  At shutdown nothing is restarted.
		 */
		sf_release(w);
		sf_publish_view(w);
		sf_backend->close();
		proc_exit(1);
	}
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		if (w->held >= 0 && sf_shard_id >= 0 && sf_shard_id != w->held)
		{
			ereport(LOG,
					(errmsg("snowflake registry: snowflake.shard_id is now %d; releasing "
							"shard " INT64_FORMAT, sf_shard_id, w->held)));
			sf_release(w);
			w->retry_ns = 0;
		}
	}
}

/* A suspended machine: CLOCK_MONOTONIC stood still, the lease did not. */
static void
sf_check_suspend(SfWorker *w, int64 now_ns)
{
	int64		suspend = sf_clock_ns(CLOCK_BOOTTIME) - now_ns;

	if (suspend - w->suspend_ref_ns > 50 * INT64CONST(1000000) && w->held >= 0)
	{
		ereport(LOG,
				(errmsg("snowflake registry: the system was suspended for " INT64_FORMAT
						" ms; generation waits for the lease to be renewed",
						(suspend - w->suspend_ref_ns) / 1000000)));
		w->deadline_ns = now_ns;
		w->next_keepalive_ns = now_ns;
	}
	w->suspend_ref_ns = suspend;
}

/* Stops generation when the lease deadline of the held shard has passed. */
static void
sf_check_deadline(SfWorker *w, int64 now_ns)
{
	if (w->held >= 0 && !w->expired && now_ns >= w->deadline_ns)
	{
		w->expired = true;
		sf_set_grant(w);
		sf_set_state(REG_EXPIRED, NULL);
		ereport(LOG,
				(errmsg("snowflake registry: the lease deadline of shard " INT64_FORMAT
						" passed; generation stops until the lease is renewed", w->held)));
	}
}

/*
 * One tick of the worker: signals, a suspend, the deadline and the lease, a
 * claim when nothing is held, the freshness mark, the registry's clock, and
 * the view.
 */
static void
sf_worker_tick(SfWorker *w)
{
	int64		now_ns;

	CHECK_FOR_INTERRUPTS();
	sf_handle_signals(w);
	now_ns = sf_clock_ns(CLOCK_MONOTONIC);
	sf_check_suspend(w, now_ns);
	if (w->held >= 0 || w->lease != 0)
	{
		sf_check_deadline(w, now_ns);
		sf_keep_lease(w, now_ns);
	}
	if (w->held < 0 && now_ns >= w->retry_ns)
		sf_claim(w, now_ns);
	if (w->held >= 0 && !w->expired)
		sf_keep_fresh(w, now_ns);
	sf_note_skew(w);
	if (w->held >= 0)
		sf_watch_skew(w);
	sf_publish_view(w);
}

extern "C" void
snowflake_registry_worker_main(Datum)
{
	SfWorker   *w;
	char		host[128];

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	if (sf_shared == NULL || sf_shared->refused || sf_shared->state_refused || sf_reg == NULL ||
		!sf_registry_enabled)
		proc_exit(0);

	before_shmem_exit(sf_worker_exit, (Datum) 0);
	SpinLockAcquire(&sf_reg->mutex);
	sf_reg->worker_latch = MyLatch;
	SpinLockRelease(&sf_reg->mutex);

	w = sf_worker_new(host, sizeof(host));
	sf_open_backend(host);
	w->suspend_ref_ns = sf_clock_ns(CLOCK_BOOTTIME) - sf_clock_ns(CLOCK_MONOTONIC);
	sf_set_state(REG_CLAIMING, NULL);

	for (;;)
	{
		sf_worker_tick(w);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 w->held >= 0 ? 20 : 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
