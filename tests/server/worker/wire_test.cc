// The worker's wire format: requests and replies survive the trip whole,
// replies split anywhere reassemble, and a broken stream is reported.
#include "server/worker/wire.h"

#include <gtest/gtest.h>

namespace brig::worker {
namespace {

using protocol::Json;

TEST(WorkerWire, RequestRoundTrips) {
  const Request r{42, "read_file", Json{{"path", "a\nb"}}, std::chrono::milliseconds(1500), 99};
  const std::string line = encode_request(r);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "a request must be one line";
  auto back = decode_request(std::string_view(line).substr(0, line.size() - 1));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->op, "read_file");
  EXPECT_EQ(back->args, r.args);
  EXPECT_EQ(back->timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(back->max_bytes, 99u);
}

TEST(WorkerWire, MalformedRequestsAreRefused) {
  for (const char* line : {"", "not json", "[]", R"({"id":1,"op":"x","args":{}})",
                           R"({"id":-1,"op":"x","args":{},"timeout_ms":1,"max_bytes":1})",
                           R"({"id":1,"op":2,"args":{},"timeout_ms":1,"max_bytes":1})"}) {
    EXPECT_FALSE(decode_request(line)) << line;
  }
}

TEST(WorkerWire, RawBytesWithNewlinesAndNulsReassembleFromAnySplit) {
  const std::string bytes = std::string("line\n\0\xff\xfe binary\n", 17);
  // As the worker writes them: each header line, then a success's bytes.
  const std::string stream =
      encode_reply_header(7, files::OpReply{Json{{"kind", "text"}}, bytes}) + bytes +
      encode_reply_header(8, std::unexpected(sys_error("read file", "/x", 2)));
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    ReplyReader reader;
    reader.feed(std::string_view(stream).substr(0, split));
    std::vector<ReplyReader::Reply> got;
    for (;;) {
      auto next = reader.next();
      ASSERT_TRUE(next) << next.error().to_string();
      if (!*next) break;
      got.push_back(std::move(**next));
    }
    reader.feed(std::string_view(stream).substr(split));
    for (;;) {
      auto next = reader.next();
      ASSERT_TRUE(next) << next.error().to_string();
      if (!*next) break;
      got.push_back(std::move(**next));
    }
    ASSERT_EQ(got.size(), 2u) << "split at " << split;
    EXPECT_EQ(got[0].id, 7u);
    ASSERT_TRUE(got[0].result);
    EXPECT_EQ(got[0].result->bytes, bytes);
    EXPECT_EQ(got[0].result->header, (Json{{"kind", "text"}}));
    EXPECT_EQ(got[1].id, 8u);
    ASSERT_FALSE(got[1].result);
    EXPECT_EQ(got[1].result.error().sys_errno, 2);
    EXPECT_EQ(got[1].result.error().where, "/x");
    EXPECT_EQ(got[1].result.error().what, "read file");
  }
}

TEST(WorkerWire, InvalidUtf8InAnErrorIsRepairedNotThrown) {
  const std::string line =
      encode_reply_header(1, std::unexpected(sys_error("read file", "/bad\xff name", 13)));
  ReplyReader reader;
  reader.feed(line);
  auto next = reader.next();
  ASSERT_TRUE(next && *next);
  EXPECT_EQ((*next)->result.error().where, "/bad\xEF\xBF\xBD name");
}

// A reply whose members have the wrong types is a broken stream, not an
// exception: nlohmann's value() throws on them (found by worker_wire_fuzz).
TEST(WorkerWire, MistypedReplyMembersAreAnErrorNotAThrow) {
  for (const char* line : {
           R"({"id":8,"ok":false,"error":{"what":1},"bytes":0})",
           R"({"id":8,"ok":false,"error":{"where":[]},"bytes":0})",
           R"({"id":8,"ok":false,"error":{"why":null},"bytes":0})",
           R"({"id":8,"ok":false,"error":{"errno":"2"},"bytes":0})",
           R"({"id":8,"ok":true,"header":"x","bytes":0})",
       }) {
    SCOPED_TRACE(line);
    ReplyReader reader;
    reader.feed(std::string(line) + "\n");
    Result<std::optional<ReplyReader::Reply>> next = std::nullopt;
    EXPECT_NO_THROW(next = reader.next());
    EXPECT_FALSE(next);
  }
}

TEST(WorkerWire, ABrokenStreamIsAnError) {
  ReplyReader garbage;
  garbage.feed("this is not a reply\n");
  EXPECT_FALSE(garbage.next());

  ReplyReader endless(16);
  endless.feed(std::string(17, 'x'));
  EXPECT_FALSE(endless.next()) << "a header line over the limit";
}

}  // namespace
}  // namespace brig::worker
