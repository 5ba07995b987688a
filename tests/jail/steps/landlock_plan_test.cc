// Landlock planning per ABI, as whole values; no kernel involved. Rights are
// written as the kernel's numbers (include/uapi/linux/landlock.h), not
// through brig's constants.
#include <gtest/gtest.h>

#include "jail/steps/landlock.h"

namespace brig::jail {
namespace {

LandlockRules typical_rules() {
  LandlockRules rules;
  rules.read_only = {"/usr", "/etc/resolv.conf"};
  rules.read_write = {"/work", "/tmp"};
  rules.restrict_tcp = true;
  rules.bind_tcp = {8080};
  rules.connect_tcp = {443, 8443};
  return rules;
}

constexpr uint64_t kReadOnly = 0x1 | 0x4 | 0x8;  // execute, read_file, read_dir

TEST(LandlockPlan, DisabledRulesPlanNothing) {
  LandlockRules rules = typical_rules();
  rules.enabled = false;
  auto prepared = landlock::plan(rules, 7);
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_EQ(prepared->abi, 0);
  EXPECT_TRUE(prepared->paths.empty());
  EXPECT_TRUE(prepared->ports.empty());
  EXPECT_TRUE(prepared->unenforced.empty());
  EXPECT_EQ(landlock::apply_in_child(*prepared), 0);  // nothing to apply
}

TEST(LandlockPlan, KernelWithoutLandlockIsReported) {
  auto prepared = landlock::plan(typical_rules(), 0);
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_EQ(prepared->abi, 0);
  EXPECT_TRUE(prepared->paths.empty());
  ASSERT_EQ(prepared->unenforced.size(), 1u);
  EXPECT_NE(prepared->unenforced[0].find("no Landlock"), std::string::npos);
}

TEST(LandlockPlan, WholePlanAtAbi7) {
  auto prepared = landlock::plan(typical_rules(), 7);
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_EQ(prepared->abi, 7);
  EXPECT_EQ(prepared->attr.handled_access_fs, 0xffffu);
  EXPECT_EQ(prepared->attr.handled_access_net, 0x3u);
  EXPECT_EQ(prepared->attr.scoped, 0x3u);
  std::vector<landlock::PathGrant> paths = {
      {"/usr", kReadOnly}, {"/etc/resolv.conf", kReadOnly}, {"/work", 0xffff}, {"/tmp", 0xffff}};
  EXPECT_EQ(prepared->paths, paths);
  ASSERT_EQ(prepared->ports.size(), 3u);
  EXPECT_EQ(prepared->ports[0].allowed_access, 0x1u);  // bind
  EXPECT_EQ(prepared->ports[0].port, 8080u);
  EXPECT_EQ(prepared->ports[1].allowed_access, 0x2u);  // connect
  EXPECT_EQ(prepared->ports[1].port, 443u);
  EXPECT_EQ(prepared->ports[2].allowed_access, 0x2u);
  EXPECT_EQ(prepared->ports[2].port, 8443u);
  EXPECT_TRUE(prepared->unenforced.empty());
}

TEST(LandlockPlan, ListOnlyGrantsReadDirAlone) {
  LandlockRules rules;
  rules.read_only = {"/usr"};
  rules.list_only = {"/"};
  auto prepared = landlock::plan(rules, 7);
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  std::vector<landlock::PathGrant> paths = {{"/usr", kReadOnly}, {"/", 0x8}};
  EXPECT_EQ(prepared->paths, paths);
  rules.list_only = {"relative"};
  EXPECT_FALSE(landlock::plan(rules, 7));
}

TEST(LandlockPlan, HandledFilesystemRightsFollowTheAbi) {
  const std::pair<int, uint64_t> expected[] = {
      {1, 0x1fff},  // execute .. make_sym
      {2, 0x3fff},  // + refer
      {3, 0x7fff},  // + truncate
      {4, 0x7fff},  // network only
      {5, 0xffff},  // + ioctl_dev
      {6, 0xffff},  // scopes only
      {7, 0xffff},  // audit flags only
  };
  for (const auto& [abi, rights] : expected) {
    auto prepared = landlock::plan(typical_rules(), abi);
    ASSERT_TRUE(prepared) << prepared.error().to_string();
    EXPECT_EQ(prepared->abi, abi);
    EXPECT_EQ(prepared->attr.handled_access_fs, rights) << "ABI " << abi;
    EXPECT_EQ(prepared->paths.back().access, rights) << "ABI " << abi;
    EXPECT_EQ(prepared->paths.front().access, kReadOnly) << "ABI " << abi;
  }
}

TEST(LandlockPlan, TcpRulesNeedAbi4) {
  auto at3 = landlock::plan(typical_rules(), 3);
  ASSERT_TRUE(at3);
  EXPECT_EQ(at3->attr.handled_access_net, 0u);
  EXPECT_TRUE(at3->ports.empty());
  std::vector<std::string> want3 = {
      "landlock: TCP bind/connect rules need ABI 4, this kernel has 3",
      "landlock: abstract unix socket scoping needs ABI 6, this kernel has 3",
      "landlock: signal scoping needs ABI 6, this kernel has 3"};
  EXPECT_EQ(at3->unenforced, want3);

  auto at4 = landlock::plan(typical_rules(), 4);
  ASSERT_TRUE(at4);
  EXPECT_EQ(at4->attr.handled_access_net, 0x3u);
  EXPECT_EQ(at4->ports.size(), 3u);
  EXPECT_EQ(at4->attr.scoped, 0u);
  EXPECT_EQ(at4->unenforced.size(), 2u);
}

TEST(LandlockPlan, UnrestrictedTcpHandlesNoNetworkRights) {
  LandlockRules rules = typical_rules();
  rules.restrict_tcp = false;
  auto prepared = landlock::plan(rules, 7);
  ASSERT_TRUE(prepared);
  EXPECT_EQ(prepared->attr.handled_access_net, 0u);
  EXPECT_TRUE(prepared->ports.empty());
}

TEST(LandlockPlan, ScopesNeedAbi6AndCanBeTurnedOff) {
  LandlockRules rules = typical_rules();
  rules.scope_signals = false;
  auto at6 = landlock::plan(rules, 6);
  ASSERT_TRUE(at6);
  EXPECT_EQ(at6->attr.scoped, 0x1u);  // abstract unix sockets only
  EXPECT_TRUE(at6->unenforced.empty());

  rules.scope_abstract_unix = false;
  auto at5 = landlock::plan(rules, 5);
  ASSERT_TRUE(at5);
  EXPECT_EQ(at5->attr.scoped, 0u);
  EXPECT_TRUE(at5->unenforced.empty());  // nothing asked for, nothing missing
}

TEST(LandlockPlan, NewerKernelIsUsedAtTheNewestKnownAbi) {
  auto prepared = landlock::plan(typical_rules(), 9);
  ASSERT_TRUE(prepared);
  EXPECT_EQ(prepared->abi, 7);
  EXPECT_EQ(prepared->attr.handled_access_fs, 0xffffu);
}

TEST(LandlockPlan, RelativePathsAreRefused) {
  for (const char* bad : {"tmp", "", "./work"}) {
    LandlockRules rules;
    rules.read_write = {"/ok", bad};
    auto prepared = landlock::plan(rules, 7);
    ASSERT_FALSE(prepared) << bad;
    EXPECT_EQ(prepared.error().where, bad);
  }
}

TEST(LandlockPlan, EmptyRulesDenyTheWholeFilesystem) {
  auto prepared = landlock::plan(LandlockRules{}, 7);
  ASSERT_TRUE(prepared);
  EXPECT_EQ(prepared->attr.handled_access_fs, 0xffffu);
  EXPECT_TRUE(prepared->paths.empty());
}

}  // namespace
TEST(LandlockPlan, LayerStatusIsEnforcedAtAnyAbiAndDegradedWithoutLandlock) {
  LandlockRules rules;
  rules.restrict_tcp = true;
  auto at2 = landlock::plan(rules, 2);
  ASSERT_TRUE(at2);
  const LayerStatus old = landlock::layer_status(rules, *at2);
  EXPECT_EQ(old.state, LayerState::enforced);
  EXPECT_NE(old.detail.find("need ABI 4"), std::string::npos) << old.detail;
  auto at7 = landlock::plan(rules, 7);
  ASSERT_TRUE(at7);
  EXPECT_EQ(landlock::layer_status(rules, *at7),
            (LayerStatus{Layer::landlock, LayerState::enforced, ""}));
  auto none = landlock::plan(rules, 0);
  ASSERT_TRUE(none);
  EXPECT_EQ(landlock::layer_status(rules, *none).state, LayerState::degraded);
  rules.enabled = false;
  EXPECT_EQ(landlock::layer_status(rules, *at7).state, LayerState::off);
}

}  // namespace brig::jail
