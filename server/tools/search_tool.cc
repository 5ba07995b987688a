#include "server/tools/search_tool.h"

#include <fmt/format.h>

#include "server/files/utf8.h"
#include "server/policy/tool_names.h"
#include "server/search/search.h"
#include "server/tools/skip_summary.h"
#include "server/tools/tool.h"

namespace brig::tools {
namespace {

using protocol::Json;

Json schema_bool(std::string_view description) {
  return {{"type", "boolean"}, {"description", description}};
}

Json line_schema() {
  return {
      {"type", "object"},
      {"properties",
       {{"line", {{"type", "integer"}, {"description", "1-based line number."}}},
        {"match", schema_bool("true: a matching line; false: a context line.")},
        {"cut", schema_bool("Only part of a long line is shown.")},
        {"column",
         {{"type", "integer"}, {"description", "Byte column where a cut line's text starts."}}},
        {"length", {{"type", "integer"}, {"description", "A cut line's full length in bytes."}}}}},
      {"description",
       "A line shown; its text is in the result's text block only (one copy per reply)."},
      {"required", {"line", "match"}}};
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// What the search did, what it skipped, and how to go on; never a bare
// "no matches".
std::string summary_of_search(const Json& h) {
  const auto results = h.value("results", std::size_t{0});
  const auto searched = h.value("files_searched", std::size_t{0});
  const std::string mode = h.value("output_mode", std::string("content"));
  const std::string root = h.value("path", std::string());
  std::string s;
  if (results == 0 && h.value("offset", std::size_t{0}) == 0 && !h.value("truncated", false)) {
    s = fmt::format("No matches for {} in {} under {}.", h.value("pattern", std::string()),
                    plural(searched, "file searched", "files searched"), root);
  } else if (mode == "content") {
    s = fmt::format(
        "{} in {} ({} searched under {}).", plural(results, "matching line", "matching lines"),
        plural(h["files"].size(), "file", "files"), plural(searched, "file", "files"), root);
  } else {
    s = fmt::format("{} ({} searched under {}).", plural(results, "file", "files"),
                    plural(searched, "file", "files"), root);
  }
  if (h.value("case_insensitive", false)) s += " Case was ignored.";
  s += ' ';
  s += describe_skipped(h.value("skipped", Json::object()));
  const std::string stopped = h.value("stopped_by", std::string());
  // A cursor page costs only itself; offset redoes the walk up to it.
  const std::string next = h.contains("next_cursor")
                               ? fmt::format("cursor=\"{}\"", h.value("next_cursor", std::string()))
                               : fmt::format("offset={}", h.value("next_offset", std::size_t{0}));
  if (stopped == "max_results") {
    s += fmt::format(" More results follow: call again with {} (or raise max_results).", next);
  } else if (stopped == "size") {
    s += fmt::format(
        " The reply size limit ended this page: call again with {} for the rest, or "
        "narrow the search (path, include, output_mode \"files\").",
        next);
  } else if (stopped == "deadline") {
    s += fmt::format(" The time limit stopped the search after {}{}",
                     plural(searched, "file", "files"),
                     results == 0 ? ", before any match" : ": results are partial");
    if (h.contains("next_offset") || h.contains("next_cursor"))
      s += fmt::format(". Narrow path or include, or continue with {}.", next);
    else
      s += ": narrow path or include.";
  }
  if (const auto bad = h.value("invalid_utf8", std::size_t{0}); bad > 0)
    s += fmt::format(" {} shown as U+FFFD.",
                     plural(bad, "invalid UTF-8 sequence", "invalid UTF-8 sequences"));
  return s;
}

}  // namespace

protocol::ToolDescriptor search_descriptor() {
  const Json strings = {{"type", "array"}, {"items", {{"type", "string"}}}};
  Json include = strings;
  include["description"] =
      "Search only files matching one of these globs, e.g. [\"*.py\"], [\"src/**/*.{c,h}\"]. A "
      "glob without '/' matches file names at any depth; one with '/' matches the path relative "
      "to `path`.";
  Json exclude = strings;
  exclude["description"] =
      "Skip files and directories matching any of these globs, e.g. [\"tests/\", \"*.min.js\"].";
  Json input = {
      {"type", "object"},
      {"properties",
       {{"pattern",
         {{"type", "string"},
          {"minLength", 1},
          {"description",
           "RE2 regular expression (Perl-like, no backreferences or lookaround), or the exact "
           "text with fixed_strings. Matches never span lines."}}},
        {"path",
         {{"type", "string"},
          {"description",
           std::string("Directory to search (or one file): absolute, or relative to the "
                       "workspace. Default: the workspace.") +
               std::string(files::kNameEscapeNote)}}},
        {"fixed_strings", schema_bool("Treat pattern as exact text, not a regex. Default false.")},
        {"case_insensitive", schema_bool("Ignore case. Default false.")},
        {"smart_case",
         schema_bool("Ignore case unless the pattern has an upper-case letter. Default false.")},
        {"include", std::move(include)},
        {"exclude", std::move(exclude)},
        {"context_before", search::kContextBefore.schema(
                               "Lines of context before each match (content mode). Default 0.")},
        {"context_after", search::kContextAfter.schema(
                              "Lines of context after each match (content mode). Default 0.")},
        {"output_mode",
         {{"type", "string"},
          {"enum", {"content", "files", "count"}},
          {"description",
           "\"content\" (default): matching lines with line numbers; \"files\": only the names "
           "of files that match; \"count\": matching lines per file."}}},
        {"max_results",
         search::kSearchMaxResults.schema(fmt::format(
             "Most results: matching lines in content mode, files otherwise. Default {}.",
             search::kDefaultSearchResults))},
        {"offset", search::kSearchOffset.schema(
                       "Results to skip (the whole walk up to them is redone): prefer cursor.")},
        {"cursor",
         {{"type", "string"},
          {"description",
           "Where the next page starts: next_cursor of the previous call with the same "
           "arguments. Such a page costs only its own search."}}},
        {"max_line_length",
         search::kMaxLineLength.schema(
             fmt::format("Longer lines are cut to this many bytes around the match. Default {}.",
                         search::kDefaultMaxLineLength))},
        {"hidden", schema_bool("Search hidden files and directories (names starting with '.'). "
                               "Default false, or true when an include glob names one "
                               "(\".github/**\"). .git is never searched.")},
        {"gitignore",
         schema_bool("Skip what .gitignore, .ignore and .git/info/exclude ignore, as ripgrep "
                     "does. Default true.")}}},
      {"required", {"pattern"}},
      {"additionalProperties", false}};

