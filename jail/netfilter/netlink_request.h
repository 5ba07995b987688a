// One netlink request to the kernel (rtnetlink, nf_tables), built field by
// field: a header, attributes, nests closed by patching their length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace brig::jail::netfilter {

class NetlinkRequest {
 public:
  // `type`: RTM_NEWLINK, or (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
  // NLM_F_REQUEST and NLM_F_ACK are added to `flags`.
  NetlinkRequest(std::uint16_t type, std::uint16_t flags);
  template <class T>
  void header(const T& t) {
    append(&t, sizeof t);
  }
  void attr(std::uint16_t type, const void* data, std::size_t size);
  void attr_str(std::uint16_t type, const std::string& s) { attr(type, s.c_str(), s.size() + 1); }
  template <class T>
  void attr_value(std::uint16_t type, T v) {
    attr(type, &v, sizeof v);
  }
  std::size_t begin_nest(std::uint16_t type);
  void end_nest(std::size_t at);

  // Sends it and reads the kernel's first answer: 0 for an ack or any
  // other message (`*reply_type` says which), else the errno it carries.
  int send(int sock, std::uint16_t* reply_type = nullptr);
  // Sends it and reads nothing (a dump's answers are the caller's): 0 or errno.
  int send_only(int sock);

 private:
  void append(const void* data, std::size_t size);
  std::vector<char> buf_;
};

}  // namespace brig::jail::netfilter
