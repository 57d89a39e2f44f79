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
int64		sf_draw_start_sequence(void);

#endif							/* SNOWFLAKE_SEQSTART_HPP */
