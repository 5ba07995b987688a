#include "server/files/read_file.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "server/files/aligned_bytes.h"
#include "server/files/base64.h"
#include "server/files/content_type.h"
#include "server/files/file_io.h"
#include "server/files/json_size.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"

namespace brig::files {
namespace {

using protocol::Json;
constexpr std::string_view kReadFileOp = "read file";

// A reply carries its content once: text and base64 as the first text block
// (structuredContent holds only the header), an image as image content.
constexpr std::size_t kTextCopies = 1;

// What a reply needs besides its content: the structured header and the
// note, each of which may name the path (as a JSON string: escaped).
std::size_t reply_overhead(const std::string& path, std::size_t max_bytes) {
  return std::min(max_bytes / 4, 4096 + 4 * json_string_cost(path));
}

// Raw bytes whose base64 form fits in the reply, `copies` times.
std::size_t base64_capacity(const std::string& path, const OpContext& ctx, std::size_t copies) {
  return (ctx.max_bytes - reply_overhead(path, ctx.max_bytes)) / copies / 4 * 3;
}

// What `part` adds to the reply: its JSON-escaped size in each copy.
std::size_t text_cost(std::string_view part) {
  return kTextCopies * (json_string_cost(part) - 2);
}

// The longest prefix of `part` whose text_cost() is at most budget, not
// ending inside a UTF-8 sequence.
std::size_t prefix_within_cost(std::string_view part, std::size_t budget) {
  std::size_t n = 0;
  for (std::size_t cost = 0; n < part.size(); ++n) {
    cost += kTextCopies * json_byte_cost(static_cast<unsigned char>(part[n]));
    if (cost > budget) break;
  }
  return utf8_prefix_length(part, n);
}

// How many '\n' are in s, eight bytes at a time (std::count goes byte by
// byte at -O2, and counting is most of the work of reading a large file).
std::int64_t count_newlines(std::string_view s) {
  constexpr std::uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fu;
  std::int64_t n = 0;
  std::size_t i = 0;
  for (; s.size() - i >= 8; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    w ^= 0x0a0a0a0a0a0a0a0au;  // a '\n' byte is now zero
    // Bit 7 of each byte: set exactly where the byte is zero (no carries
    // cross bytes: 0x7f + 0x7f < 0x100).
    const std::uint64_t zero = ~(((w & kLow7) + kLow7) | w | kLow7);
    // Their number: the eight 0/1 bytes summed into the top byte by one
    // multiplication (std::popcount is a libgcc call without -mpopcnt).
    n += static_cast<std::int64_t>(((zero >> 7) * 0x0101010101010101u) >> 56);
  }
  for (; i < s.size(); ++i) n += s[i] == '\n';
  return n;
}

// The state of one pass over a text file: which lines are kept, and how many
// there are in all. What is kept costs at most `budget` once encoded in the
// reply (text_cost()): the encoded size decides, not the raw one, since a
// control character takes six bytes in JSON.
class LineCollector {
 public:
  LineCollector(std::int64_t first, std::int64_t limit, std::size_t budget)
      : first_(first), last_(first + limit - 1), budget_(budget) {}

  // Reserves room for what will likely be kept: no regrowth copies.
  void reserve(std::size_t bytes) { text_.reserve(std::min(bytes, budget_ / kTextCopies)); }

  // Feeds the next bytes of the file.
  void feed(std::string_view chunk) {
    if (chunk.empty()) return;
    if (done()) {
      // Past the kept lines only the count matters.
      const auto newlines = count_newlines(chunk);
      lines_ += newlines;
      line_ += newlines;
      line_open_ = chunk.back() != '\n';
      return;
    }
    if (take_whole(chunk)) return;
    while (!chunk.empty()) {
      const std::size_t nl = chunk.find('\n');
      const std::size_t len = nl == std::string_view::npos ? chunk.size() : nl + 1;
      take(chunk.substr(0, len), nl != std::string_view::npos);
      chunk.remove_prefix(len);
    }
  }

