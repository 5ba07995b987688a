// The messages between brig-server and brig-spawner, one per SOCK_SEQPACKET
// packet (the kernel keeps the boundaries, so there is no framing to get
// wrong). Every packet: codec version (u8), type (u8), request id (u64),
// then a body:
//   SPAWN   server -> spawner: which stdio fds ride along (u8 bits: 1 stdin,
//           2 stdout, 4 stderr; those fds as SCM_RIGHTS in that order), then
//           encode_spawn(spec, request)
//   STARTED spawner -> server: u8 1 + the init's pid (i32) + the number of
//           the jail's listeners (u8); its pidfd, then the listeners, as
//           SCM_RIGHTS; or u8 0 + encode_error(why the spawn failed)
//   EXITED  spawner -> server: encode_outcome(how the jail ended)
// Shared by both sides; links brig_jail only, so brig-spawner stays lean.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/outcome.h"
#include "jail/spec.h"

namespace brig::spawner {

enum class MessageType : std::uint8_t { spawn = 1, started = 2, exited = 3 };

// A packet larger than this is refused by the sender and, if one came, would
// be truncated and rejected by the receiver. A JailSpec of a busy policy is a
// few KiB.
inline constexpr std::size_t kMaxMessage = 64 * 1024;
inline constexpr std::size_t kMaxFds = 1 + jail::kMaxListeners;

std::string spawn_message(std::uint64_t id, const jail::JailSpec& spec,
                          const jail::ExecRequest& request);
std::string started_message(std::uint64_t id, pid_t pid, std::size_t listeners);
std::string spawn_failed_message(std::uint64_t id, const Error& error);
std::string exited_message(std::uint64_t id, const jail::Outcome& outcome);

// The stdio fds of `request` (those >= 0) in the order a SPAWN carries them.
std::vector<int> spawn_fds(const jail::ExecRequest& request);

struct Packet {
  MessageType type = MessageType::spawn;
  std::uint64_t id = 0;
  std::string body;
  std::vector<UniqueFd> fds;  // SCM_RIGHTS that came with it, close-on-exec
};

// Reads the header of `bytes` into a Packet (fds left empty).
Result<Packet> parse_packet(std::string_view bytes);

// A SPAWN's spec and request, with request.std*_fd set to the packet's fds
// (-1 where none came). The fds stay owned by the packet.
Result<std::pair<jail::JailSpec, jail::ExecRequest>> decode_spawn_packet(const Packet& packet);

// A STARTED: the init's pid with its pidfd, or the spawn's Error.
struct Started {
  pid_t pid = -1;
  UniqueFd pidfd;
  std::vector<UniqueFd> listeners;  // the spec's, in its order
};
Result<Result<Started>> decode_started_packet(Packet& packet);

// Sends one packet with `fds` as SCM_RIGHTS; 0 or errno. `flags` are added
// to MSG_NOSIGNAL (a dead peer is an EPIPE, never a SIGPIPE).
int send_packet(int socket, std::string_view bytes, const std::vector<int>& fds, int flags);

// Receives one packet and its fds (MSG_CMSG_CLOEXEC). eof: the peer closed.
struct Received {
  bool eof = false;
  std::string bytes;
  std::vector<UniqueFd> fds;
};
// Fails with sys_errno set (EAGAIN for a non-blocking socket with nothing to
// read), or on a truncated packet.
Result<Received> receive_packet(int socket, int flags);

}  // namespace brig::spawner
