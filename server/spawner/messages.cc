#include "server/spawner/messages.h"

#include <errno.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>

#include "jail/spec_codec.h"

namespace brig::spawner {
namespace {

constexpr std::size_t kHeaderSize = 1 + 1 + 8;

std::string header(MessageType type, std::uint64_t id) {
  jail::codec::Writer w;
  w.u8(jail::kCodecVersion);
  w.u8(static_cast<std::uint8_t>(type));
  w.u64(id);
  return w.take();
}

Error protocol_error(std::string what, std::string why) {
  return Error{std::move(what), "spawner protocol", std::move(why), 0};
}

}  // namespace

std::string spawn_message(std::uint64_t id, const jail::JailSpec& spec,
                          const jail::ExecRequest& request) {
  std::string m = header(MessageType::spawn, id);
  const std::uint8_t mask = (request.stdin_fd >= 0 ? 1 : 0) | (request.stdout_fd >= 0 ? 2 : 0) |
                            (request.stderr_fd >= 0 ? 4 : 0);
  m.push_back(static_cast<char>(mask));
  m += jail::encode_spawn(spec, request);
  return m;
}

std::string started_message(std::uint64_t id, pid_t pid, std::size_t listeners) {
  std::string m = header(MessageType::started, id);
  jail::codec::Writer w;
  w.u8(1);
  w.i32(pid);
  w.u8(static_cast<std::uint8_t>(listeners));
  return m + w.take();
}

std::string spawn_failed_message(std::uint64_t id, const Error& error) {
  std::string m = header(MessageType::started, id);
  m.push_back(0);
  return m + jail::encode_error(error);
}

std::string exited_message(std::uint64_t id, const jail::Outcome& outcome) {
  return header(MessageType::exited, id) + jail::encode_outcome(outcome);
}

std::vector<int> spawn_fds(const jail::ExecRequest& request) {
  std::vector<int> fds;
  for (int fd : {request.stdin_fd, request.stdout_fd, request.stderr_fd})
    if (fd >= 0) fds.push_back(fd);
  return fds;
}

Result<Packet> parse_packet(std::string_view bytes) {
  jail::codec::Reader r(bytes.substr(0, std::min(bytes.size(), kHeaderSize)), "spawner packet");
  const std::uint8_t version = r.u8();
  const std::uint8_t type = r.u8();
  Packet p;
  p.id = r.u64();
  BRIG_TRY_VOID(r.finish());
  if (version != jail::kCodecVersion)
    return std::unexpected(protocol_error(
        "decode spawner packet", "version " + std::to_string(version) + ", expected " +
                                     std::to_string(jail::kCodecVersion) +
                                     " (brig-server and brig-spawner from different builds?)"));
  if (type < static_cast<std::uint8_t>(MessageType::spawn) ||
      type > static_cast<std::uint8_t>(MessageType::exited))
    return std::unexpected(
        protocol_error("decode spawner packet", "unknown type " + std::to_string(type)));
  p.type = static_cast<MessageType>(type);
  p.body.assign(bytes.substr(kHeaderSize));
  return p;
}

Result<std::pair<jail::JailSpec, jail::ExecRequest>> decode_spawn_packet(const Packet& packet) {
  if (packet.body.empty())
    return std::unexpected(protocol_error("decode spawn request", "no stdio mask"));
  const auto mask = static_cast<std::uint8_t>(packet.body[0]);
  if (mask > 7)
    return std::unexpected(
        protocol_error("decode spawn request", "stdio mask " + std::to_string(mask)));
  const std::size_t expected = std::size_t{(mask & 1) != 0} + ((mask & 2) != 0) + ((mask & 4) != 0);
  if (packet.fds.size() != expected)
    return std::unexpected(protocol_error(
        "decode spawn request", std::to_string(packet.fds.size()) + " fds came, the mask names " +
                                    std::to_string(expected)));
  auto decoded = BRIG_TRY(jail::decode_spawn(std::string_view(packet.body).substr(1)));
  std::size_t next = 0;
  for (auto [bit, fd] :
       {std::pair{1, &decoded.second.stdin_fd}, std::pair{2, &decoded.second.stdout_fd},
        std::pair{4, &decoded.second.stderr_fd}})
    *fd = (mask & bit) ? packet.fds[next++].get() : -1;
  return decoded;
}

Result<Result<Started>> decode_started_packet(Packet& packet) {
  jail::codec::Reader r(packet.body, "spawn reply");
  const bool ok = r.boolean();
  if (!ok) {
    if (!r.ok()) BRIG_TRY_VOID(r.finish());
    auto error = BRIG_TRY(jail::decode_error(std::string_view(packet.body).substr(1)));
    return Result<Started>(std::unexpected(std::move(error)));
  }
  Started s;
  s.pid = r.i32();
  const std::size_t listeners = r.u8();
  BRIG_TRY_VOID(r.finish());
  if (packet.fds.size() != 1 + listeners || s.pid <= 0)
    return std::unexpected(protocol_error(
        "decode spawn reply",
        "pid " + std::to_string(s.pid) + " with " + std::to_string(packet.fds.size()) +
            " fds, expected one pidfd and " + std::to_string(listeners) + " listeners"));
  s.pidfd = std::move(packet.fds[0]);
  for (std::size_t i = 1; i < packet.fds.size(); ++i)
    s.listeners.push_back(std::move(packet.fds[i]));
  packet.fds.clear();
  return Result<Started>(std::move(s));
}

int send_packet(int socket, std::string_view bytes, const std::vector<int>& fds, int flags) {
  if (bytes.size() > kMaxMessage || fds.size() > kMaxFds) return EMSGSIZE;
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(socket, &msg, flags | MSG_NOSIGNAL) >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

Result<Received> receive_packet(int socket, int flags) {
  // One buffer per thread, kept: a fresh 64 KiB zeroed for every packet
  // made the spawner write 16 pages per call, each a copy-on-write fault
  // while jails forked from it are alive (tests/bench/README.md).
  thread_local std::unique_ptr<char[]> buffer(new char[kMaxMessage]);
  Received r;
  iovec iov{buffer.get(), kMaxMessage};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(socket, &msg, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return std::unexpected(sys_error("receive from the spawner socket", "", errno));
  // Take ownership of every fd first, so that none leaks on a rejected packet.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      r.fds.emplace_back(fd);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
    return std::unexpected(protocol_error("receive from the spawner socket",
                                          "packet or its fds truncated (over " +
                                              std::to_string(kMaxMessage) + " bytes or " +
                                              std::to_string(kMaxFds) + " fds)"));
  r.eof = n == 0;
  r.bytes.assign(buffer.get(), static_cast<std::size_t>(n));
  return r;
}

}  // namespace brig::spawner
