#include "server/search/dir_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

#include "server/search/thread_start.h"

namespace brig::search {

// The subdirectories of one directory, queued together.
struct DirReadAhead::Batch {
  enum class State { queued, reading, read, reading_dropped, gone };
  struct Job {
    std::string name;
    State state = State::queued;
    DirListing listing;
  };
  std::shared_ptr<const UniqueFd> parent;
  std::vector<Job> jobs;
  std::size_t next = 0;  // jobs before it are not queued any more
  std::size_t gone = 0;  // jobs taken or dropped
  std::size_t busy = 0;  // jobs a reading thread holds
};

DirListing list_dir(UniqueFd fd) {
  DirListing out;
  out.fd = std::move(fd);
  struct stat st {};
  if (::fstat(out.fd.get(), &st) == 0) {
    out.have_id = true;
    out.dev = static_cast<unsigned long>(st.st_dev);
    out.ino = static_cast<unsigned long>(st.st_ino);
  }
  // getdents64 on the directory's own descriptor (no DIR stream: that
  // would cost a second descriptor, an fcntl and a close per directory);
  // openat below it does not care where its read offset is.
  alignas(8) char buf[32768];
  // Each name's place in `names` and its leading bytes as a big-endian key
  // (NUL-padded: no name holds a NUL), which orders most pairs without a
  // memcmp; the views are made once every name is in.
  struct Pending {
    std::uint64_t key;
    std::uint32_t at, size;
    unsigned char type;
  };
  std::vector<Pending> pending;
  std::vector<char>& blob = out.names;
  for (;;) {
    const ssize_t n = ::getdents64(out.fd.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error = errno;
      return out;
    }
    for (ssize_t at = 0; at < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + at);
      at += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      const std::size_t size = std::strlen(name);
      std::uint64_t key = 0;
      for (std::size_t i = 0; i < 8; ++i)
        key = key << 8 | (i < size ? static_cast<unsigned char>(name[i]) : 0u);
      pending.push_back(Pending{key, static_cast<std::uint32_t>(blob.size()),
                                static_cast<std::uint32_t>(size), d->d_type});
      blob.insert(blob.end(), name, name + size + 1);
    }
  }
  const char* names = blob.data();
  std::sort(pending.begin(), pending.end(), [names](const Pending& a, const Pending& b) {
    if (a.key != b.key) return a.key < b.key;
    return std::string_view(names + a.at, a.size) < std::string_view(names + b.at, b.size);
  });
  out.entries.reserve(pending.size());
  for (const Pending& p : pending)
    out.entries.push_back(DirEntry{std::string_view(names + p.at, p.size), p.type});
  return out;
}

DirListing open_and_list(int parent_fd, const char* name) {
  UniqueFd fd(::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    DirListing failed;
    failed.error = errno;
    return failed;
  }
  return list_dir(std::move(fd));
}

std::unique_ptr<DirReadAhead> DirReadAhead::start(std::size_t threads) {
  std::unique_ptr<DirReadAhead> r(new DirReadAhead());
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    r->max_ready_ = std::min<std::size_t>(kMaxReady, files.rlim_cur / 16);
  if (r->max_ready_ < 4) return nullptr;  // too few descriptors to share
  for (std::size_t i = 0; i < threads; ++i) {
    try {
      r->threads_.push_back(start_thread_elsewhere([raw = r.get()] { raw->run(); }));
    } catch (const std::system_error&) {
      break;  // the jail's process limit: fewer threads still help
    }
  }
  if (r->threads_.empty()) return nullptr;
  return r;
}

DirReadAhead::~DirReadAhead() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::vector<DirReadAhead::Ticket> DirReadAhead::queue(std::shared_ptr<const UniqueFd> parent,
                                                      std::vector<std::string> names) {
  std::vector<Ticket> tickets;
  if (names.empty()) return tickets;
  auto batch = std::make_unique<Batch>();
  batch->parent = std::move(parent);
  batch->jobs.resize(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    batch->jobs[i].name = std::move(names[i]);
    tickets.push_back(Ticket{batch.get(), i});
  }
  {
    std::lock_guard lock(mutex_);
    batches_.push_back(std::move(batch));
  }
  work_.notify_all();
  return tickets;
}

