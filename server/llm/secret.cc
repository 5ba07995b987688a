#include "server/llm/secret.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "jail/base/unique_fd.h"

namespace brig::llm {
namespace {

// A key longer than this is no API key (and would not fit a header line).
constexpr std::size_t kMaxKey = 8 * 1024;

std::string route_name(const policy::LlmRoute& route) {
  return fmt::format("llm route \"{}\"", route.prefix);
}

}  // namespace

void wipe(std::string& s) {
  if (!s.empty()) ::explicit_bzero(s.data(), s.size());
  s.clear();
}

Result<Secret> Secret::hold(std::string_view bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t size = (bytes.size() / page + 1) * page;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return std::unexpected(sys_error("hold an API key", "", errno));
  // Out of core dumps whatever the dump filter says; out of swap where
  // RLIMIT_MEMLOCK allows (an unprivileged default of 8 MiB does).
  ::madvise(p, size, MADV_DONTDUMP);
  // A process cloned from this one (`brig run`'s jail) gets the page
  // zeroed, never the key (Linux 4.14).
  ::madvise(p, size, MADV_WIPEONFORK);
  ::mlock(p, size);
  Secret s;
  s.data_ = static_cast<char*>(p);
  s.size_ = bytes.size();
  s.mapped_ = size;
  std::memcpy(s.data_, bytes.data(), bytes.size());
  return s;
}

Secret::Secret(Secret&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_(std::exchange(o.mapped_, 0)) {}

Secret& Secret::operator=(Secret&& o) noexcept {
  if (this != &o) {
    this->~Secret();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
  }
  return *this;
}

Secret::~Secret() {
  if (data_ == nullptr) return;
  ::explicit_bzero(data_, mapped_);
  ::munlock(data_, mapped_);
  ::munmap(data_, mapped_);
  data_ = nullptr;
}

Result<Secret> load_key(const policy::LlmRoute& route, const policy::EnvMap& env) {
  std::string text;
  std::string source;
  if (!route.key_env.empty()) {
    source = fmt::format("the variable {}", route.key_env);
    auto it = env.find(route.key_env);
    if (it == env.end()) {
      return std::unexpected(
          Error{"load the key of the " + route_name(route), route.key_env,
                fmt::format("{} is not set in brig's environment", route.key_env)});
    }
    text = it->second;
  } else {
    source = fmt::format("the file {}", route.key_file);
    const std::string what = "load the key of the " + route_name(route);
    UniqueFd fd(::open(route.key_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) return std::unexpected(sys_error(what, route.key_file, errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return std::unexpected(sys_error(what, route.key_file, errno));
    if (!S_ISREG(st.st_mode))
      return std::unexpected(Error{what, route.key_file, "not a regular file"});
    if (st.st_uid != ::geteuid()) {
      return std::unexpected(Error{
          what, route.key_file,
          fmt::format("owned by uid {}, not by brig's user (uid {}): another user could replace "
                      "the key",
                      st.st_uid, ::geteuid())});
    }
    if ((st.st_mode & 077) != 0) {
      return std::unexpected(Error{what, route.key_file,
                                   fmt::format("mode {:04o} lets others read it; chmod 600 {}",
                                               st.st_mode & 07777, route.key_file)});
    }
    if (static_cast<std::size_t>(st.st_size) > kMaxKey)
      return std::unexpected(Error{what, route.key_file, "longer than any API key"});
    text.resize(kMaxKey + 1);
    std::size_t got = 0;
    for (;;) {
      const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        wipe(text);
        return std::unexpected(sys_error(what, route.key_file, errno));
      }
      if (n == 0 || (got += static_cast<std::size_t>(n)) == text.size()) break;
    }
    ::explicit_bzero(text.data() + got, text.size() - got);
    text.resize(got);
  }
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' || text.back() == '\t'))
    text.pop_back();
  std::size_t lead = 0;
  while (lead < text.size() && (text[lead] == ' ' || text[lead] == '\t')) ++lead;
  text.erase(0, lead);
  const std::string what = "load the key of the " + route_name(route);
  const std::string where = route.key_env.empty() ? route.key_file : route.key_env;
  if (text.empty()) {
    wipe(text);
    return std::unexpected(Error{what, where, fmt::format("{} is empty", source)});
  }
  if (text.size() > kMaxKey) {
    wipe(text);
    return std::unexpected(Error{what, where, "longer than any API key"});
  }
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      wipe(text);
      return std::unexpected(Error{
          what, where,
          fmt::format("{} holds a control character (a line break?); a key is one line", source)});
    }
  }
  auto secret = Secret::hold(text);
  wipe(text);
  return secret;
}

void forget_key_variables(const std::vector<policy::LlmRoute>& routes) {
  for (const policy::LlmRoute& r : routes) {
    if (r.key_env.empty()) continue;
    const std::string prefix = r.key_env + "=";
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, prefix.c_str(), prefix.size()) == 0) {
        char* value = *e + prefix.size();
        ::explicit_bzero(value, std::strlen(value));
      }
    }
    ::unsetenv(r.key_env.c_str());
  }
}

void forget_key_variables(const std::vector<policy::LlmRoute>& routes, policy::EnvMap& env) {
  for (const policy::LlmRoute& r : routes) {
    auto it = env.find(r.key_env);
    if (it == env.end()) continue;
    wipe(it->second);
    env.erase(it);
  }
}

std::string key_status(const policy::LlmRoute& route, const policy::EnvMap& env) {
  const std::string name =
      route.key_env.empty() ? fmt::format("key_file {}", route.key_file) : route.key_env;
  auto key = load_key(route, env);
  if (key) return fmt::format("present ({})", name);
  return fmt::format("MISSING: {}",
                     key.error().why.empty() ? key.error().to_string() : key.error().why);
}

}  // namespace brig::llm
