#include "server/exec/follow.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "server/exec/utf8_repair.h"

namespace brig::exec {
namespace {

// The stream offsets streamed so far and the sending of what lies past them.
class Streamer {
 public:
  Streamer(Job& job, ProgressSink& sink, ProgressPacer::Options pacing)
      : job_(job),
        sink_(sink),
        pacer_(Job::Clock::now(), pacing),
        at_{job.delivered(Stream::out), job.delivered(Stream::err)} {}

  std::size_t pending() const {
    std::size_t n = 0;
    for (Stream s : {Stream::out, Stream::err}) {
      n += static_cast<std::size_t>(job_.spool(s).size() - at_[static_cast<int>(s)]);
    }
    return n;
  }
  const ProgressPacer& pacer() const { return pacer_; }

  // Sends what is pending, within the budget. Unless the job has finished,
  // a character whose last bytes have not arrived yet waits for them.
  void send() {
    const Job::Clock::time_point now = Job::Clock::now();
    std::string text;
    std::size_t taken = 0;
    const std::size_t budget = pacer_.allowance(pending());
    for (Stream s : {Stream::out, Stream::err}) {
      const Spool& spool = job_.spool(s);
      std::uint64_t& at = at_[static_cast<int>(s)];
      if (!spool.kept(at)) at = spool.tail_begin();  // streaming fell behind a flood
      auto bytes = spool.read(at, budget - taken);
      if (!bytes || bytes->empty()) continue;
      const std::size_t n = job_.finished() ? bytes->size() : complete_prefix_length(*bytes);
      text += repair_utf8(std::string_view(*bytes).substr(0, n));
      at += n;
      taken += n;
    }
    pacer_.sent(taken, now);
    if (taken > 0) sink_.progress(static_cast<double>(pacer_.streamed()), std::nullopt, text);
    if (pacer_.exhausted() && !told_exhausted_ && pending() > 0) {
      told_exhausted_ = true;
      sink_.progress(static_cast<double>(pacer_.streamed() + 1), std::nullopt,
                     fmt::format("\n[brig: streaming stopped after {} bytes; the result shows the "
                                 "head and tail of the output, job read has all of it]\n",
                                 pacer_.streamed()));
    }
  }

 private:
  Job& job_;
  ProgressSink& sink_;
  ProgressPacer pacer_;
  std::array<std::uint64_t, 2> at_;
  bool told_exhausted_ = false;
};

}  // namespace

asio::awaitable<void> follow(Job& job, ProgressSink& sink, Job::Clock::time_point until,
                             ProgressPacer::Options pacing) {
  Streamer streamer(job, sink, pacing);
  for (;;) {
    const Job::Clock::time_point now = Job::Clock::now();
    if (streamer.pacer().due(streamer.pending(), now)) streamer.send();
    if (job.finished() || now >= until) break;
    co_await job.changed(std::min(until, streamer.pacer().next_due(streamer.pending())));
  }
  if (streamer.pending() > 0 && !streamer.pacer().exhausted()) streamer.send();
}

}  // namespace brig::exec
