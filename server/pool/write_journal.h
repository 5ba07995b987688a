// WriteJournal: brig-server's record, outside every jail, of the temporary
// files its writes have in flight. write_file and edit_file write a
// temporary file beside their target and rename it over; a server killed
// mid-write (kill -9: nothing of it runs again) leaves that file behind,
// and nothing in the workspace tells brig's file from one a jail planted
// under a name like it. So the server chooses each temporary file's random
// part, records it here before the write and clears it after; the next
// server on the same workspace adopts what a dead one left and removes
// exactly those names, through a worker in the jail (docs/server.md).
//
// Layout: ROOT/KEY/INSTANCE/SUFFIX, where KEY names the workspace and the
// uid the writes ran as, INSTANCE is one server (it holds an flock on
// INSTANCE/lock for its life, so a dead server's lock is free), and each
// entry is a file named by the temporary file's suffix holding the write's
// path argument.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"

namespace brig::pool {

class WriteJournal {
 public:
  struct Entry {
    std::string suffix;  // the temporary file's random part (16 hex digits)
    std::string path;    // the write's path argument, as the worker got it
  };

  // The journals' root for this user: $XDG_STATE_HOME/brig/writes, else
  // $HOME/.local/state/brig/writes; empty without either.
  static std::string default_root();

  // Opens a journal of this server for `workspace` and `uid` under `root`,
  // creating what is missing (mode 0700). Fails, saying why, when root or
  // the directory for the key is a symlink, is not owned by this user, or
  // is writable by its group or others: whoever can write there could plant
  // entries for brig to act on (or take them away).
  static Result<std::unique_ptr<WriteJournal>> open(const std::string& root,
                                                    const std::string& workspace, uid_t uid);

  // Removes this server's directory when nothing is left in it; otherwise
  // leaves it, with its lock released, for the next server to adopt.
  ~WriteJournal();
  WriteJournal(const WriteJournal&) = delete;
  WriteJournal& operator=(const WriteJournal&) = delete;

  // Records a write about to start. Fails when the entry cannot be written
  // (the write may still go on; only its recovery after a crash is lost).
  Result<void> add(const Entry& entry);
  // Forgets a write whose temporary file is gone (renamed or removed).
  void remove(std::string_view suffix);

  // The entries of servers for the same key that ended without clearing
  // theirs (their lock is free), moved into this journal, so two servers
  // starting at once never both take one and an entry this server cannot
  // act on before it dies passes to the next. At most `max`: the rest of a
  // dead server's entries are dropped (logged), so a journal stays bounded.
  std::vector<Entry> adopt_orphans(std::size_t max);

  // This server's directory (for logs and tests).
  const std::string& dir() const { return dir_; }

  // How many entries a server takes over from dead ones at most.
  static constexpr std::size_t kMaxAdopted = 4096;

 private:
  // This server's directory under ROOT/KEY (root_fd is ROOT).
  static Result<std::unique_ptr<WriteJournal>> make_instance(int root_fd, const std::string& root,
                                                             const std::string& key);
  WriteJournal(UniqueFd key_dir, UniqueFd dir, UniqueFd lock, std::string name,
               std::string dir_path);

  UniqueFd key_dir_;  // ROOT/KEY
  UniqueFd dir_fd_;   // ROOT/KEY/INSTANCE
  UniqueFd lock_;     // INSTANCE/lock, flocked for this server's life
  std::string name_;  // INSTANCE
  std::string dir_;
};

}  // namespace brig::pool
