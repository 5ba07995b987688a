#include "server/search/page_cursor.h"

#include <gtest/gtest.h>

namespace brig::search {
namespace {

using protocol::Json;

// Paths are bytes: a cursor carries any of them as ASCII and back.
TEST(PageCursor, RoundTripsAnyPathBytes) {
  const std::string path("d\xff/\x01 x\xc3\xa9", 8);
  for (const std::size_t skip : {std::size_t{0}, std::size_t{17}, PageCursor::kWholeFile}) {
    const std::string text = encode_cursor(PageCursor{42, path, skip});
    for (const char c : text) EXPECT_TRUE(c > 0x20 && c < 0x7f) << text;
    auto back = read_cursor(Json{{"cursor", text}}, "search", 42);
    ASSERT_TRUE(back && *back);
    EXPECT_EQ((*back)->path, path);
    EXPECT_EQ((*back)->skip, skip);
  }
  auto none = read_cursor(Json::object(), "search", 42);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST(PageCursor, RefusesWhatItDidNotGiveAndOtherQueries) {
  const std::string good = encode_cursor(PageCursor{7, "a/b", 0});
  for (const Json& bad :
       {Json("x"), Json(3), Json("c1."), Json(good + "g"), Json("c1.zz" + good)}) {
    auto r = read_cursor(Json{{"cursor", bad}}, "find files", 7);
    ASSERT_FALSE(r) << bad.dump();
  }
  auto other = read_cursor(Json{{"cursor", good}}, "find files", 8);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().why.find("another query"), std::string::npos);
}

// Page sizes may change between pages; what selects results may not.
TEST(PageCursor, QueryHashIgnoresOnlyPageSizes) {
  const Json a = {{"pattern", "x"}, {"limit", 5}, {"offset", 0}};
  const Json b = {{"pattern", "x"}, {"limit", 50}, {"cursor", "c1.whatever"}};
  EXPECT_EQ(query_hash("find_files", "/w", a), query_hash("find_files", "/w", b));
  EXPECT_NE(query_hash("find_files", "/w", a), query_hash("search", "/w", a));
  EXPECT_NE(query_hash("find_files", "/w", a), query_hash("find_files", "/v", a));
  EXPECT_NE(query_hash("find_files", "/w", a),
            query_hash("find_files", "/w", Json{{"pattern", "x"}, {"hidden", true}}));
}

}  // namespace
}  // namespace brig::search
