// Compact JSON text for outgoing messages, written without nlohmann's
// serializer for strings and containers. Byte for byte the output of
// j.dump(-1, ' ', false, Json::error_handler_t::replace), the form brig has
// always sent, but a 1 MiB tool result costs a fraction of the time: runs of
// plain bytes are copied whole instead of one character at a time, and the
// output is reserved once instead of grown. Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace brig::protocol {

// Appends the compact JSON text of j to out. Objects in nlohmann's key order
// (std::map: bytewise), numbers and other scalars exactly as nlohmann writes
// them. Never throws on any string content: each invalid UTF-8 sequence
// becomes U+FFFD as nlohmann's replace handler does it (one per maximal
// subpart of an ill-formed sequence, one for a sequence cut off at the end).
void append_json(std::string& out, const nlohmann::json& j);

// Appends values to out, one after another, as append_json does. A long
// string equal to one already written by the same writer is copied from the
// output instead of escaped again: a tool result may repeat a string (a
// path in its text and in structuredContent; brig's own tools carry large
// text once, docs/tools.md), and comparing with memcmp is far cheaper than
// escaping. Text appended to out between values is fine.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  void value(const nlohmann::json& j);
  // A string value, as value() writes one.
  void string(std::string_view s);

 private:
  // Strings shorter than this are escaped every time; comparing would not pay.
  static constexpr std::size_t kRepeatMin = 4096;
  struct Written {
    std::string_view in;  // the string as the value holds it
    std::size_t at = 0;   // its escaped text, quotes included, in out_
    std::size_t size = 0;
  };

  std::string& out_;
  std::array<Written, 4> written_{};  // the last few long strings, round robin
  std::size_t next_ = 0;
};

// Appends s as a JSON string literal, quotes included, with the escapes
// nlohmann uses: \" \\ \b \f \n \r \t, \u00xx (lowercase hex) for the other
// controls below 0x20; DEL and non-ASCII characters are copied as they are.
void append_json_string(std::string& out, std::string_view s);

// A cheap size estimate of j's compact text (one walk over the tree, no look
// at string contents): exact for text with nothing to escape, a little under
// for text with escapes. Enough to reserve the output once in the common case.
std::size_t estimate_json_size(const nlohmann::json& j);

}  // namespace brig::protocol
