// The LLM proxy's pure parts: routing by prefix, the keys a request
// presents, the upstream head (the key in the route's header only), the
// response head, placeholders and token counts.
#include "server/llm/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/llm/placeholder.h"
#include "server/llm/usage.h"

namespace brig::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Route route(std::string prefix, std::string target, std::string header) {
  policy::LlmRoute r;
  r.prefix = std::move(prefix);
  r.target = std::move(target);
  r.header = std::move(header);
  r.key_env = "K";
  r.key_variable = "KEY";
  r.base_url_variable = "URL";
  return Route{r, *policy::parse_llm_target(r.target)};
}

egress::RequestHead head(std::string text) {
  auto parse = egress::parse_request_head(text, 16384, egress::RequestForm::origin);
  EXPECT_EQ(parse.status, egress::HeadParse::Status::complete) << parse.why;
  return parse.head;
}

TEST(RouteRequest, ByTheFirstSegment) {
  const std::vector<Route> routes = {route("anthropic", "https://api.anthropic.com", "x-api-key"),
                                     route("openai", "https://api.openai.com/v1", "bearer")};
  auto a = route_request(routes, "/anthropic/v1/messages?beta=true");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->route, 0u);
  EXPECT_EQ(a->upstream_path, "/v1/messages?beta=true");
  auto o = route_request(routes, "/openai/chat/completions");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->route, 1u);
  EXPECT_EQ(o->upstream_path, "/v1/chat/completions");
  EXPECT_EQ(route_request(routes, "/openai")->upstream_path, "/v1");
  EXPECT_EQ(route_request(routes, "/anthropic")->upstream_path, "/");
  EXPECT_EQ(route_request(routes, "/openai?x=1")->upstream_path, "/v1?x=1");
  EXPECT_FALSE(route_request(routes, "/anthropicx/v1/messages"));
  EXPECT_FALSE(route_request(routes, "/"));
  EXPECT_FALSE(route_request(routes, "/gemini/v1beta/models"));
}

TEST(PresentedKeys, XApiKeyBearerAndTheRoutesHeader) {
  const Route gemini = route("gemini", "https://g.example", "x-goog-api-key");
  auto h = head(
      "POST /gemini/x HTTP/1.1\r\nx-api-key: a\r\nAuthorization: Bearer  b \r\n"
      "X-Goog-Api-Key: c\r\nx-other: d\r\n\r\n");
  auto p = presented_keys(h, gemini);
  EXPECT_THAT(p.keys, ElementsAre("a", "b", "c"));
  EXPECT_TRUE(p.malformed.empty());
  auto basic =
      presented_keys(head("GET /gemini HTTP/1.1\r\nAuthorization: Basic eA==\r\n\r\n"), gemini);
  EXPECT_TRUE(basic.keys.empty());
  EXPECT_EQ(basic.malformed.size(), 1u);
}

TEST(UpstreamHead, TheKeyGoesInTheRoutesHeaderOnly) {
  const Route anthropic = route("anthropic", "https://api.anthropic.com", "x-api-key");
  auto h = head(
      "POST /anthropic/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:3129\r\n"
      "Authorization: Bearer PLACEHOLDER\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\nConnection: keep-alive, x-hop\r\nx-hop: 1\r\n"
      "Accept-Encoding: gzip\r\nanthropic-version: 2023-06-01\r\n\r\n");
  const std::string out = upstream_request_head(h, anthropic, "/v1/messages", "REALKEY");
  EXPECT_EQ(out,
            "POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n"
            "anthropic-version: 2023-06-01\r\nx-api-key: REALKEY\r\n\r\n");
  const Route openai = route("openai", "https://api.openai.com:8443/v1", "bearer");
  const std::string bearer = upstream_request_head(
      head("GET /openai/models HTTP/1.1\r\nx-api-key: P\r\n\r\n"), openai, "/v1/models", "SK");
  EXPECT_EQ(bearer,
            "GET /v1/models HTTP/1.1\r\nHost: api.openai.com:8443\r\nAuthorization: Bearer "
            "SK\r\n\r\n");
  EXPECT_THAT(bearer, Not(HasSubstr("P\r\n")));
}

TEST(ResponseHead, StatusRetryAfterAndClose) {
  bool bad = false;
  auto r = parse_response_head("HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\n\r\nbody", 1024, bad);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->retry_after_seconds, 2);
  EXPECT_FALSE(r->close);
  EXPECT_EQ(r->size, 41u);
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\n", 1024, bad));
  EXPECT_FALSE(bad);
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\nx: y", 10, bad));
  EXPECT_TRUE(bad);
  EXPECT_FALSE(parse_response_head("SSH-2.0\r\n\r\n", 1024, bad));
  EXPECT_TRUE(bad);
  auto c = parse_response_head("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", 1024, bad);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->close);
}

TEST(Placeholder, RandomHexComparedWhole) {
  auto a = new_placeholder();
  auto b = new_placeholder();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(same_placeholder(*a, *a));
  EXPECT_FALSE(same_placeholder(*a, *b));
  EXPECT_FALSE(same_placeholder(a->substr(0, 31), *a));
  EXPECT_FALSE(same_placeholder("", ""));
}

TEST(Usage, AnthropicStreamAcrossSplits) {
  const std::string sse =
      "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":1234,"
      "\"output_tokens\":1}}}\n\nevent: message_delta\ndata: {\"usage\":{\"output_tokens\": "
      "567}}\n\n";
  for (std::size_t split = 1; split < sse.size(); split += 7) {
    UsageScanner s;
    s.feed(sse.substr(0, split));
    s.feed(sse.substr(split));
    EXPECT_EQ(s.usage().input_tokens, 1234u) << split;
    EXPECT_EQ(s.usage().output_tokens, 567u) << split;
  }
}

TEST(Usage, OpenAiAndGemini) {
  UsageScanner o;
  o.feed("{\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12,\"total_tokens\":21}}");
  EXPECT_EQ(o.usage().input_tokens, 9u);
  EXPECT_EQ(o.usage().output_tokens, 12u);
  UsageScanner g;
  g.feed("{\"usageMetadata\": {\"promptTokenCount\": 4, \"candidatesTokenCount\": 8}}");
  EXPECT_EQ(g.usage().input_tokens, 4u);
  EXPECT_EQ(g.usage().output_tokens, 8u);
  UsageScanner none;
  none.feed("{\"text\":\"input_tokens\"}");
  EXPECT_FALSE(none.usage().input_tokens);
}

}  // namespace
}  // namespace brig::llm
