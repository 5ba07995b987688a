#include "jail/spec_codec.h"

#include <sys/time.h>

#include <cstring>

namespace brig::jail {
namespace codec {

void Writer::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
}

void Writer::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
}

void Writer::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s);
}

bool Reader::need(std::size_t n) {
  if (!ok()) return false;
  if (left() < n) {
    fail("truncated: " + std::to_string(n) + " bytes needed at offset " + std::to_string(pos_) +
         ", " + std::to_string(left()) + " left");
    return false;
  }
  return true;
}

void Reader::fail(std::string why) {
  if (error_.empty()) error_ = std::move(why);
}

std::uint8_t Reader::u8() {
  if (!need(1)) return 0;
  return static_cast<std::uint8_t>(in_[pos_++]);
}

bool Reader::boolean() {
  const std::uint8_t v = u8();
  if (v > 1) fail("boolean " + std::to_string(v) + " is neither 0 nor 1");
  return v == 1;
}

std::uint32_t Reader::u32() {
  if (!need(4)) return 0;
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
  return v;
}

std::uint64_t Reader::u64() {
  if (!need(8)) return 0;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
  return v;
}

std::string Reader::str() {
  const std::uint32_t n = u32();
  if (!need(n)) return {};
  std::string s(in_.substr(pos_, n));
  pos_ += n;
  return s;
}

std::uint32_t Reader::count(std::size_t min_size) {
  const std::uint32_t n = u32();
  if (ok() && n > left() / min_size)
    fail("a list of " + std::to_string(n) + " elements cannot fit in the " +
         std::to_string(left()) + " bytes left");
  return ok() ? n : 0;
}

Result<void> Reader::finish() {
  if (ok() && left() != 0) fail(std::to_string(left()) + " bytes left over");
  if (ok()) return {};
  return std::unexpected(Error{std::string("decode ") + what_, "", error_, 0});
}

}  // namespace codec

namespace {

using codec::Reader;
using codec::Writer;

void put_version(Writer& w) {
  w.u8(kCodecVersion);
}

void check_version(Reader& r) {
  const std::uint8_t v = r.u8();
  if (r.ok() && v != kCodecVersion)
    r.fail("version " + std::to_string(v) + ", expected " + std::to_string(kCodecVersion) +
           " (brig-server and brig-spawner from different builds?)");
}

void put_strings(Writer& w, const std::vector<std::string>& v) {
  w.u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) w.str(s);
}

std::vector<std::string> get_strings(Reader& r) {
  std::vector<std::string> v(r.count(4));
  for (auto& s : v) s = r.str();
  return v;
}

void put_ports(Writer& w, const std::vector<uint16_t>& v) {
  w.u32(static_cast<std::uint32_t>(v.size()));
  for (uint16_t p : v) w.u32(p);
}

std::vector<uint16_t> get_ports(Reader& r) {
  std::vector<uint16_t> v(r.count(4));
  for (auto& p : v) {
    const std::uint32_t x = r.u32();
    if (x > 0xffff) r.fail("port " + std::to_string(x) + " out of range");
    p = static_cast<uint16_t>(x);
  }
  return v;
}

void put_optional(Writer& w, const std::optional<uint64_t>& v) {
  w.boolean(v.has_value());
  if (v) w.u64(*v);
}

std::optional<uint64_t> get_optional(Reader& r) {
  if (!r.boolean()) return std::nullopt;
  return r.u64();
}

