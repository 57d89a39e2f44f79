/*-------------------------------------------------------------------------
 *
 * fastpath.hpp
 *		A shard slot's lock-free words: the step of snowflake.generator =
 *		'atomic', and what reads or moves a slot's position for either
 *		generator (see fastpath.cpp).
 *
 * In the state layer, under shmem.cpp: it may call the core (atomicgen.hpp)
 * and the settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_FASTPATH_HPP
#define SNOWFLAKE_FASTPATH_HPP

#include "state/state.hpp"

void		sf_fastpath_init_slot(ShardSlot *slot);
void		sf_fastpath_step(ShardSlot *slot, int64 max_count, int64 *now,
							 snowflake::Step *step, int64 start_sequence);
void		sf_slot_snapshot(ShardSlot *slot, snowflake::GeneratorState *gen,
							 int64 *reserved, TimestampTz *stats_reset);
int64		sf_slot_last(ShardSlot *slot, int64 *sequence);
void		sf_slot_resume_above(ShardSlot *slot, int64 offset);
int64		sf_slot_seal(ShardSlot *slot);
snowflake::Step sf_slot_import(ShardSlot *slot, int64 at_offset);

#endif							/* SNOWFLAKE_FASTPATH_HPP */
