// What Debian's libtomlplusplus.so contains, built into the brig programs:
// see server/static_libs/CMakeLists.txt.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
