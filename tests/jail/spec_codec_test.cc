#include "jail/spec_codec.h"

#include <errno.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace brig::jail {
namespace {

using ::testing::HasSubstr;

// A spec where every field differs from its default, so that a field the
// codec forgot cannot round-trip by luck.
JailSpec full_spec() {
  JailSpec s;
  s.namespaces = {true, false, true, false, true, false, true};
  s.identity = {1000, 1001, 2000, 2001, /*map_launcher=*/false};
  Mount bind;
  bind.kind = Mount::Kind::bind;
  bind.source = "/home/u/project";
  bind.target = "/work";
  bind.writable = true;
  bind.optional = true;
  bind.keep_owner = true;
  Mount tmp;
  tmp.kind = Mount::Kind::tmpfs;
  tmp.target = "/tmp";
  tmp.size_bytes = 512ull << 20;
  tmp.mode = 01777;
  Mount mask;
  mask.kind = Mount::Kind::mask;
  mask.target = "/home/u/.ssh";
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  dev.devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}};
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = "/work/.git";
  git.size_bytes = 64 << 20;
  git.optional = true;
  Mount file;
  file.kind = Mount::Kind::file;
  file.target = "/etc/resolv.conf";
  file.content = std::string("nameserver 127.0.0.1\n\0binary", 29);
  s.mounts = {bind, tmp, mask, dev, git, file};
  s.listeners = {{Listener::Protocol::tcp, 3128}, {Listener::Protocol::udp, 53}};
  s.hostname = "héllo";
  s.network = NetworkMode::filtered;
  s.filter.allow = {{{10, 1, 2, 0}, 24, 5432, 5432}, {{203, 0, 113, 7}, 32, 1, 65535}};
  s.filter.deny = {{{10, 1, 2, 9}, 32, 80, 443}};
  s.filter.program = "/opt/brig/libexec/brig/brig-netfilter";
  s.limits.memory_bytes = 1ull << 40;
  s.limits.pids = 64;
  s.limits.file_size_bytes = 0;
  s.limits.open_files = 1024;
  s.limits.wall_time = std::chrono::milliseconds(90'000);
  s.landlock.enabled = false;
  s.landlock.read_only = {"/usr", "/etc"};
  s.landlock.read_write = {"/work"};
  s.landlock.list_only = {"/"};
  s.landlock.restrict_tcp = true;
  s.landlock.bind_tcp = {8080};
  s.landlock.connect_tcp = {443, 65535};
  s.landlock.scope_abstract_unix = false;
  s.landlock.scope_signals = false;
  s.seccomp.enabled = false;
  s.required = {Layer::cgroups, Layer::capabilities};
  return s;
}

ExecRequest full_request() {
  ExecRequest q;
  q.argv = {"sh", "-c", std::string("printf '\\0'\0tail", 17)};
  q.env = {"PATH=/usr/bin:/bin", "EMPTY="};
  q.cwd = "/work/sub dir";
  return q;
}

Outcome full_outcome() {
  Outcome o;
  o.kind = Outcome::Kind::setup_failed;
  o.exit_code = -7;
  o.signal = 9;
  o.setup = {SetupStep::mount, ENOENT, "bind /nope on /nope: No such file or directory"};
  o.duration = std::chrono::nanoseconds(1234567891011);
  o.rusage.ru_utime = {12, 345678};
  o.rusage.ru_stime = {1, 999999};
  o.rusage.ru_maxrss = 4096;
  o.rusage.ru_minflt = 11;
  o.rusage.ru_majflt = 12;
  o.rusage.ru_inblock = 13;
  o.rusage.ru_oublock = 14;
  o.rusage.ru_nvcsw = 15;
  o.rusage.ru_nivcsw = 16;
  o.layers.layers = {{Layer::namespaces, LayerState::enforced, ""},
                     {Layer::cgroups, LayerState::degraded, "no delegation -> RLIMIT_NPROC"}};
  o.layers.limits_tier = LimitsTier::rlimits;
  o.warning = "1 of git's state files could not be written back";
  return o;
}

TEST(SpecCodecTest, SpawnRequestRoundTrips) {
  for (const auto& [spec, request] :
       {std::pair{JailSpec{}, ExecRequest{}}, std::pair{full_spec(), full_request()}}) {
    auto decoded = decode_spawn(encode_spawn(spec, request));
    ASSERT_TRUE(decoded) << decoded.error().to_string();
    EXPECT_EQ(decoded->first, spec);
    EXPECT_EQ(decoded->second, request);
  }
}

TEST(SpecCodecTest, StdioFdsAreNotEncoded) {
  ExecRequest q = full_request();
  q.stdin_fd = 5;
  q.stdout_fd = 6;
  q.stderr_fd = 7;
  auto decoded = decode_spawn(encode_spawn(JailSpec{}, q));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->second.stdin_fd, -1);
  EXPECT_EQ(decoded->second.stdout_fd, -1);
  EXPECT_EQ(decoded->second.stderr_fd, -1);
  EXPECT_EQ(decoded->second.argv, q.argv);
}

