// TLS integration tests: the real binary with listen-tls= ports and certificates made at test time
// with the openssl CLI; clients (and an https origin) use OpenSSL's C API so versions, ALPN, SNI,
// resumption and stapling can be checked directly. Loopback only; every socket has a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness.h"

namespace shellac::test {
namespace {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct SessionFree {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;
using SslPtr = std::unique_ptr<SSL, SslFree>;
using SessionPtr = std::unique_ptr<SSL_SESSION, SessionFree>;

// Runs a shell command quietly; true when it exited 0.
bool RunQuietly(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A CA and leaf certificates signed by it, in a temp folder.
class Pki {
 public:
  Pki() {
    EXPECT_TRUE(RunQuietly(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "
        "/CN=shellac-test-ca -keyout " +
        dir_.File("ca.key") + " -out " + dir_.File("ca.pem")));
  }
  // Makes NAME.pem / NAME.key for `cn` with subjectAltName `san` (e.g. "DNS:a.test,IP:127.0.0.1").
  void Leaf(const std::string& name, const std::string& cn, const std::string& san) {
    WriteFile(dir_.File(name + ".ext"), "subjectAltName=" + san + "\n");
    ASSERT_TRUE(RunQuietly(
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + cn +
        " -keyout " + Key(name) + " -out " + dir_.File(name + ".csr")));
    ASSERT_TRUE(RunQuietly("openssl x509 -req -days 2 -in " + dir_.File(name + ".csr") + " -CA " +
                           Ca() + " -CAkey " + dir_.File("ca.key") + " -CAcreateserial -extfile " +
                           dir_.File(name + ".ext") + " -out " + Cert(name)));
  }
  std::string Cert(const std::string& name) const { return dir_.File(name + ".pem"); }
  std::string Key(const std::string& name) const { return dir_.File(name + ".key"); }
  std::string Ca() const { return dir_.File("ca.pem"); }
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  TempDir dir_;
};

struct ClientOptions {
  int max_version = 0;  // e.g. TLS1_2_VERSION; 0 = the highest
  std::string sni;
  std::string alpn;  // wire format, e.g. "\x02h2\x08http/1.1"
  SSL_SESSION* session = nullptr;
  bool want_ocsp = false;
  std::string ciphersuites;  // TLS 1.3 suites offered; "" = OpenSSL's default
};

// One TLS client connection (verification is not the point here: the tests look at the
// certificate they were given). Responses are read by the harness's framing client, which this
// only gives a TLS transport: the same head/body framing, pipelining leftovers and deadlines as
// every plain-TCP test.
class TlsClient : public RawClient {
 public:
  ~TlsClient() override { Close(); }
  void Close() override { Close(/*clean=*/true); }
  // clean: with close_notify. Without it (as many browsers close) OpenSSL also marks the session
  // this client holds as not resumable, which is why Session() hands out a copy.
  void Close(bool clean) {
    if (ssl_ && clean) SSL_shutdown(ssl_.get());  // one try: the socket is non-blocking
    ssl_.reset();
    close_notify_ = false;
    RawClient::Close();
  }
  // TCP connect and TLS handshake, 5 s at most.
  bool Connect(int port, const ClientOptions& o = {}) {
    if (!RawClient::Connect(port)) return false;
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    if (o.max_version) SSL_CTX_set_max_proto_version(ctx_.get(), o.max_version);
    SSL_CTX_set_session_cache_mode(ctx_.get(), SSL_SESS_CACHE_CLIENT);
    ssl_.reset(SSL_new(ctx_.get()));
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_set_fd(ssl_.get(), fd());
    if (!o.sni.empty()) SSL_set_tlsext_host_name(ssl_.get(), o.sni.c_str());
    if (!o.alpn.empty()) {
      SSL_set_alpn_protos(ssl_.get(), reinterpret_cast<const unsigned char*>(o.alpn.data()),
                          static_cast<unsigned>(o.alpn.size()));
    }
    if (o.session) SSL_set_session(ssl_.get(), o.session);
    if (o.want_ocsp) SSL_set_tlsext_status_type(ssl_.get(), TLSEXT_STATUSTYPE_ocsp);
    if (!o.ciphersuites.empty() && SSL_set_ciphersuites(ssl_.get(), o.ciphersuites.c_str()) != 1)
      return false;
    const auto deadline = Clock::now() + Millis(5'000);
    for (;;) {
      ERR_clear_error();
      const int r = SSL_connect(ssl_.get());
      if (r == 1) return true;
      const int e = SSL_get_error(ssl_.get(), r);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) break;
      const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
      pollfd p{fd(), static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
    }
    ERR_clear_error();
    return false;
  }
  SSL* ssl() const { return ssl_.get(); }
  std::string PeerCn() const {
    std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(ssl_.get()),
                                                     X509_free);
    if (!cert) return "";
    char cn[256] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof cn);
    return cn;
  }
  std::string Alpn() const {
    const unsigned char* p = nullptr;
    unsigned n = 0;
    SSL_get0_alpn_selected(ssl_.get(), &p, &n);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), n);
  }
  // GET `path` on this connection, read by its framing.
  Response Get(const std::string& path, const std::string& host = "shellac.test") {
    return RoundTrip("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
  }
  SessionPtr Session() const { return SessionPtr(SSL_SESSION_dup(SSL_get0_session(ssl_.get()))); }
  // The peer ended the connection with close_notify (a clean TLS end, not a truncation).
  bool close_notify() const { return close_notify_; }

 protected:
  ssize_t RecvSome(char* buf, size_t n, short* wait) override {
    if (!ssl_) {
      errno = ENOTCONN;
      return -1;
    }
    ERR_clear_error();
    const int r = SSL_read(ssl_.get(), buf, static_cast<int>(std::min<size_t>(n, 1 << 20)));
    if (r > 0) return r;
    switch (SSL_get_error(ssl_.get(), r)) {
      case SSL_ERROR_ZERO_RETURN:
        close_notify_ = true;
        return 0;
      case SSL_ERROR_WANT_READ:
        *wait = POLLIN;
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_WANT_WRITE:
        *wait = POLLOUT;
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_SYSCALL:
        if (errno == 0) return 0;  // TCP EOF without close_notify
        return -1;
      default:
        // OpenSSL 3 reports a TCP EOF without close_notify as this protocol error.
        if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return 0;
        errno = EPROTO;
        return -1;
    }
  }
  ssize_t SendSome(const char* buf, size_t n, short* wait) override {
    if (!ssl_) {
      errno = ENOTCONN;
      return -1;
    }
    ERR_clear_error();
    const int r = SSL_write(ssl_.get(), buf, static_cast<int>(std::min<size_t>(n, 1 << 20)));
    if (r > 0) return r;
    switch (SSL_get_error(ssl_.get(), r)) {
      case SSL_ERROR_WANT_READ:
        *wait = POLLIN;
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_WANT_WRITE:
        *wait = POLLOUT;
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_SYSCALL:
        if (errno == 0) errno = EPIPE;
        return -1;
      default:
        errno = EPROTO;
        return -1;
    }
  }

 private:
  SslCtxPtr ctx_;
  SslPtr ssl_;
  bool close_notify_ = false;
};

// The status of a complete response; 0 for one that was cut off or never came, so a status check
// also checks the framing.
int StatusOf(const Response& response) {
  return response.ok ? response.status : 0;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(ShellacBinary().empty())
        << "SHELLAC_BIN is not set: run the suite with `make test` (meson sets it)";
    pki_.Leaf("a", "a.test", "DNS:a.test,DNS:localhost,IP:127.0.0.1");
    pki_.Leaf("b", "b.test", "DNS:b.test");
    pki_.Leaf("w", "wild.w.test", "DNS:*.w.test");
  }
  std::string Listener(const std::string& name = "a") const {
    return "listen-tls=127.0.0.1:0 cert=" + pki_.Cert(name) + " key=" + pki_.Key(name) + "\n";
  }
  double Metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    return MetricSum(FetchMetrics(shellac_.AdminPort()), name, labels);
  }
  int TlsPort() const { return shellac_.TlsPorts().empty() ? 0 : shellac_.TlsPorts()[0]; }

