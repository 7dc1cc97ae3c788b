#include "proxy/tls.h"

#include <arpa/inet.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>

#include "base/text.h"
#include "proxy/client.h"
#include "proxy/worker.h"

namespace shellac::proxy {
namespace {

using BioPtr = base::Owned<BIO_free>;
using PkeyPtr = base::Owned<EVP_PKEY_free>;
using OcspPtr = base::Owned<OCSP_RESPONSE_free>;

// The reasons OpenSSL queued for the last failure, oldest first; the queue is left empty.
std::string OpensslReason() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason ? reason : "error " + std::to_string(ERR_GET_REASON(e));
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

bool Readable(const std::string& path, std::string* error) {
  if (access(path.c_str(), R_OK) == 0) return true;
  *error = path + ": cannot read: " + std::strerror(errno);
  return false;
}

// --- Session tickets ---------------------------------------------------------------------------

// Keys that encrypt session tickets. Process-wide rather than per context so that a reload (a new
// context) does not invalidate every ticket handed out. A new key is made once the current one is
// older than the rotation period; tickets made with the previous key are still accepted (and
// renewed), so a ticket lives between one and two periods.
class TicketKeys {
 public:
  struct Key {
    std::array<unsigned char, 16> name{};
    std::array<unsigned char, 32> aes{};
    std::array<unsigned char, 32> hmac{};
    std::chrono::steady_clock::time_point made;
  };

  void SetRotation(std::chrono::milliseconds period) {
    std::lock_guard lock(mu_);
    rotation_ = period;
  }
  // The key to encrypt with now; false when no key could be made.
  bool Current(Key* out) {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!current_ || now - current_->made >= rotation_) {
      Key fresh;
      if (RAND_bytes(fresh.name.data(), 16) != 1 || RAND_bytes(fresh.aes.data(), 32) != 1 ||
          RAND_bytes(fresh.hmac.data(), 32) != 1) {
        return false;
      }
      fresh.made = now;
      previous_ = current_;
      current_ = fresh;
    }
    *out = *current_;
    return true;
  }
  // The key named `name`; *is_current says whether tickets made with it are still fresh.
  bool Find(const unsigned char* name, Key* out, bool* is_current) {
    std::lock_guard lock(mu_);
    for (const auto* key : {current_ ? &*current_ : nullptr, previous_ ? &*previous_ : nullptr}) {
      if (key && std::memcmp(key->name.data(), name, 16) == 0) {
        *out = *key;
        *is_current = key == &*current_;
        return true;
      }
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::chrono::milliseconds rotation_{3'600'000};
  std::optional<Key> current_;
  std::optional<Key> previous_;
};

TicketKeys& Tickets() {
  static TicketKeys keys;
  return keys;
}

int OnTicketKey(SSL*, unsigned char* key_name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
                EVP_MAC_CTX* mac, int encrypt) {
  TicketKeys::Key key;
  bool fresh = true;
  if (encrypt) {
    if (!Tickets().Current(&key) ||
        RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1)
      return -1;
    std::memcpy(key_name, key.name.data(), 16);
  } else if (!Tickets().Find(key_name, &key, &fresh)) {
    return 0;  // an unknown or expired key: a full handshake, then a new ticket
  }
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.hmac.data(), key.hmac.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end(),
  };
  if (EVP_MAC_CTX_set_params(mac, params) != 1) return -1;
  const int ok = encrypt
                     ? EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.aes.data(), iv)
                     : EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.aes.data(), iv);
  if (ok != 1) return -1;
  return fresh ? 1 : 2;  // 2: accepted, but send the client a ticket under the current key
}

// --- Per-handshake callbacks
// ----------------------------------------------------------------------

int OnAlpn(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* offered,
           unsigned int offered_length, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_length, kHttp11, sizeof kHttp11, offered,
                            offered_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // the client offered only protocols we do not speak (h2): no ALPN
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// `arg` is the certificate's DER OCSP response (a std::string), set only when one is configured.
int OnOcspStatus(SSL* ssl, void* arg) {
  const auto* response = static_cast<const std::string*>(arg);
  if (response == nullptr || response->empty()) return SSL_TLSEXT_ERR_NOACK;
  // OpenSSL takes ownership of the copy.
  auto* copy = static_cast<unsigned char*>(OPENSSL_memdup(response->data(), response->size()));
  if (copy == nullptr) return SSL_TLSEXT_ERR_NOACK;
  SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(response->size()));
  return SSL_TLSEXT_ERR_OK;
}

// tls-cert= names match exactly (case-insensitive) or, for "*.example.org", one leading label.
bool HostMatches(std::string_view pattern, std::string_view host) {
  if (pattern == host) return true;
  if (!pattern.starts_with("*.")) return false;
  const std::string_view suffix = pattern.substr(1);  // ".example.org"
  if (host.size() <= suffix.size() || !host.ends_with(suffix)) return false;
  return host.substr(0, host.size() - suffix.size()).find('.') == std::string_view::npos;
}