TEST(SpecCodecTest, OutcomeRoundTrips) {
  const Outcome o = full_outcome();
  auto d = decode_outcome(encode_outcome(o));
  ASSERT_TRUE(d) << d.error().to_string();
  EXPECT_EQ(d->kind, o.kind);
  EXPECT_EQ(d->exit_code, o.exit_code);
  EXPECT_EQ(d->signal, o.signal);
  EXPECT_EQ(d->setup, o.setup);
  EXPECT_EQ(d->duration, o.duration);
  EXPECT_EQ(d->warning, o.warning);
  EXPECT_EQ(d->rusage.ru_utime.tv_sec, 12);
  EXPECT_EQ(d->rusage.ru_utime.tv_usec, 345678);
  EXPECT_EQ(d->rusage.ru_stime.tv_sec, 1);
  EXPECT_EQ(d->rusage.ru_stime.tv_usec, 999999);
  EXPECT_EQ(d->rusage.ru_maxrss, 4096);
  EXPECT_EQ(d->rusage.ru_minflt, 11);
  EXPECT_EQ(d->rusage.ru_majflt, 12);
  EXPECT_EQ(d->rusage.ru_inblock, 13);
  EXPECT_EQ(d->rusage.ru_oublock, 14);
  EXPECT_EQ(d->rusage.ru_nvcsw, 15);
  EXPECT_EQ(d->rusage.ru_nivcsw, 16);
  EXPECT_EQ(d->layers, o.layers);
}

TEST(SpecCodecTest, ErrorRoundTrips) {
  const Error e{"clone3 with the jail's namespaces", "", "Operation not permitted", EPERM,
                SetupStep::clone3};
  auto d = decode_error(encode_error(e));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, e.what);
  EXPECT_EQ(d->where, e.where);
  EXPECT_EQ(d->why, e.why);
  EXPECT_EQ(d->sys_errno, e.sys_errno);
  EXPECT_EQ(d->step, e.step);
}

TEST(SpecCodecTest, EveryTruncationIsRejected) {
  const std::string spawn = encode_spawn(full_spec(), full_request());
  for (size_t n = 0; n < spawn.size(); ++n) {
    auto d = decode_spawn(std::string_view(spawn).substr(0, n));
    ASSERT_FALSE(d) << "accepted the first " << n << " bytes";
    EXPECT_EQ(d.error().what, "decode spawn request");
  }
  const std::string outcome = encode_outcome(full_outcome());
  for (size_t n = 0; n < outcome.size(); ++n)
    ASSERT_FALSE(decode_outcome(std::string_view(outcome).substr(0, n))) << n << " bytes";
}

TEST(SpecCodecTest, TrailingBytesAreRejected) {
  auto d = decode_outcome(encode_outcome(full_outcome()) + "x");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().why, HasSubstr("1 bytes left over"));
}

TEST(SpecCodecTest, OtherVersionsAreRejected) {
  std::string bytes = encode_spawn(full_spec(), full_request());
  bytes[0] = static_cast<char>(kCodecVersion + 1);
  auto d = decode_spawn(bytes);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().why, HasSubstr("version"));
}

TEST(SpecCodecTest, OutOfRangeEnumsAndHugeCountsAreRejected) {
  std::string bytes = encode_outcome(full_outcome());
  bytes[1] = 17;  // Outcome::Kind
  auto d = decode_outcome(bytes);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().why, HasSubstr("out of range"));

  // Version, 7 namespace flags, 4 ids and map_launcher, then the mount count.
  std::string spawn = encode_spawn(JailSpec{}, ExecRequest{});
  const size_t mounts_at = 1 + 7 + 16 + 1;
  for (size_t i = 0; i < 4; ++i) spawn[mounts_at + i] = '\xff';
  auto s = decode_spawn(spawn);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().why, HasSubstr("cannot fit"));
}

TEST(SpecCodecTest, RandomBytesAndFlippedBytesNeverCrash) {
  std::mt19937 rng(42);
  const std::string good = encode_spawn(full_spec(), full_request());
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    // Many flips land in string contents and decode to another valid
    // request; what matters is that decoding returns, under ASan.
    if (decode_spawn(bytes)) ++accepted;
    std::string noise(rng() % 64, '\0');
    for (char& c : noise) c = static_cast<char>(rng() & 0xff);
    noise.insert(noise.begin(), static_cast<char>(kCodecVersion));
    EXPECT_FALSE(decode_outcome(noise) && decode_spawn(noise) && decode_error(noise));
  }
  EXPECT_LT(accepted, 2000);
}

}  // namespace
}  // namespace brig::jail
