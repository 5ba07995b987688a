#include "server/worker/ops.h"

#include <utility>

#include "server/files/edit_file.h"
#include "server/files/read_file.h"
#include "server/files/write_file.h"
#include "server/search/find_files.h"
#include "server/search/list_directory.h"
#include "server/search/search.h"

namespace brig::worker {

OpFunction find_op(std::string_view op) {
  static constexpr std::pair<std::string_view, OpFunction> kOps[] = {
      {"read_file", files::read_file_op},    {"write_file", files::write_file_op},
      {"edit_file", files::edit_file_op},    {"list_directory", search::list_directory_op},
      {"find_files", search::find_files_op}, {"search", search::search_op},
  };
  for (const auto& [name, fn] : kOps)
    if (name == op) return fn;
  return nullptr;
}

}  // namespace brig::worker
