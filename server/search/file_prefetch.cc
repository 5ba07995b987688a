#include "server/search/file_prefetch.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "server/files/content_type.h"
#include "server/search/cpu_limit.h"
#include "server/search/thread_start.h"

namespace brig::search {

std::size_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  std::size_t cores = n > 0 ? static_cast<std::size_t>(n) : 1;
  // A CPU quota (cpu_limit.h) allows fewer than the affinity may.
  if (const auto quota = cpu_limit_from_env()) cores = std::min(cores, *quota);
  return cores;
}

FilePrefetch::FilePrefetch(const LineMatcher& matcher, std::size_t max_bytes, std::size_t depth)
    : matcher_(matcher), max_bytes_(max_bytes), depth_(depth) {}

Result<std::unique_ptr<FilePrefetch>> FilePrefetch::start(const LineMatcher& matcher,
                                                          std::size_t threads,
                                                          std::size_t max_bytes) {
  std::size_t depth = threads * kFilesPerThread;
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    depth = std::min<std::size_t>(depth, files.rlim_cur / 4);
  std::unique_ptr<FilePrefetch> p(
      new FilePrefetch(matcher, max_bytes, std::max<std::size_t>(depth, 1)));
  for (std::size_t i = 0; i < threads; ++i) {
    try {
      p->threads_.push_back(start_thread_elsewhere([raw = p.get()] { raw->run(); }));
    } catch (const std::system_error& e) {
      // The jail's process limit or memory: fewer threads still help.
      if (p->threads_.empty())
        return std::unexpected(Error{"start search threads", "", e.what(), e.code().value()});
      break;
    }
  }
  return p;
}

FilePrefetch::~FilePrefetch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool FilePrefetch::full() const {
  std::lock_guard lock(mutex_);
  // Matched files wait whole in the queue: their bytes bound it too.
  return jobs_.size() >= depth_ || held_bytes_ >= kMaxHeldBytes;
}

bool FilePrefetch::empty() const {
  std::lock_guard lock(mutex_);
  return jobs_.empty();
}

bool FilePrefetch::push(int dir_fd, const char* name, std::string path) {
  auto job = std::make_unique<Job>();
  // As FileBuffer::read: no blocking on a fifo, no following a symlink
  // swapped in since the walk listed a file.
  job->fd.reset(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!job->fd) {
    job->open_errno = errno;
    if ((errno == EMFILE || errno == ENFILE) && !empty()) return false;
  }
  job->path = std::move(path);
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    // Waking a thread for each file costs a futex call and a context switch
    // per file, about what reading a small file costs: wake one only once a
    // few files wait. Files queued below that are read by the caller's
    // thread in front(), so none waits for a wake-up that never comes.
    wake = jobs_.size() - claimed_ >= kWakeAfter;
  }
  if (wake) work_.notify_one();
  return true;
}

FilePrefetch::Job& FilePrefetch::front() {
  std::unique_lock lock(mutex_);
  while (!jobs_.front()->done) {
    if (claimed_ < jobs_.size()) {
      // Rather than wait for the threads, read the oldest queued file here:
      // the caller's thread is one of the cores the search may use.
      Job* job = jobs_[claimed_++].get();
      lock.unlock();
      read_job(*job, own_buffer_);
      lock.lock();
      held_bytes_ += job->data.size();
      job->done = true;
      continue;
    }
    done_.wait(lock);
  }
  return *jobs_.front();
}

void FilePrefetch::pop() {
  std::lock_guard lock(mutex_);
  held_bytes_ -= jobs_.front()->data.size();
  jobs_.pop_front();
  --claimed_;
}

void FilePrefetch::read_job(Job& job, FileBuffer& buffer) const {
  if (!job.fd) {
    job.status = FileBuffer::Status::unreadable;
    job.error = std::strerror(job.open_errno);
  } else {
    job.status = buffer.read_fd(job.fd.get(), max_bytes_);
    job.fd.reset();
    if (job.status == FileBuffer::Status::unreadable) job.error = buffer.error();
  }
  if (job.status == FileBuffer::Status::ok) {
    const std::string_view buf = buffer.data();
    job.text = files::sniff_content(buf.substr(0, files::kSniffBytes)).kind ==
               files::ContentType::Kind::text;
    if (job.text) job.first = matcher_.find(buf, 0);
    if (job.first) job.data.assign(buf);
  }
}

void FilePrefetch::run() {
  FileBuffer buffer;  // one per thread, reused: most files only pass through
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || claimed_ < jobs_.size(); });
    if (stop_) return;
    Job* job = jobs_[claimed_++].get();
    lock.unlock();
    read_job(*job, buffer);
    lock.lock();
    held_bytes_ += job->data.size();
    job->done = true;
    done_.notify_all();
  }
}

}  // namespace brig::search
