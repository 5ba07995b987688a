// Reading directories for the tree walk, now or ahead on other threads.
// The walk's order is fixed (depth first, names sorted), so while it is in
// a directory the subdirectories it will enter next are known: threads open
// and list them ahead, and the walk takes each listing when it gets there.
// Reading ahead changes no result (the walk still decides everything, in
// order, on its own thread); it moves the kernel's work (open, getdents) and
// the sort off the walk's thread, which is most of a walk's time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "jail/base/unique_fd.h"

namespace brig::search {

struct DirEntry {
  // In its listing's `names`, with a NUL after it: name.data() is a C string.
  std::string_view name;
  unsigned char type;  // DT_*
};

// One directory, opened and listed.
struct DirListing {
  UniqueFd fd;                    // the directory; invalid when the open failed
  int error = 0;                  // errno of the open or of the listing; 0: listed
  std::vector<DirEntry> entries;  // sorted bytewise, without "." and ".."
  // The entries' names back to back, each followed by a NUL: one block for
  // a directory instead of a string each. Moving the listing keeps them
  // where they are (a vector's block moves whole; a string's might not).
  std::vector<char> names;
  bool have_id = false;  // dev and ino hold the directory's identity
  unsigned long dev = 0, ino = 0;
};

// Lists the open directory `fd` (taking it over).
DirListing list_dir(UniqueFd fd);
// Opens parent_fd/name as a directory, never through a symlink (O_NOFOLLOW:
// a name swapped for a symlink since its parent was listed fails with
// ELOOP), and lists it.
DirListing open_and_list(int parent_fd, const char* name);

class DirReadAhead {
  struct Batch;

 public:
  struct Ticket {
    Batch* batch;
    std::size_t index;
  };

  // Starts `threads` reading threads; nullptr when none could start (the
  // walk then reads every directory itself).
  static std::unique_ptr<DirReadAhead> start(std::size_t threads);
  // Stops the threads (each finishes at most the directory it reads) and
  // closes every listing nobody took.
  ~DirReadAhead();
  DirReadAhead(const DirReadAhead&) = delete;
  DirReadAhead& operator=(const DirReadAhead&) = delete;

  // Queues the subdirectories `names` of `parent`, in walk order; one
  // ticket per name. The batch queued last is read first: it lies deepest
  // on the walk's way, so the walk needs it before any queued earlier.
  std::vector<Ticket> queue(std::shared_ptr<const UniqueFd> parent, std::vector<std::string> names);
  // The listing of a queued directory: read by a thread, or here when none
  // has begun it (or a thread ran out of file descriptors).
  DirListing take(Ticket t);
  // The walk will not enter it: stop caring (its listing is closed).
  void drop(Ticket t);

 private:
  DirReadAhead() = default;
  void run();
  // Frees `batch` once every ticket of it is taken or dropped and no thread
  // reads one. Under mutex_.
  void release_if_done(Batch* batch);

  std::mutex mutex_;
  std::condition_variable work_;                 // a directory to read, room to read ahead, or stop
  std::condition_variable done_;                 // a directory was read
  std::vector<std::unique_ptr<Batch>> batches_;  // oldest first
  // Listings read and not yet taken; threads wait when this many are (each
  // holds a file descriptor).
  std::size_t ready_ = 0;
  // At most 64, and a sixteenth of RLIMIT_NOFILE (a strict policy allows
  // 256 descriptors): the walk's own opens must never fail for want of the
  // descriptors reading ahead holds.
  static constexpr std::size_t kMaxReady = 64;
  std::size_t max_ready_ = kMaxReady;
  // How long take() waits for a thread's listing before reading it itself:
  // about what listing a directory takes.
  static constexpr std::chrono::microseconds kPatience{100};
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace brig::search
