// The policy loader through to the JailSpec: TOML text -> load_policy ->
// to_jail_spec -> validate -> the spawner's codec and back. Every stage may
// refuse the input, none may crash, and a spec the planner makes must pass
// validate() and survive its own encoding unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "jail/spec_codec.h"
#include "jail/spec_validate.h"
#include "server/policy/context.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace brig::policy;
  static const EnvMap env = {{"HOME", "/home/u"}, {"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  PolicySource source;
  source.display = "fuzz.toml";
  source.text.assign(reinterpret_cast<const char*>(data), size);
  source.identity = "fuzz";
  // As a built-in: `extends` may then name the shipped policies only, so the
  // input cannot make the loader read (or block on) a file of this machine.
  source.builtin = true;
  auto loaded = load_policy(source, Expansion{"/home/u", env});
  if (!loaded) return 0;

  Context ctx;
  ctx.workspace = "/home/u/project";
  ctx.cwd = "/home/u/project/src";
  ctx.uid = 1000;
  ctx.gid = 1000;
  ctx.home = "/home/u";
  ctx.env = env;
  ctx.connect_program = "/usr/bin/brig";
  ctx.netfilter_program = "/usr/libexec/brig/brig-netfilter";
  auto spec = to_jail_spec(loaded->policy, ctx);
  if (!spec) return 0;
  auto request = exec_request(loaded->policy, ctx, {"sh", "-c", "true"});
  // The planner's output is what the launcher trusts: it must be valid...
  if (!brig::jail::validate(*spec)) std::abort();
  // ...and the spawner must receive exactly it.
  const std::string bytes = brig::jail::encode_spawn(*spec, request);
  auto decoded = brig::jail::decode_spawn(bytes);
  if (!decoded) std::abort();
  if (brig::jail::encode_spawn(decoded->first, decoded->second) != bytes) std::abort();
  return 0;
}
