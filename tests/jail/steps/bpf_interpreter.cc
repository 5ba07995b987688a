#include "tests/jail/steps/bpf_interpreter.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace brig::jail::testing {
namespace {

[[noreturn]] void refuse(size_t pc, const std::string& why) {
  throw std::runtime_error("BPF instruction " + std::to_string(pc) + ": " + why);
}

// The 32-bit word at byte `offset` of the seccomp_data, as BPF_LD|BPF_W|BPF_ABS
// reads it (host byte order, which is little-endian on x86_64).
uint32_t load_word(const seccomp_data& data, uint32_t offset, size_t pc) {
  if (offset % 4 != 0 || offset + 4 > sizeof data) refuse(pc, "load outside seccomp_data");
  uint32_t word;
  std::memcpy(&word, reinterpret_cast<const char*>(&data) + offset, 4);
  return word;
}

// ACTION_ONLY in kernel/seccomp.c: the action bits, as a signed value so that
// KILL_PROCESS (0x80000000) sorts first.
int32_t action_only(uint32_t ret) {
  return static_cast<int32_t>(ret & SECCOMP_RET_ACTION_FULL);
}

}  // namespace

uint32_t run_bpf(std::span<const sock_filter> program, const SyscallCall& call) {
  seccomp_data data{};
  data.nr = call.nr;
  data.arch = call.arch;
  for (size_t i = 0; i < call.args.size(); ++i) data.args[i] = call.args[i];

  uint32_t a = 0, x = 0;
  uint32_t mem[BPF_MEMWORDS] = {};
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& in = program[pc];
    auto jump = [&](bool taken) {
      size_t target = pc + 1 + (taken ? in.jt : in.jf);
      if (target >= program.size()) refuse(pc, "jump past the end");
      pc = target - 1;  // the loop's ++pc lands on target
    };
    auto mem_index = [&] {
      if (in.k >= BPF_MEMWORDS) refuse(pc, "scratch memory index out of range");
      return in.k;
    };
    uint32_t operand = BPF_SRC(in.code) == BPF_X ? x : in.k;
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        a = load_word(data, in.k, pc);
        break;
      case BPF_LD | BPF_W | BPF_LEN:
        a = sizeof data;
        break;
      case BPF_LDX | BPF_W | BPF_LEN:
        x = sizeof data;
        break;
      case BPF_LD | BPF_IMM:
        a = in.k;
        break;
      case BPF_LDX | BPF_IMM:
        x = in.k;
        break;
      case BPF_LD | BPF_MEM:
        a = mem[mem_index()];
        break;
      case BPF_LDX | BPF_MEM:
        x = mem[mem_index()];
        break;
      case BPF_ST:
        mem[mem_index()] = a;
        break;
      case BPF_STX:
        mem[mem_index()] = x;
        break;
      case BPF_MISC | BPF_TAX:
        x = a;
        break;
      case BPF_MISC | BPF_TXA:
        a = x;
        break;
      case BPF_ALU | BPF_ADD | BPF_K:
      case BPF_ALU | BPF_ADD | BPF_X:
        a += operand;
        break;
      case BPF_ALU | BPF_SUB | BPF_K:
      case BPF_ALU | BPF_SUB | BPF_X:
        a -= operand;
        break;
      case BPF_ALU | BPF_MUL | BPF_K:
      case BPF_ALU | BPF_MUL | BPF_X:
        a *= operand;
        break;
      case BPF_ALU | BPF_DIV | BPF_K:
      case BPF_ALU | BPF_DIV | BPF_X:
        if (operand == 0) return 0;  // the kernel's BPF returns 0 (kill) on division by zero
        a /= operand;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
      case BPF_ALU | BPF_AND | BPF_X:
        a &= operand;
        break;
      case BPF_ALU | BPF_OR | BPF_K:
      case BPF_ALU | BPF_OR | BPF_X:
        a |= operand;
        break;
      case BPF_ALU | BPF_XOR | BPF_K:
      case BPF_ALU | BPF_XOR | BPF_X:
        a ^= operand;
        break;
      case BPF_ALU | BPF_LSH | BPF_K:
      case BPF_ALU | BPF_LSH | BPF_X:
        a = operand >= 32 ? 0 : a << operand;
        break;
      case BPF_ALU | BPF_RSH | BPF_K:
      case BPF_ALU | BPF_RSH | BPF_X:
        a = operand >= 32 ? 0 : a >> operand;
        break;
      case BPF_ALU | BPF_NEG:
        a = 0 - a;
        break;
      case BPF_JMP | BPF_JA: {
        size_t target = pc + 1 + in.k;
        if (target >= program.size()) refuse(pc, "jump past the end");
        pc = target - 1;
        break;
      }
      case BPF_JMP | BPF_JEQ | BPF_K:
      case BPF_JMP | BPF_JEQ | BPF_X:
        jump(a == operand);
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
      case BPF_JMP | BPF_JGT | BPF_X:
        jump(a > operand);
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
      case BPF_JMP | BPF_JGE | BPF_X:
        jump(a >= operand);
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
      case BPF_JMP | BPF_JSET | BPF_X:
        jump((a & operand) != 0);
        break;
      case BPF_RET | BPF_K:
        return in.k;
      case BPF_RET | BPF_A:
        return a;
      default:
        refuse(pc, "opcode " + std::to_string(in.code) + " is not allowed in seccomp");
    }
  }
  refuse(program.size(), "the program ends without a return");
}

uint32_t run_filters(std::span<const std::span<const sock_filter>> programs,
                     const SyscallCall& call) {
  // kernel/seccomp.c seccomp_run_filters: newest filter first, and a later
  // result replaces the current one only if it is strictly more severe.
  uint32_t result = SECCOMP_RET_ALLOW;
  for (auto it = programs.rbegin(); it != programs.rend(); ++it) {
    uint32_t current = run_bpf(*it, call);
    if (action_only(current) < action_only(result)) result = current;
  }
  return result;
}

}  // namespace brig::jail::testing
