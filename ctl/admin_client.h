// admin_client: a small blocking HTTP/1.1 client for a running shellac's admin listener, used by
// `shellac stat` and `shellac warm`. One keep-alive connection, reopened when the server closed
// it; every read and write has a deadline.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace shellac::ctl {

struct AdminResponse {
  int status = 0;     // 0: no response (see error)
  std::string body;
  std::string error;  // "connection refused", "timed out", ... when status is 0
  bool refused = false;  // nothing listens at the address
};

class AdminClient {
 public:
  // `address` as admin-listen= takes it: "HOST:PORT", "[V6]:PORT" or ":PORT" (loopback).
  explicit AdminClient(std::string address) : address_(std::move(address)) {}
  ~AdminClient();
  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  // Sends one request and reads the whole response (framed by Content-Length).
  AdminResponse Request(std::string_view method, std::string_view target,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30));
  AdminResponse Get(std::string_view target) { return Request("GET", target); }

  const std::string& address() const { return address_; }
  // "nothing listens on ADDR (connection refused): is shellac running? ..." for a failed response.
  std::string Explain(const AdminResponse& r) const;

 private:
  bool Connect(AdminResponse* r);
  void Close();

  std::string address_;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace shellac::ctl