void put_spec(Writer& w, const JailSpec& s) {
  const Namespaces& ns = s.namespaces;
  for (bool b : {ns.user, ns.mount, ns.pid, ns.ipc, ns.uts, ns.net, ns.cgroup}) w.boolean(b);
  w.u32(s.identity.inside_uid);
  w.u32(s.identity.inside_gid);
  w.u32(s.identity.outside_uid);
  w.u32(s.identity.outside_gid);
  w.boolean(s.identity.map_launcher);
  w.u32(static_cast<std::uint32_t>(s.mounts.size()));
  for (const Mount& m : s.mounts) {
    w.u8(static_cast<std::uint8_t>(m.kind));
    w.str(m.source);
    w.str(m.target);
    w.boolean(m.writable);
    w.boolean(m.optional);
    w.boolean(m.keep_owner);
    w.u64(m.size_bytes);
    w.u32(m.mode);
    w.u32(static_cast<std::uint32_t>(m.devices.size()));
    for (const Device& d : m.devices) {
      w.str(d.path);
      w.boolean(d.optional);
    }
    w.str(m.content);
  }
  w.str(s.hostname);
  w.u8(static_cast<std::uint8_t>(s.network));
  w.u32(static_cast<std::uint32_t>(s.listeners.size()));
  for (const Listener& l : s.listeners) {
    w.u8(static_cast<std::uint8_t>(l.protocol));
    w.u32(l.port);
  }
  for (const auto* entries : {&s.filter.allow, &s.filter.deny}) {
    w.u32(static_cast<std::uint32_t>(entries->size()));
    for (const NetFilter::Entry& e : *entries) {
      for (std::uint8_t b : e.address) w.u8(b);
      w.u8(e.prefix);
      w.u32(e.first_port);
      w.u32(e.last_port);
    }
  }
  w.str(s.filter.program);
  const Limits& l = s.limits;
  put_optional(w, l.memory_bytes);
  put_optional(w, l.pids);
  put_optional(w, l.cpu_seconds);
  put_optional(w, l.file_size_bytes);
  put_optional(w, l.open_files);
  put_optional(w, l.wall_time ? std::optional<uint64_t>(static_cast<uint64_t>(l.wall_time->count()))
                              : std::nullopt);
  const LandlockRules& ll = s.landlock;
  w.boolean(ll.enabled);
  put_strings(w, ll.read_only);
  put_strings(w, ll.read_write);
  put_strings(w, ll.list_only);
  w.boolean(ll.restrict_tcp);
  put_ports(w, ll.bind_tcp);
  put_ports(w, ll.connect_tcp);
  w.boolean(ll.scope_abstract_unix);
  w.boolean(ll.scope_signals);
  w.boolean(s.seccomp.enabled);
  w.u32(static_cast<std::uint32_t>(s.required.size()));
  for (Layer l : s.required) w.u8(static_cast<std::uint8_t>(l));
}

JailSpec get_spec(Reader& r) {
  JailSpec s;
  Namespaces& ns = s.namespaces;
  for (bool* b : {&ns.user, &ns.mount, &ns.pid, &ns.ipc, &ns.uts, &ns.net, &ns.cgroup})
    *b = r.boolean();
  s.identity.inside_uid = r.u32();
  s.identity.inside_gid = r.u32();
  s.identity.outside_uid = r.u32();
  s.identity.outside_gid = r.u32();
  s.identity.map_launcher = r.boolean();
  // A mount takes at least 32 bytes: kind, three empty strings, flags, size,
  // mode, an empty device list.
  s.mounts.resize(r.count(32));
  for (Mount& m : s.mounts) {
    m.kind = r.enumeration(Mount::Kind::file);
    m.source = r.str();
    m.target = r.str();
    m.writable = r.boolean();
    m.optional = r.boolean();
    m.keep_owner = r.boolean();
    m.size_bytes = r.u64();
    m.mode = r.u32();
    // A device takes at least 5 bytes: an empty path and its flag.
    m.devices.resize(r.count(5));
    for (Device& d : m.devices) {
      d.path = r.str();
      d.optional = r.boolean();
    }
    m.content = r.str();
  }
  s.hostname = r.str();
  s.network = r.enumeration(NetworkMode::dangerously_host);
  // A listener takes 5 bytes: its protocol and port.
  s.listeners.resize(r.count(5));
  for (Listener& l : s.listeners) {
    l.protocol = r.enumeration(Listener::Protocol::udp);
    const std::uint32_t port = r.u32();
    if (port > 65535) r.fail("listener port out of range");
    l.port = static_cast<std::uint16_t>(port);
  }
  // A filter entry takes 13 bytes: address, prefix, two ports.
  for (auto* entries : {&s.filter.allow, &s.filter.deny}) {
    entries->resize(r.count(13));
    for (NetFilter::Entry& e : *entries) {
      for (std::uint8_t& b : e.address) b = r.u8();
      e.prefix = r.u8();
      const std::uint32_t first = r.u32(), last = r.u32();
      if (first > 65535 || last > 65535) r.fail("filter port out of range");
      e.first_port = static_cast<std::uint16_t>(first);
      e.last_port = static_cast<std::uint16_t>(last);
    }
  }
  s.filter.program = r.str();
  Limits& l = s.limits;
  l.memory_bytes = get_optional(r);
  l.pids = get_optional(r);
  l.cpu_seconds = get_optional(r);
  l.file_size_bytes = get_optional(r);
  l.open_files = get_optional(r);
  if (auto ms = get_optional(r)) {
    if (*ms > static_cast<uint64_t>(INT64_MAX)) r.fail("wall_time out of range");
    l.wall_time = std::chrono::milliseconds(static_cast<int64_t>(*ms));
  }
  LandlockRules& ll = s.landlock;
  ll.enabled = r.boolean();
  ll.read_only = get_strings(r);
  ll.read_write = get_strings(r);
  ll.list_only = get_strings(r);
  ll.restrict_tcp = r.boolean();
  ll.bind_tcp = get_ports(r);
  ll.connect_tcp = get_ports(r);
  ll.scope_abstract_unix = r.boolean();
  ll.scope_signals = r.boolean();
  s.seccomp.enabled = r.boolean();
  s.required.resize(r.count(1));
  for (Layer& l : s.required) l = r.enumeration(Layer::capabilities);
  return s;
}

