#include "server/files/read_file.h"
#include "server/tools/read_file_tool.h"

#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "protocol/json_encode.h"
#include "protocol/schema_check.h"
#include "server/files/json_size.h"
#include "tests/server/files/temp_dir.h"

namespace brig::files {
namespace {

using protocol::Json;
using testing::context_for;
using testing::TempDir;

std::string numbered_lines(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

TEST(ReadFile, WholeSmallFileWithLineCount) {
  TempDir dir;
  dir.write("a.txt", "one\ntwo\nthree\n");
  auto r = read_file_op(Json{{"path", "a.txt"}}, context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->bytes, "one\ntwo\nthree\n");
  EXPECT_EQ(r->header["kind"], "text");
  EXPECT_EQ(r->header["path"], dir.at("a.txt"));
  EXPECT_EQ(r->header["start_line"], 1);
  EXPECT_EQ(r->header["end_line"], 3);
  EXPECT_EQ(r->header["total_lines"], 3);
  EXPECT_EQ(r->header["truncated"], false);
}

TEST(ReadFile, LastLineWithoutNewlineCounts) {
  TempDir dir;
  dir.write("a.txt", "one\ntwo");
  auto r = read_file_op(Json{{"path", dir.at("a.txt")}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes, "one\ntwo");
  EXPECT_EQ(r->header["total_lines"], 2);
  EXPECT_EQ(r->header["end_line"], 2);
}

TEST(ReadFile, LineRangeByOffsetAndLimit) {
  TempDir dir;
  dir.write("a.txt", numbered_lines(100));
  auto r = read_file_op(Json{{"path", "a.txt"}, {"offset", 10}, {"limit", 3}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes, "line 10\nline 11\nline 12\n");
  EXPECT_EQ(r->header["start_line"], 10);
  EXPECT_EQ(r->header["end_line"], 12);
  EXPECT_EQ(r->header["total_lines"], 100);
  EXPECT_EQ(r->header["truncated"], false);

  auto tail =
      read_file_op(Json{{"path", "a.txt"}, {"offset", 99}, {"limit", 10}}, context_for(dir));
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->bytes, "line 99\nline 100\n");
  EXPECT_EQ(tail->header["end_line"], 100);

  auto huge = read_file_op(Json{{"path", "a.txt"}, {"offset", 100}, {"limit", kMaxReadLine}},
                           context_for(dir));
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->bytes, "line 100\n");
  // Past the range the schema announces: refused, not clamped.
  EXPECT_FALSE(read_file_op(
      Json{{"path", "a.txt"}, {"offset", 100}, {"limit", std::numeric_limits<std::int64_t>::max()}},
      context_for(dir)));
}

TEST(ReadFile, CountsEveryLineOfALargeFile) {
  TempDir dir;
  dir.write("big.txt", numbered_lines(100000) + "no newline at the end");
  auto r = read_file_op(Json{{"path", "big.txt"}, {"limit", 2}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes, "line 1\nline 2\n");
  EXPECT_EQ(r->header["total_lines"], 100001);
  EXPECT_EQ(r->header["total_lines_exact"], true);
  EXPECT_EQ(r->header["truncated"], false);
  auto last = read_file_op(Json{{"path", "big.txt"}, {"offset", 100001}}, context_for(dir));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->bytes, "no newline at the end");
}

// The lines offset..offset+limit-1 of text, whole, as a reader splitting at
// every '\n' would keep them.
std::string expected_range(const std::string& text, std::int64_t offset, std::int64_t limit) {
  std::string out;
  std::int64_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++line) {
    const std::size_t nl = text.find('\n', i);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    if (line >= offset && line < offset + limit) out += text.substr(i, end - i);
    i = end;
  }
  return out;
}

TEST(ReadFile, RangesAcrossReadChunksMatchALineByLineSplit) {
  // Lines of varied length, so that lines straddle the 64 KiB reads, and
  // ranges that start, end and lie inside chunks.
  std::string text;
  for (int i = 1; text.size() < 300000; ++i)
    text += std::string(static_cast<std::size_t>(i % 97), 'x') + "\n";
  text += "open last line";
  TempDir dir;
  dir.write("a.txt", text);
  const std::int64_t total = std::count(text.begin(), text.end(), '\n') + 1;
  for (const auto& [offset, limit] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{1, total},
                                                          {1, 1},
                                                          {1, 1500},
                                                          {1300, 2000},
                                                          {2, total},
                                                          {total, 1},
                                                          {total - 1, 5},
                                                          {4000, 3}}) {
    auto r = read_file_op(Json{{"path", "a.txt"}, {"offset", offset}, {"limit", limit}},
                          context_for(dir));
    ASSERT_TRUE(r) << r.error().to_string();
    const std::string want = expected_range(text, offset, limit);
    EXPECT_EQ(r->bytes, want) << "offset " << offset << " limit " << limit;
    EXPECT_EQ(r->header["total_lines"], total);
    EXPECT_EQ(r->header["end_line"], std::min(offset + limit - 1, total));
    EXPECT_EQ(r->header["truncated"], false);
  }
  // A byte cap inside the second chunk: whole lines only, and where to go on.
  auto capped = read_file_op(Json{{"path", "a.txt"}, {"limit", total}},
                             context_for(dir, /*max_bytes=*/100000));
  ASSERT_TRUE(capped);
  const std::int64_t end = capped->header["end_line"];
  EXPECT_EQ(capped->bytes, expected_range(text, 1, end));
  // Once (the text block only), escaped: under the cap, near it.
  EXPECT_LE(json_string_cost(capped->bytes), 100000u);
  EXPECT_GT(json_string_cost(capped->bytes), 100000u * 3 / 4);
  EXPECT_EQ(capped->header["truncated"], true);
}

TEST(ReadFile, OffsetPastTheEndIsAnError) {
  TempDir dir;
  dir.write("a.txt", numbered_lines(5));
  auto r = read_file_op(Json{{"path", "a.txt"}, {"offset", 6}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("offset 6 is past the end: the file has 5 lines"), std::string::npos)
      << r.error().why;
}

TEST(ReadFile, ByteCapKeepsWholeLinesAndSaysWhereToContinue) {
  TempDir dir;
  dir.write("a.txt", numbered_lines(1000));
  auto r = read_file_op(Json{{"path", "a.txt"}}, context_for(dir, /*max_bytes=*/100));
  ASSERT_TRUE(r);
  EXPECT_LE(r->bytes.size(), 100u);
  ASSERT_FALSE(r->bytes.empty());
  EXPECT_EQ(r->bytes.back(), '\n');
  const std::int64_t end = r->header["end_line"];
  EXPECT_EQ(r->bytes, numbered_lines(static_cast<int>(end)));
  EXPECT_EQ(r->header["truncated"], true);
  EXPECT_EQ(r->header["total_lines"], 1000);

  const auto result = tools::format_read_file(Json::object(), std::move(*r));
  ASSERT_EQ(result.content.size(), 2u);
  const std::string note = result.content[1].to_json()["text"];
  EXPECT_NE(note.find("continue with offset=" + std::to_string(end + 1)), std::string::npos)
      << note;
}

// What the client receives for the reply: the JSON-RPC result line.
std::size_t wire_size(OpReply reply) {
  std::string out;
  protocol::append_json(out, tools::format_read_file(Json::object(), std::move(reply)).to_json());
  return out.size();
}

// Issue 15: control characters take six bytes each in JSON: the page must
// fit the message limit (twice max_bytes), encoded. Issue 16: the text
// travels once, so a page of plain text fills most of max_bytes.
TEST(ReadFile, APageFitsTheMessageOnceEncoded) {
  constexpr std::size_t kMaxMessage = 8u << 20;
  for (const char fill : {'x', '\x01', '"'}) {
    TempDir dir;
    std::string text;
    for (int i = 0; i < 2000; ++i) text += std::string(2100, fill) + "\n";
    dir.write("a.txt", text);
    auto r = read_file_op(Json{{"path", "a.txt"}}, context_for(dir, kMaxMessage / 2));
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->header["truncated"], true);
    const std::int64_t end = r->header["end_line"];
    ASSERT_GT(end, 0);
    EXPECT_EQ(r->bytes, expected_range(text, 1, end));
    EXPECT_LE(wire_size(*r), kMaxMessage / 2) << "fill " << int{fill};
    if (fill == 'x') {
      EXPECT_GT(r->bytes.size(), kMaxMessage / 2 * 3 / 4);
    }
    const auto result = tools::format_read_file(Json::object(), std::move(*r));
    const std::string note = result.content.back().to_json()["text"];
    EXPECT_NE(note.find("continue with offset=" + std::to_string(end + 1)), std::string::npos)
        << note;
  }
}

TEST(ReadFile, Base64FitsTheMessageOnce) {
  TempDir dir;
  const std::size_t max_bytes = 64 << 10;
  // Raw bytes whose base64 is over max_bytes.
  dir.write("blob", std::string(max_bytes / 4 * 3 + 100, '\0'));
  auto r =
      read_file_op(Json{{"path", "blob"}, {"encoding", "base64"}}, context_for(dir, max_bytes));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("limit for base64"), std::string::npos) << r.error().why;

