// c-ares looks up service names (getservbyname, getservbyport_r) when a
// caller passes one; brig never does — the relay asks for addresses only,
// and ports are numbers from the policy and the request. In a static
// program those two glibc functions need NSS's shared libraries at run time
// (the linker warns), so c-ares's references are wrapped (--wrap, added to
// brig_cares) onto these, which find no service: what c-ares then does for
// a name nobody passes.
#include <netdb.h>

#include <cerrno>

extern "C" {

servent* __wrap_getservbyname(const char*, const char*) {
  return nullptr;
}

int __wrap_getservbyport_r(int, const char*, servent*, char*, size_t, servent** result) {
  *result = nullptr;
  return ENOENT;
}

}  // extern "C"