  // Call at end of file.
  void finish() {
    if (line_open_) {
      ++lines_;  // a last line without '\n'
      if (keeping() && !full_) end_line_ = line_;
    }
  }

  std::string& text() { return text_; }
  std::int64_t total_lines() const { return lines_; }
  std::int64_t end_line() const { return end_line_; }
  bool line_cut() const { return line_cut_; }
  // No later byte can be kept: past the range, or the byte cap reached.
  bool done() const { return full_ || line_ > last_; }

 private:
  bool keeping() const { return line_ >= first_ && line_ <= last_; }

  // The common case of a large read, in one append: every line the chunk
  // touches is kept and all of it fits. What take() would do line by line.
  bool take_whole(std::string_view chunk) {
    if (line_ < first_ || cost_ + chunk.size() * kTextCopies > budget_) return false;
    const auto newlines = count_newlines(chunk);
    const bool ends_line = chunk.back() == '\n';
    if (line_ + newlines - (ends_line ? 1 : 0) > last_) return false;
    const std::size_t cost = text_cost(chunk);
    if (cost_ + cost > budget_) return false;
    const std::size_t base = text_.size();
    if (!line_open_) line_start_ = base;
    text_ += chunk;
    cost_ += cost;
    if (newlines > 0) {
      end_line_ = line_ + newlines - 1;
      lines_ += newlines;
      line_ += newlines;
      if (!ends_line) line_start_ = base + chunk.rfind('\n') + 1;
    }
    line_open_ = !ends_line;
    return true;
  }

  void take(std::string_view part, bool ends_line) {
    if (!line_open_) {
      line_open_ = true;
      line_start_ = text_.size();
    }
    if (keeping() && !full_) {
      if (const std::size_t cost = text_cost(part); cost_ + cost <= budget_) {
        text_ += part;
        cost_ += cost;
      } else if (end_line_ == 0) {
        // Not even the first line fits: keep what fits of it, cut between
        // UTF-8 sequences, and say so.
        text_ += part.substr(0, prefix_within_cost(part, budget_ - cost_));
        line_cut_ = true;
        full_ = true;
        end_line_ = line_;
      } else {
        text_.resize(line_start_);  // whole lines only
        full_ = true;
      }
    }
    if (ends_line) {
      if (keeping() && !full_) end_line_ = line_;
      ++lines_;
      ++line_;
      line_open_ = false;
    }
  }

