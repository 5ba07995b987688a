#include "server/worker/ops.h"

#include <utility>

#include "server/files/edit_file.h"
#include "server/files/read_file.h"
#include "server/files/write_file.h"
#include "server/policy/tool_names.h"
#include "server/search/find_files.h"
#include "server/search/list_directory.h"
#include "server/search/search.h"

namespace brig::worker {

OpFunction find_op(std::string_view op) {
  static constexpr std::pair<std::string_view, OpFunction> kOps[] = {
      {policy::names::kReadFile, files::read_file_op},
      {policy::names::kWriteFile, files::write_file_op},
      {policy::names::kEditFile, files::edit_file_op},
      {policy::names::kListDirectory, search::list_directory_op},
      {policy::names::kFindFiles, search::find_files_op},
      {policy::names::kSearch, search::search_op},
      {kSweepTempsOp, files::sweep_temps_op},
  };
  for (const auto& [name, fn] : kOps)
    if (name == op) return fn;
  return nullptr;
}

}  // namespace brig::worker
