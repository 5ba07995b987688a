// search: lines that match a regex or a fixed string under a directory,
// as matching lines with context, file names, or per-file counts.
#pragma once

#include <cstdint>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "protocol/tool_args.h"
#include "server/files/op.h"

namespace brig::search {

inline constexpr std::int64_t kDefaultSearchResults = 100;
inline constexpr std::int64_t kMaxSearchResults = 10000;
inline constexpr std::int64_t kDefaultMaxLineLength = 500;
inline constexpr std::int64_t kMinMaxLineLength = 40;
inline constexpr std::int64_t kMaxMaxLineLength = 100000;
inline constexpr std::int64_t kMaxContextLines = 50;
inline constexpr protocol::IntegerArg kContextBefore{"context_before", 0, kMaxContextLines, 0};
inline constexpr protocol::IntegerArg kContextAfter{"context_after", 0, kMaxContextLines, 0};
inline constexpr protocol::IntegerArg kSearchMaxResults{"max_results", 1, kMaxSearchResults,
                                                        kDefaultSearchResults};
inline constexpr protocol::IntegerArg kSearchOffset{"offset", 0, protocol::kMaxJsonInteger, 0};
inline constexpr protocol::IntegerArg kMaxLineLength{"max_line_length", kMinMaxLineLength,
                                                     kMaxMaxLineLength, kDefaultMaxLineLength};
// Larger files are skipped (and counted): each file is read whole into memory.
inline constexpr std::size_t kMaxSearchFileBytes = 64u << 20;

// Runs in the worker. args (validated against the descriptor's schema):
// pattern; path (a directory or one file; default the workspace);
// fixed_strings, case_insensitive, smart_case; include and exclude (glob
// arrays, see glob.h); context_before, context_after; output_mode
// ("content" default, "files", "count"); max_results (matching lines in
// content mode, files otherwise); offset (results to skip, for paging);
// max_line_length; hidden (default false, or true when an include glob
// names a hidden component); gitignore (default true: honour
// .gitignore, .ignore and .git/info/exclude).
//
// Files are searched in path order, each read whole (binary files, by
// content sniffing or a NUL byte, are skipped and counted). The header
// holds the files with their lines (line number, match or context, where a
// long line was cut), what was skipped by reason, and whether and where the
// results continue (next_offset) when max_results, the reply size
// (ctx.max_bytes) or the deadline stopped them. The bytes are the reported
// lines' text, in header order, each followed by '\n'.
//
// Files are read and matched on as many threads as the process may use
// (its CPU affinity), and still reported in path order with the same
// counts as a search on one thread: the walk queues files, reading threads
// find each one's first match, and the walk's thread takes them back in
// order to build the page (server/search/file_prefetch.h).
Result<files::OpReply> search_op(const protocol::Json& args, const files::OpContext& ctx);

struct SearchTuning {
  // Threads that search, the walk's own included; 0: one per usable core;
  // 1: the walk's thread alone.
  std::size_t threads = 0;
};
// search_op with a thread count (tests and benchmarks compare them).
Result<files::OpReply> search_with(const protocol::Json& args, const files::OpContext& ctx,
                                   SearchTuning tuning);

}  // namespace brig::search
