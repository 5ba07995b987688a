#include "server/search/search.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "jail/base/unique_fd.h"
#include "server/files/content_type.h"
#include "server/files/json_size.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"
#include "server/search/file_buffer.h"
#include "server/search/file_prefetch.h"
#include "server/search/glob.h"
#include "server/search/line_matcher.h"
#include "server/search/page_cursor.h"
#include "server/search/tree_walk.h"

namespace brig::search {
namespace {

using protocol::Json;
constexpr std::string_view kSearchOp = "search";

enum class Mode { content, files, count };

struct Args {
  std::string pattern;
  PatternOptions pattern_options;
  std::vector<std::string> include, exclude;
  std::size_t before = 0, after = 0;
  Mode mode = Mode::content;
  std::size_t max_results = static_cast<std::size_t>(kDefaultSearchResults);
  std::size_t offset = 0;
  std::size_t max_line_length = static_cast<std::size_t>(kDefaultMaxLineLength);
  bool hidden = false;
  bool gitignore = true;
};

std::vector<std::string> strings_of(const Json& args, const char* key) {
  std::vector<std::string> out;
  if (auto it = args.find(key); it != args.end() && it->is_array())
    for (const Json& v : *it)
      if (v.is_string()) {
        // A glob names files as the tools list them (server/files/utf8.h);
        // it is matched against the names' bytes.
        const std::string text = v.get<std::string>();
        out.push_back(files::text_to_name(text).value_or(text));
      }
  return out;
}

Result<std::size_t> count_arg(const Json& args, const protocol::IntegerArg& arg) {
  return static_cast<std::size_t>(BRIG_TRY(arg.read(args)));
}

Result<Args> parse_args(const Json& args) {
  Args a;
  a.pattern = args.value("pattern", std::string());
  a.pattern_options.fixed_strings = args.value("fixed_strings", false);
  a.pattern_options.case_insensitive = args.value("case_insensitive", false);
  a.pattern_options.smart_case = args.value("smart_case", false);
  a.include = strings_of(args, "include");
  a.exclude = strings_of(args, "exclude");
  a.before = BRIG_TRY(count_arg(args, kContextBefore));
  a.after = BRIG_TRY(count_arg(args, kContextAfter));
  const std::string mode = args.value("output_mode", std::string("content"));
  a.mode = mode == "files" ? Mode::files : mode == "count" ? Mode::count : Mode::content;
  a.max_results = BRIG_TRY(count_arg(args, kSearchMaxResults));
  a.offset = BRIG_TRY(count_arg(args, kSearchOffset));
  a.max_line_length = BRIG_TRY(count_arg(args, kMaxLineLength));
  a.hidden = args.value("hidden", false);
  a.gitignore = args.value("gitignore", true);
  return a;
}

const char* mode_name(Mode m) {
  return m == Mode::files ? "files" : m == Mode::count ? "count" : "content";
}

// One line of output: its text goes to the reply's bytes.
struct OutLine {
  std::int64_t number = 0;
  bool match = false;
  std::size_t column = 1;  // 1-based byte column where the shown text starts
  bool cut = false;        // only part of the line is shown
  std::size_t length = 0;  // the whole line's bytes, when cut
};

struct OutFile {
  std::string path;
  std::size_t count = 0;  // matching lines (count mode: all of them)
  std::vector<OutLine> lines;
};

// Why the results stop short of everything that matches.
enum class Stop { none, max_results, size, deadline };

class Search : public WalkVisitor {
 public:
  Search(const Args& args, const LineMatcher& matcher, GlobSet include, GlobSet exclude,
         TreeWalker& walker, std::size_t budget, std::uint64_t query,
         std::optional<PageCursor> cursor)
      : query_(query),
        cursor_(std::move(cursor)),
        args_(args),
        matcher_(matcher),
        include_(std::move(include)),
        exclude_(std::move(exclude)),
        walker_(walker),
        budget_(budget) {}