  std::int64_t first_, last_;
  std::size_t budget_;
  std::string text_;
  std::size_t cost_ = 0;       // text_cost(text_)
  std::int64_t line_ = 1;      // the line the next byte belongs to
  std::int64_t lines_ = 0;     // complete lines seen
  std::int64_t end_line_ = 0;  // last line kept; 0 = none
  std::size_t line_start_ = 0;
  bool line_open_ = false;
  bool line_cut_ = false;
  bool full_ = false;
};

Result<OpReply> read_bytes(OpenFile& f, const std::string& path, const ContentType& type,
                           bool image, const OpContext& ctx) {
  const std::size_t cap = base64_capacity(path, ctx, image ? 1 : kTextCopies);
  const auto size = static_cast<std::size_t>(f.st.st_size);
  if (size > cap) {
    return std::unexpected(Error{
        std::string(kReadFileOp), path,
        fmt::format("{} of {} bytes is over the {}-byte limit for base64 content; use exec with "
                    "tools such as head -c, dd or file to inspect it",
                    image ? type.description : "the file", size, cap),
        EFBIG});
  }
  std::string bytes = BRIG_TRY(read_up_to(f.fd.get(), cap + 1, kReadFileOp, path));
  if (bytes.size() > cap) {
    return std::unexpected(Error{std::string(kReadFileOp), path,
                                 fmt::format("the file grew past the {}-byte limit while it was "
                                             "read",
                                             cap),
                                 EFBIG});
  }
  Json header = {{"kind", image ? "image" : "base64"},
                 {"path", name_to_text(path)},
                 {"size", bytes.size()},
                 {"mime_type", type.mime_type}};
  return OpReply{std::move(header), std::move(bytes)};
}

Result<OpReply> read_text(OpenFile& f, const std::string& path, std::string head,
                          std::int64_t offset, std::int64_t limit, const OpContext& ctx) {
  LineCollector lines(offset, limit, ctx.max_bytes - reply_overhead(path, ctx.max_bytes));
  if (offset == 1) lines.reserve(static_cast<std::size_t>(f.st.st_size));
  const bool bom = std::string_view(head).starts_with(kUtf8Bom);
  lines.feed(std::string_view(head).substr(bom ? kUtf8Bom.size() : 0));
  head.clear();
  bool counted_all = true;
  constexpr std::size_t kChunk = 1 << 16;
  const AlignedBytes chunk = allocate_aligned(kChunk);
  if (!chunk)
    return std::unexpected(Error{std::string(kReadFileOp), path, "out of memory", ENOMEM});
  while (true) {
    const ssize_t n = ::read(f.fd.get(), chunk.get(), kChunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(sys_error(std::string(kReadFileOp), path, errno));
    }
    if (n == 0) break;
    lines.feed(std::string_view(chunk.get(), static_cast<std::size_t>(n)));
    // The kept lines are done; counting the rest of a huge file must not
    // outlive the call.
    if (lines.done() && std::chrono::steady_clock::now() > ctx.deadline) {
      counted_all = false;
      break;
    }
  }
  lines.finish();
  const std::int64_t total = lines.total_lines();
  if (offset > 1 && offset > total && counted_all) {
    return std::unexpected(Error{std::string(kReadFileOp), path,
                                 fmt::format("offset {} is past the end: the file has {} line{}",
                                             offset, total, total == 1 ? "" : "s"),
                                 0});
  }
  const std::int64_t start = lines.end_line() == 0 ? 0 : offset;
  const std::int64_t wanted_end = std::min(offset + limit - 1, total);
  const bool truncated = lines.line_cut() || lines.end_line() < wanted_end;
  std::string& text = lines.text();
  Json header = {{"kind", "text"},
                 {"path", name_to_text(path)},
                 {"size", f.st.st_size},
                 {"mime_type", "text/plain"},
                 {"start_line", start},
                 {"end_line", lines.end_line()},
                 {"total_lines", total},
                 {"total_lines_exact", counted_all},
                 {"truncated", truncated},
                 {"line_cut", lines.line_cut()},
                 {"bom", bom},
                 {"invalid_utf8", count_invalid_utf8(text)}};
  return OpReply{std::move(header), std::move(text)};
}

}  // namespace

Result<OpReply> read_file_op(const Json& args, const OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), kReadFileOp));
  const std::int64_t offset = BRIG_TRY(kReadOffset.read(args));
  const std::int64_t limit = BRIG_TRY(kReadLimit.read(args));
  const bool base64 = args.value("encoding", std::string("text")) == "base64";

  OpenFile f = BRIG_TRY(open_regular(path, kReadFileOp));
  std::string head = BRIG_TRY(read_up_to(f.fd.get(), kSniffBytes, kReadFileOp, path));
  const ContentType type = sniff_content(head);
  if (base64 || type.kind == ContentType::Kind::image) {
    if (::lseek(f.fd.get(), 0, SEEK_SET) != 0) {
      return std::unexpected(sys_error(std::string(kReadFileOp), path, errno));
    }
    return read_bytes(f, path, type, /*image=*/!base64, ctx);
  }
  if (type.kind == ContentType::Kind::binary) {
    return std::unexpected(Error{
        std::string(kReadFileOp), path,
        fmt::format("binary file ({}, {} bytes), not shown as text; pass encoding: \"base64\" "
                    "to get its bytes (up to {} bytes)",
                    type.description, f.st.st_size, base64_capacity(path, ctx, kTextCopies)),
        0});
  }
  return read_text(f, path, std::move(head), offset, limit, ctx);
}

}  // namespace brig::files
