// Where the running program lives, to find its sibling executables.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::process {

// The directory of /proc/self/exe (symlinks resolved); an error when
// /proc is not mounted or the link cannot be read.
Result<std::string> self_exe_dir();

// The first of candidates (paths relative to self_exe_dir(), e.g.
// "brig-server", "../libexec/brig/brig-server") that exists and is
// executable, as an absolute path; an error listing the paths tried.
Result<std::string> find_sibling(std::initializer_list<std::string_view> candidates);

}  // namespace brig::process
