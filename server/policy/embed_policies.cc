// Build-time tool: embed_policies OUT.cc NAME=FILE... writes a C++ file that
// defines brig::policy::builtin_policies() with each shipped policy's text.
//
// Comments are blanked out first (newlines kept, so every error position
// still matches the shipped file): toml++ spends about two thirds of its time
// on the comments of a commented policy, and `brig run` parses one on every
// call. The tool refuses to write anything unless the blanked text parses to
// exactly the same TOML as the original.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "server/static_libs/toml.h"

namespace {

// `text` without its comments, every newline kept. Aware of TOML's four
// string forms, so a '#' inside a string stays.
std::string strip_comments(std::string_view text) {
  enum class In { code, basic, literal, ml_basic, ml_literal } in = In::code;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const std::string_view rest = text.substr(i);
    switch (in) {
      case In::code:
        if (c == '#') {
          while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
          while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
          continue;
        }
        if (rest.starts_with("\"\"\""))
          in = In::ml_basic, out += "\"\"", i += 2;
        else if (rest.starts_with("'''"))
          in = In::ml_literal, out += "''", i += 2;
        else if (c == '"')
          in = In::basic;
        else if (c == '\'')
          in = In::literal;
        break;
      case In::basic:
      case In::ml_basic:
        if (c == '\\' && i + 1 < text.size()) {
          out += c;
          out += text[++i];
          continue;
        }
        if (in == In::basic && c == '"') in = In::code;
        if (in == In::ml_basic && rest.starts_with("\"\"\"")) in = In::code, out += "\"\"", i += 2;
        break;
      case In::literal:
        if (c == '\'') in = In::code;
        break;
      case In::ml_literal:
        if (rest.starts_with("'''")) in = In::code, out += "''", i += 2;
        break;
    }
    out += c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.cc NAME=FILE...\n", argv[0]);
    return 2;
  }
  std::string entries;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq), file = arg.substr(eq + 1);
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "embed_policies: cannot read %s\n", file.c_str());
      return 1;
    }
    const std::string stripped = strip_comments(text.str());
    try {
      if (toml::parse(text.str(), std::string_view(file)) !=
          toml::parse(stripped, std::string_view(file))) {
        std::fprintf(stderr, "embed_policies: %s changes meaning without its comments\n",
                     file.c_str());
        return 1;
      }
    } catch (const toml::parse_error& e) {
      std::fprintf(stderr, "%s:%u:%u: %s\n", file.c_str(), e.source().begin.line,
                   e.source().begin.column, std::string(e.description()).c_str());
      return 1;
    }
    if (stripped.find(")brig_toml\"") != std::string::npos) {
      std::fprintf(stderr, "embed_policies: %s contains )brig_toml\"\n", file.c_str());
      return 1;
    }
    entries += "    {\"" + name + "\", R\"brig_toml(" + stripped + ")brig_toml\"},\n";
  }
  std::ofstream out(argv[1]);
  out << "// Generated from policies/*.toml by embed_policies. Do not edit.\n"
         "#include \"server/policy/builtin.h\"\n\n"
         "namespace brig::policy {\nnamespace {\n"
         "constexpr BuiltinPolicy kPolicies[] = {\n"
      << entries
      << "};\n}  // namespace\n\n"
         "std::span<const BuiltinPolicy> builtin_policies() { return kPolicies; }\n\n"
         "}  // namespace brig::policy\n";
  return out ? 0 : 1;
}
