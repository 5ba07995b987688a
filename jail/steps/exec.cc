#include "jail/steps/exec.h"

#include <errno.h>
#include <unistd.h>

namespace brig::jail::exec {

std::vector<std::string> path_candidates(const std::string& file,
                                         const std::vector<std::string>& env) {
  if (file.find('/') != std::string::npos) return {file};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env)
    if (e.starts_with("PATH=")) path = e.substr(5);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = path.substr(start, end - start);
    // An empty PATH element means the working directory, as in execvp.
    out.push_back(dir.empty() ? file : dir + "/" + file);
    start = end + 1;
  }
  return out;
}

Prepared prepare(const ExecRequest& request) {
  Prepared p;
  p.candidates = path_candidates(request.argv[0], request.env);
  for (const auto& c : p.candidates) p.candidate_ptrs.push_back(c.c_str());
  p.candidate_ptrs.push_back(nullptr);
  p.strings.reserve(request.argv.size() + request.env.size());
  for (const auto& a : request.argv) p.strings.push_back(a);
  for (const auto& e : request.env) p.strings.push_back(e);
  for (size_t i = 0; i < request.argv.size(); ++i) p.argv.push_back(p.strings[i].data());
  p.argv.push_back(nullptr);
  for (size_t i = 0; i < request.env.size(); ++i)
    p.envp.push_back(p.strings[request.argv.size() + i].data());
  p.envp.push_back(nullptr);
  return p;
}

int exec_in_child(const Prepared& p) {
  return exec_in_child(p.candidate_ptrs.data(), p.argv.data(), p.envp.data());
}

int exec_in_child(const char* const* candidates, char* const* argv, char* const* envp) {
  bool denied = false;
  int last = ENOENT;
  for (const char* const* c = candidates; *c; ++c) {
    ::execve(*c, argv, envp);
    last = errno;
    if (last == EACCES)
      denied = true;
    else if (last != ENOENT && last != ENOTDIR)
      return last;
  }
  return denied ? EACCES : last;
}

}  // namespace brig::jail::exec