  Pki pki_;
  ShellacProcess shellac_;
};

TEST_F(TlsTest, HandshakeWithTls12AndTls13) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  ASSERT_GT(TlsPort(), 0);
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version);
    TlsClient client;
    ASSERT_TRUE(client.Connect(TlsPort(), {.max_version = version}));
    EXPECT_EQ(SSL_version(client.ssl()), version);
    EXPECT_EQ(client.PeerCn(), "a.test");
    const Response response = client.Get("/");
    EXPECT_EQ(StatusOf(response), 200) << response.Describe();
    EXPECT_NE(response.body.find("<h1>shellac"), std::string::npos) << response.Describe();
    // Keep-alive works over TLS: a second request on the same connection.
    EXPECT_EQ(StatusOf(client.Get("/")), 200);
  }
  // The plain listener is unaffected.
  EXPECT_EQ(HttpGet(shellac_.Port(), "/").status, 200);
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_handshakes_total", {}, 2);
  EXPECT_EQ(Metric("shellac_tls_handshakes_total", {{"version", "1.2"}}), 1);
  EXPECT_EQ(Metric("shellac_tls_handshakes_total", {{"version", "1.3"}}), 1);
}

TEST_F(TlsTest, ConnectionCloseEndsWithCloseNotify) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  const Response r = client.RoundTrip("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusOf(r), 200) << r.Describe();
  EXPECT_EQ(r.Header("Connection"), "close") << r.Describe();
  EXPECT_EQ(client.WaitClosed(Millis(5'000)), PeerState::kClosed);
  // A clean TLS end, not a truncation: the client can tell the response is complete.
  EXPECT_TRUE(client.close_notify());
}

TEST_F(TlsTest, TlsCiphersuitesLimitsTheTls13Suites) {
  ASSERT_TRUE(
      shellac_.Start(BaseConfig(0, Listener() + "tls-ciphersuites=TLS_AES_256_GCM_SHA384\n")));
  TlsClient client;  // offers OpenSSL's default TLS 1.3 suites, AES-128 first
  ASSERT_TRUE(client.Connect(TlsPort(), {.max_version = TLS1_3_VERSION}));
  EXPECT_STREQ(SSL_CIPHER_get_name(SSL_get_current_cipher(client.ssl())), "TLS_AES_256_GCM_SHA384");
  EXPECT_EQ(StatusOf(client.Get("/")), 200);
  // A client that offers only a suite the list leaves out gets no handshake.
  TlsClient other;
  EXPECT_FALSE(other.Connect(
      TlsPort(), {.max_version = TLS1_3_VERSION, .ciphersuites = "TLS_CHACHA20_POLY1305_SHA256"}));
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_handshake_failures_total",
                {{"reason", "protocol"}}, 1);
  EXPECT_EQ(Metric("shellac_tls_handshake_failures_total", {{"reason", "protocol"}}), 1);
}

TEST_F(TlsTest, OlderProtocolsAreRefused) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  TlsClient client;
  EXPECT_FALSE(client.Connect(TlsPort(), {.max_version = TLS1_1_VERSION}));
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_handshake_failures_total",
                {{"reason", "protocol"}}, 1);
  EXPECT_EQ(Metric("shellac_tls_handshake_failures_total", {{"reason", "protocol"}}), 1);
}

