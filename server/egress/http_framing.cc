#include "server/egress/http_framing.h"

namespace brig::egress {

MessageFilter::MessageFilter(Kind kind, bool head_request)
    : kind_(kind), head_request_(head_request) {
  http_parser_init(&parser_, kind == Kind::request ? HTTP_REQUEST : HTTP_RESPONSE);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_headers_complete = &MessageFilter::on_headers_complete;
  settings_.on_message_complete = &MessageFilter::on_message_complete;
}

int MessageFilter::on_headers_complete(http_parser* parser) {
  auto* self = static_cast<MessageFilter*>(parser->data);
  if (self->kind_ == Kind::request) return 0;
  self->status_ = parser->status_code;
  // 1: the parser expects no body (the answer to HEAD).
  return self->head_request_ ? 1 : 0;
}

int MessageFilter::on_message_complete(http_parser* parser) {
  auto* self = static_cast<MessageFilter*>(parser->data);
  // A 1xx response (100 Continue) is followed by the real one.
  if (self->kind_ == Kind::response && parser->status_code >= 100 && parser->status_code < 200)
    return 0;
  self->done_ = true;
  http_parser_pause(parser, 1);
  return 0;
}

std::size_t MessageFilter::pass(std::span<const char> bytes) {
  if (done_ || failed()) return 0;
  std::size_t n = http_parser_execute(&parser_, &settings_, bytes.data(), bytes.size());
  auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err != HPE_OK && err != HPE_PAUSED) {
    why_ = http_errno_description(err);
    return 0;
  }
  // The upstream does not see the Upgrade header (upstream_head drops it),
  // so it would read what follows as a body the parser took for another
  // protocol: such a request is refused rather than framed two ways.
  if (parser_.upgrade && kind_ == Kind::request) {
    why_ = "an Upgrade request needs CONNECT";
    return 0;
  }
  return n;
}

void MessageFilter::end() {
  if (done_ || failed()) return;
  http_parser_execute(&parser_, &settings_, nullptr, 0);
  auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err != HPE_OK && err != HPE_PAUSED) why_ = http_errno_description(err);
  // A response delimited by the close ends here; a request cut short is
  // still ended: nothing more will come.
  done_ = true;
}

}  // namespace brig::egress
