// brig-netfilter: loads the host's table of network mode `filtered`,
// `inet brig_filtered` (ruleset.h), when the host's kernel does not hold
// it with brig's rules already. Run by the launcher (jail/steps/filter.h)
// as brig's own user, with nothing on stdin and no arguments. Exit 0 when
// the table is in; else 1 and one line on stderr saying what failed.
//
// A separate program because libnftables is a shared library and brig's
// launchers are static; and a rare one: the table serves every filtered
// jail, so it runs for the first one after boot or after the ruleset was
// flushed. Each jail's own rules are a netlink batch (jail_rules.h) and its
// veth plain rtnetlink, both from the static launcher.
#include <nftables/libnftables.h>

#include <cstdio>
#include <string>

#include "jail/base/error.h"
#include "jail/netfilter/nft_table.h"
#include "jail/netfilter/ruleset.h"

namespace brig::jail::netfilter {
namespace {

Result<void> load(const std::string& rules, const char* where) {
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr)
    return std::unexpected(Error{"load nftables rules", where, "nft_ctx_new failed"});
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  const int rc = nft_run_cmd_from_buffer(ctx, rules.c_str());
  std::string why = nft_ctx_get_error_buffer(ctx);
  nft_ctx_free(ctx);
  if (rc == 0) return {};
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.find("Operation not permitted") != std::string::npos)
    why += " (network mode filtered needs root or CAP_NET_ADMIN; use mode proxy without them)";
  return std::unexpected(Error{"load nftables rules", where, why.empty() ? "failed" : why});
}

Result<void> run() {
  // Looked at again: another brig may have loaded it meanwhile. Loading it
  // twice is safe either way (ruleset.h: one transaction replaces it whole).
  if (BRIG_TRY(inet_table_rules("brig_filtered")) == host_rule_count()) return {};
  return load(host_ruleset(), "the host's table inet brig_filtered");
}

}  // namespace
}  // namespace brig::jail::netfilter

int main() {
  auto ok = brig::jail::netfilter::run();
  if (ok) return 0;
  std::fprintf(stderr, "%s\n", ok.error().to_string().c_str());
  return 1;
}
