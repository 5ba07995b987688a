#include "server/files/content_type.h"

#include <array>

namespace brig::files {
namespace {

struct Magic {
  std::size_t offset;
  std::string_view bytes;
  ContentType::Kind kind;
  std::string_view mime_type;
  std::string_view description;
};

using namespace std::string_view_literals;
using Kind = ContentType::Kind;

// Only formats whose signature cannot begin a plain text file; the rest are
// caught by their NUL bytes.
constexpr std::array kMagic = {
    Magic{0, "\x89PNG\r\n\x1a\n"sv, Kind::image, "image/png", "PNG image"},
    Magic{0, "\xff\xd8\xff"sv, Kind::image, "image/jpeg", "JPEG image"},
    Magic{0, "GIF87a"sv, Kind::image, "image/gif", "GIF image"},
    Magic{0, "GIF89a"sv, Kind::image, "image/gif", "GIF image"},
    Magic{0,
          "\x7f"
          "ELF"sv,
          Kind::binary, "application/x-elf", "ELF executable or library"},
    Magic{0, "%PDF-"sv, Kind::binary, "application/pdf", "PDF document"},
    Magic{0, "PK\x03\x04"sv, Kind::binary, "application/zip", "zip archive"},
    Magic{0, "PK\x05\x06"sv, Kind::binary, "application/zip", "zip archive (empty)"},
    Magic{0, "\x1f\x8b"sv, Kind::binary, "application/gzip", "gzip data"},
    Magic{0,
          "\xfd"
          "7zXZ\x00"sv,
          Kind::binary, "application/x-xz", "xz data"},
    Magic{0, "\x28\xb5\x2f\xfd"sv, Kind::binary, "application/zstd", "zstd data"},
    Magic{0, "7z\xbc\xaf\x27\x1c"sv, Kind::binary, "application/x-7z-compressed", "7-zip archive"},
    Magic{0, "SQLite format 3\x00"sv, Kind::binary, "application/vnd.sqlite3", "SQLite database"},
    Magic{0, "\xca\xfe\xba\xbe"sv, Kind::binary, "application/java-vm",
          "Java class or Mach-O universal binary"},
    Magic{0,
          "\x00"
          "asm"sv,
          Kind::binary, "application/wasm", "WebAssembly module"},
    Magic{0, "\xff\xfe"sv, Kind::binary, "text/plain; charset=utf-16le",
          "UTF-16 text (little endian), not UTF-8"},
    Magic{0, "\xfe\xff"sv, Kind::binary, "text/plain; charset=utf-16be",
          "UTF-16 text (big endian), not UTF-8"},
    Magic{257, "ustar"sv, Kind::binary, "application/x-tar", "tar archive"},
};

bool matches(std::string_view head, const Magic& m) {
  return head.size() >= m.offset + m.bytes.size() &&
         head.substr(m.offset, m.bytes.size()) == m.bytes;
}

}  // namespace

ContentType sniff_content(std::string_view head) {
  head = head.substr(0, kSniffBytes);
  // RIFF....WEBP: the size field in between varies.
  if (head.size() >= 12 && head.substr(0, 4) == "RIFF" && head.substr(8, 4) == "WEBP") {
    return {Kind::image, "image/webp", "WebP image"};
  }
  for (const Magic& m : kMagic) {
    if (matches(head, m)) return {m.kind, std::string(m.mime_type), std::string(m.description)};
  }
  if (head.find('\0') != std::string_view::npos) {
    return {Kind::binary, "application/octet-stream", "binary data (it contains NUL bytes)"};
  }
  return {Kind::text, "text/plain", ""};
}

}  // namespace brig::files
