/*-------------------------------------------------------------------------
 *
 * statefile.cpp
 *		Durable small files in pg_snowflake/ (see statefile.hpp).
 *
 *-------------------------------------------------------------------------
 */
#include "core/statefile.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace snowflake
{

namespace
{

int			dir_create_mode = S_IRWXU;
int			file_create_mode = S_IRUSR | S_IWUSR;

bool
fail(FileError *error, const char *operation, const char *path) noexcept
{
	error->operation = operation;
	error->path = path;
	error->err = errno;
	return false;
}

/* fsyncs a file or directory by name. */
bool
fsync_path(const char *path, int flags, FileError *error) noexcept
{
	int			fd = open(path, flags);

	if (fd < 0)
		return fail(error, "open", path);
	if (fsync(fd) != 0)
	{
		fail(error, "fsync", path);
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

}								/* namespace */

void
set_create_modes(int dir_mode, int file_mode) noexcept
{
	dir_create_mode = dir_mode;
	file_create_mode = file_mode;
}

bool
apply_create_modes(FileError *error) noexcept
{
	static char path[256];
	DIR		   *dir = opendir(kStateDir);
	struct dirent *de;
	struct stat st;

	if (dir == nullptr)
		return errno == ENOENT ? true : fail(error, "open directory", kStateDir);
	if (fstat(dirfd(dir), &st) == 0 && (st.st_mode & 07777) != (mode_t) dir_create_mode &&
		chmod(kStateDir, (mode_t) dir_create_mode) != 0)
	{
		fail(error, "change the mode of", kStateDir);
		closedir(dir);
		return false;
	}
	while ((de = readdir(dir)) != nullptr)
	{
		if (snprintf(path, sizeof(path), "%s/%s", kStateDir, de->d_name) >= (int) sizeof(path) ||
			lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
			(st.st_mode & 07777) == (mode_t) file_create_mode)
			continue;
		if (chmod(path, (mode_t) file_create_mode) != 0)
		{
			fail(error, "change the mode of", path);
			closedir(dir);
			return false;
		}
	}
	closedir(dir);
	return true;
}

bool
is_sync_failure(const FileError &error) noexcept
{
	return error.operation != nullptr && std::strcmp(error.operation, "fsync") == 0;
}

ReadResult
read_small_file(const char *path, char *buf, size_t buflen, size_t *len,
				FileError *error) noexcept
{
	int			fd;
	size_t		total = 0;

	if (buflen == 0)
		return ReadResult::TooLarge;
	fd = open(path, O_RDONLY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return ReadResult::Missing;
		fail(error, "open", path);
		return ReadResult::Failed;
	}
	for (;;)
	{
		char		probe;
		bool		full = total == buflen - 1;
		/* once the buffer is full, read one more byte to tell EOF from excess */
		ssize_t		n = full ? read(fd, &probe, 1) : read(fd, buf + total, buflen - 1 - total);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			fail(error, "read", path);
			close(fd);
			return ReadResult::Failed;
		}
		if (n == 0)
			break;
		if (full)
		{
			close(fd);
			return ReadResult::TooLarge;
		}
		total += (size_t) n;
	}
	close(fd);
	buf[total] = '\0';
	*len = total;
	return ReadResult::Ok;
}

bool
write_file_durably(const char *name, const char *data, size_t len,
				   FileError *error) noexcept
{
	static char path[256];
	static char tmp[256];
	struct stat st;

	/* static: error->path must outlive this call; callers are single-threaded */
	if (snprintf(path, sizeof(path), "%s/%s", kStateDir, name) >= (int) sizeof(path) ||
		snprintf(tmp, sizeof(tmp), "%s/%s.tmp", kStateDir, name) >= (int) sizeof(tmp))
	{
		errno = ENAMETOOLONG;
		return fail(error, "name", name);
	}

	if (stat(kStateDir, &st) != 0)
	{
		if (mkdir(kStateDir, (mode_t) dir_create_mode) != 0 && errno != EEXIST)
			return fail(error, "create directory", kStateDir);
		if (!fsync_path(".", O_RDONLY, error))
			return false;
	}

	int			fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, (mode_t) file_create_mode);

	if (fd < 0)
		return fail(error, "open", tmp);
	for (size_t done = 0; done < len;)
	{
		ssize_t		n = write(fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			if (n == 0)
				errno = ENOSPC;
			fail(error, "write", tmp);
			close(fd);
			return false;
		}
		done += (size_t) n;
	}
	if (fsync(fd) != 0)
	{
		fail(error, "fsync", tmp);
		close(fd);
		return false;
	}
	if (close(fd) != 0)
		return fail(error, "close", tmp);
	if (rename(tmp, path) != 0)
		return fail(error, "rename", tmp);
	return fsync_path(kStateDir, O_RDONLY, error);
}

}								/* namespace snowflake */