void WarnIfExpired(const std::string& path, X509* certificate) {
  if (certificate == nullptr || X509_cmp_current_time(X509_get0_notAfter(certificate)) >= 0) return;
  struct tm tm {};
  char date[64] = "?";
  if (ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &tm) == 1)
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
  std::fprintf(stderr, "shellac: warning: %s: the certificate expired on %s; serving it anyway\n",
               path.c_str(), date);
}

}  // namespace

struct TlsContext::Certificate {
  std::string host;  // tls-cert= name, lower case; "" for a listener's own
  std::string ocsp;  // DER response to staple; OnOcspStatus points here, so it never moves
  SslCtxPtr ctx;
};

namespace {

// A server context for one certificate. Null with *error "FILE: what is wrong".
SslCtxPtr NewServerContext(const conf::Config& config, const conf::Config::TlsCertificate& files,
                           const std::string& ocsp_file, std::string* ocsp, std::string* error) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) {
    *error = "TLS: cannot make a context: " + OpensslReason();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_3_VERSION);
  // No renegotiation (a DoS lever and never needed by HTTP/1.1 clients); a client that closes
  // without close_notify is an ordinary end of connection for HTTP, whose framing is explicit.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                     SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // libevent hands SSL_write whatever its output buffer holds, which may move between retries.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(ctx.get(), config.tls_ciphers.c_str()) != 1) {
    *error = "tls-ciphers: no cipher OpenSSL knows in '" + config.tls_ciphers + "' (" +
             OpensslReason() + ")";
    return nullptr;
  }
  if (SSL_CTX_set_ciphersuites(ctx.get(), config.tls_ciphersuites.c_str()) != 1) {
    *error = "tls-ciphersuites: no TLS 1.3 suite OpenSSL knows in '" + config.tls_ciphersuites +
             "' (" + OpensslReason() + ")";
    return nullptr;
  }

  if (!Readable(files.cert, error)) return nullptr;
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1) {
    *error = files.cert + ": not a PEM certificate chain (" + OpensslReason() + ")";
    return nullptr;
  }
  if (!Readable(files.key, error)) return nullptr;
  BioPtr bio(BIO_new_file(files.key.c_str(), "r"));
  // No passphrase callback: OpenSSL's default would prompt on the terminal and block the start.
  pem_password_cb* no_passphrase = [](char*, int, int, void*) { return 0; };
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr);
  if (!key) {
    *error = files.key + ": not a PEM private key without a passphrase (" + OpensslReason() + ")";
    return nullptr;
  }
  X509* certificate = SSL_CTX_get0_certificate(ctx.get());
  if (X509_check_private_key(certificate, key.get()) != 1) {
    ERR_clear_error();
    *error = files.key + ": the key does not match the certificate in " + files.cert;
    return nullptr;
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1) {
    *error = files.key + ": cannot use the key (" + OpensslReason() + ")";
    return nullptr;
  }
  WarnIfExpired(files.cert, certificate);

  if (!ocsp_file.empty()) {
    if (!Readable(ocsp_file, error)) return nullptr;
    std::ifstream in(ocsp_file, std::ios::binary);
    std::string der((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    OcspPtr parsed(d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
    if (!parsed) {
      ERR_clear_error();
      *error = ocsp_file + ": not a DER OCSP response";
      return nullptr;
    }
    *ocsp = std::move(der);
  }

  static const unsigned char kSessionContext[] = "shellac";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  if (config.tls_session_cache > 0) {
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(ctx.get(), static_cast<long>(config.tls_session_cache));
  } else {
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  }
  if (config.tls_ticket_rotation.count() > 0) {
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx.get(), OnTicketKey);
    const long seconds = static_cast<long>(2 * config.tls_ticket_rotation.count() / 1000);
    SSL_CTX_set_timeout(ctx.get(), std::max(300L, seconds));
  } else {
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  }
  SSL_CTX_set_alpn_select_cb(ctx.get(), OnAlpn, nullptr);
  SSL_CTX_set_tlsext_status_cb(ctx.get(), OnOcspStatus);
  return ctx;
}

}  // namespace

TlsContext::~TlsContext() = default;