TEST_F(TlsTest, AlpnSelectsHttp11) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  TlsClient both;
  ASSERT_TRUE(both.Connect(TlsPort(), {.alpn = std::string("\x02h2\x08http/1.1", 12)}));
  EXPECT_EQ(both.Alpn(), "http/1.1");
  EXPECT_EQ(StatusOf(both.Get("/")), 200);
  // A client offering only h2 gets no protocol rather than a refusal (or a false h2).
  TlsClient h2_only;
  ASSERT_TRUE(h2_only.Connect(TlsPort(), {.alpn = std::string("\x02h2", 3)}));
  EXPECT_EQ(h2_only.Alpn(), "");
}

TEST_F(TlsTest, SniSelectsTheCertificateAndUnknownNamesFallBack) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(
      0, Listener() + "tls-cert=B.test cert=" + pki_.Cert("b") + " key=" + pki_.Key("b") +
             "\ntls-cert=*.w.test cert=" + pki_.Cert("w") + " key=" + pki_.Key("w") + "\n")));
  const struct {
    std::string sni;
    std::string cn;
  } cases[] = {{"b.test", "b.test"},    {"B.TEST", "b.test"}, {"x.w.test", "wild.w.test"},
               {"a.test", "a.test"},    {"", "a.test"},       {"unknown.test", "a.test"},
               {"y.x.w.test", "a.test"}};
  for (const auto& c : cases) {
    SCOPED_TRACE("sni '" + c.sni + "'");
    TlsClient client;
    ASSERT_TRUE(client.Connect(TlsPort(), {.sni = c.sni}));
    EXPECT_EQ(client.PeerCn(), c.cn);
    EXPECT_EQ(StatusOf(client.Get("/")), 200);
  }
  // unknown.test and y.x.w.test fell back; a.test is covered by the listener's own certificate.
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_sni_fallback_total", {}, 2);
  EXPECT_EQ(Metric("shellac_tls_sni_fallback_total"), 2);
}

TEST_F(TlsTest, SecondConnectionResumesTheSession) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(version);
    SessionPtr session;
    {
      TlsClient first;
      ASSERT_TRUE(first.Connect(TlsPort(), {.max_version = version}));
      EXPECT_FALSE(SSL_session_reused(first.ssl()));
      ASSERT_EQ(StatusOf(first.Get("/")), 200);  // TLS 1.3 tickets arrive after the handshake
      session = first.Session();
      ASSERT_TRUE(session);
      ASSERT_TRUE(SSL_SESSION_is_resumable(session.get()));
    }
    TlsClient second;
    ASSERT_TRUE(second.Connect(TlsPort(), {.max_version = version, .session = session.get()}));
    EXPECT_TRUE(SSL_session_reused(second.ssl()));
    EXPECT_EQ(StatusOf(second.Get("/")), 200);
  }
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_resumed_total", {}, 2);
  EXPECT_EQ(Metric("shellac_tls_resumed_total"), 2);
}

