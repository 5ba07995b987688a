// .gitignore-style files (server/search/ignore_file.h): a workspace's own
// files, so anything its jailed commands wrote. Input: the file's text, then
// after the first NUL the paths to match, one per line ("/" at the end
// marks a directory).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/search/ignore_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  std::string_view paths = nul == std::string_view::npos ? "" : input.substr(nul + 1);

  const auto file = brig::search::IgnoreFile::parse(text);
  if (file.empty() != (file.size() == 0)) std::abort();
  while (!paths.empty()) {
    const std::size_t end = paths.find('\n');
    std::string_view path = paths.substr(0, end);
    const bool is_dir = !path.empty() && path.back() == '/';
    if (is_dir) path.remove_suffix(1);
    const auto verdict = file.match(path, is_dir);
    if (file.empty() && verdict != brig::search::IgnoreVerdict::none) std::abort();
    paths = end == std::string_view::npos ? "" : paths.substr(end + 1);
  }
  return 0;
}
