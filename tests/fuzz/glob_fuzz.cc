// The globs a tool call names (server/search/glob.h): find_files' pattern
// and search's filters, straight from the client. Input: the pattern, then
// after the first '\n' the paths to match it against, one per line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/search/glob.h"

namespace {

// The paths a walk hands the glob: relative, no empty, "." or ".."
// components. Others are outside matches()'s contract.
bool walk_path(std::string_view path) {
  if (path.empty()) return false;
  while (true) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string_view::npos) return true;
    path.remove_prefix(slash + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = input.find('\n');
  const std::string_view pattern = input.substr(0, newline);
  std::string_view paths = newline == std::string_view::npos ? "" : input.substr(newline + 1);

  auto expanded = brig::search::expand_braces(pattern);
  if (expanded && (expanded->empty() || expanded->size() > brig::search::kMaxGlobAlternatives)) {
    std::abort();  // expansion promises 1..kMaxGlobAlternatives patterns
  }
  auto glob = brig::search::Glob::compile(pattern);
  if (!glob) return 0;
  (void)glob->names_hidden();
  while (!paths.empty()) {
    const std::size_t end = paths.find('\n');
    const std::string_view path = paths.substr(0, end);
    const bool matches = glob->matches(path);
    const bool dir = glob->matches_dir(path);
    // A walk skips a directory when may_match_below says no: it must never
    // say no above a directory the glob matches, or a match would be missed.
    const std::size_t slash = path.rfind('/');
    if ((matches || dir) && walk_path(path) && slash != std::string_view::npos &&
        !glob->may_match_below(path.substr(0, slash))) {
      std::abort();
    }
    paths = end == std::string_view::npos ? "" : paths.substr(end + 1);
  }
  return 0;
}