DirListing DirReadAhead::take(Ticket t) {
  Batch& b = *t.batch;
  Batch::Job& job = b.jobs[t.index];
  std::unique_lock lock(mutex_);
  DirListing out;
  if (job.state == Batch::State::queued) {
    // Nobody has begun it: reading it here is quicker than waiting.
    job.state = Batch::State::reading;
    ++b.busy;
    lock.unlock();
    out = open_and_list(b.parent->get(), job.name.c_str());
    lock.lock();
    --b.busy;
  } else if (job.state == Batch::State::reading &&
             !done_.wait_for(lock, kPatience, [&] { return job.state == Batch::State::read; })) {
    // The thread reading it is slow (on a busy machine it may wait for a
    // CPU for milliseconds): read it here rather than wait; the thread's
    // listing is thrown away. A walk with threads is never much slower than
    // one without.
    job.state = Batch::State::reading_dropped;
    // The thread counts the job gone when it ends, and the batch may be
    // freed then: keep what the read here needs before letting go.
    const std::shared_ptr<const UniqueFd> parent = b.parent;
    const std::string name = job.name;
    lock.unlock();
    return open_and_list(parent->get(), name.c_str());
  } else {
    out = std::move(job.listing);
    --ready_;
    work_.notify_one();  // room to read ahead again
  }
  job.state = Batch::State::gone;
  ++b.gone;
  // A thread that ran out of descriptors says nothing about the directory:
  // read it again here (the batch may be freed below, so keep what it needs).
  std::shared_ptr<const UniqueFd> parent;
  std::string name;
  if (!out.fd && (out.error == EMFILE || out.error == ENFILE)) {
    parent = b.parent;
    name = std::move(job.name);
  }
  release_if_done(t.batch);
  lock.unlock();
  if (parent) return open_and_list(parent->get(), name.c_str());
  return out;
}

void DirReadAhead::drop(Ticket t) {
  std::lock_guard lock(mutex_);
  Batch::Job& job = t.batch->jobs[t.index];
  switch (job.state) {
    case Batch::State::reading:
      job.state = Batch::State::reading_dropped;  // the thread closes it
      return;
    case Batch::State::read:
      job.listing = DirListing();
      --ready_;
      work_.notify_one();
      break;
    case Batch::State::queued:
      break;
    case Batch::State::reading_dropped:
    case Batch::State::gone:
      return;
  }
  job.state = Batch::State::gone;
  ++t.batch->gone;
  release_if_done(t.batch);
}

void DirReadAhead::release_if_done(Batch* batch) {
  if (batch->gone < batch->jobs.size() || batch->busy > 0) return;
  const auto it = std::find_if(batches_.begin(), batches_.end(),
                               [&](const std::unique_ptr<Batch>& b) { return b.get() == batch; });
  if (it != batches_.end()) batches_.erase(it);
}

void DirReadAhead::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // The newest batch with a queued directory holds the next ones the
    // walk needs (it is deepest on the walk's way); in it, the first.
    Batch* batch = nullptr;
    std::size_t index = 0;
    work_.wait(lock, [&] {
      if (stop_) return true;
      if (ready_ >= max_ready_) return false;
      for (auto b = batches_.rbegin(); b != batches_.rend(); ++b) {
        Batch& candidate = **b;
        while (candidate.next < candidate.jobs.size() &&
               candidate.jobs[candidate.next].state != Batch::State::queued)
          ++candidate.next;
        // The walk enters the newest batch's first directory right after
        // queueing it, and reads it itself: start one further on.
        std::size_t i = candidate.next + (b == batches_.rbegin() ? 1 : 0);
        while (i < candidate.jobs.size() && candidate.jobs[i].state != Batch::State::queued) ++i;
        if (i < candidate.jobs.size()) {
          batch = &candidate;
          index = i;
          if (i == candidate.next) ++candidate.next;
          return true;
        }
      }
      return false;
    });
    if (stop_) return;
    Batch::Job& job = batch->jobs[index];
    job.state = Batch::State::reading;
    ++batch->busy;
    ++ready_;  // counted from now, so that threads never read past the bound
    lock.unlock();
    DirListing listing = open_and_list(batch->parent->get(), job.name.c_str());
    lock.lock();
    --batch->busy;
    if (job.state == Batch::State::reading_dropped) {
      --ready_;
      job.state = Batch::State::gone;
      ++batch->gone;
      // Freed here or by the walk's next take or drop, as soon as the lock
      // is let go: not touched after this.
      release_if_done(batch);
      lock.unlock();
      listing = DirListing();  // closes it outside the lock
      lock.lock();
      continue;
    }
    job.listing = std::move(listing);
    job.state = Batch::State::read;
    release_if_done(batch);
    done_.notify_all();
  }
}

}  // namespace brig::search
