// What Debian's libtomlplusplus.so contains, built into the brig programs:
// see server/static_libs/CMakeLists.txt. Through brig's header, which
// repairs toml++ 3.3.0's whitespace table (server/static_libs/toml.h).
#define TOML_IMPLEMENTATION
#include "server/static_libs/toml.h"
