// Reads files and finds their first match on other threads, ahead of a
// walk, so that search uses every core it may run on while its results keep
// the walk's order: the walk hands files in, the search takes them back
// out in the same order (a reorder queue), and only the files that match
// cost the walk's thread more than a look.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "server/search/file_buffer.h"
#include "server/search/line_matcher.h"

namespace brig::search {

// The cores this process may run on (its CPU affinity, which a jail's
// cpuset narrows), no more than a CPU quota the server passed on
// (cpu_limit.h), at least 1.
std::size_t usable_cores();

class FilePrefetch {
 public:
  // One file, in walk order.
  struct Job {
    UniqueFd fd;         // opened by the walk's thread, where its directory is open
    int open_errno = 0;  // when the open failed
    std::string path;
    // Set by a reading thread once done:
    FileBuffer::Status status = FileBuffer::Status::ok;
    std::string error;          // why unreadable
    bool text = false;          // the sniffed head says text
    std::optional<Span> first;  // the first match, for text
    std::string data;           // the file, kept only when it matched
    bool done = false;
  };

  // Starts `threads` reading threads. Fails when none could be started
  // (the caller then searches on its own thread). The caller's thread reads
  // too, whenever it would wait (front()), so a search on N cores starts
  // N - 1 threads.
  static Result<std::unique_ptr<FilePrefetch>> start(const LineMatcher& matcher,
                                                     std::size_t threads, std::size_t max_bytes);
  // Stops the threads: each finishes at most the file it reads.
  ~FilePrefetch();
  FilePrefetch(const FilePrefetch&) = delete;
  FilePrefetch& operator=(const FilePrefetch&) = delete;

  // Whether the queue holds as many files as it may (then take the front).
  bool full() const;
  bool empty() const;
  // Opens dir_fd/name as search does and queues it; false, with nothing
  // queued, when this process is out of file descriptors and the queue
  // holds some (take them all, then push again): a file is never reported
  // unreadable for the queue's own descriptors.
  bool push(int dir_fd, const char* name, std::string path);
  // The oldest file, once read (here, if no thread has begun the files
  // queued first); stays valid until pop().
  Job& front();
  void pop();

 private:
  FilePrefetch(const LineMatcher& matcher, std::size_t max_bytes, std::size_t depth);
  void run();
  // Reads one claimed file and finds its first match, without the lock.
  void read_job(Job& job, FileBuffer& buffer) const;

  const LineMatcher& matcher_;
  std::size_t max_bytes_;
  std::size_t depth_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // a job to claim, or stop
  std::condition_variable done_;  // a job finished
  std::deque<std::unique_ptr<Job>> jobs_;
  std::size_t claimed_ = 0;     // jobs_ [0, claimed_) are taken by a thread
  std::size_t held_bytes_ = 0;  // the matched files' bytes the queue holds
  static constexpr std::size_t kMaxHeldBytes = std::size_t{256} << 20;
  // Files queued per reading thread: enough that the walk's thread reads
  // queued files too while a thread is on a large one, instead of waiting
  // for it (8 left a third of a core idle on two); each holds a descriptor,
  // so the queue also stays under a quarter of RLIMIT_NOFILE.
  static constexpr std::size_t kFilesPerThread = 64;
  static constexpr std::size_t kWakeAfter = 4;  // unclaimed files before a thread is woken
  bool stop_ = false;
  FileBuffer own_buffer_;  // for the files front() reads on the caller's thread
  std::vector<std::thread> threads_;
};

}  // namespace brig::search
