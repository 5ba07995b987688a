// The small pieces under the tools: base64, content sniffing, UTF-8, paths.
#include <gtest/gtest.h>

#include "server/files/base64.h"
#include "server/files/content_type.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"

namespace brig::files {
namespace {

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(ContentType, MagicNumbersThenNulBytes) {
  EXPECT_EQ(sniff_content("%PDF-1.7\n").description, "PDF document");
  EXPECT_EQ(sniff_content(std::string("PK\x03\x04", 4)).kind, ContentType::Kind::binary);
  EXPECT_EQ(sniff_content("\xff\xfeh\0i\0").description.find("UTF-16"), 0u);
  std::string tar(512, '\0');
  tar.replace(0, 5, "a.txt");
  tar.replace(257, 5, "ustar");
  EXPECT_EQ(sniff_content(tar).description, "tar archive");
  EXPECT_EQ(sniff_content("plain \xe9 latin-1\n").kind, ContentType::Kind::text);
  EXPECT_EQ(sniff_content("").kind, ContentType::Kind::text);
}

TEST(Utf8, CountsInvalidSequences) {
  EXPECT_EQ(count_invalid_utf8("plain ascii"), 0u);
  EXPECT_EQ(count_invalid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), 0u);  // é € 😀
  EXPECT_EQ(count_invalid_utf8("\xe9"), 1u);
  EXPECT_EQ(count_invalid_utf8("\xc0\xaf"), 1u);      // overlong '/'
  EXPECT_EQ(count_invalid_utf8("\xed\xa0\x80"), 1u);  // a surrogate
  EXPECT_EQ(count_invalid_utf8("a\xe2\x82"
                               "b\xff"),
            2u);  // truncated, then a bad byte
}

TEST(Utf8, FindsInvalidBytesInsideLongAsciiRuns) {
  // The ASCII fast path steps eight bytes at a time: a bad byte at every
  // position of a word, and at the very end, is still counted.
  for (std::size_t at = 0; at < 24; ++at) {
    std::string s(24, 'a');
    s[at] = '\xff';
    EXPECT_EQ(count_invalid_utf8(s), 1u) << at;
  }
  EXPECT_EQ(count_invalid_utf8(std::string(1000, 'a') + "\xc3\xa9" + std::string(13, 'b')), 0u);
  EXPECT_EQ(count_invalid_utf8(std::string(16, 'a') + "\xe2\x82"), 1u);  // cut at the end
}

TEST(Utf8, PrefixNeverSplitsASequence) {
  const std::string s = "a\xe2\x82\xac";  // a€
  EXPECT_EQ(utf8_prefix_length(s, 10), 4u);
  EXPECT_EQ(utf8_prefix_length(s, 4), 4u);
  EXPECT_EQ(utf8_prefix_length(s, 3), 1u);
  EXPECT_EQ(utf8_prefix_length(s, 2), 1u);
  EXPECT_EQ(utf8_prefix_length(s, 1), 1u);
}

TEST(Path, RelativeToTheWorkspace) {
  EXPECT_EQ(*resolve_path("/w", "a/./b//c", "op"), "/w/a/b/c");
  EXPECT_EQ(*resolve_path("/w", "/etc/hosts", "op"), "/etc/hosts");
  EXPECT_EQ(*resolve_path("/w", ".", "op"), "/w");
  EXPECT_EQ(*resolve_path("/w", "../x", "op"), "/w/../x");  // the kernel resolves ".."
  EXPECT_FALSE(resolve_path("/w", "", "op"));
  EXPECT_FALSE(resolve_path("/w", std::string("a\0b", 3), "op"));
}

}  // namespace
}  // namespace brig::files