  // Its base64 fits once, not twice: served, since it travels once.
  dir.write("half", std::string(max_bytes / 2, '\0'));
  auto half =
      read_file_op(Json{{"path", "half"}, {"encoding", "base64"}}, context_for(dir, max_bytes));
  ASSERT_TRUE(half) << half.error().to_string();
  EXPECT_LE(wire_size(std::move(*half)), max_bytes);
}

// Issue 16: a reply carries a file once. 1 MiB of source text (newlines and
// quotes escaped: a few percent) costs at most 1.1 times its size; twice
// would be over 2.
TEST(ReadFile, AMebibyteReplyCarriesTheFileOnce) {
  std::string text;
  for (int i = 0; text.size() < (1u << 20); ++i)
    text += fmt::format("    const int value_{} = compute(\"argument {}\", {}) + offset_{};\n", i,
                        i, i * 7, i);
  text.resize(1u << 20);
  TempDir dir;
  dir.write("big.cc", text);
  auto r = read_file_op(Json{{"path", "big.cc"}, {"limit", kMaxReadLine}},
                        context_for(dir, /*max_bytes=*/4u << 20));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->header["truncated"], false);
  EXPECT_EQ(r->bytes, text);
  const auto result = tools::format_read_file(Json::object(), std::move(*r));
  ASSERT_TRUE(result.structured);
  EXPECT_FALSE(result.structured->contains("content"));
  EXPECT_EQ(result.content[0].to_json()["text"], text);
  std::string wire;
  protocol::append_json(wire, result.to_json());
  EXPECT_LE(wire.size(), text.size() * 11 / 10) << wire.size();
}