std::shared_ptr<const TlsContext> TlsContext::Build(const conf::Config& config,
                                                    std::string* error) {
  std::shared_ptr<TlsContext> tls(new TlsContext());
  auto add = [&](const conf::Config::TlsCertificate& files, const std::string& ocsp_file,
                 std::vector<std::unique_ptr<Certificate>>* list) {
    auto certificate = std::make_unique<Certificate>();
    certificate->host = files.host;
    certificate->ctx = NewServerContext(config, files, ocsp_file, &certificate->ocsp, error);
    if (!certificate->ctx) return false;
    if (!certificate->ocsp.empty())
      SSL_CTX_set_tlsext_status_arg(certificate->ctx.get(), &certificate->ocsp);
    list->push_back(std::move(certificate));
    return true;
  };
  for (const auto& listener : config.listen_tls) {
    const std::string& ocsp =
        listener.certificate.ocsp.empty() ? config.tls_ocsp : listener.certificate.ocsp;
    if (!add(listener.certificate, ocsp, &tls->listeners_)) return nullptr;
    tls->addresses_.push_back(listener.address.text);
    SSL_CTX_set_tlsext_servername_callback(tls->listeners_.back()->ctx.get(), OnServerName);
    SSL_CTX_set_tlsext_servername_arg(tls->listeners_.back()->ctx.get(), tls.get());
  }
  for (const auto& named : config.tls_certs) {
    if (!add(named, named.ocsp, &tls->named_)) return nullptr;
  }

  if (config.backend && config.backend->tls) {
    ERR_clear_error();
    tls->upstream_.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX* ctx = tls->upstream_.get();
    if (!ctx) {
      *error = "TLS: cannot make a context: " + OpensslReason();
      return nullptr;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    // An origin that ends a close-delimited body without close_notify still ends it.
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (config.backend_ca.empty()) {
      if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        *error = "backend-ca: cannot load the system certificate store (" + OpensslReason() + ")";
        return nullptr;
      }
    } else if (!Readable(config.backend_ca, error)) {
      return nullptr;
    } else if (SSL_CTX_load_verify_locations(ctx, config.backend_ca.c_str(), nullptr) != 1) {
      *error = config.backend_ca + ": not a PEM CA certificate file (" + OpensslReason() + ")";
      return nullptr;
    }
  }
  Tickets().SetRotation(config.tls_ticket_rotation);  // only once the whole context is good
  error->clear();
  return tls;
}

int TlsContext::OnServerName(SSL* ssl, int*, void* arg) {
  const auto* self = static_cast<const TlsContext*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return SSL_TLSEXT_ERR_OK;
  const std::string host = base::ToLower(name);
  for (const auto& certificate : self->named_) {
    if (HostMatches(certificate->host, host)) {
      SSL_set_SSL_CTX(ssl, certificate->ctx.get());
      break;
    }
  }
  return SSL_TLSEXT_ERR_OK;  // no match: the listener's own certificate
}

bool TlsContext::FellBack(const SSL* ssl) const {
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return false;
  const SSL_CTX* ctx = SSL_get_SSL_CTX(ssl);
  const bool own = std::any_of(listeners_.begin(), listeners_.end(),
                               [&](const auto& c) { return c->ctx.get() == ctx; });
  // The listener's certificate may well cover the name itself; that is not a fallback.
  return own && X509_check_host(SSL_CTX_get0_certificate(ctx), name, 0, 0, nullptr) != 1;
}

SslPtr TlsContext::NewServerSsl(const std::string& address) const {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (addresses_[i] == address) return SslPtr(SSL_new(listeners_[i]->ctx.get()));
  }
  return nullptr;
}

SslPtr TlsContext::NewUpstreamSsl(const std::string& host) const {
  if (!upstream_) return nullptr;
  SslPtr ssl(SSL_new(upstream_.get()));
  if (!ssl) return nullptr;
  in6_addr ip;
  if (inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1) {
    // An address is verified against the certificate's IP entries and is not sent as SNI.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str()) != 1) return nullptr;
  } else if (SSL_set_tlsext_host_name(ssl.get(), host.c_str()) != 1 ||
             SSL_set1_host(ssl.get(), host.c_str()) != 1) {
    return nullptr;
  }
  return ssl;
}

void SendCloseNotify(bufferevent* bev) {
  if (SSL* ssl = bufferevent_openssl_get_ssl(bev)) SSL_shutdown(ssl);
}

std::string UpstreamTlsFailure(bufferevent* bev) {
  SSL* ssl = bufferevent_openssl_get_ssl(bev);
  if (ssl == nullptr) return "";
  std::string reasons;
  bool any = false;
  while (const unsigned long e = bufferevent_get_openssl_error(bev)) {
    any = true;
    // libevent also queues the failing call's return code, which has no reason text: skipped.
    const char* reason = ERR_reason_error_string(e);
    if (reason == nullptr) continue;
    if (!reasons.empty()) reasons += "; ";
    reasons += reason;
  }
  if (!any) return "";
  if (reasons.empty()) reasons = "failed";
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) reasons += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
  return "TLS handshake: " + reasons;
}

