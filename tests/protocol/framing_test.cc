#include "protocol/framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brig::protocol {
namespace {

// Everything the framer has ready, lines as text and too_long as "<too long>".
std::vector<std::string> drain(LineFramer& f) {
  std::vector<std::string> out;
  for (Frame fr = f.next(); fr.kind != Frame::Kind::need_more; fr = f.next()) {
    out.push_back(fr.kind == Frame::Kind::line ? fr.line : "<too long>");
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(LineFramer, EmptyInputNeedsMore) {
  LineFramer f;
  EXPECT_EQ(f.next().kind, Frame::Kind::need_more);
  f.append("");
  EXPECT_EQ(f.next().kind, Frame::Kind::need_more);
}

TEST(LineFramer, ManyLinesInOneChunk) {
  LineFramer f;
  f.append("{\"a\":1}\n{\"b\":2}\n{\"c\":");
  EXPECT_EQ(drain(f), (Lines{"{\"a\":1}", "{\"b\":2}"}));
  f.append("3}\n");
  EXPECT_EQ(drain(f), (Lines{"{\"c\":3}"}));
}

TEST(LineFramer, LineSplitAtEveryByte) {
  const std::string input = "{\"jsonrpc\":\"2.0\"}\r\n[1,2]\n";
  LineFramer f;
  Lines got;
  for (char c : input) {
    f.append(std::string_view(&c, 1));
    for (auto& l : drain(f)) got.push_back(l);
  }
  EXPECT_EQ(got, (Lines{"{\"jsonrpc\":\"2.0\"}", "[1,2]"}));
}

TEST(LineFramer, CrlfAndLfBothEndLines) {
  LineFramer f;
  f.append("one\r\ntwo\nthree\r");
  EXPECT_EQ(drain(f), (Lines{"one", "two"}));
  f.append("\n");  // the CR of CRLF arrived in the previous chunk
  EXPECT_EQ(drain(f), (Lines{"three"}));
}

TEST(LineFramer, InnerCarriageReturnIsKept) {
  LineFramer f;
  f.append("a\rb\n");
  EXPECT_EQ(drain(f), (Lines{"a\rb"}));
}

TEST(LineFramer, BlankLinesAreSkipped) {
  LineFramer f;
  f.append("\n\r\n  \t \nx\n\n");
  EXPECT_EQ(drain(f), (Lines{"x"}));
}

TEST(LineFramer, NoNewlineMeansNoLine) {
  LineFramer f;
  f.append("{\"unfinished\":true}");
  EXPECT_EQ(f.next().kind, Frame::Kind::need_more);
  EXPECT_EQ(f.buffered_bytes(), 19u);
}

TEST(LineFramer, LineExactlyAtLimitPasses) {
  LineFramer f(5);
  f.append("12345\n12345\r\n");
  EXPECT_EQ(drain(f), (Lines{"12345", "12345"}));
}

TEST(LineFramer, OversizeLineInOneChunkReportedOnceAndSkipped) {
  LineFramer f(5);
  f.append("ok\n123456\nnext\n");
  EXPECT_EQ(drain(f), (Lines{"ok", "<too long>", "next"}));
}

TEST(LineFramer, OversizeLineStreamedInChunksIsNotBuffered) {
  LineFramer f(8);
  f.append("before\n0123");
  EXPECT_EQ(drain(f), (Lines{"before"}));
  f.append("456789");  // passes the limit: reported now, before its newline
  EXPECT_EQ(drain(f), (Lines{"<too long>"}));
  EXPECT_EQ(f.buffered_bytes(), 0u);
  for (int i = 0; i < 1000; ++i) f.append(std::string(1000, 'x'));
  EXPECT_EQ(drain(f), Lines{});  // reported once, however long it goes on
  EXPECT_EQ(f.buffered_bytes(), 0u);
  f.append("tail\nafter\n");  // "tail" is the end of the long line
  EXPECT_EQ(drain(f), (Lines{"after"}));
}

TEST(LineFramer, OversizeByOneCrLfCountsWithoutTheCr) {
  LineFramer f(3);
  f.append("abcd\r\nabc\r\n");
  EXPECT_EQ(drain(f), (Lines{"<too long>", "abc"}));
}

TEST(LineFramer, DefaultLimitIs64MiB) {
  LineFramer f;
  EXPECT_EQ(f.max_line_bytes(), 64u << 20);
}

TEST(LineFramer, HundredMiBLineThenValidLine) {
  LineFramer f;  // 64 MiB
  const std::string chunk(1 << 20, 'a');
  for (int i = 0; i < 100; ++i) f.append(chunk);
  f.append("\n{\"ok\":1}\n");
  EXPECT_EQ(drain(f), (Lines{"<too long>", "{\"ok\":1}"}));
}

// feed() gives the frames append() + next() give, for every way of cutting
// the same stream into chunks.
TEST(LineFramer, FeedFramesAsAppendAndNextDo) {
  const std::vector<std::string> streams = {
      "{\"a\":1}\n{\"b\":2}\r\n\n  \t\r\n{\"c\":3",
      "0123456789\n01234567890\n0123456789\r\n012345678901\r\nabc\r\r\n\r\n",
      std::string(30, 'x') + "\n" + std::string(25, 'y') + "\nok\n" + std::string(12, 'z'),
      "\n\n\r\nlast\n",
  };
  for (const std::string& stream : streams) {
    for (std::size_t cut = 1; cut <= stream.size(); ++cut) {
      LineFramer reference(10);
      LineFramer fed(10);
      Lines want, got;
      for (std::size_t at = 0; at < stream.size(); at += cut) {
        const std::string_view chunk = std::string_view(stream).substr(at, cut);
        reference.append(chunk);
        for (const auto& line : drain(reference)) want.push_back(line);
        fed.feed(chunk, [&](Frame::Kind kind, std::string_view line) {
          got.push_back(kind == Frame::Kind::line ? std::string(line) : "<too long>");
          return true;
        });
      }
      SCOPED_TRACE(stream + " in chunks of " + std::to_string(cut));
      EXPECT_EQ(got, want);
      EXPECT_EQ(fed.buffered_bytes(), reference.buffered_bytes());
    }
  }
}

TEST(LineFramer, FeedStopsWhenTold) {
  LineFramer f;
  Lines got;
  f.feed("one\ntwo\nthree\n", [&](Frame::Kind, std::string_view line) {
    got.emplace_back(line);
    return got.size() < 2;
  });
  EXPECT_EQ(got, (Lines{"one", "two"}));
  EXPECT_EQ(f.next().kind, Frame::Kind::need_more);
}

}  // namespace
}  // namespace brig::protocol
