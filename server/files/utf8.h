// UTF-8 for what is sent as a JSON string. File text: the encoder replaces
// each invalid sequence with U+FFFD, and the result says so. File names: a
// lossless escape (name_to_text / text_to_name), so a name shown can be
// passed back and names the same file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace brig::files {

// The UTF-8 byte order mark: read_file drops it from the text it shows;
// edit_file matches after it and keeps it.
inline constexpr std::string_view kUtf8Bom = "\xef\xbb\xbf";

// How many invalid UTF-8 sequences `text` holds (each becomes one U+FFFD).
// Overlong forms, surrogates and code points above U+10FFFF count as invalid.
std::size_t count_invalid_utf8(std::string_view text);

// The longest prefix of `text` of at most max_bytes that does not end inside
// a multi-byte sequence.
std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes);

// File names (and paths) are bytes; a JSON string is Unicode. A name is
// shown as text so that every byte survives (in the spirit of Python's
// surrogateescape, but valid UTF-8, so JSON can carry it):
//  - each byte that is not part of a valid UTF-8 character (RFC 3629: no
//    overlong forms, surrogates or code points past U+10FFFF), and each
//    byte of a character in U+F780..U+F7FF (private use, reserved for this
//    escape), is shown as the code point U+F700 + byte (bytes 0x80..0xFF);
//  - every other character, ASCII included, is itself.
// A valid UTF-8 name without U+F780..U+F7FF (nearly every name) is shown
// unchanged. The escape never makes ASCII, so '/', '.' and NUL mean in the
// text what they mean in the name.
std::string name_to_text(std::string_view name);

// The inverse: each U+F780..U+F7FF becomes its byte, everything else is
// copied. nullopt for text that name_to_text never gives (escapes that
// spell a valid character outside the reserved range, as U+F7C3 U+F7A9
// spells "é"): one name, one text, so two spellings never name one file.
std::optional<std::string> text_to_name(std::string_view text);

// What the file tools' descriptions say of it, after a path argument's.
inline constexpr std::string_view kNameEscapeNote =
    " A name whose bytes are not UTF-8 is listed with each such byte as U+F780..U+F7FF; pass it "
    "back exactly as listed.";

}  // namespace brig::files
