/*-------------------------------------------------------------------------
 *
 * statefile.hpp
 *		Small durable files in the data directory (pg_snowflake/), written
 *		with plain POSIX calls: write a temporary file, fsync it, rename it
 *		into place, fsync the directory.
 *
 * These functions never ereport, allocate or throw; they return what failed
 * and the errno, and the caller reports it after releasing any lock.
 * Paths are relative to the current directory, which for every PostgreSQL
 * process is the data directory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_STATEFILE_HPP
#define SNOWFLAKE_STATEFILE_HPP

#include <cstddef>

namespace snowflake
{

constexpr const char *kStateDir = "pg_snowflake";
constexpr const char *kLayoutFile = "pg_snowflake/layout";

/* What went wrong in a file operation. */
struct FileError
{
	const char *operation;		/* "open", "write", "fsync", "rename", ... */
	const char *path;
	int			err;			/* errno */
};

enum class ReadResult
{
	Ok,
	Missing,
	Failed,
	TooLarge
};

/* Reads a whole small file into buf (NUL-terminated); *len gets its length. */
ReadResult read_small_file(const char *path, char *buf, size_t buflen,
						   size_t *len, FileError *error) noexcept;

/*
 * The modes new files and kStateDir get: the cluster's own (0600/0700, or
 * 0640/0750 in a cluster initialised with group access), set once at start.
 */
void set_create_modes(int dir_mode, int file_mode) noexcept;

/*
 * Gives kStateDir and the regular files in it the modes set above, for a
 * directory made before they were honoured or copied in by hand.  False with
 * *error filled when a chmod fails; a missing directory is not an error.
 */
bool apply_create_modes(FileError *error) noexcept;

/* Whether a failed operation was an fsync: PostgreSQL never retries those. */
bool is_sync_failure(const FileError &error) noexcept;

/* Atomically and durably replaces kStateDir/name with data. */
bool write_file_durably(const char *name, const char *data, size_t len,
						FileError *error) noexcept;

}								/* namespace snowflake */

#endif							/* SNOWFLAKE_STATEFILE_HPP */