TEST(ReadFile, ALineLongerThanTheCapIsCutAtACharacterBoundary) {
  TempDir dir;
  std::string line;
  for (int i = 0; i < 100; ++i) line += "\xc3\xa9";  // é, two bytes each
  dir.write("a.txt", line + "\nnext\n");
  auto r = read_file_op(Json{{"path", "a.txt"}}, context_for(dir, /*max_bytes=*/410));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->bytes.empty());
  EXPECT_EQ(r->bytes.size() % 2, 0u) << "cut inside a character";
  EXPECT_LE(json_string_cost(r->bytes), 410u);  // once: the text block only
  EXPECT_EQ(r->header["line_cut"], true);
  EXPECT_EQ(r->header["truncated"], true);
  EXPECT_EQ(r->header["end_line"], 1);
  EXPECT_EQ(r->header["invalid_utf8"], 0);
}

TEST(ReadFile, InvalidUtf8IsCountedAndReplacedWhenEncoded) {
  TempDir dir;
  dir.write("latin1.txt", "caf\xe9 ok\n");
  auto r = read_file_op(Json{{"path", "latin1.txt"}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header["invalid_utf8"], 1);
  const auto result = tools::format_read_file(Json::object(), std::move(*r));
  const std::string wire = result.to_json().dump(-1, ' ', false, Json::error_handler_t::replace);
  EXPECT_NE(wire.find("caf\xef\xbf\xbd ok"), std::string::npos) << wire;
  EXPECT_NE(wire.find("U+FFFD"), std::string::npos);
}

TEST(ReadFile, ByteOrderMarkIsRemovedAndReported) {
  TempDir dir;
  dir.write("bom.txt", "\xef\xbb\xbfhello\n");
  auto r = read_file_op(Json{{"path", "bom.txt"}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes, "hello\n");
  EXPECT_EQ(r->header["bom"], true);
}

TEST(ReadFile, EmptyFile) {
  TempDir dir;
  dir.write("empty", "");
  auto r = read_file_op(Json{{"path", "empty"}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes, "");
  EXPECT_EQ(r->header["total_lines"], 0);
  EXPECT_EQ(r->header["start_line"], 0);
}

TEST(ReadFile, PngComesBackAsImage) {
  TempDir dir;
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\rIHDR", 8);
  dir.write("pic.png", png);
  auto r = read_file_op(Json{{"path", "pic.png"}}, context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->header["kind"], "image");
  EXPECT_EQ(r->header["mime_type"], "image/png");
  EXPECT_EQ(r->bytes, png);
  const auto result = tools::format_read_file(Json::object(), std::move(*r));
  ASSERT_FALSE(result.content.empty());
  EXPECT_EQ(result.content[0].to_json()["type"], "image");
  EXPECT_EQ(result.content[0].to_json()["mimeType"], "image/png");
  EXPECT_EQ(result.content[0].to_json()["data"], "iVBORw0KGgoAAAANSUhEUg==");
}

TEST(ReadFile, ImagesByMagicBytesNotByName) {
  TempDir dir;
  dir.write("photo", "\xff\xd8\xff\xe0rest");
  dir.write("anim.bin", "GIF89a....");
  dir.write("w", std::string("RIFF\x10\0\0\0WEBPVP8 ", 16));
  dir.write("fake.png", "not a png\n");
  const auto mime = [&](const char* name) {
    auto r = read_file_op(Json{{"path", name}}, context_for(dir));
    EXPECT_TRUE(r) << name;
    return r ? r->header.value("mime_type", std::string()) : std::string();
  };
  EXPECT_EQ(mime("photo"), "image/jpeg");
  EXPECT_EQ(mime("anim.bin"), "image/gif");
  EXPECT_EQ(mime("w"), "image/webp");
  EXPECT_EQ(mime("fake.png"), "text/plain");
}

TEST(ReadFile, BinaryIsRefusedWithTypeAndSize) {
  TempDir dir;
  dir.write("prog", std::string("\x7f"
                                "ELF\x02\x01\x01\0\0\0",
                                10));
  auto r = read_file_op(Json{{"path", "prog"}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("ELF executable"), std::string::npos) << r.error().why;
  EXPECT_NE(r.error().why.find("10 bytes"), std::string::npos) << r.error().why;
  EXPECT_NE(r.error().why.find("base64"), std::string::npos);

  dir.write("blob", std::string("abc\0def", 7));
  auto nul = read_file_op(Json{{"path", "blob"}}, context_for(dir));
  ASSERT_FALSE(nul);
  EXPECT_NE(nul.error().why.find("NUL"), std::string::npos) << nul.error().why;
}

TEST(ReadFile, Base64OnRequest) {
  TempDir dir;
  dir.write("blob", std::string("abc\0def", 7));
  auto r = read_file_op(Json{{"path", "blob"}, {"encoding", "base64"}}, context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header["kind"], "base64");
  EXPECT_EQ(r->bytes, std::string("abc\0def", 7));
  const auto result = tools::format_read_file(Json::object(), std::move(*r));
  ASSERT_TRUE(result.structured);
  EXPECT_FALSE(result.structured->contains("content"));
  EXPECT_EQ(result.content[0].to_json()["text"], "YWJjAGRlZg==");
}

TEST(ReadFile, Base64OverTheCapIsRefused) {
  TempDir dir;
  dir.write("big", std::string(1000, 'x'));
  auto r = read_file_op(Json{{"path", "big"}, {"encoding", "base64"}}, context_for(dir, 400));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("1000 bytes"), std::string::npos) << r.error().why;
}

TEST(ReadFile, MissingFileDirectoryAndFifoAreErrors) {
  TempDir dir;
  auto missing = read_file_op(Json{{"path", "nope"}}, context_for(dir));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_EQ(missing.error().where, dir.at("nope"));

  auto directory = read_file_op(Json{{"path", "."}}, context_for(dir));
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().why.find("list_directory"), std::string::npos);

  ASSERT_EQ(::mkfifo(dir.at("fifo").c_str(), 0600), 0);
  auto fifo = read_file_op(Json{{"path", "fifo"}}, context_for(dir));
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().why.find("fifo"), std::string::npos) << fifo.error().why;
}

// Issue 15: offset and limit beyond 64 bits were read through a
// float-to-integer conversion (undefined behaviour) and came out as 0 or 1:
// an offset of 1e30 read the first page.
TEST(ReadFile, OutOfRangeIntegersAreErrorsNamingTheArgument) {
  TempDir dir;
  dir.write("a.txt", numbered_lines(5));
  for (const char* name : {"offset", "limit"}) {
    for (const Json& value : {Json(1e30), Json(-1), Json(2.5), Json(18446744073709551615u)}) {
      const Json args = {{"path", "a.txt"}, {name, value}};
      auto r = read_file_op(args, context_for(dir));
      ASSERT_FALSE(r) << args.dump();
      EXPECT_NE(r.error().to_string().find(std::string("invalid argument ") + name),
                std::string::npos)
          << r.error().to_string();
      const auto why = protocol::check_schema(args, tools::read_file_descriptor().input_schema);
      ASSERT_TRUE(why) << args.dump();
      EXPECT_NE(why->find(std::string("arguments.") + name), std::string::npos) << *why;
    }
  }
}

}  // namespace
}  // namespace brig::files
