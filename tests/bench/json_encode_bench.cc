// brig-json-encode-bench: protocol::encode versus nlohmann's dump (what brig
// used before) on the reply to a read_file of a 1 MiB text file: the text is
// in it twice, as content[0].text and structuredContent.content. Prints ms
// per call (median) and the ratio, and checks both give the same bytes.
//   brig-json-encode-bench [FILE] [RUNS]
// FILE: the text to put in the reply; without it, 1 MiB of generated source-
// like text (lines of words, tabs, quotes, a few non-ASCII characters).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "protocol/json_rpc.h"
#include "protocol/mcp_types.h"
#include "protocol/outgoing.h"

namespace {

using brig::protocol::Json;
using Clock = std::chrono::steady_clock;

std::string generated_text(std::size_t size) {
  static const char* const kWords[] = {"static", "const", "char", "int", "return",
                                       "if (x)", "{",     "}",    "\t",  "\"s\"",
                                       "x->y",   "a\\b",  "café", "//"};
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::size_t> word(0, std::size(kWords) - 1);
  std::uniform_int_distribution<int> words_per_line(1, 12);
  std::string text;
  while (text.size() < size) {
    for (int n = words_per_line(rng); n > 0; --n) (text += kWords[word(rng)]) += ' ';
    text += '\n';
  }
  text.resize(size);
  return text;
}

template <typename F>
double median_ms(int runs, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string text;
  if (argc > 1) {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[1]);
      return 2;
    }
    text.assign(std::istreambuf_iterator<char>(in), {});
  } else {
    text = generated_text(1 << 20);
  }
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;

  brig::protocol::ToolResult tool;
  tool.add_text(text);
  tool.structured = Json{{"content", text}, {"path", "big.txt"}, {"totalLines", 25000}};
  const Json reply = brig::protocol::to_json(brig::protocol::Response{7, tool.to_json()});

  const std::string old_line = reply.dump(-1, ' ', false, Json::error_handler_t::replace);
  const std::string new_line = brig::protocol::encode(reply);
  if (old_line != new_line) {
    std::fprintf(stderr, "MISMATCH: encode and dump differ (%zu vs %zu bytes)\n", new_line.size(),
                 old_line.size());
    return 1;
  }

  std::size_t sink = 0;  // keeps the compiler from dropping the work
  const double dump_ms = median_ms(
      runs, [&] { sink += reply.dump(-1, ' ', false, Json::error_handler_t::replace).size(); });
  const double encode_ms = median_ms(runs, [&] { sink += brig::protocol::encode(reply).size(); });
  // The whole outgoing path for a tool reply in protocol/: era decoration,
  // the JSON-RPC envelope, encoding, the stand-in and the line to send.
  const brig::protocol::Outgoing out(brig::protocol::ServerInfo{"brig", "bench"}, 10u << 20);
  const double outgoing_ms = median_ms(runs, [&] {
    auto r = out.result(7, tool.to_json(), brig::protocol::Era::modern, /*tool_call=*/true);
    sink += out.single(std::move(r)).size();
  });

  std::printf("reply to a read_file of %zu bytes: %zu bytes of JSON, %d runs (median)\n",
              text.size(), new_line.size(), runs);
  std::printf("  nlohmann dump:                     %8.3f ms\n", dump_ms);
  std::printf("  protocol::encode:                  %8.3f ms\n", encode_ms);
  std::printf("  dump / encode:                     %8.1fx\n", dump_ms / encode_ms);
  std::printf("  Outgoing::result + single (all):   %8.3f ms\n", outgoing_ms);
  return sink == 0 ? 1 : 0;
}