  bool enter(std::string_view path) override {
    // A directory no include glob can reach ("src/**" and "lib") is left
    // out whole, as is one an exclude glob names.
    if ((!include_.empty() && !include_.may_match_below(path)) ||
        (!exclude_.empty() && exclude_.matches_dir(path))) {
      ++walker_.skipped().filtered;
      return false;
    }
    return true;
  }

  bool visit(const WalkEntry& e) override {
    if (e.symlink) {
      ++walker_.skipped().symlinks;
      return true;
    }
    if ((!include_.empty() && !include_.matches(e.path)) ||
        (!exclude_.empty() && exclude_.matches(e.path))) {
      ++walker_.skipped().filtered;
      return true;
    }
    if (prefetch_ != nullptr) {
      // Commit in walk order whatever the queue must give up for this file.
      while (prefetch_->full())
        if (!commit_front()) return false;
      snapshots_.push_back(walker_.skipped());
      const std::string name(e.name);
      while (!prefetch_->push(e.dir_fd, name.c_str(), std::string(e.path))) {
        // Out of descriptors: the queue's go back as its files are taken.
        snapshots_.pop_back();
        while (!prefetch_->empty())
          if (!commit_front()) return false;
        snapshots_.push_back(walker_.skipped());
      }
      return true;
    }
    if (!search_file(e.dir_fd, e.name, e.path)) return false;
    last_path_.assign(e.path);
    return true;
  }

  // Files search on other threads (nullptr: on this one, as it walks).
  void set_prefetch(FilePrefetch* prefetch) { prefetch_ = prefetch; }

  // After the walk: the files still queued, in order, unless a limit ended
  // the page or the deadline has passed (then the page ends where it got).
  void finish(std::chrono::steady_clock::time_point deadline) {
    if (prefetch_ == nullptr || stopped_) return;
    while (!prefetch_->empty()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        cut_by_deadline_ = true;
        return;
      }
      if (!commit_front()) return;
    }
    add_walk_counts(walker_.skipped());
  }

  bool timed_out() const { return walker_.timed_out() || cut_by_deadline_; }

  // One file, found by the walk or named by the call; false: stop.
  bool search_file(int dir_fd, std::string_view name, std::string_view path) {
    if (!starts_file(path)) return true;
    SkipCounts& skipped = counts();
    const std::string name_z(name);
    switch (buffer_.read(dir_fd, name_z.c_str(), kMaxSearchFileBytes)) {
      case FileBuffer::Status::too_large:
        ++skipped.too_large;
        return true;
      case FileBuffer::Status::unreadable:
        skipped.add_unreadable(path, buffer_.error());
        return true;
      case FileBuffer::Status::ok:
        break;
    }
    ++searched_;
    const std::string_view buf = buffer_.data();
    if (files::sniff_content(buf.substr(0, files::kSniffBytes)).kind !=
        files::ContentType::Kind::text) {
      ++skipped.binary;
      return true;
    }
    auto first = matcher_.find(buf, 0);
    if (!first) return true;
    return matched(path, buf, *first);
  }

  // What the walk and this search left out; in parallel, the walk's counts
  // join as the files they came before are committed, so a page that stops
  // early counts exactly what a walk on one thread would have.
  SkipCounts& counts() { return prefetch_ != nullptr ? merged_ : walker_.skipped(); }
  const SkipCounts& counts() const { return prefetch_ != nullptr ? merged_ : walker_.skipped(); }

 private:
  // Whether the file at `path` is searched at all: the page the cursor
  // ends showed its first results (then file_skip_ says how many), or all.
  bool starts_file(std::string_view path) {
    file_skip_ = 0;
    if (cursor_ && path == cursor_->path) {
      if (cursor_->skip == PageCursor::kWholeFile) return false;
      file_skip_ = cursor_->skip;
    }
    return true;
  }

