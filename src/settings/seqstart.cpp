/*-------------------------------------------------------------------------
 *
 * seqstart.cpp
 *		snowflake.sequence_start: where each new millisecond's sequence
 *		starts ('zero', or 'random' within the lower sixteenth of the range).
 *
 * At low traffic every millisecond holds one ID, so with 'zero' nearly every
 * ID is a multiple of 2^sequence_bits: anything that shards or samples by
 * id % n sees one bucket, and the low bits tell an outsider how busy the
 * server is.  With 'random' the first ID of a millisecond the clock has just
 * reached takes a random sequence in [0, 2^(sequence_bits - 4)).
 *
 * The draw runs before the shard's lock with snowflake.generator = lwlock
 * (once per call), and before the lock-free generator's compare-and-swap
 * with atomic (once per millisecond the backend opens: the value waits for
 * the step that uses it, sf_start_sequence), from a per-backend xorshift64*
 * seeded once from pg_strong_random(): no lock, no syscall, no shared cache
 * line on the hot path.  The core
 * (next_run, and advance_word through it) only receives the drawn value, so
 * it stays deterministic and unit-testable.  Predictability
 * of the draw does not matter: it hides traffic levels from casual reading,
 * it is not a secret, and uniqueness never depends on it.
 *
 *-------------------------------------------------------------------------
 */
#include "settings/guc.hpp"
#include "settings/seqstart.hpp"

extern "C"
{
#include "postgres.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

int			sf_sequence_start = SF_SEQUENCE_START_RANDOM;

static const struct config_enum_entry sf_sequence_start_options[] = {
	{"zero", SF_SEQUENCE_START_ZERO, false},
	{"random", SF_SEQUENCE_START_RANDOM, false},
	{NULL, 0, false}
};

/* This backend's generator; 0 until the first draw seeds it. */
snowflake::Xorshift64 sf_rng = {0};

/* The draw for the next millisecond the lock-free generator opens (seqstart.hpp). */
int64		sf_pending_start = -1;

/* Seeds this backend's generator (once, on its first draw). */
void
sf_seed_rng(void)
{
	uint64		seed = 0;

	if (!pg_strong_random(&seed, sizeof(seed)) || seed == 0)
		seed = ((uint64) MyProcPid << 32) ^ (uint64) GetCurrentTimestamp() ^
			UINT64CONST(0x9E3779B97F4A7C15);
	sf_rng.state = seed ? seed : 1;
}

/* Defines snowflake.sequence_start (before the prefix is reserved). */
void
sf_seqstart_init(void)
{
	sf_define_setting("snowflake.sequence_start",
					  "Where the sequence of each new millisecond starts: zero or random.",
					  "random: a random value in the lowest sixteenth of the sequence range, "
					  "so that IDs issued at low traffic are not all multiples of "
					  "2^sequence_bits.",
					  &sf_sequence_start, SF_SEQUENCE_START_RANDOM, sf_sequence_start_options,
					  PGC_SIGHUP);
	/* at start nonsense stops the server, as for every snowflake.* setting */
	sf_require_settings_applied();
}