TEST_F(TlsTest, TicketKeysRotate) {
  // No session cache: only tickets can resume.
  ASSERT_TRUE(shellac_.Start(
      BaseConfig(0, Listener() + "tls-ticket-rotation=500ms\ntls-session-cache=0\n")));
  auto session_of_new_connection = [&] {
    TlsClient c;
    EXPECT_TRUE(c.Connect(TlsPort()));
    EXPECT_EQ(StatusOf(c.Get("/")), 200);  // TLS 1.3 tickets arrive after the handshake
    return c.Session();
  };
  auto resumes = [&](SSL_SESSION* session) {
    TlsClient c;
    EXPECT_TRUE(c.Connect(TlsPort(), {.session = session}));
    return SSL_session_reused(c.ssl()) == 1;
  };
  SessionPtr first = session_of_new_connection();  // under key 1
  ASSERT_TRUE(first);
  std::this_thread::sleep_for(Millis(600));
  session_of_new_connection();  // key 1 is past its period: key 2 is made, key 1 is kept
  EXPECT_TRUE(resumes(first.get())) << "a ticket under the previous key still resumes";
  std::this_thread::sleep_for(Millis(600));
  session_of_new_connection();  // key 3 is made, key 1 is forgotten
  EXPECT_FALSE(resumes(first.get())) << "a ticket two rotations old must not resume";
}

TEST_F(TlsTest, SessionCacheWithoutTickets) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener() + "tls-ticket-rotation=0\n")));
  SessionPtr session;
  {
    TlsClient first;
    ASSERT_TRUE(first.Connect(TlsPort(), {.max_version = TLS1_2_VERSION}));
    ASSERT_EQ(StatusOf(first.Get("/")), 200);
    session = first.Session();
    ASSERT_TRUE(session);
    EXPECT_FALSE(SSL_SESSION_has_ticket(session.get()));
    first.Close(/*clean=*/false);  // the server must keep the session all the same
  }
  TlsClient second;
  ASSERT_TRUE(second.Connect(TlsPort(), {.max_version = TLS1_2_VERSION, .session = session.get()}));
  EXPECT_TRUE(SSL_session_reused(second.ssl()));
}