void KeepSessionOnClose(bufferevent* bev) {
  if (SSL* ssl = bufferevent_openssl_get_ssl(bev))
    SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

// --- TlsAccept
// --------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kPlainHttpAnswer =
    "HTTP/1.1 400 Bad Request\r\nServer: shellac\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 67\r\nConnection: close\r\n\r\n"
    "400 Bad Request: this port speaks HTTPS; use an https:// address.\n";

// A plain HTTP request reached a TLS port: answer it in plain text so a person sees why. The
// request is read first so that closing does not reset the connection under the answer.
void AnswerPlainHttp(int fd) {
  char discard[16 << 10];
  while (::recv(fd, discard, sizeof discard, MSG_DONTWAIT) > 0) {
  }
  (void)!::send(fd, kPlainHttpAnswer.data(), kPlainHttpAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

}  // namespace

void TlsAccept::Start(Worker& worker, evutil_socket_t fd, const sockaddr* peer, const std::string& address) {
  std::shared_ptr<const TlsContext> tls = worker.runtime()->tls;
  SslPtr ssl = tls ? tls->NewServerSsl(address) : nullptr;
  if (!ssl) {
    WorkerMetrics::Add(worker.metrics().tls_failures[static_cast<int>(TlsFailure::kProtocol)]);
    ::close(fd);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto* self = new TlsAccept(worker, peer, std::move(tls));  // owns itself from here
  self->bev_.reset(bufferevent_openssl_socket_new(
      worker.base(), fd, ssl.get(), BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE));
  if (!self->bev_) {
    ::close(fd);
    delete self;
    return;
  }
  ssl.release();  // the bufferevent frees it
  bufferevent_openssl_set_allow_dirty_shutdown(self->bev_.get(), 1);
  bufferevent_setcb(self->bev_.get(), nullptr, nullptr, OnEvent, self);
  const timeval deadline = ToTimeval(worker.runtime()->config->tls_handshake_timeout);
  evtimer_add(self->timer_.get(), &deadline);
}

TlsAccept::TlsAccept(Worker& worker, const sockaddr* peer, std::shared_ptr<const TlsContext> tls)
    : worker_(worker), tls_(std::move(tls)) {
  if (peer != nullptr) {
    std::memcpy(&peer_, peer,
                peer->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  }
  timer_.reset(evtimer_new(worker.base(), OnTimeout, this));
  worker_.RegisterHandshake(this);
  WorkerMetrics::Add(worker_.metrics().tls_handshaking, 1);
}

TlsAccept::~TlsAccept() {
  timer_.reset();
  bev_.reset();
  WorkerMetrics::Add(worker_.metrics().tls_handshaking, -1);
  worker_.UnregisterHandshake(this);
}

void TlsAccept::OnEvent(bufferevent*, short what, void* arg) {
  auto* self = static_cast<TlsAccept*>(arg);
  if (what & BEV_EVENT_CONNECTED)
    self->Finished();
  else
    self->Failed(what);
}

void TlsAccept::OnTimeout(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<TlsAccept*>(arg);
  WorkerMetrics::Add(self->worker_.metrics().tls_failures[static_cast<int>(TlsFailure::kTimeout)]);
  delete self;
}

void TlsAccept::Finished() {
  WorkerMetrics& metrics = worker_.metrics();
  const SSL* ssl = bufferevent_openssl_get_ssl(bev_.get());
  WorkerMetrics::Add(SSL_version(ssl) == TLS1_3_VERSION ? metrics.tls_handshakes_13
                                                        : metrics.tls_handshakes_12);
  if (SSL_session_reused(ssl)) WorkerMetrics::Add(metrics.tls_resumed);
  if (tls_->FellBack(ssl)) WorkerMetrics::Add(metrics.tls_sni_fallback);
  bufferevent_setcb(bev_.get(), nullptr, nullptr, nullptr, nullptr);
  new ClientConnection(worker_, std::move(bev_), reinterpret_cast<const sockaddr*>(&peer_),
                       Site::kPublic,
                       /*tls=*/true);  // owns itself
  delete this;
}

void TlsAccept::Failed(short what) {
  bool plain_http = false;
  bool protocol = false;
  while (unsigned long e = bufferevent_get_openssl_error(bev_.get())) {
    const int reason = ERR_GET_REASON(e);
    if (reason == SSL_R_HTTP_REQUEST || reason == SSL_R_HTTPS_PROXY_REQUEST)
      plain_http = true;
    else if (reason != SSL_R_UNEXPECTED_EOF_WHILE_READING)
      protocol = true;
  }
  TlsFailure kind = TlsFailure::kAborted;  // EOF or reset with nothing OpenSSL objected to
  if (plain_http)
    kind = TlsFailure::kPlainHttp;
  else if (protocol || !(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
    kind = TlsFailure::kProtocol;
  WorkerMetrics::Add(worker_.metrics().tls_failures[static_cast<int>(kind)]);
  if (plain_http) AnswerPlainHttp(bufferevent_getfd(bev_.get()));
  delete this;
}

}  // namespace shellac::proxy
