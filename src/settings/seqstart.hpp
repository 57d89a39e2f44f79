/*-------------------------------------------------------------------------
 *
 * seqstart.hpp
 *		snowflake.sequence_start and the per-backend draw of the random
 *		start of a millisecond's sequence (see seqstart.cpp).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_SEQSTART_HPP
#define SNOWFLAKE_SEQSTART_HPP

#include "settings/settings.hpp"

#define SF_SEQUENCE_START_ZERO 0
#define SF_SEQUENCE_START_RANDOM 1
extern int	sf_sequence_start;
void		sf_seqstart_init(void);

/* This backend's generator (seqstart.cpp); 0 until the first draw seeds it. */
extern snowflake::Xorshift64 sf_rng;
void		sf_seed_rng(void);

/* The sequence a new millisecond starts at, for the next generator step. */
static inline int64
sf_draw_start_sequence(void)
{
	if (sf_sequence_start != SF_SEQUENCE_START_RANDOM)
		return 0;
	if (unlikely(sf_rng.state == 0))
		sf_seed_rng();
	return snowflake::draw_start_sequence(sf_rng, sf_layout);
}

/*
 * The lock-free generator's draw, taken only when used: a step gets the
 * value drawn for the next millisecond the clock opens, and draws again
 * (sf_start_sequence_used) only after a step that may have used it.  Most
 * calls of a busy backend continue a millisecond already open, and pay one
 * test instead of a draw; every millisecond opened still starts at a draw of
 * its own.
 */
extern int64 sf_pending_start;	/* -1: none drawn */

static inline int64
sf_start_sequence(void)
{
	if (sf_sequence_start != SF_SEQUENCE_START_RANDOM)
		return 0;
	if (unlikely(sf_pending_start < 0))
		sf_pending_start = sf_draw_start_sequence();
	return sf_pending_start;
}

static inline void
sf_start_sequence_used(void)
{
	sf_pending_start = -1;
}

#endif							/* SNOWFLAKE_SEQSTART_HPP */
