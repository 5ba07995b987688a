// What a file holds, judged from its first bytes: UTF-8-ish text, an image
// MCP clients can show (PNG, JPEG, GIF, WebP), or other binary data.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brig::files {

// How many leading bytes sniff_content() looks at; more are ignored.
inline constexpr std::size_t kSniffBytes = 8192;

struct ContentType {
  enum class Kind { text, image, binary };
  Kind kind = Kind::text;
  std::string mime_type;    // "image/png", "application/pdf"; "text/plain" for text
  std::string description;  // for messages: "PNG image", "ELF executable"; empty for text
};

// The type of a file whose first bytes are `head` (pass at least the first
// kSniffBytes, or the whole file when shorter). Known magic numbers decide
// first; otherwise a NUL byte means binary (as git and grep judge), and
// anything else is text, even when it is not valid UTF-8.
ContentType sniff_content(std::string_view head);

}  // namespace brig::files