  // The walk's counts since the last file committed.
  void add_walk_counts(const SkipCounts& now) {
    merged_.ignored += now.ignored - walk_seen_.ignored;
    merged_.hidden += now.hidden - walk_seen_.hidden;
    merged_.symlinks += now.symlinks - walk_seen_.symlinks;
    merged_.filtered += now.filtered - walk_seen_.filtered;
    merged_.unreadable += now.unreadable - walk_seen_.unreadable;
    for (std::size_t i = walk_seen_.unreadable_examples.size(); i < now.unreadable_examples.size();
         ++i) {
      if (merged_.unreadable_examples.size() < SkipCounts::kMaxExamples)
        merged_.unreadable_examples.push_back(now.unreadable_examples[i]);
    }
    walk_seen_ = now;
  }

  // The oldest queued file, as search_file would have done it; false: stop.
  bool commit_front() {
    FilePrefetch::Job& job = prefetch_->front();
    add_walk_counts(snapshots_.front());
    snapshots_.pop_front();
    bool go_on = true;
    if (starts_file(job.path)) {
      switch (job.status) {
        case FileBuffer::Status::too_large:
          ++merged_.too_large;
          break;
        case FileBuffer::Status::unreadable:
          merged_.add_unreadable(job.path, job.error);
          break;
        case FileBuffer::Status::ok:
          ++searched_;
          if (!job.text)
            ++merged_.binary;
          else if (job.first)
            go_on = matched(job.path, job.data, *job.first);
          break;
      }
    }
    if (go_on) last_path_ = job.path;
    prefetch_->pop();
    if (!go_on) stopped_ = true;
    return go_on;
  }

 public:
  // A text file with a match at `first`; false: stop.
  bool matched(std::string_view path, std::string_view buf, Span first) {
    SkipCounts& skipped = counts();
    // A NUL byte past the sniffed head makes the file binary too; only
    // files with a match pay for the check.
    if (buf.size() > files::kSniffBytes &&
        std::memchr(buf.data() + files::kSniffBytes, '\0', buf.size() - files::kSniffBytes)) {
      ++skipped.binary;
      return true;
    }
    ++matched_files_;
    switch (args_.mode) {
      case Mode::files:
        return add_whole_file(path, 1);
      case Mode::count: {
        std::size_t n = 0;
        for (std::optional<Span> m = first; m;
             m = matcher_.find(buf, line_end(buf, m->start) + 1)) {
          ++n;
          if (line_end(buf, m->start) >= buf.size()) break;
        }
        return add_whole_file(path, n);
      }
      case Mode::content:
        return add_lines(path, buf, first);
    }
    return true;
  }

  Json header(const std::string& root) const {
    Json files = Json::array();
    for (const OutFile& f : files_) {
      Json j = {{"path", files::name_to_text(f.path)}};
      if (args_.mode != Mode::files) j["count"] = f.count;
      if (args_.mode == Mode::content) {
        Json lines = Json::array();
        for (const OutLine& l : f.lines) {
          Json lj = {{"line", l.number}, {"match", l.match}};
          if (l.cut) {
            lj["cut"] = true;
            lj["column"] = l.column;
            lj["length"] = l.length;
          }
          lines.push_back(std::move(lj));
        }
        j["lines"] = std::move(lines);
      }
      files.push_back(std::move(j));
    }
    Json h = {{"path", files::name_to_text(root)},
              {"pattern", args_.pattern},
              {"output_mode", mode_name(args_.mode)},
              {"case_insensitive", matcher_.case_insensitive()},
              {"files", std::move(files)},
              {"results", reported_},
              {"offset", args_.offset},
              {"files_searched", searched_},
              {"skipped", counts().to_json()},
              {"timed_out", timed_out()},
              {"truncated", stop_ != Stop::none || timed_out()}};
    h["files_matched"] = matched_files_;
    if (next_) {
      h["next_cursor"] = encode_cursor(*next_);
    } else if (timed_out() && !last_path_.empty()) {
      // The deadline cut the walk: the next page starts after the last file
      // searched (a page that searched none offers no cursor, as above).
      h["next_cursor"] = encode_cursor(PageCursor{query_, last_path_, PageCursor::kWholeFile});
    }
    if (stop_ != Stop::none || timed_out()) {
      // A page the time limit ended before any result offers no next_offset:
      // a call from the same offset would redo the same walk and stop at the
      // same place, and a client that pages on next_offset would never end.
      if (reported_ > 0 && !cursor_) h["next_offset"] = args_.offset + reported_;
      h["stopped_by"] = stop_ == Stop::max_results ? "max_results"
                        : stop_ == Stop::size      ? "size"
                                                   : "deadline";
    }
    h["invalid_utf8"] = files::count_invalid_utf8(text_);
    return h;
  }