  Json file = {{"type", "object"},
               {"properties",
                {{"path", {{"type", "string"}, {"description", "Relative to the searched path."}}},
                 {"count", {{"type", "integer"}, {"description", "Matching lines in the file."}}},
                 {"lines", {{"type", "array"}, {"items", line_schema()}}}}},
               {"required", {"path"}}};
  Json output = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}, {"description", "The searched directory."}}},
        {"pattern", {{"type", "string"}}},
        {"output_mode", {{"type", "string"}, {"enum", {"content", "files", "count"}}}},
        {"case_insensitive", {{"type", "boolean"}}},
        {"files", {{"type", "array"}, {"items", std::move(file)}}},
        {"results",
         {{"type", "integer"},
          {"description", "Results in this page: matching lines (content) or files."}}},
        {"files_matched", {{"type", "integer"}}},
        {"files_searched", {{"type", "integer"}}},
        {"offset", {{"type", "integer"}}},
        {"next_offset",
         {{"type", "integer"},
          {"description", "Present when more results may follow: pass it as offset."}}},
        {"next_cursor",
         {{"type", "string"},
          {"description", "Present when more results may follow: pass it as cursor."}}},
        {"stopped_by",
         {{"type", "string"},
          {"enum", {"max_results", "size", "deadline"}},
          {"description", "What ended this page early."}}},
        {"truncated", {{"type", "boolean"}}},
        {"timed_out", {{"type", "boolean"}}},
        {"skipped", skipped_schema()},
        {"invalid_utf8",
         {{"type", "integer"},
          {"description", "Invalid UTF-8 sequences in the lines, each shown as U+FFFD."}}}}},
      {"required", {"path", "files", "results", "truncated", "skipped"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kSearch),
      .title = "Search file contents",
      .description =
          "Search file contents under a directory with a regular expression (RE2) or fixed "
          "text, like ripgrep: matching lines with line numbers and optional context, only file "
          "names, or counts per file. Respects .gitignore/.ignore and skips hidden and binary "
          "files unless told otherwise; the result always says what was skipped. Narrow with "
          "include/exclude globs. Results are capped (max_results, reply size, time); a capped "
          "result gives next_offset to continue. To find files by name use find_files.",
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = read_only_annotations(),
  };
}

protocol::ToolResult format_search(const Json& /*args*/, files::OpReply reply) {
  Json structured = std::move(reply.header);
  const std::string mode = structured.value("output_mode", std::string("content"));
  std::string_view bytes = reply.bytes;
  std::string text;
  bool first_file = true;
  for (Json& f : structured["files"]) {
    const std::string path = f.value("path", std::string());
    if (mode == "files") {
      text += path + "\n";
      continue;
    }
    if (mode == "count") {
      text += fmt::format("{}:{}\n", path, f.value("count", 0));
      continue;
    }
    if (!first_file) text += '\n';
    first_file = false;
    text += path + "\n";
    std::int64_t prev = -1;
    for (const Json& l : f["lines"]) {
      const std::size_t nl = bytes.find('\n');
      const std::string_view line = bytes.substr(0, nl);
      bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
      const std::int64_t number = l.value("line", std::int64_t{0});
      if (prev >= 0 && number > prev + 1) text += "--\n";
      prev = number;
      text += fmt::format("{}{}", number, l.value("match", false) ? ':' : '-');
      const bool cut = l.value("cut", false);
      const std::size_t column = l.value("column", std::size_t{1});
      if (cut && column > 1) text += "…";
      text += line;
      if (cut && column - 1 + line.size() < l.value("length", std::size_t{0})) text += "…";
      text += '\n';
    }
  }
  text += summary_of_search(structured);
  protocol::ToolResult r = protocol::ToolResult::text(std::move(text));
  r.structured = std::move(structured);
  return r;
}

}  // namespace brig::tools
