// Page cursors for find_files and search: where the next page starts, as a
// position in the walk's fixed order, so a page costs the work of that page
// (the walk skips straight to the position) instead of re-walking the tree
// up to an offset. A cursor is a value the client holds; the worker keeps
// nothing, so it survives a restarted worker and never expires. It names the
// query it belongs to (a hash of the arguments that shape the results), so a
// cursor passed to another query is a clear error, not a wrong page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"

namespace brig::search {

struct PageCursor {
  // Every result of the file at `path` is skipped (the page ended after it).
  static constexpr std::size_t kWholeFile = std::numeric_limits<std::size_t>::max();

  std::uint64_t query = 0;  // query_hash() of the call that gave it
  std::string path;         // the file the next page starts at, relative to the searched path
  std::size_t skip = 0;     // results of that file already shown, or kWholeFile
};

// The hash of what shapes a result list: the operation, the searched
// directory and every argument except those that only cut pages (cursor,
// offset, limit, max_results, max_line_length).
std::uint64_t query_hash(std::string_view op, const std::string& root, const protocol::Json& args);

// "c1.<query>.<skip>.<hex path>": ASCII only, since paths are bytes that
// need not be UTF-8 and the header travels as JSON.
std::string encode_cursor(const PageCursor& cursor);

// The cursor in args["cursor"] for the query `query`; nullopt without one.
// Fails, saying why, on a cursor this operation did not give or one from
// another query (other pattern, path or options).
Result<std::optional<PageCursor>> read_cursor(const protocol::Json& args, std::string_view what,
                                              std::uint64_t query);

}  // namespace brig::search
