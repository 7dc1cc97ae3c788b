// tls: TLS termination and upstream TLS with OpenSSL.
//
// A TlsContext is built from one configuration snapshot (at start and on every reload) and is then
// immutable: workers only call NewServerSsl()/NewUpstreamSsl() on it, which OpenSSL allows from any
// thread. A reload builds a new one next to the old; connections keep the SSL they were given (an
// SSL holds a reference to its SSL_CTX), so nothing is dropped.
//
// Server side: one SSL_CTX per certificate (each listen-tls= default and each tls-cert=), TLS 1.2
// and 1.3 only, ALPN http/1.1, a session cache per listener, session tickets whose keys rotate
// (process-wide, so they survive reloads), OCSP stapling when a response file is configured. SNI
// picks a tls-cert= context by host name; an unknown name keeps the listener's own certificate.
//
// TlsAccept (below) runs one accepted connection's handshake with a deadline and hands the
// finished bufferevent to a ClientConnection.
#pragma once

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "base/owned.h"
#include "conf/config.h"
#include "proxy/event_ptr.h"

namespace shellac::proxy {

using SslCtxPtr = base::Owned<SSL_CTX_free>;
using SslPtr = base::Owned<SSL_free>;

class TlsContext {
 public:
  // Reads and checks every certificate, key and OCSP file `config` names and the backend CA.
  // Null with *error "FILE: what is wrong" on the first problem. An expired certificate only
  // prints a warning to stderr.
  static std::shared_ptr<const TlsContext> Build(const conf::Config& config, std::string* error);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A server SSL for a connection accepted on the listen-tls= address written as `address`; null on
  // failure or when this context has no such address (it was removed by a reload; the socket stays
  // open until a restart but cannot serve).
  SslPtr NewServerSsl(const std::string& address) const;
  // A client SSL for the https:// backend with SNI and verification of `host` (name or IP) set;
  // null when the backend is not https://.
  SslPtr NewUpstreamSsl(const std::string& host) const;
  // Whether `ssl` (after its handshake) was given a listener's own certificate although the client
  // named a host (SNI) that no tls-cert= matched.
  bool FellBack(const SSL* ssl) const;

 private:
  struct Certificate;
  TlsContext() = default;
  static int OnServerName(SSL* ssl, int* alert, void* arg);

  std::vector<std::unique_ptr<Certificate>> listeners_;  // one per listen-tls=, same order
  std::vector<std::string> addresses_;                   // their addresses as written
  std::vector<std::unique_ptr<Certificate>> named_;      // one per tls-cert=
  SslCtxPtr upstream_;                                   // for an https:// backend
};

// Sends a TLS close_notify on `bev` if it is a TLS bufferevent whose output has been written
// (before a half-close), so the client sees a clean end rather than a truncation.
void SendCloseNotify(bufferevent* bev);
// Why the TLS handshake on upstream bufferevent `bev` failed, e.g. "TLS handshake: certificate
// verify failed (hostname mismatch)"; "" when `bev` is not TLS or OpenSSL recorded no error.
// Drains the bufferevent's OpenSSL error queue.
std::string UpstreamTlsFailure(bufferevent* bev);
// Before freeing a TLS bufferevent: counts the connection as shut down, so its session stays in
// the session cache even when the client left without close_notify (as browsers do).
void KeepSessionOnClose(bufferevent* bev);

class Worker;

// One accepted TLS connection until its handshake finishes. Owns itself: hands the bufferevent to
// a new ClientConnection on success, or counts the failure (plain HTTP, timeout, client abort,
// protocol error) in the worker's metrics and closes. Registered with the worker, which deletes
// whatever is still handshaking when it drains or stops.
class TlsAccept {
 public:
  // Takes ownership of `fd`.
  static void Start(Worker& worker, evutil_socket_t fd, const sockaddr* peer, const std::string& address);
  ~TlsAccept();
  TlsAccept(const TlsAccept&) = delete;
  TlsAccept& operator=(const TlsAccept&) = delete;

 private:
  TlsAccept(Worker& worker, const sockaddr* peer, std::shared_ptr<const TlsContext> tls);
  static void OnEvent(bufferevent* bev, short what, void* arg);
  static void OnTimeout(evutil_socket_t, short, void* arg);
  void Finished();
  void Failed(short what);

  Worker& worker_;
  sockaddr_storage peer_{};
  std::shared_ptr<const TlsContext>
      tls_;  // the SNI callback points into it until the handshake ends
  BufferEventPtr bev_;
  EventPtr timer_;
};

}  // namespace shellac::proxy
