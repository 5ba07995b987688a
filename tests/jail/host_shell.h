// Test helpers that act on the host, outside any jail: a shell script run in
// a directory (git, to set up and inspect repositories) and a file's bytes.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>
#include <string>

namespace brig::jail::test {

// Runs `script` with sh on the host in `dir`; its stdout and stderr. A
// failing script fails the test (and still returns what it printed).
inline std::string host_sh(const std::string& dir, const std::string& script) {
  const std::string cmd = "cd '" + dir + "' && { " + script + "; } 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << script << ":\n" << out;
  return out;
}

// The whole file at `path`; "" if it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace brig::jail::test
