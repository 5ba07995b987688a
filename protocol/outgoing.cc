#include "protocol/outgoing.h"

#include <algorithm>
#include <numeric>

#include "protocol/error_codes.h"
#include "protocol/json_encode.h"
#include "protocol/text.h"

namespace brig::protocol {
namespace {

// As estimate_json_size() for content as a JSON array.
std::size_t estimate_content_size(const std::vector<ContentBlock>& content) {
  std::size_t size = 2;
  for (const ContentBlock& block : content) {
    const std::string* text = block.plain_text();
    size += 1 + (text != nullptr ? text->size() + 26 : estimate_json_size(*block.json()));
  }
  return size;
}

// content as a JSON array, a plain text block as nlohmann would write
// {"text": ..., "type": "text"}: members in key order.
void write_content(std::string& out, JsonWriter& writer, const std::vector<ContentBlock>& content) {
  out += '[';
  for (std::size_t i = 0; i < content.size(); ++i) {
    if (i > 0) out += ',';
    if (const std::string* text = content[i].plain_text()) {
      out += "{\"text\":";
      writer.string(*text);
      out += ",\"type\":\"text\"}";
    } else {
      writer.value(*content[i].json());
    }
  }
  out += ']';
}

}  // namespace

Outgoing::Outgoing(ServerInfo info, std::size_t max_bytes)
    : info_(std::move(info)), max_(max_bytes) {
  meta_member_ = "\"_meta\":{";
  append_json_string(meta_member_, kMetaServerInfo);
  meta_member_ += ':';
  append_json(meta_member_, info_.to_json());
  meta_member_ += '}';
}

std::string Outgoing::too_large(std::size_t size) const {
  return std::to_string(size) + " bytes, over the " + std::to_string(max_) +
         "-byte limit on outgoing messages";
}

Json Outgoing::decorate(Json result, Era era) const {
  if (era != Era::modern) return result;
  result["resultType"] = "complete";
  if (!result.contains("_meta") || !result["_meta"].is_object()) result["_meta"] = Json::object();
  result["_meta"][kMetaServerInfo] = info_.to_json();
  return result;
}

Reply Outgoing::result(const Id& id, Json result, Era era, bool tool_call) const {
  Reply r;
  r.line = encode_response(id, decorate(std::move(result), era));
  r.standin = Reply::Standin{id, era, tool_call};
  return r;
}

Reply Outgoing::tool_result(const Id& id, ToolResult&& r, Era era) const {
  // The members in the order encode() sorts them: _meta, content, isError,
  // resultType, structuredContent.
  const Json id_json = id.to_json();
  const std::size_t estimate = estimate_content_size(r.content) +
                               (r.structured ? estimate_json_size(*r.structured) : 0) +
                               estimate_json_size(id_json) + meta_member_.size() + 128;
  std::string out;
  out.reserve(estimate + estimate / 8 + 1);
  out += "{\"id\":";
  append_json(out, id_json);
  out += ",\"jsonrpc\":\"2.0\",\"result\":{";
  if (era == Era::modern) {
    out += meta_member_;
    out += ',';
  }
  // One writer for both: structuredContent may repeat a string of content
  // (a tool other than brig's own may repeat all of its text).
  JsonWriter writer(out);
  out += "\"content\":";
  write_content(out, writer, r.content);
  out += r.is_error ? ",\"isError\":true" : ",\"isError\":false";
  if (era == Era::modern) out += ",\"resultType\":\"complete\"";
  if (r.structured) {
    out += ",\"structuredContent\":";
    writer.value(*r.structured);
  }
  out += "}}";
  Reply reply;
  reply.line = std::move(out);
  reply.standin = Reply::Standin{id, era, /*tool_call=*/true};
  return reply;
}

std::string Outgoing::fallback(const Reply& r) const {
  if (!r.standin) return r.fallback;
  const Reply::Standin& s = *r.standin;
  if (s.tool_call) {
    auto stand_in = ToolResult::error("result too large to send: " + too_large(r.line.size()));
    return encode_response(s.id, decorate(stand_in.to_json(), s.era));
  }
  return encode(to_json(make_error(s.id, error_code::kInternalError,
                                   "response too large to send: " + too_large(r.line.size()))));
}

Reply Outgoing::error(const ErrorResponse& e) const {
  ErrorResponse small = e;
  small.data.reset();
  small.message = clip(small.message, 1024);
  return Reply{encode(to_json(e)), encode(to_json(small)), std::nullopt};
}

std::string Outgoing::single(const Reply& r) const {
  return r.line.size() <= max_ ? r.line : fallback(r);
}

std::string Outgoing::single(Reply&& r) const {
  return r.line.size() <= max_ ? std::move(r.line) : fallback(r);
}

std::vector<std::string> Outgoing::batch(const std::vector<Reply>& replies) const {
  std::vector<std::string> members;
  members.reserve(replies.size());
  for (const auto& r : replies) members.push_back(single(r));
  auto total = [&] {
    // "[" + members joined by "," + "]"
    return std::accumulate(members.begin(), members.end(), std::size_t{1},
                           [](std::size_t n, const std::string& m) { return n + m.size() + 1; });
  };
  std::vector<std::size_t> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return members[a].size() > members[b].size(); });
  for (std::size_t i : order) {
    if (total() <= max_) break;
    members[i] = fallback(replies[i]);
  }
  if (total() > max_) return members;
  std::string line = "[";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) line += ',';
    line += members[i];
  }
  line += ']';
  return {line};
}

}  // namespace brig::protocol
