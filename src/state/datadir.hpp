/*-------------------------------------------------------------------------
 *
 * datadir.hpp
 *		The records this data directory keeps in pg_snowflake/, read at server
 *		start: the layout, the durable mark and the lineage; the refusals
 *		they can cause; writing the mark file; reporting file errors; and the
 *		per-shard records read when a shard is first used in a run: import
 *		reservations and live shards.
 *
 * The bottom of the state layer: it may call the core (records.hpp,
 * statefile.hpp), the settings and the fields of state.hpp, nothing else.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_RECORDED_HPP
#define SNOWFLAKE_RECORDED_HPP

#include "state/state.hpp"
#include "core/statefile.hpp"

/* Clusters remembered in pg_snowflake/lineage (see SnowflakeShared). */
void		sf_refuse(SnowflakeShared *out, SfRefusal kind, const char *message,
					  const char *detail);
bool		sf_read_record(SnowflakeShared *out, SfRefusal kind, const char *path,
						   const char *what, char *buf, size_t buflen, size_t *len,
						   bool *missing);
void		sf_load_recorded_state(SnowflakeShared *out);
void		sf_warn_recorded_state(const SnowflakeShared *state);
bool		sf_lineage_covers(const SnowflakeShared *state, uint64 sysid);

/* The level of a failed write of a state file, and its report. */
int			sf_file_error_level(const snowflake::FileError &error, int elevel);
void		sf_report_file_error(const char *what, const snowflake::FileError &error);

/* Writes pg_snowflake/mark durably (caller holds file_lock exclusively). */
bool		sf_write_mark(int64 mark_ms, snowflake::FileError *error);

/*
 * pg_snowflake/imports: how far each import shard has reserved (Unix ms of
 * the last millisecond it may issue IDs for), and the floor every import
 * shard resumes above (raised by snowflake_adopt_database()).  Reading: -1
 * for what is not recorded; false (with *error) when the file cannot be read
 * or is damaged (a time this layout cannot hold is damage).  Writing (shard
 * -1: the floor): never lowers a value; caller holds file_lock exclusively.
 */
bool		sf_read_import_reservation(int64 shard, int64 *reserved_ms, int64 *floor_ms,
									   snowflake::FileError *error, bool *damaged);
bool		sf_write_import_reservation(int64 shard, int64 reserved_ms,
										snowflake::FileError *error, bool *damaged);

/*
 * pg_snowflake/live: from when each shard generated live IDs (Unix ms; no
 * live ID of the shard carries an earlier time), recorded before its first
 * live ID, so that an import on a shard that was live in an earlier run
 * never takes a time its live IDs carry (history.cpp).  Reading: -1 when the
 * shard is not recorded; false (with *error) when the file cannot be read
 * or is damaged.  Writing: never raises a recorded time; neighbouring shards
 * may share one range and its earliest time.  Caller holds file_lock
 * exclusively to write.
 */
bool		sf_read_live_from(int64 shard, int64 *from_ms, snowflake::FileError *error,
							  bool *damaged);
bool		sf_write_live_from(int64 shard, int64 from_ms, snowflake::FileError *error,
							   bool *damaged);

/* How far ahead of the clock a floor from data or from outside may lie. */
int64		sf_floor_bound_ms(void);

#endif							/* SNOWFLAKE_RECORDED_HPP */