void put_request(Writer& w, const ExecRequest& q) {
  put_strings(w, q.argv);
  put_strings(w, q.env);
  w.str(q.cwd);
}

ExecRequest get_request(Reader& r) {
  ExecRequest q;
  q.argv = get_strings(r);
  q.env = get_strings(r);
  q.cwd = r.str();
  return q;
}

void put_timeval(Writer& w, const timeval& t) {
  w.i64(t.tv_sec);
  w.i64(t.tv_usec);
}

timeval get_timeval(Reader& r) {
  timeval t{};
  t.tv_sec = static_cast<time_t>(r.i64());
  t.tv_usec = static_cast<suseconds_t>(r.i64());
  if (t.tv_usec < 0 || t.tv_usec >= 1000000) r.fail("microseconds out of range");
  return t;
}

void put_layers(Writer& w, const LayerReport& report) {
  w.u32(static_cast<std::uint32_t>(report.layers.size()));
  for (const LayerStatus& l : report.layers) {
    w.u8(static_cast<std::uint8_t>(l.layer));
    w.u8(static_cast<std::uint8_t>(l.state));
    w.str(l.detail);
  }
  w.u8(static_cast<std::uint8_t>(report.limits_tier));
}

LayerReport get_layers(Reader& r) {
  LayerReport report;
  report.layers.resize(r.count(6));
  for (LayerStatus& l : report.layers) {
    l.layer = r.enumeration(Layer::capabilities);
    l.state = r.enumeration(LayerState::off);
    l.detail = r.str();
  }
  report.limits_tier = r.enumeration(LimitsTier::rlimits);
  return report;
}

}  // namespace

std::string encode_spawn(const JailSpec& spec, const ExecRequest& request) {
  Writer w;
  put_version(w);
  put_spec(w, spec);
  put_request(w, request);
  return w.take();
}

Result<std::pair<JailSpec, ExecRequest>> decode_spawn(std::string_view bytes) {
  Reader r(bytes, "spawn request");
  check_version(r);
  JailSpec spec = get_spec(r);
  ExecRequest request = get_request(r);
  BRIG_TRY_VOID(r.finish());
  return std::pair{std::move(spec), std::move(request)};
}

std::string encode_outcome(const Outcome& o) {
  Writer w;
  put_version(w);
  w.u8(static_cast<std::uint8_t>(o.kind));
  w.i32(o.exit_code);
  w.i32(o.signal);
  w.str(step_name(o.setup.step));
  w.i32(o.setup.sys_errno);
  w.str(o.setup.message);
  w.i64(o.duration.count());
  const struct rusage& ru = o.rusage;
  put_timeval(w, ru.ru_utime);
  put_timeval(w, ru.ru_stime);
  for (long v : {ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, ru.ru_inblock, ru.ru_oublock,
                 ru.ru_nvcsw, ru.ru_nivcsw})
    w.i64(v);
  put_layers(w, o.layers);
  w.str(o.warning);
  return w.take();
}

Result<Outcome> decode_outcome(std::string_view bytes) {
  Reader r(bytes, "jail outcome");
  check_version(r);
  Outcome o;
  o.kind = r.enumeration(Outcome::Kind::setup_failed);
  o.exit_code = r.i32();
  o.signal = r.i32();
  o.setup.step = step_from_name(r.str()).value_or(SetupStep::none);
  o.setup.sys_errno = r.i32();
  o.setup.message = r.str();
  o.duration = std::chrono::nanoseconds(r.i64());
  struct rusage& ru = o.rusage;
  ru.ru_utime = get_timeval(r);
  ru.ru_stime = get_timeval(r);
  for (long* v : {&ru.ru_maxrss, &ru.ru_minflt, &ru.ru_majflt, &ru.ru_inblock, &ru.ru_oublock,
                  &ru.ru_nvcsw, &ru.ru_nivcsw})
    *v = static_cast<long>(r.i64());
  o.layers = get_layers(r);
  o.warning = r.str();
  BRIG_TRY_VOID(r.finish());
  return o;
}

std::string encode_error(const Error& e) {
  Writer w;
  put_version(w);
  w.str(e.what);
  w.str(e.where);
  w.str(e.why);
  w.i32(e.sys_errno);
  w.str(step_name(e.step));
  return w.take();
}

Result<Error> decode_error(std::string_view bytes) {
  Reader r(bytes, "error");
  check_version(r);
  Error e;
  e.what = r.str();
  e.where = r.str();
  e.why = r.str();
  e.sys_errno = r.i32();
  e.step = step_from_name(r.str()).value_or(SetupStep::none);
  BRIG_TRY_VOID(r.finish());
  return e;
}

}  // namespace brig::jail
