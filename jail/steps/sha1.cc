#include "jail/steps/sha1.h"

#include <string.h>

namespace brig::jail::sha1 {
namespace {

uint32_t rotl(uint32_t x, int n) {
  return (x << n) | (x >> (32 - n));
}

}  // namespace

Hasher::Hasher() : h_{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u} {}

void Hasher::block(const unsigned char* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
           (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999u;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1u;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6u;
    }
    const uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
}

void Hasher::update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  while (size > 0) {
    const size_t take = size < 64 - used_ ? size : 64 - used_;
    ::memcpy(buf_ + used_, p, take);
    used_ += take;
    p += take;
    size -= take;
    if (used_ == 64) {
      block(buf_);
      used_ = 0;
    }
  }
}

void Hasher::finish(unsigned char out[20]) {
  const uint64_t bits = total_ * 8;
  const unsigned char pad = 0x80;
  update(&pad, 1);
  const unsigned char zero = 0;
  while (used_ != 56) update(&zero, 1);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  update(len, 8);
  for (int i = 0; i < 5; ++i) {
    out[4 * i] = static_cast<unsigned char>(h_[i] >> 24);
    out[4 * i + 1] = static_cast<unsigned char>(h_[i] >> 16);
    out[4 * i + 2] = static_cast<unsigned char>(h_[i] >> 8);
    out[4 * i + 3] = static_cast<unsigned char>(h_[i]);
  }
}

}  // namespace brig::jail::sha1