  std::string take_text() { return std::move(text_); }

 private:
  static std::size_t line_end(std::string_view buf, std::size_t at) {
    const void* nl = std::memchr(buf.data() + at, '\n', buf.size() - at);
    return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data()) : buf.size();
  }
  static std::size_t line_start(std::string_view buf, std::size_t at) {
    if (at == 0) return 0;
    const void* nl = ::memrchr(buf.data(), '\n', at);
    return nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data()) + 1 : 0;
  }

  // Whether `cost` more bytes stay within the budget; the page's first
  // result always does, so that paging always moves on.
  bool fits(std::size_t cost) const { return used_ + cost <= budget_ || reported_ == 0; }

  // Whether the next result may be reported; sets stop_ when not.
  bool room_for_result() {
    if (reported_ < args_.max_results) return true;
    stop_ = Stop::max_results;
    return false;
  }

  bool add_whole_file(std::string_view path, std::size_t count) {
    if (results_seen_++ < args_.offset) return true;
    if (!room_for_result()) {
      next_ = PageCursor{query_, std::string(path), 0};
      return false;
    }
    const std::size_t cost = files::json_string_cost(path) * 2 + 64;
    if (!fits(cost)) {
      stop_ = Stop::size;
      next_ = PageCursor{query_, std::string(path), 0};
      return false;
    }
    used_ += cost;
    files_.push_back(OutFile{std::string(path), count, {}});
    ++reported_;
    return true;
  }

  // The shown part of a line: all of it, or max_line_length bytes around
  // the match, cut between UTF-8 sequences.
  OutLine shown(std::string_view buf, std::size_t start, std::size_t end, std::optional<Span> match,
                std::string_view* text) const {
    OutLine l;
    std::size_t from = start, to = end;
    const std::size_t max = args_.max_line_length;
    if (end - start > max) {
      l.cut = true;
      if (match) {
        // A quarter of the room before the match, the rest from it on.
        from = match->start - std::min(match->start - start, max / 4);
        to = std::min(end, from + max);
        if (to - from < max) from = to - max;
      } else {
        to = start + max;
      }
      while (from > start && (static_cast<unsigned char>(buf[from]) & 0xc0) == 0x80) ++from;
      to = from + files::utf8_prefix_length(buf.substr(from, to - from), to - from);
      l.column = from - start + 1;
      l.length = end - start;
    }
    *text = buf.substr(from, to - from);
    return l;
  }

  // Appends a line to the current file if the budget allows.
  bool emit(OutFile& f, std::string_view buf, std::size_t start, std::size_t end,
            std::int64_t number, bool match) {
    // A CRLF file's '\r' is line ending, not text to show.
    if (end > start && buf[end - 1] == '\r') --end;
    std::optional<Span> span;
    if (match && end - start > args_.max_line_length) span = matcher_.find_in_line(buf, start, end);
    std::string_view text;
    OutLine l = shown(buf, start, end, span, &text);
    // The text travels once, in the text block (with "N:" before it);
    // structuredContent has only the line's number and flags.
    const std::size_t cost = files::json_string_cost(text) + 48;
    if (!fits(cost)) return false;
    used_ += cost;
    l.number = number;
    l.match = match;
    text_.append(text);
    text_ += '\n';
    f.lines.push_back(l);
    return true;
  }

  bool add_lines(std::string_view path, std::string_view buf, Span first) {
    OutFile f{std::string(path), 0, {}};
    const std::size_t file_cost = files::json_string_cost(path) * 2 + 64;
    std::size_t counted_to = 0;  // line numbers are known up to here
    std::int64_t counted_line = 1;
    const auto number_of = [&](std::size_t at) {
      counted_line += std::count(buf.data() + counted_to, buf.data() + at, '\n');
      counted_to = at;
      return counted_line;
    };
    std::size_t shown_to = 0;     // lines before this offset were shown or passed
    std::int64_t shown_line = 1;  // the line number at shown_to
    std::size_t after_left = 0;   // context lines still owed after the last match
    bool ok = true;
    std::size_t index = 0;  // this file's matches handled so far
    const auto flush_after = [&](std::size_t limit) {
      while (ok && after_left > 0 && shown_to < limit && shown_to < buf.size()) {
        const std::size_t e = line_end(buf, shown_to);
        if (!emit(f, buf, shown_to, e, shown_line, false)) {
          ok = false;
          stop_ = Stop::size;
          next_ = PageCursor{query_, std::string(path), index};
          break;
        }
        --after_left;
        shown_to = e + 1;
        ++shown_line;
      }
    };
    std::optional<Span> m = first;
    while (m && ok) {
      const std::size_t ls = line_start(buf, m->start);
      const std::size_t le = line_end(buf, m->start);
      const std::int64_t number = number_of(ls);
      flush_after(ls);
      if (!ok) break;
      if (index < file_skip_ || results_seen_++ < args_.offset) {
        after_left = 0;
      } else {
        if (!room_for_result()) {
          next_ = PageCursor{query_, std::string(path), index};
          ok = false;
          break;
        }
        if (f.lines.empty()) {
          if (!fits(file_cost)) {
            stop_ = Stop::size;
            next_ = PageCursor{query_, std::string(path), index};
            ok = false;
            break;
          }
          used_ += file_cost;
        }
        // Context before, from the line after the last one shown.
        std::size_t cs = ls;
        std::int64_t cn = number;
        for (std::size_t k = 0; k < args_.before && cs > shown_to; ++k) {
          cs = line_start(buf, cs - 1);
          --cn;
        }
        const std::size_t text_mark = text_.size();
        const std::size_t lines_mark = f.lines.size();
        const std::size_t used_mark = used_;
        bool fits = true;
        for (std::size_t p = cs; p < ls && fits; ++cn) {
          const std::size_t e = line_end(buf, p);
          fits = emit(f, buf, p, e, cn, false);
          p = e + 1;
        }
        if (fits) fits = emit(f, buf, ls, le, number, true);
        if (!fits) {
          // The match and its context go to the next page together.
          text_.resize(text_mark);
          f.lines.resize(lines_mark);
          used_ = used_mark;
          stop_ = Stop::size;
          next_ = PageCursor{query_, std::string(path), index};
          ok = false;
          break;
        }
        ++reported_;
        ++f.count;
        after_left = args_.after;
      }
      ++index;
      shown_to = le + 1;
      shown_line = number + 1;
      if (le >= buf.size()) break;
      m = matcher_.find(buf, le + 1);
    }
    if (ok) flush_after(buf.size());
    if (!f.lines.empty()) files_.push_back(std::move(f));
    return ok;
  }

  FilePrefetch* prefetch_ = nullptr;
  std::deque<SkipCounts> snapshots_;  // the walk's counts as each queued file was found
  SkipCounts walk_seen_;              // the walk's counts merged_ holds
  SkipCounts merged_;
  bool stopped_ = false;  // a limit ended the page while files were queued
  bool cut_by_deadline_ = false;
  std::uint64_t query_;
  std::optional<PageCursor> cursor_;  // where this page starts
  std::optional<PageCursor> next_;    // where the next one does, when a limit ended this one
  std::string last_path_;             // the last file this page passed
  std::size_t file_skip_ = 0;         // results of the current file an earlier page showed
  const Args& args_;
  const LineMatcher& matcher_;
  GlobSet include_, exclude_;
  TreeWalker& walker_;
  std::size_t budget_;
  FileBuffer buffer_;
  std::vector<OutFile> files_;
  std::string text_;
  std::size_t used_ = 0;
  std::size_t results_seen_ = 0;  // results found, including those the offset skips
  std::size_t reported_ = 0;
  std::size_t searched_ = 0;
  std::size_t matched_files_ = 0;
  Stop stop_ = Stop::none;
};

