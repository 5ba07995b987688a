#include "tests/server/llm/fake_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace brig::llm::testing {
namespace {

using namespace std::chrono_literals;

std::string pem_of(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

std::string pem_of(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* make_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : cert;
  if (issuer == nullptr) {
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert, signer, NID_subject_alt_name, "IP:127.0.0.1");
    add_ext(cert, signer, NID_ext_key_usage, "serverAuth");
  }
  X509_sign(cert, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return cert;
}

bool send_all(int fd, SSL* ssl, std::string_view bytes) {
  while (!bytes.empty()) {
    const int n = ssl != nullptr
                      ? SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()))
                      : static_cast<int>(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

int recv_some(int fd, SSL* ssl, char* buf, int cap) {
  return ssl != nullptr ? SSL_read(ssl, buf, cap) : static_cast<int>(::recv(fd, buf, cap, 0));
}

std::string chunk(std::string_view data) {
  return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
}

}  // namespace

TestPki TestPki::make() {
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* ca = make_cert(ca_key, "brig test CA", nullptr, nullptr, 1);
  X509* cert = make_cert(key, "127.0.0.1", ca, ca_key, 2);
  TestPki pki{pem_of(ca), pem_of(cert), pem_of(key)};
  X509_free(cert);
  X509_free(ca);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  return pki;
}

FakeUpstream::FakeUpstream(const TestPki* pki) {
  listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::listen(listener_.get(), 256);
  socklen_t len = sizeof sa;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  port_ = ntohs(sa.sin_port);
  if (pki != nullptr) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cb = BIO_new_mem_buf(pki->cert_pem.data(), static_cast<int>(pki->cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO* kb = BIO_new_mem_buf(pki->key_pem.data(), static_cast<int>(pki->key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
  }
  thread_ = std::thread([this] { accept_loop(); });
}

FakeUpstream::~FakeUpstream() {
  stop_ = true;
  ::shutdown(listener_.get(), SHUT_RDWR);
  thread_.join();
  {
    std::lock_guard lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  while (active_ > 0) std::this_thread::sleep_for(5ms);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

std::vector<SeenRequest> FakeUpstream::requests() {
  std::lock_guard lock(mu_);
  return seen_;
}

void FakeUpstream::accept_loop() {
  while (!stop_) {
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stop_) return;
      continue;
    }
    ++connections_;
    ++active_;
    {
      std::lock_guard lock(mu_);
      open_fds_.push_back(fd);
    }
    std::thread([this, fd] {
      serve(fd);
      {
        std::lock_guard lock(mu_);
        std::erase(open_fds_, fd);
      }
      ::close(fd);
      --active_;
    }).detach();
  }
}

void FakeUpstream::serve(int fd) {
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  SSL* ssl = nullptr;
  if (ctx_ != nullptr) {
    ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {
      SSL_free(ssl);
      return;
    }
  }
  std::string in;
  char buf[16384];
  while (!stop_) {
    std::size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      const int n = recv_some(fd, ssl, buf, sizeof buf);
      if (n <= 0) goto done;
      in.append(buf, static_cast<std::size_t>(n));
    }
    {
      SeenRequest req;
      req.head = in.substr(0, end + 4);
      std::string_view rest(req.head);
      const std::size_t line_end = rest.find("\r\n");
      const std::string line(rest.substr(0, line_end));
      req.method = line.substr(0, line.find(' '));
      req.path = line.substr(req.method.size() + 1, line.rfind(' ') - req.method.size() - 1);
      rest.remove_prefix(line_end + 2);
      while (rest.size() > 2) {
        const std::size_t e = rest.find("\r\n");
        const std::string_view field = rest.substr(0, e);
        rest.remove_prefix(e + 2);
        const std::size_t colon = field.find(':');
        std::string name(field.substr(0, colon));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value(field.substr(colon + 1));
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        auto& slot = req.headers[name];
        slot = slot.empty() ? value : slot + ", " + value;
      }
      in.erase(0, end + 4);
      std::size_t length = 0;
      if (auto it = req.headers.find("content-length"); it != req.headers.end())
        length = std::stoul(it->second);
      while (in.size() < length) {
        const int n = recv_some(fd, ssl, buf, sizeof buf);
        if (n <= 0) goto done;
        in.append(buf, static_cast<std::size_t>(n));
      }
      req.body = in.substr(0, length);
      in.erase(0, length);
      const std::string path = req.path;
      const std::string body = req.body;
      {
        std::lock_guard lock(mu_);
        seen_.push_back(std::move(req));
      }
      const std::string sse_head =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: "
          "chunked\r\n\r\n";
      if (path == "/v1/messages") {
        const std::string events[] = {
            "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":21,"
            "\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\ndata: {\"delta\":{\"text\":\"Hello\"}}\n\n",
            "event: message_delta\ndata: {\"usage\":{\"output_tokens\":42}}\n\n"};
        if (!send_all(fd, ssl, sse_head + chunk(events[0]))) goto done;
        for (int i = 1; i < 3; ++i) {
          std::this_thread::sleep_for(pause);
          if (!send_all(fd, ssl, chunk(events[i]))) goto done;
        }
        if (!send_all(fd, ssl, "0\r\n\r\n")) goto done;
      } else if (path == "/v1/json") {
        const std::string json =
            "{\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}";
        if (!send_all(fd, ssl,
                      fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                  "Content-Length: {}\r\n\r\n{}",
                                  json.size(), json)))
          goto done;
      } else if (path == "/v1/flaky" && failures.fetch_sub(1) > 0) {
        if (!send_all(fd, ssl,
                      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: "
                      "4\r\n\r\nslow"))
          goto done;
      } else if (path == "/v1/later") {
        if (!send_all(fd, ssl,
                      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3600\r\nContent-Length: "
                      "5\r\n\r\nlater"))
          goto done;
      } else if (path == "/v1/busy") {
        if (!send_all(fd, ssl,
                      "HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nbusy"))
          goto done;
      } else if (path == "/v1/stall") {
        while (!stop_ && recv_some(fd, ssl, buf, sizeof buf) > 0) {
        }
        goto done;
      } else if (path == "/v1/stall-stream") {
        if (!send_all(fd, ssl, sse_head + chunk("data: one\n\n"))) goto done;
        while (!stop_ && recv_some(fd, ssl, buf, sizeof buf) > 0) {
        }
        goto done;
      } else if (path == "/v1/endless") {
        if (!send_all(fd, ssl, sse_head)) goto done;
        for (;;) {
          std::this_thread::sleep_for(20ms);
          if (stop_ || !send_all(fd, ssl, chunk("data: more\n\n"))) {
            ++cut_streams_;
            goto done;
          }
        }
      } else if (path == "/v1/reset") {
        linger l{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        goto done;
      } else {
        if (!send_all(fd, ssl,
                      fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
                                  body.size() + 2, "ok" + body)))
          goto done;
      }
    }
  }
done:
  if (ssl != nullptr) SSL_free(ssl);
}

}  // namespace brig::llm::testing