TEST_F(TlsTest, PlainHttpOnTheTlsPortGetsA400) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener())));
  RawClient plain;
  ASSERT_TRUE(plain.Connect(TlsPort()));
  ASSERT_TRUE(plain.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string answer = plain.ReadUntilClose(Millis(3'000));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 ")) << Printable(answer);
  EXPECT_NE(answer.find("speaks HTTPS"), std::string::npos) << Printable(answer);
  TlsClient client;  // and TLS on the same port still works
  ASSERT_TRUE(client.Connect(TlsPort()));
  EXPECT_EQ(StatusOf(client.Get("/")), 200);
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_handshake_failures_total",
                {{"reason", "plain_http"}}, 1);
  EXPECT_EQ(Metric("shellac_tls_handshake_failures_total", {{"reason", "plain_http"}}), 1);
}

TEST_F(TlsTest, StalledHandshakeTimesOutAndAbortsAreCounted) {
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener() + "tls-handshake-timeout=300ms\n")));
  RawClient stalled;
  ASSERT_TRUE(stalled.Connect(TlsPort()));
  // Half a ClientHello record header, then silence. Meanwhile a real client is served.
  ASSERT_TRUE(stalled.Send(std::string("\x16\x03\x01", 3)));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  EXPECT_EQ(StatusOf(client.Get("/")), 200);
  const auto start = Clock::now();
  EXPECT_EQ(stalled.WaitClosed(Millis(3'000)), PeerState::kClosed);
  EXPECT_LT(Clock::now() - start, Millis(2'000));
  // A client that goes away mid-handshake.
  RawClient aborted;
  ASSERT_TRUE(aborted.Connect(TlsPort()));
  ASSERT_TRUE(aborted.Send(std::string("\x16\x03\x01", 3)));
  aborted.Close();
  WaitForMetric(shellac_.AdminPort(), "shellac_tls_handshake_failures_total",
                {{"reason", "aborted"}}, 1);
  EXPECT_EQ(Metric("shellac_tls_handshake_failures_total", {{"reason", "timeout"}}), 1);
  EXPECT_EQ(Metric("shellac_tls_handshake_failures_total", {{"reason", "aborted"}}), 1);
  EXPECT_EQ(MetricSum(WaitForMetricValue(shellac_.AdminPort(), "shellac_tls_handshakes_in_progress",
                                         {}, 0),
                      "shellac_tls_handshakes_in_progress"),
            0);
  // The served client's connection survived all of it.
  EXPECT_EQ(StatusOf(client.Get("/")), 200);
}

TEST_F(TlsTest, ReloadOnSighupSwapsCertificatesWithoutDroppingConnections) {
  // The listener's files are copies the test replaces, as an operator renewing a certificate would.
  const std::string cert = pki_.File("live.pem");
  const std::string key = pki_.File("live.key");
  WriteFile(cert, ReadFile(pki_.Cert("a")));
  WriteFile(key, ReadFile(pki_.Key("a")));
  ASSERT_TRUE(
      shellac_.Start(BaseConfig(0, "listen-tls=127.0.0.1:0 cert=" + cert + " key=" + key + "\n")));
  TlsClient held;
  ASSERT_TRUE(held.Connect(TlsPort()));
  EXPECT_EQ(held.PeerCn(), "a.test");
  ASSERT_EQ(StatusOf(held.Get("/")), 200);

  WriteFile(cert, ReadFile(pki_.Cert("b")));
  WriteFile(key, ReadFile(pki_.Key("b")));
  shellac_.Signal(SIGHUP);
  ASSERT_TRUE(shellac_.WaitForLine("reloaded configuration", Millis(5'000)))
      << shellac_.StderrText();
  EXPECT_EQ(StatusOf(held.Get("/")), 200) << "the held connection must survive the reload";
  {
    TlsClient fresh;
    ASSERT_TRUE(fresh.Connect(TlsPort()));
    EXPECT_EQ(fresh.PeerCn(), "b.test");
  }

  // A key that does not belong to the certificate: the reload is refused, b keeps serving.
  WriteFile(key, ReadFile(pki_.Key("a")));
  shellac_.Signal(SIGHUP);
  const auto refused = shellac_.WaitForLine("reload refused", Millis(5'000));
  ASSERT_TRUE(refused) << shellac_.StderrText();
  EXPECT_NE(refused->find(key + ": the key does not match the certificate"), std::string::npos)
      << *refused;
  TlsClient after;
  ASSERT_TRUE(after.Connect(TlsPort()));
  EXPECT_EQ(after.PeerCn(), "b.test");
  EXPECT_EQ(StatusOf(after.Get("/")), 200);
  EXPECT_EQ(StatusOf(held.Get("/")), 200);
}

TEST_F(TlsTest, BadCertificateFilesStopTheStart) {
  TempDir dir;
  const struct {
    std::string line;
    std::string message;
  } cases[] = {
      {"listen-tls=127.0.0.1:0 cert=" + pki_.Cert("a") + " key=" + pki_.Key("b"),
       pki_.Key("b") + ": the key does not match the certificate in " + pki_.Cert("a")},
      {"listen-tls=127.0.0.1:0 cert=" + pki_.Cert("a") + " key=" + dir.File("missing.key"),
       dir.File("missing.key") + ": cannot read: No such file or directory"},
      {"listen-tls=127.0.0.1:0 cert=" + pki_.Key("a") + " key=" + pki_.Key("a"),
       pki_.Key("a") + ": not a PEM certificate chain"},
      {"listen-tls=127.0.0.1:0 cert=" + pki_.Cert("a") + " key=" + pki_.Key("a") +
           " ocsp=" + pki_.Cert("a"),
       pki_.Cert("a") + ": not a DER OCSP response"},
      {"listen-tls=127.0.0.1:0 cert=" + pki_.Cert("a") + " key=" + pki_.Key("a") +
           "\ntls-ciphers=NO-SUCH-CIPHER",
       "tls-ciphers: no cipher OpenSSL knows in 'NO-SUCH-CIPHER'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string conf = dir.File("bad.conf");
    WriteFile(conf, BaseConfig(0, c.line + "\n"));
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"-c", conf}, std::vector<std::string>{"-c", conf, "--check"}}) {
      const CommandResult r = RunShellac(args, dir.path());
      EXPECT_EQ(r.status, 1) << r.err;
      EXPECT_NE(r.err.find("shellac: " + c.message), std::string::npos) << r.err;
    }
  }
}

TEST_F(TlsTest, ExpiredCertificateOnlyWarns) {
  const std::string expired = pki_.File("expired.pem");
  ASSERT_TRUE(RunQuietly("openssl x509 -in " + pki_.Cert("a") + " -signkey " + pki_.Key("a") +
                         " -days -1 -out " + expired));
  ASSERT_TRUE(shellac_.Start(
      BaseConfig(0, "listen-tls=127.0.0.1:0 cert=" + expired + " key=" + pki_.Key("a") + "\n")));
  EXPECT_TRUE(shellac_.WaitForLine("shellac: warning: " + expired + ": the certificate expired on",
                                   Millis(1'000)))
      << shellac_.StderrText();
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  EXPECT_EQ(StatusOf(client.Get("/")), 200);
}

TEST_F(TlsTest, ForwardedProtoAndHsts) {
  Origin origin;
  ASSERT_TRUE(shellac_.Start(
      BaseConfig(origin.port(), Listener() + "hsts=max-age=600; includeSubDomains\n")));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  const Response response = client.Get("/over-tls");
  EXPECT_EQ(StatusOf(response), 200) << response.Describe();
  EXPECT_EQ(response.HeaderCount("Strict-Transport-Security"), 1) << response.Describe();
  EXPECT_EQ(response.Header("Strict-Transport-Security"), "max-age=600; includeSubDomains");
  const Response plain = HttpGet(shellac_.Port(), "/over-tcp", "X-Forwarded-Proto: https\r\n");
  EXPECT_EQ(plain.status, 200);
  EXPECT_FALSE(plain.Header("strict-transport-security")) << plain.Describe();
  ASSERT_TRUE(origin.WaitForRequests(2, Millis(3'000)));
  for (const OriginRequest& r : origin.Requests()) {
    SCOPED_TRACE(r.target);
    EXPECT_EQ(r.HeaderCount("x-forwarded-proto"), 1);
    EXPECT_EQ(r.Header("x-forwarded-proto"), r.target == "/over-tls" ? "https" : "http");
  }
}

// A stale object that a TLS client found is refreshed in the background: the refresh tells the
// backend what the client's own fetch told it (https), so a page that names its scheme is stored
// as the next TLS client should see it.
TEST_F(TlsTest, BackgroundRefreshKeepsTheClientsScheme) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, "scheme " + req.Header("x-forwarded-proto").value_or("none"),
                {{"Cache-Control", "max-age=1"}});
  });
  ASSERT_TRUE(shellac_.Start(BaseConfig(origin.port(), Listener() + "cache=on\ngrace=30s\n")));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  EXPECT_EQ(client.Get("/page").body, "scheme https");
  std::this_thread::sleep_for(Millis(2'100));  // past max-age, within grace
  const Response stale = client.Get("/page");
  EXPECT_EQ(stale.body, "scheme https") << stale.Describe();
  ASSERT_TRUE(origin.WaitForRequests(2, Millis(10'000))) << "no background refresh";
  const std::vector<OriginRequest> requests = origin.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].Header("x-forwarded-proto"), "https")
      << "the refresh started by a TLS client went upstream as plain http";
}

TEST_F(TlsTest, LargeResponsesStreamIntactOverTls) {
  constexpr uint64_t kSize = 6 << 20;
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendStream(kSize, /*chunked=*/req.target == "/chunked");
  });
  ASSERT_TRUE(shellac_.Start(BaseConfig(origin.port(), Listener())));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  for (const char* path : {"/length", "/chunked", "/length"}) {  // keep-alive between them
    SCOPED_TRACE(path);
    ASSERT_TRUE(client.Send("GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    const Response response = client.Read({.timeout = Millis(30'000), .store_limit = 0});
    ASSERT_EQ(StatusOf(response), 200) << response.Describe();
    EXPECT_EQ(response.chunked, std::string(path) == "/chunked");
    ASSERT_EQ(response.body_bytes, kSize);
    EXPECT_EQ(response.body_hash, PatternHash(kSize));
  }
}

TEST_F(TlsTest, LargeRequestBodyStreamsIntactOverTls) {
  constexpr uint64_t kSize = 4 << 20;
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    c.SendFixed(200, "got " + std::to_string(req.body_bytes));
  });
  origin.SetStoreLimit(0);
  ASSERT_TRUE(shellac_.Start(BaseConfig(origin.port(), Listener())));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  std::string request =
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kSize) + "\r\n\r\n";
  for (uint64_t at = 0; at < kSize; at += kPatternPeriod) {
    request.append(
        PatternSlice(at, static_cast<size_t>(std::min<uint64_t>(kPatternPeriod, kSize - at))));
  }
  ASSERT_TRUE(client.Send(request, Millis(30'000)));
  ASSERT_TRUE(client.Send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n"));
  // The two answers may arrive in one TLS record: each is read by its own framing.
  const Response upload_answer = client.Read({.timeout = Millis(30'000)});
  EXPECT_EQ(StatusOf(upload_answer), 200) << upload_answer.Describe();
  EXPECT_EQ(upload_answer.body, "got " + std::to_string(kSize));
  const Response after = client.Read();
  EXPECT_EQ(StatusOf(after), 200) << after.Describe();
  EXPECT_EQ(after.body, "got 0");
  EXPECT_EQ(client.Pending(), "");
  ASSERT_TRUE(origin.WaitForRequests(2, Millis(5'000)));
  const OriginRequest upload = origin.Requests()[0];
  EXPECT_EQ(upload.body_bytes, kSize);
  EXPECT_EQ(upload.body_hash, PatternHash(kSize));
}

TEST_F(TlsTest, EsiPageOverTlsCarriesHstsAndItsIncludesSayHttps) {
  Origin origin([](const OriginRequest& req, OriginConnection& c) {
    if (req.target == "/page") {
      c.SendFixed(200, "<p>page</p><esi:include src=\"/frag\"/>",
                  {{"Content-Type", "text/html"}, {"Surrogate-Control", "content=\"ESI/1.0\""}});
    } else {
      c.SendFixed(200, "FRAG", {{"Content-Type", "text/html"}});
    }
  });
  ASSERT_TRUE(shellac_.Start(BaseConfig(origin.port(), Listener() + "hsts=max-age=60\n")));
  TlsClient client;
  ASSERT_TRUE(client.Connect(TlsPort()));
  const Response response = client.Get("/page");
  EXPECT_EQ(StatusOf(response), 200) << response.Describe();
  EXPECT_EQ(response.body, "<p>page</p>FRAG");
  EXPECT_EQ(response.Header("Strict-Transport-Security"), "max-age=60") << response.Describe();
  ASSERT_TRUE(origin.WaitForRequests(2, Millis(3'000)));
  for (const OriginRequest& r : origin.Requests()) {
    SCOPED_TRACE(r.target);
    EXPECT_EQ(r.Header("x-forwarded-proto"), "https");
  }
}

TEST_F(TlsTest, OcspResponseIsStapled) {
  // A syntactically valid response ("try later") is enough to see it stapled byte for byte.
  std::unique_ptr<OCSP_RESPONSE, decltype(&OCSP_RESPONSE_free)> response(
      OCSP_response_create(OCSP_RESPONSE_STATUS_TRYLATER, nullptr), OCSP_RESPONSE_free);
  unsigned char* der = nullptr;
  const int length = i2d_OCSP_RESPONSE(response.get(), &der);
  ASSERT_GT(length, 0);
  const std::string bytes(reinterpret_cast<char*>(der), static_cast<size_t>(length));
  OPENSSL_free(der);
  WriteFile(pki_.File("a.ocsp"), bytes);
  ASSERT_TRUE(shellac_.Start(BaseConfig(0, Listener() + "tls-ocsp=" + pki_.File("a.ocsp") + "\n")));
  TlsClient asks;
  ASSERT_TRUE(asks.Connect(TlsPort(), {.want_ocsp = true}));
  const unsigned char* stapled = nullptr;
  const long stapled_length = SSL_get_tlsext_status_ocsp_resp(asks.ssl(), &stapled);
  ASSERT_EQ(stapled_length, length);
  EXPECT_EQ(
      std::string(reinterpret_cast<const char*>(stapled), static_cast<size_t>(stapled_length)),
      bytes);
  TlsClient does_not_ask;
  ASSERT_TRUE(does_not_ask.Connect(TlsPort()));
  EXPECT_EQ(SSL_get_tlsext_status_ocsp_resp(does_not_ask.ssl(), &stapled), -1);
}

// An https origin: answers every request with 200 and a body naming the request target and the
// X-Forwarded-Proto it saw, keeping the connection open. One connection at a time.
class TlsOrigin {
 public:
  TlsOrigin(const std::string& cert, const std::string& key) {
    ctx_.reset(SSL_CTX_new(TLS_server_method()));
    EXPECT_EQ(SSL_CTX_use_certificate_chain_file(ctx_.get(), cert.c_str()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx_.get(), key.c_str(), SSL_FILETYPE_PEM), 1);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TlsOrigin() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int handshakes() const { return handshakes_.load(); }
  int requests() const { return requests_.load(); }
  // The SNI name of the last handshake ("" for none).
  std::string last_sni() {
    std::lock_guard lock(mu_);
    return last_sni_;
  }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{3, 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SslPtr ssl(SSL_new(ctx_.get()));
      SSL_set_fd(ssl.get(), c);
      if (SSL_accept(ssl.get()) == 1) {
        ++handshakes_;
        {
          const char* sni = SSL_get_servername(ssl.get(), TLSEXT_NAMETYPE_host_name);
          std::lock_guard lock(mu_);
          last_sni_ = sni ? sni : "";
        }
        // Requests (GET, no body) on this connection until the proxy closes it.
        std::string in;
        char buf[4096];
        while (true) {
          while (in.find("\r\n\r\n") == std::string::npos) {
            const int n = SSL_read(ssl.get(), buf, sizeof buf);
            if (n <= 0) break;
            in.append(buf, static_cast<size_t>(n));
          }
          const auto end = in.find("\r\n\r\n");
          if (end == std::string::npos || in.size() < 5) break;
          const std::string head = in.substr(0, end + 4);
          in.erase(0, end + 4);
          ++requests_;
          std::string proto = "none";
          if (const auto at = head.find("X-Forwarded-Proto: "); at != std::string::npos) {
            proto = head.substr(at + 19, head.find("\r\n", at) - at - 19);
          }
          const std::string body =
              "tls-origin:" + head.substr(4, head.find(' ', 4) - 4) + " proto=" + proto;
          const std::string out =
              "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
              body;
          if (SSL_write(ssl.get(), out.data(), static_cast<int>(out.size())) <= 0) break;
        }
        SSL_shutdown(ssl.get());
      }
      ERR_clear_error();
      ssl.reset();
      close(c);
    }
  }

  SslCtxPtr ctx_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> handshakes_{0};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::string last_sni_;
  std::thread thread_;
};

TEST_F(TlsTest, UpstreamTlsVerifiesTheOrigin) {
  TlsOrigin origin(pki_.Cert("a"), pki_.Key("a"));
  // Verified against backend-ca=, by name (SNI + host name check) and by address.
  for (const char* host : {"localhost", "127.0.0.1"}) {
    SCOPED_TRACE(host);
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(BaseConfig(0, "backend=https://" + std::string(host) + ":" +
                                              std::to_string(origin.port()) +
                                              "\nbackend-ca=" + pki_.Ca() + "\n")));
    const Response r = HttpGet(proxy.Port(), "/secure");
    EXPECT_EQ(r.status, 200) << r.Describe();
    EXPECT_EQ(r.body, "tls-origin:/secure proto=http");
    EXPECT_EQ(origin.last_sni(), host == std::string("localhost") ? "localhost" : "")
        << "SNI for names only";
  }
  // The system store does not know the test CA: no response from that origin reaches the client.
  {
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(
        BaseConfig(0, "backend=https://localhost:" + std::to_string(origin.port()) + "\n")));
    const Response r = HttpGet(proxy.Port(), "/untrusted");
    EXPECT_EQ(r.status, 502) << r.Describe();
    EXPECT_NE(r.body.find(": TLS handshake: certificate verify failed (unable to get local issuer "
                          "certificate)\n"),
              std::string::npos)
        << r.Describe();
    EXPECT_EQ(r.body.find("tls-origin"), std::string::npos);
  }
  // An origin that accepts TCP but never answers the handshake: the connect timeout covers it.
  {
    const int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(silent, 16), 0);  // the kernel completes connections nobody accepts
    getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
    ShellacProcess proxy;
    ASSERT_TRUE(proxy.Start(
        BaseConfig(0, "backend=https://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                          "\nbackend-ca=" + pki_.Ca() + "\nupstream-connect-timeout=300ms\n")));
    const auto start = Clock::now();
    const Response r = HttpGet(proxy.Port(), "/stalled");
    EXPECT_EQ(r.status, 504) << r.Describe();
    EXPECT_LT(Clock::now() - start, Millis(3'000));
    close(silent);
  }
  // Kept-alive TLS connections to the origin are reused.
  {
    ShellacProcess proxy;
    ASSERT_TRUE(
        proxy.Start(BaseConfig(0, "backend=https://localhost:" + std::to_string(origin.port()) +
                                      "\nbackend-ca=" + pki_.Ca() + "\n")));
    const int handshakes_before = origin.handshakes();
    RawClient client;  // one client connection: one worker, one upstream pool
    ASSERT_TRUE(client.Connect(proxy.Port()));
    for (int i = 0; i < 3; ++i) {
      const Response r =
          client.RoundTrip("GET /again" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n");
      EXPECT_EQ(r.status, 200) << r.Describe();
      EXPECT_EQ(r.body, "tls-origin:/again" + std::to_string(i) + " proto=http");
    }
    EXPECT_EQ(origin.handshakes() - handshakes_before, 1);
    EXPECT_EQ(MetricSum(WaitForMetric(proxy.AdminPort(),
                                      "shellac_upstream_connections_reused_total", {}, 2),
                        "shellac_upstream_connections_reused_total"),
              2);
  }
  // The CA is right but the name is not the certificate's.
  {
    TlsOrigin other(pki_.Cert("b"), pki_.Key("b"));
    ShellacProcess proxy;
    ASSERT_TRUE(
        proxy.Start(BaseConfig(0, "backend=https://localhost:" + std::to_string(other.port()) +
                                      "\nbackend-ca=" + pki_.Ca() + "\n")));
    const Response r = HttpGet(proxy.Port(), "/wrong-name");
    EXPECT_EQ(r.status, 502) << r.Describe();
    // Refused for the name, not for any other reason a handshake can fail.
    EXPECT_NE(r.body.find(": TLS handshake: certificate verify failed (hostname mismatch)\n"),
              std::string::npos)
        << r.Describe();
    EXPECT_EQ(other.requests(), 0);
  }
}

}  // namespace
}  // namespace shellac::test