// The part of max_bytes kept for the reply's envelope and summary.
std::size_t budget_for(std::size_t max_bytes) {
  return max_bytes - std::min<std::size_t>(16 << 10, max_bytes / 4);
}

}  // namespace

Result<files::OpReply> search_op(const Json& args, const files::OpContext& ctx) {
  return search_with(args, ctx, SearchTuning{});
}

Result<files::OpReply> search_with(const Json& args, const files::OpContext& ctx,
                                   SearchTuning tuning) {
  const Args a = BRIG_TRY(parse_args(args));
  const std::string resolved =
      BRIG_TRY(files::resolve_path(ctx.workspace, args.value("path", std::string(".")), kSearchOp));
  auto matcher = BRIG_TRY(LineMatcher::compile(a.pattern, a.pattern_options));
  GlobSet include = BRIG_TRY(GlobSet::compile(a.include));
  GlobSet exclude = BRIG_TRY(GlobSet::compile(a.exclude));

  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) {
    const int err = errno;
    Error e = sys_error(std::string(kSearchOp), resolved, err);
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  // Ancestors are found by climbing the real path, not one with "..".
  const std::string root = real_path_or_same(resolved);
  const std::uint64_t query = query_hash("search", root, args);
  std::optional<PageCursor> cursor = BRIG_TRY(read_cursor(args, kSearchOp, query));
  if (cursor && a.offset > 0)
    return std::unexpected(
        Error{std::string(kSearchOp), "cursor", "give cursor or offset, not both", EINVAL});

  WalkOptions options;
  options.hidden = args.contains("hidden") ? a.hidden : include.names_hidden();
  options.gitignore = options.git_exclude = options.dot_ignore = a.gitignore;
  options.ancestors_up_to = real_path_or_same(ctx.workspace);
  options.deadline = ctx.deadline;
  if (cursor && S_ISDIR(st.st_mode)) options.start_at = cursor->path;
  TreeWalker walker(options);
  Search search(a, *matcher, std::move(include), std::move(exclude), walker,
                budget_for(ctx.max_bytes), query, std::move(cursor));

  std::string shown_root = root;
  // Outlives every use of search, which points at it.
  std::unique_ptr<FilePrefetch> prefetch;
  if (S_ISDIR(st.st_mode)) {
    const std::size_t threads = tuning.threads != 0 ? tuning.threads : usable_cores();
    if (threads > 1) {
      // This thread walks and reads too (FilePrefetch::front), so N cores
      // need N - 1 more. Without threads (a jail's process limit) the search
      // runs on this one alone.
      auto started = FilePrefetch::start(*matcher, threads - 1, kMaxSearchFileBytes);
      if (started) prefetch = std::move(*started);
    }
    search.set_prefetch(prefetch.get());
    BRIG_TRY_VOID(walker.walk(root, search));
    search.finish(ctx.deadline);
  } else if (S_ISREG(st.st_mode)) {
    // A file named by the call is searched even when hidden or ignored.
    shown_root = parent_of(root);
    UniqueFd dir(::open(shown_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return std::unexpected(sys_error(std::string(kSearchOp), shown_root, errno));
    const std::string name = name_of(root);
    search.search_file(dir.get(), name, name);
  } else {
    return std::unexpected(Error{std::string(kSearchOp), resolved,
                                 "is neither a directory nor a regular file", EINVAL});
  }
  Json header = search.header(shown_root);
  return files::OpReply{std::move(header), search.take_text()};
}

}  // namespace brig::search
