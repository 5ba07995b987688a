// Replacing a file's contents so that readers see the old file or the new
// one, never a mix: a temporary file in the same directory, fsync, rename.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::files {

// Which file a path named when it was read: a write that expects it fails if
// the path now names another file or the file changed (size or mtime).
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};

  static FileStamp of(const struct stat& st);
  friend bool operator==(const FileStamp& a, const FileStamp& b) {
    return a.dev == b.dev && a.ino == b.ino && a.size == b.size &&
           a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec;
  }
};

// A temporary file's random part: 16 lower-case hex digits.
std::string random_temp_suffix();

struct WriteOptions {
  bool create_parents = false;           // create missing parent directories (mode 0777 & ~umask)
  std::optional<FileStamp> expect;       // empty: write whatever the path names now
  std::string_view what = "write file";  // the operation named in errors
  // The temporary file's random part (16 lower-case hex digits), chosen by
  // the server, which records it before the write (server/pool/
  // write_journal.h) so that it can remove exactly that file should the
  // write be killed. Empty: chosen here.
  std::string_view temp_suffix;
};

struct WriteOutcome {
  bool created = false;  // the file did not exist before
  mode_t mode = 0;       // permission bits of the file written
};

// Whether `name` is one atomic_write gives its temporary files:
// "." + (a prefix of) the target's name + ".brig-" + 16 lower-case hex digits.
bool is_temp_name(std::string_view name);

// Whether `suffix` is a temporary file's random part (16 lower-case hex digits).
bool is_temp_suffix(std::string_view suffix);

// Writes `data` to the absolute `path` atomically. An existing file keeps its
// mode and, when the caller may set them, its owner and group; a new file
// gets 0666 & ~umask. Refuses when the last component is a symlink (renaming
// over it would replace the link, not its target), a directory or anything
// but a regular file. Directory components are followed: inside the jail the
// kernel decides what they may reach. On any failure the temporary file is
// removed and the old contents stay. A write killed midway (a cancelled call
// kills the worker) cannot remove its temporary file: the server, which
// chose its name (options.temp_suffix), asks remove_temp() for it.
Result<WriteOutcome> atomic_write(const std::string& path, std::string_view data,
                                  const WriteOptions& options = {});

// Removes the temporary file a killed write of the absolute `path` with
// `temp_suffix` left: exactly that name, nothing that merely looks like one
// (a jail may plant those). Only a regular file that no write in progress
// holds (each keeps an flock on its temporary file), opened relative to its
// directory with O_NOFOLLOW: a symlink, a FIFO or a directory of that name
// stays.
enum class TempRemoval {
  gone,     // removed, or never made
  held,     // a write in progress holds it (a killed worker not yet dead, say)
  refused,  // not a regular file, or its directory cannot be opened: left alone
};
TempRemoval remove_temp(const std::string& path, std::string_view temp_suffix);

// "regular file", "directory", "symlink", "fifo", "socket", "character device",
// "block device" for st_mode.
std::string_view file_type_name(mode_t mode);

}  // namespace brig::files
