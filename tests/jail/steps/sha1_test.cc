// The git layer's SHA-1 against FIPS 180-4's examples and against git's own
// object ids.
#include "jail/steps/sha1.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace brig::jail::sha1 {
namespace {

std::string hex_of(const std::string& data, size_t chunk = 0) {
  Hasher h;
  if (chunk == 0) {
    h.update(data.data(), data.size());
  } else {
    for (size_t i = 0; i < data.size(); i += chunk)
      h.update(data.data() + i, std::min(chunk, data.size() - i));
  }
  unsigned char out[20];
  h.finish(out);
  std::string hex;
  char b[3];
  for (unsigned char c : out) {
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  return hex;
}

TEST(Sha1Test, StandardVectors) {
  EXPECT_EQ(hex_of(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex_of("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(hex_of(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1Test, ChunkingDoesNotMatter) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 7);
  for (size_t chunk : {1u, 3u, 55u, 56u, 63u, 64u, 65u, 999u})
    EXPECT_EQ(hex_of(data, chunk), hex_of(data)) << chunk;
}

// git's id of a blob is the SHA-1 of "blob <size>\0<contents>".
TEST(Sha1Test, MatchesGitsBlobIds) {
  EXPECT_EQ(hex_of(std::string("blob 6\0hello\n", 13)), "ce013625030ba8dba906f756967f9e9ca394464a");
}

}  // namespace
}  // namespace brig::jail::sha1
