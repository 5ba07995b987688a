// Pure pieces of `serve`: --listen parsing, the peer allow list, the banner.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/commands/banner.h"
#include "server/transport/peer_allow_list.h"
#include "server/transport/unix_listener.h"

namespace brig::commands {
namespace {

TEST(ListenUri, AcceptsOnlyAbsoluteUnixPaths) {
  auto ok = transport::parse_listen_uri("unix:///run/user/1000/brig.sock");
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "/run/user/1000/brig.sock");
  EXPECT_FALSE(transport::parse_listen_uri("unix://relative.sock"));
  EXPECT_FALSE(transport::parse_listen_uri("unix://"));
  EXPECT_FALSE(transport::parse_listen_uri("tcp://127.0.0.1:80"));
  EXPECT_FALSE(transport::parse_listen_uri("/tmp/x.sock"));
  EXPECT_FALSE(transport::parse_listen_uri(std::string("unix:///tmp/a\0b", 15)));
}

TEST(ListenUri, RefusesPathsTooLongForSockaddrUn) {
  EXPECT_TRUE(
      transport::parse_listen_uri("unix:///" + std::string(106, 'a')));  // 107 bytes with '/'
  auto too_long = transport::parse_listen_uri("unix:///" + std::string(107, 'a'));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().why.find("108"), std::string::npos) << too_long.error().to_string();
}

TEST(PeerAllowList, MatchesUidOrPrimaryGid) {
  const transport::PeerAllowList allow{{1000, 1001}, {50}};
  EXPECT_TRUE(allow.allows({.pid = 1, .uid = 1000, .gid = 7}));
  EXPECT_TRUE(allow.allows({.pid = 1, .uid = 1001, .gid = 7}));
  EXPECT_TRUE(allow.allows({.pid = 1, .uid = 2000, .gid = 50}));
  EXPECT_FALSE(allow.allows({.pid = 1, .uid = 0, .gid = 0}));
  EXPECT_FALSE(transport::PeerAllowList{}.allows({.pid = 1, .uid = 1000, .gid = 50}));
  EXPECT_EQ(allow.to_string(), "uids 1000, 1001; gids 50");
}

// The JSON object printed after "claude_desktop_config.json:" in the banner.
nlohmann::json client_config_in(const std::string& banner) {
  const auto start = banner.find('{');
  const auto end = banner.rfind('}');
  return nlohmann::json::parse(banner.substr(start, end - start + 1));
}

TEST(Banner, StdioShowsWhatIsServedAndAWorkingClientConfig) {
  const ServingSummary s{.version = "1.2.3",
                         .workspace = "/home/ann/my \"project\"",
                         .policy = "strict",
                         .socket_path = std::nullopt,
                         .socket_access = "",
                         .brig_command = "/opt/brig/bin/brig"};
  const std::string text = startup_banner(s);
  EXPECT_NE(text.find("workspace  /home/ann/my \"project\""), std::string::npos) << text;
  EXPECT_NE(text.find("policy     strict"), std::string::npos) << text;
  EXPECT_NE(text.find("transport  stdio"), std::string::npos) << text;
  const auto config = client_config_in(text)["mcpServers"]["brig"];
  EXPECT_EQ(config["command"], "/opt/brig/bin/brig");
  EXPECT_EQ(config["args"], nlohmann::json({"serve", "--workspace", "/home/ann/my \"project\"",
                                            "--policy", "strict"}));
}

TEST(Banner, SocketShowsThePathAndASocatBridge) {
  const ServingSummary s{.version = "1.2.3",
                         .workspace = "/w",
                         .policy = "default",
                         .socket_path = "/run/b.sock",
                         .socket_access = "mode 0600; uids 1000",
                         .brig_command = "brig"};
  const std::string text = startup_banner(s);
  EXPECT_NE(text.find("unix socket /run/b.sock (mode 0600; uids 1000)"), std::string::npos) << text;
  const auto config = client_config_in(text)["mcpServers"]["brig"];
  EXPECT_EQ(config["command"], "socat");
  EXPECT_EQ(config["args"], nlohmann::json({"STDIO", "UNIX-CONNECT:/run/b.sock"}));
  EXPECT_EQ(serving_log_line(s),
            "brig 1.2.3 serving workspace /w with policy default on unix socket /run/b.sock (mode "
            "0600; uids 1000)");
}

}  // namespace
}  // namespace brig::commands
