// Placeholders: the capability a jail's code presents instead of a real
// key. 128 random bits from getrandom(2), as 32 lower-case hex digits, made
// for one jail and accepted only on that jail's listener while it lives.
#pragma once

#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::llm {

// A fresh placeholder. Fails only when the kernel has no randomness to give.
Result<std::string> new_placeholder();

// Whether `offered` is `issued`, in time that depends only on their
// lengths, so that a jail timing its refusals learns nothing of the bytes.
bool same_placeholder(std::string_view offered, std::string_view issued);

}  // namespace brig::llm
