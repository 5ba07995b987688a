// The MCP tools' names, each defined once: the tool's descriptor
// (server/tools/), the worker operation that runs it (server/worker/ops.cc)
// and a policy's tools.disabled all spell a tool with these. Here, in the
// lowest layer, because policies name tools and everything else is above.
#pragma once

#include <array>
#include <string_view>

namespace brig::policy::names {

inline constexpr std::string_view kExec = "exec";
inline constexpr std::string_view kJob = "job";
inline constexpr std::string_view kReadFile = "read_file";
inline constexpr std::string_view kWriteFile = "write_file";
inline constexpr std::string_view kEditFile = "edit_file";
inline constexpr std::string_view kListDirectory = "list_directory";
inline constexpr std::string_view kFindFiles = "find_files";
inline constexpr std::string_view kSearch = "search";

// The MCP tools a policy can switch off (DESIGN.md, Tools): all of them.
inline constexpr std::array<std::string_view, 8> kTools = {
    kExec, kJob, kReadFile, kWriteFile, kEditFile, kListDirectory, kFindFiles, kSearch};

}  // namespace brig::policy::names
