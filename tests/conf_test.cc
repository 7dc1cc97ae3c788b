// Unit tests for conf/: the cgitrc-syntax configuration parser, its value parsers and Load().
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conf/config.h"

namespace shellac::conf {
namespace {

using namespace std::chrono_literals;

// Each test gets its own mkdtemp folder, removed afterwards.
class ConfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/shellac-conf-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr) << "mkdtemp failed";
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Writes `text` to dir_/name (creating sub-folders) and returns the full path.
  std::string Write(const std::string& name, const std::string& text) {
    std::filesystem::path path = std::filesystem::path(dir_) / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    EXPECT_TRUE(out) << "cannot write " << path;
    return path.string();
  }
  std::string Mkdir(const std::string& name) {
    std::filesystem::path path = std::filesystem::path(dir_) / name;
    std::filesystem::create_directories(path);
    return path.string();
  }

  // Loads and expects success.
  std::shared_ptr<const Config> LoadOk(const std::string& file, const Overrides& overrides = {}) {
    std::string error = "not cleared";
    auto config = Load(file, overrides, &error);
    EXPECT_NE(config, nullptr) << "unexpected error: " << error;
    EXPECT_EQ(error, "");
    return config;
  }
  // Loads and expects failure; returns the message.
  std::string LoadError(const std::string& file, const Overrides& overrides = {}) {
    std::string error;
    auto config = Load(file, overrides, &error);
    EXPECT_EQ(config, nullptr) << "expected an error, loaded fine";
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << "error must be one line: " << error;
    return error;
  }

  std::string dir_;
};

std::vector<std::string> Texts(const std::vector<SocketAddress>& list) {
  std::vector<std::string> out;
  for (const auto& a : list) out.push_back(a.text);
  return out;
}

uint32_t Ipv4(const SocketAddress& a) {
  EXPECT_EQ(a.storage.ss_family, AF_INET);
  return ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr);
}
uint16_t PortInStorage(const SocketAddress& a) {
  if (a.storage.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_port);
}

::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not start with '" << prefix << "'";
}

// ---------------------------------------------------------------------------------------------
// Defaults

TEST_F(ConfTest, DefaultsWithoutFile) {
  auto c = LoadOk("");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->config_file, "");
  EXPECT_TRUE(c->sources.empty());
  ASSERT_EQ(c->listen.size(), 1u);
  EXPECT_EQ(c->listen[0].text, "127.0.0.1:8080");
  EXPECT_EQ(c->listen[0].port, 8080);
  EXPECT_EQ(Ipv4(c->listen[0]), INADDR_LOOPBACK);
  EXPECT_EQ(PortInStorage(c->listen[0]), 8080);
  EXPECT_EQ(c->listen[0].length, sizeof(sockaddr_in));
  ASSERT_TRUE(c->admin_listen.has_value());
  EXPECT_EQ(c->admin_listen->text, "127.0.0.1:8081");
  EXPECT_EQ(c->admin_listen->port, 8081);
  EXPECT_EQ(Ipv4(*c->admin_listen), INADDR_LOOPBACK);
  EXPECT_FALSE(c->backend.has_value());
  EXPECT_GE(c->threads, 1u);
  EXPECT_LE(c->threads, 256u);
  EXPECT_EQ(c->cache_size, 256ull << 20);
  EXPECT_TRUE(c->repos.empty());
  EXPECT_EQ(c->cgitrc, "");
  EXPECT_EQ(c->access_log, "stderr");
  EXPECT_EQ(c->client_header_timeout, 10s);
  EXPECT_EQ(c->client_idle_timeout, 60s);
  EXPECT_EQ(c->client_body_timeout, 60s);
  EXPECT_EQ(c->send_timeout, 60s);
  EXPECT_EQ(c->max_request_line, 8u << 10);
  EXPECT_EQ(c->max_header_count, 100u);
  EXPECT_EQ(c->max_header_bytes, 32u << 10);
  EXPECT_EQ(c->max_body_size, 16ull << 20);
  EXPECT_EQ(c->upstream_connect_timeout, 5s);
  EXPECT_EQ(c->upstream_first_byte_timeout, 60s);
  EXPECT_EQ(c->upstream_between_bytes_timeout, 60s);
  EXPECT_EQ(c->upstream_idle_timeout, 30s);
  EXPECT_EQ(c->upstream_max_idle, 256u);
  EXPECT_EQ(c->shutdown_timeout, 30s);
}

// The key table's defaults are what a snapshot holds when nothing is given, and giving each
// default explicitly changes nothing, so the table, --help and the struct cannot drift apart.
TEST_F(ConfTest, TableDefaultsMatchBuiltInDefaults) {
  auto base = LoadOk("");
  ASSERT_NE(base, nullptr);
  const Config plain;  // Config() applies the table's defaults without Load()
  std::set<std::string> seen;
  for (const Key& k : Keys()) {
    const std::string key(k.name);
    seen.insert(key);
    if (k.initial.value == nullptr) continue;  // no value to give ("number of cores", "none")
    if (k.handler.same) {
      EXPECT_TRUE(k.handler.same(plain, *base)) << key << ": Config() and Load() disagree";
    }
    const std::string value = k.initial.value;
    EXPECT_EQ(k.DefaultText(), value);
    SCOPED_TRACE(key + "=" + value);
    auto c = LoadOk("", {{key, value}});
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(Texts(c->listen), Texts(base->listen));
    EXPECT_EQ(c->admin_listen.has_value(), base->admin_listen.has_value());
    EXPECT_EQ(c->backend.has_value(), base->backend.has_value());
    EXPECT_EQ(c->cache_size, base->cache_size);
    EXPECT_EQ(c->cache, base->cache);
    EXPECT_EQ(c->default_ttl, base->default_ttl);
    EXPECT_EQ(c->grace, base->grace);
    EXPECT_EQ(c->single_flight_timeout, base->single_flight_timeout);
    EXPECT_EQ(c->access_log, base->access_log);
    EXPECT_EQ(c->client_header_timeout, base->client_header_timeout);
    EXPECT_EQ(c->client_idle_timeout, base->client_idle_timeout);
    EXPECT_EQ(c->client_body_timeout, base->client_body_timeout);
    EXPECT_EQ(c->send_timeout, base->send_timeout);
    EXPECT_EQ(c->max_request_line, base->max_request_line);
    EXPECT_EQ(c->max_header_count, base->max_header_count);
    EXPECT_EQ(c->max_header_bytes, base->max_header_bytes);
    EXPECT_EQ(c->max_body_size, base->max_body_size);
    EXPECT_EQ(c->upstream_connect_timeout, base->upstream_connect_timeout);
    EXPECT_EQ(c->upstream_first_byte_timeout, base->upstream_first_byte_timeout);
    EXPECT_EQ(c->upstream_between_bytes_timeout, base->upstream_between_bytes_timeout);
    EXPECT_EQ(c->upstream_idle_timeout, base->upstream_idle_timeout);
    EXPECT_EQ(c->upstream_max_idle, base->upstream_max_idle);
    EXPECT_EQ(c->shutdown_timeout, base->shutdown_timeout);
    EXPECT_EQ(c->esi, base->esi);
    EXPECT_EQ(c->esi_max_depth, base->esi_max_depth);
    EXPECT_EQ(c->esi_max_includes, base->esi_max_includes);
    EXPECT_EQ(c->esi_parallel, base->esi_parallel);
    EXPECT_EQ(c->tls_ocsp, base->tls_ocsp);
    EXPECT_EQ(c->tls_ciphers, base->tls_ciphers);
    EXPECT_EQ(c->tls_ciphersuites, base->tls_ciphersuites);
    EXPECT_EQ(c->tls_handshake_timeout, base->tls_handshake_timeout);
    EXPECT_EQ(c->tls_session_cache, base->tls_session_cache);
    EXPECT_EQ(c->tls_ticket_rotation, base->tls_ticket_rotation);
    EXPECT_EQ(c->hsts, base->hsts);
    EXPECT_EQ(c->backend_ca, base->backend_ca);
    EXPECT_EQ(c->fragment_ttl, base->fragment_ttl);
    EXPECT_EQ(c->virtual_root, base->virtual_root);
    EXPECT_EQ(c->max_open_repos, base->max_open_repos);
    EXPECT_EQ(c->render_queue, base->render_queue);
    EXPECT_EQ(c->render_queue_timeout, base->render_queue_timeout);
    EXPECT_EQ(c->client_max_renders, base->client_max_renders);
    EXPECT_EQ(c->client_prefix_v4, base->client_prefix_v4);
    EXPECT_EQ(c->client_prefix_v6, base->client_prefix_v6);
    if (k.handler.same) {
      EXPECT_TRUE(k.handler.same(*c, *base));
    }
  }
  for (const char* key : {"listen",
                          "admin-listen",
                          "backend",
                          "threads",
                          "cache-size",
                          "repo",
                          "cgitrc",
                          "access-log",
                          "client-header-timeout",
                          "client-idle-timeout",
                          "client-body-timeout",
                          "send-timeout",
                          "max-request-line",
                          "max-header-count",
                          "max-header-bytes",
                          "max-body-size",
                          "upstream-connect-timeout",
                          "upstream-first-byte-timeout",
                          "upstream-between-bytes-timeout",
                          "upstream-idle-timeout",
                          "upstream-max-idle",
                          "shutdown-timeout",
                          "include"}) {
    EXPECT_TRUE(seen.count(key)) << key << " missing from Keys()";
  }
}

// The example configuration the Debian package installs as /etc/shellac/shellac.conf names every
// key as a commented "#key=" line, and those lines, uncommented, are a valid configuration (the
// ones that name files or repositories that do not exist here left out).
TEST_F(ConfTest, ExampleConfigurationListsEveryKeyAndParses) {
  const char* path = std::getenv("SHELLAC_CONF_EXAMPLE");
  ASSERT_NE(path, nullptr) << "SHELLAC_CONF_EXAMPLE is not set";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::set<std::string> listed;
  std::string line, uncommented;
  int active = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') ++active;
    if (line.size() < 2 || line[0] != '#' || line[1] < 'a' || line[1] > 'z') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(1, eq - 1);
    listed.insert(key);
    // A key with a default shows it, but for the few lines that show an example instead.
    static const std::set<std::string> kExamples = {"backend", "hsts", "access-log"};
    if (const Key* k = FindKey(key); k != nullptr && k->initial.value != nullptr && !kExamples.count(key)) {
      EXPECT_EQ(line.substr(eq + 1), k->initial.value) << key << ": the packaged file shows another default";
    }
    static const std::set<std::string> kNeedFiles = {
        "include", "listen-tls", "tls-cert",  "backend-ca", "cgitrc",    "repo",
        "scan-path", "repo.path", "access-log", "section", "repo.url", "repo.name",
        "repo.desc", "repo.owner"};
    if (!kNeedFiles.count(key)) uncommented += line.substr(1) + "\n";
  }
  EXPECT_EQ(active, 0) << "every key is commented out";
  for (const Key& k : Keys()) EXPECT_TRUE(listed.count(std::string(k.name))) << k.name << " is not in " << path;
  for (const auto& key : listed) EXPECT_NE(FindKey(key), nullptr) << key << " in " << path << " is not a key";
  const std::string file = dir_ + "/all.conf";
  std::ofstream(file) << uncommented;
  std::string error;
  EXPECT_NE(Load(file, {}, &error), nullptr) << error << "\n" << uncommented;
}

// shellac.conf(5) describes every key of the table: each has a paragraph whose tag is KEY= in bold
// (.B/.BI/.BR, with '-' written '\\-'), and every tag names a key. A paragraph says a change
// needs a restart exactly when the table says so.
TEST(KeyTable, ManualDescribesEveryKey) {
  const char* path = std::getenv("SHELLAC_CONF_MAN");
  ASSERT_NE(path, nullptr) << "SHELLAC_CONF_MAN is not set";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::set<std::string> tagged;                 // KEY of ".TP" (or ".TQ") then ".B[IR] KEY=..."
  std::map<std::string, std::string> paragraph;  // KEY -> its text (keys tagged together share it)
  std::vector<std::string> current;              // the keys whose paragraph is being read
  std::string line, previous;
  while (std::getline(in, line)) {
    if ((previous == ".TP" || previous == ".TQ") && line.starts_with(".B")) {
      std::string word = line.substr(line.find(' ') + 1);
      if (!word.empty() && word.front() == '"') word.erase(0, 1);
      for (size_t at; (at = word.find("\\-")) != std::string::npos;) word.replace(at, 2, "-");
      if (const auto eq = word.find('='); eq != std::string::npos) {
        if (previous == ".TP") current.clear();
        current.push_back(word.substr(0, eq));
        tagged.insert(current.back());
      }
    } else if (line == ".TP" || line.starts_with(".SS") || line.starts_with(".SH")) {
      if (line != ".TP") current.clear();
    } else {
      for (const auto& key : current) paragraph[key] += line + "\n";
    }
    previous = line;
  }
  for (const auto& [key, text] : paragraph) {
    const Key* k = FindKey(key);
    if (k == nullptr) continue;
    const bool says_restart = text.find("restart") != std::string::npos ||
                              text.find("Cannot change on reload") != std::string::npos ||
                              text.find("Fixed at start") != std::string::npos;
    EXPECT_EQ(says_restart, k->NeedsRestart())
        << key << ": the manual " << (says_restart ? "says" : "does not say")
        << " that a change needs a restart; the key table disagrees\n" << text;
  }
  // repo.path, repo.name, repo.desc, repo.owner and section are described in repo.url's paragraph.
  const std::set<std::string> in_repo_url = {"repo.path", "repo.name", "repo.desc", "repo.owner", "section"};
  for (const Key& k : Keys()) {
    const std::string key(k.name);
    if (in_repo_url.count(key)) continue;
    EXPECT_TRUE(tagged.count(key)) << key << " has no paragraph in " << path;
  }
  for (const auto& key : tagged) EXPECT_NE(FindKey(key), nullptr) << path << " describes '" << key << "', which is no key";
  // The stanza keys inside repo.url's paragraph.
  std::ifstream again(path);
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  for (const auto& key : in_repo_url) EXPECT_NE(text.find(".BI " + key + "= "), std::string::npos) << key;
}

// Every entry is complete: a unique name, a documentation line, a default to show; a restart-only
// key can be compared between two snapshots (for the reload's warning).
TEST(KeyTable, EntriesAreComplete) {
  std::set<std::string_view> names;
  for (const Key& k : Keys()) {
    SCOPED_TRACE(std::string(k.name));
    EXPECT_TRUE(names.insert(k.name).second) << "given twice";
    EXPECT_FALSE(k.doc.empty());
    EXPECT_EQ(k.doc.find('\n'), std::string_view::npos);
    EXPECT_TRUE(k.initial.value != nullptr || k.initial.note != nullptr);
    EXPECT_FALSE(k.DefaultText().empty());
    EXPECT_TRUE(k.handler.set);
    if (k.NeedsRestart()) {
      EXPECT_TRUE(k.handler.same);
    }
    EXPECT_EQ(FindKey(k.name), &k);
  }
  EXPECT_EQ(FindKey("no-such-key"), nullptr);
}

// --help's list: every key, in table order, with its default and its documentation line, and
// what the table says about repetition and restarts.
TEST(KeyTable, HelpTextListsEveryKeyWithItsDefault) {
  std::istringstream help(HelpText());
  std::string first, second;
  size_t n = 0;
  for (const Key& k : Keys()) {
    SCOPED_TRACE(std::string(k.name));
    ASSERT_TRUE(std::getline(help, first) && std::getline(help, second));
    ++n;
    const std::string name(k.name);
    ASSERT_TRUE(first.starts_with("  " + name + " ")) << first;
    std::string shown = first.substr(2 + name.size());
    shown.erase(0, shown.find_first_not_of(' '));
    EXPECT_EQ(shown, k.DefaultText());
    EXPECT_TRUE(second.starts_with("      " + std::string(k.doc))) << second;
    EXPECT_EQ(second.find("repeatable") != std::string::npos, k.Repeatable()) << second;
    EXPECT_EQ(second.find("restart") != std::string::npos, k.NeedsRestart()) << second;
  }
  EXPECT_FALSE(std::getline(help, first)) << "more lines than keys: " << first;
  EXPECT_EQ(n, Keys().size());
}

// A reload compares the snapshots with the table: each restart-only key, changed alone, is named
// alone; keys a reload applies are never named.
TEST_F(ConfTest, RestartKeysChangedNamesEachRestartOnlyKey) {
  const std::string cert = Write("c.pem", "x"), key = Write("c.key", "x");
  // A value other than the default for each restart-only key.
  const std::map<std::string, std::string> other = {
      {"listen", "127.0.0.1:9701"},
      {"admin-listen", "off"},
      {"threads", "7"},
      {"cache-size", "300M"},
      {"snapshot-cache-size", "16M"},
      {"snapshot-max-stored", "1M"},
      {"page-memo-size", "8M"},
      {"listen-tls", "127.0.0.1:9702 cert=" + cert + " key=" + key},
      {"render-threads", "9"},
      {"render-queue", "99"},
      {"client-max-renders", "3"},
      {"store-snapshot", "/var/lib/shellac/store.snapshot"},
      {"l2", "memcached://127.0.0.1:11211"},
      {"l2-trace", "/tmp/shellac-l2.trace"},
      {"render-reserve-threads", "0"},
  };
  const Overrides pinned = {{"threads", "2"}, {"render-threads", "2"}};  // not "number of cores"
  auto base = LoadOk("", pinned);
  ASSERT_NE(base, nullptr);
  std::set<std::string> restart_keys;
  for (const Key& k : Keys()) {
    if (k.NeedsRestart()) restart_keys.emplace(k.name);
  }
  std::set<std::string> covered;
  for (const auto& [name, value] : other) covered.insert(name);
  EXPECT_EQ(covered, restart_keys) << "give the test a value for each restart-only key";
  for (const auto& [name, value] : other) {
    SCOPED_TRACE(name + "=" + value);
    Overrides o = pinned;
    o.emplace_back(name, value);
    auto changed = LoadOk("", o);
    ASSERT_NE(changed, nullptr);
    // snapshot-cache-size is an eighth of cache-size unless given: it changes with it.
    const std::vector<std::string> expected =
        name == "cache-size" ? std::vector<std::string>{name, "snapshot-cache-size"}
                             : std::vector<std::string>{name};
    EXPECT_EQ(RestartKeysChanged(*base, *changed), expected);
    EXPECT_TRUE(RestartKeysChanged(*changed, *changed).empty());
  }
  // Keys a reload applies: no warning.
  auto reloadable = LoadOk("", {{"threads", "2"}, {"render-threads", "2"}, {"grace", "1s"},
                                {"backend", "127.0.0.1:9703"}, {"render-queue-timeout", "5s"}});
  ASSERT_NE(reloadable, nullptr);
  EXPECT_TRUE(RestartKeysChanged(*base, *reloadable).empty());
  // New certificate files for a TLS address that stays apply on reload.
  const std::string cert2 = Write("d.pem", "x");
  auto tls1 = LoadOk("", {{"listen-tls", "127.0.0.1:9702 cert=" + cert + " key=" + key}});
  auto tls2 = LoadOk("", {{"listen-tls", "127.0.0.1:9702 cert=" + cert2 + " key=" + key}});
  ASSERT_TRUE(tls1 && tls2);
  EXPECT_TRUE(RestartKeysChanged(*tls1, *tls2).empty());
}

// ---------------------------------------------------------------------------------------------
// A full, valid file

TEST_F(ConfTest, EveryKeyParses) {
  const std::string repo = Mkdir("repos/one.git");
  const std::string cgitrc = Write("cgitrc", "css=/cgit.css\n");
  const std::string log = dir_ + "/access.log";
  const std::string text =
      "# shellac test configuration\r\n"
      "\r\n"
      "listen = 127.0.0.1:9001\r\n"
      "   # indented comment\r\n"
      "listen=[::1]:9002\r\n"
      "admin-listen =127.0.0.1:9003\r\n"
      "backend= http://127.0.0.1:9004/\r\n"
      "threads = 3\r\n"
      "cache-size = 2G\r\n"
      "repo = " +
      repo +
      "\r\n"
      "cgitrc = " +
      cgitrc +
      "\r\n"
      "access-log = " +
      log +
      "\r\n"
      "client-header-timeout = 500ms\r\n"
      "\t\r\n"
      "client-idle-timeout = 10s\r\n"
      "client-body-timeout = 2m\r\n"
      "send-timeout = 1h\r\n"
      "max-request-line = 64K\r\n"
      "max-header-count = 50\r\n"
      "max-header-bytes = 1MiB\r\n"
      "max-body-size = 512\r\n"
      "upstream-connect-timeout = 7\r\n"
      "upstream-first-byte-timeout = 1d\r\n"
      "upstream-between-bytes-timeout = 250ms\r\n"
      "upstream-idle-timeout = 3s\r\n"
      "upstream-max-idle = 0\r\n"
      "shutdown-timeout = 45s\r\n";
  const std::string path = Write("shellac.conf", text);
  auto c = LoadOk(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->config_file, path);
  // The imported cgitrc was read too, after the main file.
  EXPECT_EQ(c->sources, (std::vector<std::string>{path, cgitrc}));
  EXPECT_EQ(Texts(c->listen), (std::vector<std::string>{"127.0.0.1:9001", "[::1]:9002"}));
  EXPECT_EQ(c->listen[0].port, 9001);
  EXPECT_EQ(c->listen[1].port, 9002);
  EXPECT_EQ(c->listen[1].host, "::1");
  EXPECT_EQ(c->listen[1].storage.ss_family, AF_INET6);
  ASSERT_TRUE(c->admin_listen);
  EXPECT_EQ(c->admin_listen->port, 9003);
  ASSERT_TRUE(c->backend);
  EXPECT_EQ(c->backend->host, "127.0.0.1");
  EXPECT_EQ(c->backend->port, 9004);
  EXPECT_EQ(c->threads, 3u);
  EXPECT_EQ(c->cache_size, 2ull << 30);
  EXPECT_EQ(c->repos, std::vector<std::string>{repo});
  EXPECT_EQ(c->cgitrc, cgitrc);
  EXPECT_EQ(c->access_log, log);  // no trailing CR from the CRLF ending
  EXPECT_EQ(c->client_header_timeout, 500ms);
  EXPECT_EQ(c->client_idle_timeout, 10s);
  EXPECT_EQ(c->client_body_timeout, 2min);
  EXPECT_EQ(c->send_timeout, 1h);
  EXPECT_EQ(c->max_request_line, 64u << 10);
  EXPECT_EQ(c->max_header_count, 50u);
  EXPECT_EQ(c->max_header_bytes, 1u << 20);
  EXPECT_EQ(c->max_body_size, 512u);
  EXPECT_EQ(c->upstream_connect_timeout, 7s);
  EXPECT_EQ(c->upstream_first_byte_timeout, 24h);
  EXPECT_EQ(c->upstream_between_bytes_timeout, 250ms);
  EXPECT_EQ(c->upstream_idle_timeout, 3s);
  EXPECT_EQ(c->upstream_max_idle, 0u);
  EXPECT_EQ(c->shutdown_timeout, 45s);
}

// ---------------------------------------------------------------------------------------------
// TLS

TEST_F(ConfTest, TlsKeysParse) {
  const std::string ca = Write("ca.pem", "not checked here\n");
  const std::string path = Write("tls.conf",
                                 "listen-tls = 127.0.0.1:8443 cert=/c/a.pem  key=/c/a.key\n"
                                 "listen-tls = [::1]:8444\tcert=/c/b.pem key=/c/b.key ocsp=/c/b.der\n"
                                 "tls-cert = WWW.Example.org cert=/c/w.pem key=/c/w.key\n"
                                 "tls-cert = *.example.net key=/c/n.key cert=/c/n.pem ocsp=/c/n.der\n"
                                 "tls-ocsp = /c/all.der\n"
                                 "tls-ciphers = ECDHE-RSA-AES256-GCM-SHA384\n"
                                 "tls-ciphersuites = TLS_AES_256_GCM_SHA384\n"
                                 "tls-handshake-timeout = 3s\n"
                                 "tls-session-cache = 0\n"
                                 "tls-ticket-rotation = 10m\n"
                                 "hsts = max-age=63072000; includeSubDomains\n"
                                 "backend = https://localhost:9443\n"
                                 "backend-ca = " + ca + "\n");
  auto c = LoadOk(path);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->listen_tls.size(), 2u);
  EXPECT_EQ(c->listen_tls[0].address.text, "127.0.0.1:8443");
  EXPECT_EQ(c->listen_tls[0].address.port, 8443);
  EXPECT_EQ(c->listen_tls[0].certificate.cert, "/c/a.pem");
  EXPECT_EQ(c->listen_tls[0].certificate.key, "/c/a.key");
  EXPECT_EQ(c->listen_tls[0].certificate.ocsp, "");
  EXPECT_EQ(c->listen_tls[0].certificate.origin, path + ":1");
  EXPECT_EQ(c->listen_tls[1].address.host, "::1");
  EXPECT_EQ(c->listen_tls[1].certificate.ocsp, "/c/b.der");
  ASSERT_EQ(c->tls_certs.size(), 2u);
  EXPECT_EQ(c->tls_certs[0].host, "www.example.org");
  EXPECT_EQ(c->tls_certs[1].host, "*.example.net");
  EXPECT_EQ(c->tls_certs[1].cert, "/c/n.pem");
  EXPECT_EQ(c->tls_certs[1].key, "/c/n.key");
  EXPECT_EQ(c->tls_ocsp, "/c/all.der");
  EXPECT_EQ(c->tls_ciphers, "ECDHE-RSA-AES256-GCM-SHA384");
  EXPECT_EQ(c->tls_ciphersuites, "TLS_AES_256_GCM_SHA384");
  EXPECT_EQ(c->tls_handshake_timeout, 3s);
  EXPECT_EQ(c->tls_session_cache, 0u);
  EXPECT_EQ(c->tls_ticket_rotation, 10min);
  EXPECT_EQ(c->hsts, "max-age=63072000; includeSubDomains");
  ASSERT_TRUE(c->backend);
  EXPECT_TRUE(c->backend->tls);
  EXPECT_EQ(c->backend_ca, ca);
}

TEST_F(ConfTest, TlsListenerGivenTwiceIsAnError) {
  const std::string path =
      Write("t.conf", "listen-tls=127.0.0.1:1 cert=/a key=/b\nlisten-tls = 127.0.0.1:1 cert=/c key=/d\n");
  EXPECT_EQ(LoadError(path), path + ":2: listen-tls: 127.0.0.1:1 is given twice (each address has one default certificate)");
}

TEST_F(ConfTest, TlsCertNeedsATlsListener) {
  const std::string path = Write("t.conf", "listen=127.0.0.1:0\ntls-cert=a.test cert=/a key=/b\n");
  EXPECT_EQ(LoadError(path), path + ":2: tls-cert: no listen-tls= listener to serve it on");
  EXPECT_NE(LoadOk(path, {{"listen-tls", "127.0.0.1:0 cert=/c key=/d"}}), nullptr);
}

TEST_F(ConfTest, TlsDefaults) {
  auto c = LoadOk("");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->listen_tls.empty());
  EXPECT_TRUE(c->tls_certs.empty());
  EXPECT_EQ(c->tls_handshake_timeout, 10s);
  EXPECT_EQ(c->tls_ticket_rotation, 1h);
  EXPECT_EQ(c->tls_session_cache, 20000u);
  EXPECT_EQ(c->hsts, "");
  EXPECT_EQ(c->backend_ca, "");
  EXPECT_NE(c->tls_ciphers.find("ECDHE"), std::string::npos);
}

TEST_F(ConfTest, TlsErrorsNameFileLineAndKey) {
  const struct {
    const char* line;
    const char* key;
    const char* why;
  } cases[] = {
      {"listen-tls = 127.0.0.1:8443 cert=/a.pem", "listen-tls", "needs cert=FILE and key=FILE"},
      {"listen-tls = 127.0.0.1:8443 key=/a.key", "listen-tls", "needs cert=FILE and key=FILE"},
      {"listen-tls = 127.0.0.1:8443 cert=/a key=/b chain=/c", "listen-tls", "unknown part 'chain=/c'"},
      {"listen-tls = 127.0.0.1:8443 cert= key=/b", "listen-tls", "cert= needs a file"},
      {"listen-tls = 127.0.0.1 cert=/a key=/b", "listen-tls", "bad address"},
      {"listen-tls = https://127.0.0.1:1 cert=/a key=/b", "listen-tls", "without https://"},
      {"listen-tls =", "listen-tls", "expected ADDR:PORT"},
      {"tls-cert = cert=/a key=/b", "tls-cert", "expected HOSTNAME"},
      {"tls-cert = a.example cert=/a", "tls-cert", "needs cert=FILE and key=FILE"},
      {"listen = https://127.0.0.1:1", "listen", "use listen-tls="},
      {"tls-handshake-timeout = 0", "tls-handshake-timeout", "more than 0"},
      {"tls-handshake-timeout = soon", "tls-handshake-timeout", "bad duration"},
      {"hsts = 1 year", "hsts", "expected max-age="},
      {"backend-ca = /nonexistent/ca.pem", "backend-ca", "cannot read"},
      {"tls-ciphers =", "tls-ciphers", "expected an OpenSSL cipher list"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string path = Write("bad.conf", std::string("# first\n") + c.line + "\n");
    const std::string error = LoadError(path);
    EXPECT_TRUE(StartsWith(error, path + ":2: " + c.key + ": "));
    EXPECT_NE(error.find(c.why), std::string::npos) << error;
  }
}

TEST_F(ConfTest, AdminListenOffAndBackendNone) {
  const std::string path = Write("a.conf",
                                 "backend = 127.0.0.1:1\n"
                                 "backend = none\n"
                                 "admin-listen = OFF\n");
  auto c = LoadOk(path);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->backend.has_value());
  EXPECT_FALSE(c->admin_listen.has_value());
}

TEST_F(ConfTest, FileWithoutTrailingNewline) {
  auto c = LoadOk(Write("a.conf", "threads = 5"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threads, 5u);
}

// ---------------------------------------------------------------------------------------------
// Scalars, lists and the command line

TEST_F(ConfTest, LastScalarWins) {
  const std::string path = Write("a.conf",
                                 "threads = 2\n"
                                 "client-idle-timeout = 5s\n"
                                 "threads = 7\n"
                                 "access-log = off\n"
                                 "client-idle-timeout = 6s\n"
                                 "access-log = /tmp/x.log\n");
  auto c = LoadOk(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threads, 7u);
  EXPECT_EQ(c->client_idle_timeout, 6s);
  EXPECT_EQ(c->access_log, "/tmp/x.log");
}

TEST_F(ConfTest, ListenAccumulatesAndReplacesTheDefault) {
  auto c = LoadOk(Write("a.conf",
                        "listen = 127.0.0.1:9101\n"
                        "threads = 1\n"
                        "listen = 127.0.0.1:9102\n"
                        "listen = 127.0.0.1:9103\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(Texts(c->listen),
            (std::vector<std::string>{"127.0.0.1:9101", "127.0.0.1:9102", "127.0.0.1:9103"}));
}

TEST_F(ConfTest, RepoAccumulates) {
  const std::string r1 = Mkdir("r1"), r2 = Mkdir("r2");
  auto c = LoadOk(Write("a.conf", "repo = " + r1 + "\nrepo = " + r2 + "\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->repos, (std::vector<std::string>{r1, r2}));
}

TEST_F(ConfTest, CommandLineListReplacesFileList) {
  const std::string path = Write("a.conf",
                                 "listen = 127.0.0.1:9201\n"
                                 "listen = 127.0.0.1:9202\n");
  auto c = LoadOk(path, {{"listen", "127.0.0.1:9301"}, {"listen", "127.0.0.1:9302"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(Texts(c->listen), (std::vector<std::string>{"127.0.0.1:9301", "127.0.0.1:9302"}));

  // Without a file, a command-line listen replaces the built-in default.
  auto d = LoadOk("", {{"listen", "127.0.0.1:0"}});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(Texts(d->listen), std::vector<std::string>{"127.0.0.1:0"});
}

// Every list key follows the same rule (it is the table's, not each key's): rules too.
TEST_F(ConfTest, CommandLineRulesReplaceFileRules) {
  const std::string path = Write("a.conf",
                                 "cache-key = ^/a => a\n"
                                 "cache-key = ^/b => b\n"
                                 "ttl = ^/x => 1s\n"
                                 "esi-url = ^/e\n");
  auto c = LoadOk(path, {{"cache-key", "^/c => c"}, {"ttl", "^/y => 2s"}, {"ttl", "^/z => 3s"}});
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->cache_keys.size(), 1u);
  EXPECT_EQ(c->cache_keys[0].text, "^/c => c");
  EXPECT_EQ(c->cache_keys[0].origin, "command line");
  ASSERT_EQ(c->ttl_rules.size(), 2u);
  EXPECT_EQ(c->ttl_rules[0].text, "^/y => 2s");
  EXPECT_EQ(c->ttl_rules[1].text, "^/z => 3s");
  // A list the command line does not name keeps the file's values.
  ASSERT_EQ(c->esi_urls.size(), 1u);
  EXPECT_EQ(c->esi_urls[0].origin, path + ":4");
}

TEST_F(ConfTest, CommandLineRepoReplacesFileRepos) {
  const std::string r1 = Mkdir("r1"), r2 = Mkdir("r2"), r3 = Mkdir("r3");
  auto c = LoadOk(Write("a.conf", "repo = " + r1 + "\nrepo = " + r2 + "\n"), {{"repo", r3}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->repos, std::vector<std::string>{r3});
}

TEST_F(ConfTest, CommandLineScalarsOverrideFile) {
  const std::string path = Write("a.conf",
                                 "threads = 2\n"
                                 "send-timeout = 5s\n"
                                 "backend = 127.0.0.1:1\n"
                                 "access-log = off\n");
  auto c = LoadOk(path, {{"threads", "9"}, {"send-timeout", "750ms"}, {"backend", "none"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threads, 9u);
  EXPECT_EQ(c->send_timeout, 750ms);
  EXPECT_FALSE(c->backend.has_value());
  EXPECT_EQ(c->access_log, "off");  // not overridden: the file's value stays
}

// ---------------------------------------------------------------------------------------------
// include=

TEST_F(ConfTest, IncludeIsRelativeToTheIncludingFile) {
  Write("conf.d/sub/inner.conf", "threads = 4\nlisten = 127.0.0.1:9402\n");
  const std::string middle = Write("conf.d/middle.conf",
                                   "listen = 127.0.0.1:9401\n"
                                   "include = sub/inner.conf\n"
                                   "send-timeout = 3s\n");
  const std::string main = Write("main.conf",
                                 "threads = 2\n"
                                 "include=conf.d/middle.conf\n"
                                 "listen = 127.0.0.1:9403\n");
  auto c = LoadOk(main);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threads, 4u);  // the include came after threads = 2
  EXPECT_EQ(c->send_timeout, 3s);
  EXPECT_EQ(Texts(c->listen),
            (std::vector<std::string>{"127.0.0.1:9401", "127.0.0.1:9402", "127.0.0.1:9403"}));
  ASSERT_EQ(c->sources.size(), 3u);
  EXPECT_EQ(c->sources[0], main);
  EXPECT_EQ(std::filesystem::canonical(c->sources[1]), std::filesystem::canonical(middle));
  EXPECT_EQ(std::filesystem::canonical(c->sources[2]),
            std::filesystem::canonical(dir_ + "/conf.d/sub/inner.conf"));
}

TEST_F(ConfTest, IncludeAbsolutePath) {
  const std::string other = Write("elsewhere/x.conf", "max-header-count = 33\n");
  auto c = LoadOk(Write("a/main.conf", "include = " + other + "\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->max_header_count, 33u);
}

TEST_F(ConfTest, ScalarAfterIncludeWins) {
  Write("inc.conf", "threads = 4\n");
  auto c = LoadOk(Write("main.conf", "include = inc.conf\nthreads = 6\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->threads, 6u);
}

TEST_F(ConfTest, IncludeLoopIsAnError) {
  const std::string a = Write("a.conf", "# a\ninclude = b.conf\n");
  const std::string b = Write("b.conf", "threads = 2\n\ninclude = a.conf\n");
  const std::string e = LoadError(a);
  EXPECT_TRUE(StartsWith(e, a + ":2: include: ") || StartsWith(e, b + ":3: include: ")) << e;
  EXPECT_NE(e.find("loop"), std::string::npos) << e;

  const std::string self = Write("self.conf", "include = self.conf\n");
  const std::string e2 = LoadError(self);
  EXPECT_TRUE(StartsWith(e2, self + ":1: include: ")) << e2;
}

TEST_F(ConfTest, MissingIncludeNamesTheIncludingLine) {
  const std::string main = Write("main.conf", "threads = 2\n# comment\ninclude = nope.conf\n");
  const std::string e = LoadError(main);
  EXPECT_TRUE(StartsWith(e, main + ":3: include: ")) << e;
  EXPECT_NE(e.find("nope.conf"), std::string::npos) << e;
}

TEST_F(ConfTest, EmptyIncludeIsAnError) {
  const std::string main = Write("main.conf", "include =\n");
  EXPECT_TRUE(StartsWith(LoadError(main), main + ":1: include: "));
}

TEST_F(ConfTest, ErrorInsideIncludedFileNamesThatFile) {
  const std::string inner = Write("inner.conf", "threads = 2\nthreads = zero\n");
  const std::string main = Write("main.conf", "\n\ninclude = inner.conf\n");
  EXPECT_TRUE(StartsWith(LoadError(main), inner + ":2: threads: "));
}

// ---------------------------------------------------------------------------------------------
// Errors: "FILE:LINE: key: what is wrong"

struct BadLine {
  std::string line;
  std::string key_prefix;  // what follows "FILE:LINE: "
};

TEST_F(ConfTest, EveryErrorNamesFileLineAndKey) {
  const std::vector<BadLine> cases = {
      {"no-such-key = 1", "no-such-key: unknown key"},
      {"client-idle-timeout = 10 parsecs", "client-idle-timeout: bad duration"},
      {"send-timeout = -1s", "send-timeout: bad duration"},
      {"shutdown-timeout = 1.5s", "shutdown-timeout: bad duration"},
      {"client-header-timeout =", "client-header-timeout: bad duration"},
      {"cache-size = 12Q", "cache-size: bad size"},
      {"max-body-size = lots", "max-body-size: bad size"},
      {"cache-size = 512K", "cache-size: "},            // below the 1M minimum
      {"max-request-line = 63", "max-request-line: "},  // below the 64 minimum
      {"max-header-bytes = 255", "max-header-bytes: "},
      {"listen = nonsense", "listen: bad address"},
      {"listen = 127.0.0.1:65536", "listen: bad address"},
      {"backend = 127.0.0.1:99999", "backend: bad address"},
      {"admin-listen = 127.0.0.1", "admin-listen: bad address"},
      {"backend = ftp://127.0.0.1:21", "backend: unsupported scheme"},
      {"threads = 0", "threads: expected a whole number from 1 to 256"},
      {"threads = 257", "threads: expected a whole number from 1 to 256"},
      {"threads = abc", "threads: expected a whole number from 1 to 256"},
      {"threads = -2", "threads: expected a whole number from 1 to 256"},
      {"max-header-count = 0", "max-header-count: expected a whole number"},
      {"upstream-max-idle = 100001", "upstream-max-idle: expected a whole number"},
      {"access-log =", "access-log: "},
      {"this line has no equals sign", "this line has no equals sign: expected key=value"},
      {"= value", "expected key=value"},
      {"repo = " + std::string("/nonexistent/shellac-test-repo"), "repo: no such repository"},
      {"repo =", "repo: empty path"},
      {"cgitrc = /nonexistent/shellac-test-cgitrc", "cgitrc: cannot read"},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.line);
    // Comments, blank lines and CRLF endings before the bad line must not disturb the count.
    const std::string path = Write("bad.conf",
                                   "# header comment\r\n"
                                   "\r\n"
                                   "threads = 2\r\n"
                                   "   \r\n"
                                   "# another\n" +
                                       bad.line + "\n" + "threads = 3\n");
    const std::string e = LoadError(path);
    EXPECT_TRUE(StartsWith(e, path + ":6: " + bad.key_prefix)) << e;
  }
}

TEST_F(ConfTest, BadDurationMessageQuotesTheValue) {
  const std::string path = Write("a.conf", "send-timeout = 5 fortnights\n");
  EXPECT_EQ(LoadError(path),
            path + ":1: send-timeout: bad duration '5 fortnights' (use e.g. 500ms, 10s, 2m)");
}

TEST_F(ConfTest, PortAboveRangeIsRejected) {
  const std::string path = Write("a.conf", "listen = 127.0.0.1:65535\nlisten = 127.0.0.1:65536\n");
  EXPECT_TRUE(StartsWith(LoadError(path), path + ":2: listen: "));
}

// The admin interface must not share a public listener. Per config.h every failure of Load is
// "FILE:LINE: key: what is wrong"; the conflict is detected after reading, so the line that
// configured admin-listen is the natural origin.
TEST_F(ConfTest, AdminListenEqualToListenIsAnError) {
  const std::string path = Write("a.conf",
                                 "listen = 127.0.0.1:9501\n"
                                 "admin-listen = 127.0.0.1:9501\n");
  const std::string e = LoadError(path);
  EXPECT_NE(e.find("admin-listen"), std::string::npos) << e;
  EXPECT_NE(e.find("127.0.0.1:9501"), std::string::npos) << e;
  // The conflict is found after reading; the message still names where admin-listen was set.
  EXPECT_TRUE(StartsWith(e, path + ":2: admin-listen: ")) << e;
}

TEST_F(ConfTest, AdminListenConflictsWithWildcardListen) {
  // 0.0.0.0:8081 covers the default admin address 127.0.0.1:8081.
  const std::string e = LoadError("", {{"listen", "0.0.0.0:8081"}});
  EXPECT_NE(e.find("admin-listen"), std::string::npos) << e;
  // Same port on a different specific host is fine.
  EXPECT_NE(LoadOk("", {{"listen", "127.0.0.2:8081"}}), nullptr);
  // Turning the admin interface off removes the conflict.
  EXPECT_NE(LoadOk("", {{"listen", "127.0.0.1:8081"}, {"admin-listen", "off"}}), nullptr);
}

// The snapshot archives kept whole are taken from cache-size: an eighth of it unless given, at
// most half of it.
TEST_F(ConfTest, SnapshotCacheIsTakenFromTheStore) {
  auto c = LoadOk("");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->snapshot_cache_size, 32u << 20);
  EXPECT_EQ(c->snapshot_max_stored, 8u << 20);
  c = LoadOk("", {{"cache-size", "1G"}, {"snapshot-max-stored", "100M"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->snapshot_cache_size, 128u << 20);
  EXPECT_EQ(c->snapshot_max_stored, 100u << 20);
  c = LoadOk("", {{"snapshot-cache-size", "0"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->snapshot_cache_size, 0u);
  const std::string path = Write("s.conf", "cache-size = 64M\nsnapshot-cache-size = 40M\n");
  EXPECT_EQ(LoadError(path), path + ":2: snapshot-cache-size: 41943040 bytes is more than half of "
                                    "cache-size (67108864 bytes), which it is taken from");
}

TEST_F(ConfTest, AdminListenConflictFromCommandLine) {
  const std::string e = LoadError("", {{"admin-listen", "127.0.0.1:8080"}});
  EXPECT_NE(e.find("admin-listen"), std::string::npos) << e;
  EXPECT_NE(e.find("127.0.0.1:8080"), std::string::npos) << e;
}

TEST_F(ConfTest, CommandLineErrors) {
  EXPECT_TRUE(StartsWith(LoadError("", {{"threads", "0"}}), "command line: --threads: "));
  EXPECT_TRUE(StartsWith(LoadError("", {{"bogus", "1"}}), "command line: --bogus: unknown key"));
  EXPECT_TRUE(
      StartsWith(LoadError("", {{"listen", "127.0.0.1:70000"}}), "command line: --listen: "));
  EXPECT_TRUE(StartsWith(LoadError("", {{"send-timeout", "soon"}}),
                         "command line: --send-timeout: bad duration"));
  // include is a file directive, not a setting.
  EXPECT_TRUE(StartsWith(LoadError("", {{"include", "x.conf"}}), "command line: --include: "));
  // A valid file plus a bad override: the override is blamed.
  const std::string path = Write("a.conf", "threads = 2\n");
  EXPECT_TRUE(
      StartsWith(LoadError(path, {{"cache-size", "big"}}), "command line: --cache-size: bad size"));
}

TEST_F(ConfTest, MissingMainFileNamesTheFile) {
  const std::string path = dir_ + "/does-not-exist.conf";
  const std::string e = LoadError(path);
  EXPECT_NE(e.find(path), std::string::npos) << e;
}

TEST_F(ConfTest, MainFileIsADirectoryIsAnError) {
  const std::string d = Mkdir("adir");
  std::string error;
  auto c = Load(d, {}, &error);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(error.find(d), std::string::npos) << error;
}

TEST_F(ConfTest, ErrorLeavesNoPartialSnapshotAndSuccessClearsError) {
  std::string error = "stale";
  auto ok = Load("", {}, &error);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(error, "");
  auto bad = Load("", {{"threads", "x"}}, &error);
  EXPECT_EQ(bad, nullptr);
  EXPECT_FALSE(error.empty());
}

// ---------------------------------------------------------------------------------------------
// cgitrc import

TEST_F(ConfTest, CgitrcImport) {
  Write("cgit/repos.rc",
        "repo.url=included\n"
        "repo.path=/srv/git/included.git\n");
  const std::string cgitrc = Write("cgit/cgitrc",
                                   "# cgit config\n"
                                   "css=/cgit.css\n"
                                   "virtual-root=/\n"
                                   "enable-http-clone=1\n"
                                   "some-unknown-cgit-key = whatever\n"
                                   "\n"
                                   "repo.url=one\n"
                                   "repo.path=/srv/git/one.git\n"
                                   "repo.desc=the first\n"
                                   "repo.url=two\n"
                                   "repo.path = /srv/git/two.git\n"
                                   "include=repos.rc\n");
  const std::string r0 = Mkdir("local.git");
  const std::string path = Write("shellac.conf", "repo = " + r0 + "\ncgitrc = " + cgitrc + "\n");
  auto c = LoadOk(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cgitrc, cgitrc);
  EXPECT_EQ(c->repos, (std::vector<std::string>{r0, "/srv/git/one.git", "/srv/git/two.git",
                                                "/srv/git/included.git"}));
  ASSERT_EQ(c->sources.size(), 3u);
  EXPECT_EQ(c->sources[0], path);
  EXPECT_EQ(c->sources[1], cgitrc);
  // The cgitrc does not leak its keys into shellac settings.
  EXPECT_EQ(c->threads, LoadOk("")->threads);
}

// enable-http-clone: on unless the cgitrc turns it off (cgit's atoi flag).
TEST_F(ConfTest, CgitrcEnableHttpClone) {
  auto on = LoadOk(Write("on.conf", "cgitrc = " + Write("on.rc", "repo.url=a\nrepo.path=/a\n") + "\n"));
  ASSERT_NE(on, nullptr);
  EXPECT_TRUE(on->enable_http_clone);
  auto off = LoadOk(
      Write("off.conf", "cgitrc = " + Write("off.rc", "enable-http-clone=0\nrepo.url=a\nrepo.path=/a\n") + "\n"));
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(off->enable_http_clone);
  EXPECT_FALSE(on->noplainemail);
}

// noplainemail: off unless the cgitrc sets it; a global key, the last one wins (cgit's atoi flag).
TEST_F(ConfTest, CgitrcNoPlainEmail) {
  const std::string rc = Write("e.rc", "noplainemail=0\nrepo.url=a\nrepo.path=/a\nnoplainemail=1\n");
  auto c = LoadOk(Write("e.conf", "cgitrc = " + rc + "\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->noplainemail);
}

// The summary, about and feed keys of a cgitrc: readme= and clone-url= / about-filter= apply to the
// stanzas that follow them (as cgit copies them), a stanza's own repo.readme replaces the inherited
// list, a stanza's own filter counts only after enable-filter-overrides=1 (as cgit's), the table
// sizes are numbers.
TEST_F(ConfTest, CgitrcSummaryAboutAndFeedKeys) {
  const std::string cgitrc = Write("cgitrc",
                                   "summary-branches=3\nsummary-tags=0\nsummary-log=7\n"
                                   "max-atom-items=20\nclone-prefix=https://x git://y\n"
                                   "repo.url=early\nrepo.path=/srv/early.git\n"
                                   "readme=:README.md\nreadme=master:README\n"
                                   "clone-url=https://z/$CGIT_REPO_URL\nabout-filter=/bin/cat\n"
                                   "repo.url=one\nrepo.path=/srv/one.git\n"
                                   "repo.url=two\nrepo.path=/srv/two.git\nrepo.readme=:doc/x.md\n"
                                   "repo.readme=:y\nrepo.clone-url=ssh://two\n"
                                   "repo.homepage=https://two.example/\n"
                                   "repo.about-filter=/ignored\nenable-filter-overrides=1\n"
                                   "repo.about-filter=exec:/usr/bin/f\n");
  auto c = LoadOk(Write("shellac.conf", "cgitrc = " + cgitrc + "\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->summary_branches, 3u);
  EXPECT_EQ(c->summary_tags, 0u);
  EXPECT_EQ(c->summary_log, 7u);
  EXPECT_EQ(c->max_atom_items, 20u);
  EXPECT_EQ(c->clone_prefix, "https://x git://y");
  ASSERT_EQ(c->repositories.size(), 3u);
  EXPECT_TRUE(c->repositories[0].readme.empty());
  EXPECT_EQ(c->repositories[0].clone_url, "");
  EXPECT_EQ(c->repositories[0].homepage, "");
  EXPECT_EQ(c->repositories[2].homepage, "https://two.example/");
  EXPECT_EQ(c->repositories[1].readme, (std::vector<std::string>{":README.md", "master:README"}));
  EXPECT_EQ(c->repositories[1].clone_url, "https://z/$CGIT_REPO_URL");
  EXPECT_EQ(c->repositories[1].about_filter, "/bin/cat");
  EXPECT_EQ(c->repositories[2].readme, (std::vector<std::string>{":doc/x.md", ":y"}));
  EXPECT_EQ(c->repositories[2].clone_url, "ssh://two");
  EXPECT_EQ(c->repositories[2].about_filter, "exec:/usr/bin/f");
  const std::string bad = Write("bad.rc", "summary-log=many\n");
  const std::string error = LoadError(Write("bad.conf", "cgitrc = " + bad + "\n"));
  EXPECT_NE(error.find("bad.rc:1: summary-log: not a number"), std::string::npos) << error;
}

// max-stats= applies to the stanzas that follow it (a period's letter or name: the number of periods
// enabled; another value none, as cgit), repo.max-stats= to its own.
TEST_F(ConfTest, CgitrcMaxStats) {
  const std::string cgitrc = Write("cgitrc",
                                   "repo.url=before\nrepo.path=/srv/before.git\n"
                                   "max-stats=quarter\n"
                                   "repo.url=one\nrepo.path=/srv/one.git\n"
                                   "repo.url=two\nrepo.path=/srv/two.git\nrepo.max-stats=w\n"
                                   "repo.url=three\nrepo.path=/srv/three.git\nrepo.max-stats=years\n"
                                   "max-stats=y\nrepo.url=four\nrepo.path=/srv/four.git\n");
  auto c = LoadOk(Write("shellac.conf", "cgitrc = " + cgitrc + "\n"));
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->repositories.size(), 5u);
  EXPECT_EQ(c->repositories[0].max_stats, 0u);
  EXPECT_EQ(c->repositories[1].max_stats, 3u);
  EXPECT_EQ(c->repositories[2].max_stats, 1u);
  EXPECT_EQ(c->repositories[3].max_stats, 0u);
  EXPECT_EQ(c->repositories[4].max_stats, 4u);
}

// The repositories gitfrag serves: cgitrc stanzas with their details, scan-path= (nested folders
// give URLs with slashes), repo=PATH, and the page keys cgit shares.
TEST_F(ConfTest, RepositoriesFromCgitrcScanPathAndRepo) {
  auto git_dir = [&](const std::string& name) {
    Mkdir(name + "/objects");
    Mkdir(name + "/refs");
    Write(name + "/HEAD", "ref: refs/heads/master\n");
  };
  git_dir("scan/pub/scm/linux.git");
  Write("scan/pub/scm/linux.git/description", "Linux kernel\n");
  git_dir("scan/work/.git");
  git_dir("scan/linux.git/nested.git");  // inside a repository: not a repository of its own
  git_dir("scan/linux.git");
  git_dir("plain/tool.git");
  const std::string scan = dir_ + "/scan";
  const std::string cgitrc = Write("cgitrc",
                                   "virtual-root=/git\n"
                                   "css=/static/cgit.css\n"
                                   "logo=/static/logo.png\n"
                                   "robots=noindex, nofollow\n"
                                   "favicon=\n"
                                   "enable-index-links=1\n"
                                   "max-repo-count=20\n"
                                   "repo.url=ignored\n"
                                   "repo.path=/srv/ignored.git\n"
                                   "repo.ignore=1\n"
                                   "repo.hide=1\n"
                                   "root-title=My forge\n"
                                   "section=Kernel\n"
                                   "repo.url=pub/scm/git/git\n"
                                   "repo.path=/srv/git.git\n"
                                   "repo.desc=the stupid content tracker\n"
                                   "repo.owner=Junio\n"
                                   "repo.name=git.git\n"
                                   "repo.enable-log-linecount=1\n"
                                   "repo.enable-blame=1\n"
                                   "repo.url=no-path\n"
                                   "max-commit-count=25\n"
                                   "renamelimit=5\n"
                                   "enable-log-filecount=1\n"
                                   "enable-blame=1\n"
                                   "scan-path=" +
                                       scan + "\n");
  const std::string conf = Write("shellac.conf", "repo = " + dir_ + "/plain/tool.git\ncgitrc = " + cgitrc +
                                                     "\nmax-open-repos = 7\nrender-threads = 3\n"
                                                     "render-queue = 99\n");
  auto c = LoadOk(conf);
  ASSERT_NE(c, nullptr);
  std::vector<std::string> urls;
  for (const auto& r : c->repositories) urls.push_back(r.url);
  EXPECT_EQ(urls, (std::vector<std::string>{"tool.git", "pub/scm/git/git", "linux.git", "pub/scm/linux.git", "work"}));
  ASSERT_EQ(c->repositories.size(), 5u);
  EXPECT_EQ(c->repositories[0].path, dir_ + "/plain/tool.git");
  EXPECT_EQ(c->repositories[1].path, "/srv/git.git");
  EXPECT_EQ(c->repositories[1].name, "git.git");
  EXPECT_EQ(c->repositories[1].desc, "the stupid content tracker");
  EXPECT_EQ(c->repositories[1].owner, "Junio");
  EXPECT_EQ(c->repositories[1].section, "Kernel");
  EXPECT_EQ(c->repositories[1].origin, cgitrc + ":14");
  EXPECT_EQ(c->repositories[3].desc, "Linux kernel");
  EXPECT_EQ(c->repositories[4].path, scan + "/work/.git");
  // The log's columns: a repo.* key for its stanza; a global key for the stanzas after it.
  EXPECT_FALSE(c->repositories[1].enable_log_filecount);
  EXPECT_TRUE(c->repositories[1].enable_log_linecount);
  EXPECT_TRUE(c->repositories[2].enable_log_filecount);
  EXPECT_FALSE(c->repositories[2].enable_log_linecount);
  EXPECT_FALSE(c->repositories[0].enable_log_filecount);
  // enable-blame likewise.
  EXPECT_TRUE(c->repositories[1].enable_blame);
  EXPECT_TRUE(c->repositories[2].enable_blame);
  EXPECT_FALSE(c->repositories[0].enable_blame);
  EXPECT_EQ(c->max_commit_count, 25u);
  EXPECT_EQ(c->rename_limit, 5);  // global even after stanzas, as cgit's
  EXPECT_EQ(c->virtual_root, "/git/");
  EXPECT_EQ(c->css, "/static/cgit.css");
  EXPECT_EQ(c->logo, "/static/logo.png");
  EXPECT_EQ(c->robots, "noindex, nofollow");
  EXPECT_EQ(c->favicon, "") << "an empty favicon= is kept (cgit writes an empty link)";
  EXPECT_TRUE(c->enable_index_links);
  EXPECT_EQ(c->max_repo_count, 20);
  EXPECT_EQ(c->root_title, "My forge");
  EXPECT_EQ(c->max_open_repos, 7u);
  EXPECT_EQ(c->render_threads, 3u);
  EXPECT_EQ(c->render_queue, 99u);

  // A max-commit-count that is not a count is the cgitrc's line.
  const std::string bad_count = Write("bad-cgitrc", "css=/x.css\nmax-commit-count=lots\n");
  EXPECT_EQ(LoadError(Write("bad-count.conf", "cgitrc = " + bad_count + "\n")),
            bad_count + ":2: max-commit-count: not a number of commits (0-100000)");

  // A renamelimit that is not a whole number likewise; cgit's -1 and 0 are kept as written.
  const std::string bad_limit = Write("bad-limit-cgitrc", "renamelimit=many\n");
  EXPECT_EQ(LoadError(Write("bad-limit.conf", "cgitrc = " + bad_limit + "\n")),
            bad_limit + ":1: renamelimit: not a whole number");
  for (const char* limit : {"-1", "0"}) {
    auto c3 = LoadOk(Write(
        "limit.conf",
        "cgitrc = " + Write("limit-cgitrc", std::string("renamelimit=") + limit + "\n") + "\n"));
    ASSERT_NE(c3, nullptr);
    EXPECT_EQ(c3->rename_limit, std::atoi(limit));
  }

  // shellac.conf's own virtual-root wins over the imported one.
  auto c2 = LoadOk(Write("b.conf", "virtual-root = /x/\ncgitrc = " + cgitrc + "\n"));
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->virtual_root, "/x/");
}

// cgit's enable-commit-graph, commit-sort, branch-sort and enable-follow-links: global keys for the
// stanzas after them, repo.* keys for their stanza; an unknown sort leaves the setting as it was
// (cgit's).
TEST_F(ConfTest, CgitrcCommitGraphAndSorts) {
  const std::string cgitrc = Write("cgitrc",
                                   "repo.url=a\n"
                                   "repo.path=/srv/a.git\n"
                                   "repo.enable-commit-graph=1\n"
                                   "repo.enable-follow-links=1\n"
                                   "repo.branch-sort=age\n"
                                   "enable-commit-graph=1\n"
                                   "commit-sort=topo\n"
                                   "branch-sort=age\n"
                                   "enable-follow-links=1\n"
                                   "repo.url=b\n"
                                   "repo.path=/srv/b.git\n"
                                   "repo.commit-sort=date\n"
                                   "repo.branch-sort=name\n"
                                   "repo.enable-commit-graph=0\n"
                                   "repo.enable-follow-links=0\n"
                                   "commit-sort=sideways\n"
                                   "repo.url=c\n"
                                   "repo.path=/srv/c.git\n");
  auto c = LoadOk(Write("shellac.conf", "cgitrc = " + cgitrc + "\n"));
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->repositories.size(), 3u);
  const auto& a = c->repositories[0];
  const auto& b = c->repositories[1];
  const auto& r = c->repositories[2];
  EXPECT_TRUE(a.enable_commit_graph);
  EXPECT_EQ(a.commit_sort, 0);
  EXPECT_TRUE(a.branch_sort_age);
  EXPECT_TRUE(a.enable_follow_links);
  EXPECT_FALSE(b.enable_follow_links);
  EXPECT_TRUE(r.enable_follow_links);
  EXPECT_FALSE(b.enable_commit_graph);
  EXPECT_EQ(b.commit_sort, 1);
  EXPECT_FALSE(b.branch_sort_age);
  EXPECT_TRUE(r.enable_commit_graph);
  EXPECT_EQ(r.commit_sort, 2);
  EXPECT_TRUE(r.branch_sort_age);
}

TEST_F(ConfTest, RenderDefaultsAndErrors) {
  auto c = LoadOk("");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->virtual_root, "/");
  EXPECT_EQ(c->max_open_repos, 1024u);
  EXPECT_GE(c->render_threads, 1u);
  EXPECT_EQ(c->render_queue, 1024u);
  EXPECT_EQ(c->render_queue_timeout, 30s);
  EXPECT_EQ(c->client_max_renders, 0u);
  EXPECT_EQ(c->client_prefix_v4, 32u);
  EXPECT_EQ(c->client_prefix_v6, 128u);
  EXPECT_TRUE(c->trusted_proxies.empty());
  EXPECT_TRUE(c->repositories.empty());
  const std::string a = Write("a.conf", "render-threads = 0\n");
  EXPECT_TRUE(StartsWith(LoadError(a), a + ":1: render-threads: expected a whole number from 1"));
  const std::string b = Write("b.conf", "scan-path = " + dir_ + "/missing\n");
  EXPECT_TRUE(StartsWith(LoadError(b), b + ":1: scan-path: no such folder"));
  // Two repositories under one URL.
  const std::string r1 = Mkdir("one/x.git"), r2 = Mkdir("two/x.git");
  const std::string d = Write("d.conf", "repo = " + r1 + "\nrepo = " + r2 + "\n");
  EXPECT_TRUE(StartsWith(LoadError(d), d + ":2: repository url 'x.git' is already taken")) << LoadError(d);
}

TEST_F(ConfTest, RenderQueueKeys) {
  auto c = LoadOk(Write("q.conf",
                        "render-queue = 50\nrender-queue-timeout = 1500ms\nclient-max-renders = 2\n"
                        "client-prefix-v4 = 24\nclient-prefix-v6 = 56\n"
                        "trusted-proxy = 10.0.0.1, 192.168.0.0/16\ntrusted-proxy = 2001:db8::/32\n"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->render_queue, 50u);
  EXPECT_EQ(c->render_queue_timeout, 1500ms);
  EXPECT_EQ(c->client_max_renders, 2u);
  EXPECT_EQ(c->client_prefix_v4, 24u);
  EXPECT_EQ(c->client_prefix_v6, 56u);
  ASSERT_EQ(c->trusted_proxies.size(), 3u);
  EXPECT_EQ(c->trusted_proxies[1].text, "192.168.0.0/16");
  EXPECT_TRUE(InNetwork(c->trusted_proxies[0], "10.0.0.1"));
  EXPECT_TRUE(InNetwork(c->trusted_proxies[0], "::ffff:10.0.0.1")) << "a v4-mapped peer";
  EXPECT_FALSE(InNetwork(c->trusted_proxies[0], "10.0.0.2"));
  EXPECT_TRUE(InNetwork(c->trusted_proxies[1], "192.168.200.7"));
  EXPECT_FALSE(InNetwork(c->trusted_proxies[1], "192.169.0.1"));
  EXPECT_TRUE(InNetwork(c->trusted_proxies[2], "2001:db8:ffff::1"));
  EXPECT_FALSE(InNetwork(c->trusted_proxies[2], "2001:db9::1"));
  EXPECT_FALSE(InNetwork(c->trusted_proxies[2], "not an address"));
  // The command line replaces the file's list.
  auto d = LoadOk(Write("r.conf", "trusted-proxy = 10.0.0.1\n"), {{"trusted-proxy", "127.0.0.1"}});
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->trusted_proxies.size(), 1u);
  EXPECT_EQ(d->trusted_proxies[0].text, "127.0.0.1");

  const std::string a = Write("a.conf", "render-queue-timeout = soon\n");
  EXPECT_TRUE(StartsWith(LoadError(a), a + ":1: render-queue-timeout: bad duration 'soon'")) << LoadError(a);
  const std::string b = Write("b.conf", "# comment\nrender-queue-timeout = 0\n");
  EXPECT_TRUE(StartsWith(LoadError(b), b + ":2: render-queue-timeout: must be more than 0")) << LoadError(b);
  const std::string e = Write("e.conf", "trusted-proxy = 10.0.0.1 10.0.0.300\n");
  EXPECT_TRUE(StartsWith(LoadError(e), e + ":1: trusted-proxy: bad address '10.0.0.300'")) << LoadError(e);
  const std::string f = Write("f.conf", "trusted-proxy = 10.0.0.0/33\n");
  EXPECT_TRUE(StartsWith(LoadError(f), f + ":1: trusted-proxy: bad address")) << LoadError(f);
  const std::string g = Write("g.conf", "client-prefix-v4 = 33\n");
  EXPECT_TRUE(StartsWith(LoadError(g), g + ":1: client-prefix-v4: expected a whole number from 8 to 32")) << LoadError(g);
  const std::string h = Write("h.conf", "client-max-renders = -1\n");
  EXPECT_TRUE(StartsWith(LoadError(h), h + ":1: client-max-renders: expected a whole number")) << LoadError(h);
}

TEST_F(ConfTest, CgitKeysInShellacFileAreStillErrors) {
  const std::string path = Write("shellac.conf", "threads = 2\ncss=/cgit.css\n");
  EXPECT_TRUE(StartsWith(LoadError(path), path + ":2: css: unknown key"));
  // Repository stanzas are shellac keys too, but stricter than in a cgitrc: see
  // RepositoryStanzasInShellacsOwnFile.
  const std::string path2 = Write("shellac2.conf", "repo.path = /srv/git/x.git\n");
  EXPECT_TRUE(StartsWith(LoadError(path2), path2 + ":1: repo.path: no repo.url= before it"));
  const std::string path3 = Write("shellac3.conf", "repo.clone-url = git://x\n");
  EXPECT_TRUE(StartsWith(LoadError(path3), path3 + ":1: repo.clone-url: unknown key"));
}

TEST_F(ConfTest, CgitrcFromCommandLine) {
  const std::string cgitrc = Write("cgitrc", "repo.path=/srv/a.git\n");
  auto c = LoadOk("", {{"cgitrc", cgitrc}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->repos, std::vector<std::string>{"/srv/a.git"});
}

// ---------------------------------------------------------------------------------------------
// Reload

TEST_F(ConfTest, ReloadGivesIndependentSnapshots) {
  const std::string path = Write("a.conf", "threads = 2\nlisten = 127.0.0.1:9601\n");
  auto first = LoadOk(path);
  ASSERT_NE(first, nullptr);
  Write("a.conf", "threads = 5\nlisten = 127.0.0.1:9602\nlisten = 127.0.0.1:9603\n");
  auto second = LoadOk(path);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first.get(), second.get());
  EXPECT_EQ(first->threads, 2u);
  EXPECT_EQ(Texts(first->listen), std::vector<std::string>{"127.0.0.1:9601"});
  EXPECT_EQ(second->threads, 5u);
  EXPECT_EQ(Texts(second->listen), (std::vector<std::string>{"127.0.0.1:9602", "127.0.0.1:9603"}));
  EXPECT_EQ(first->config_file, path);
  EXPECT_EQ(second->config_file, path);

  // A broken reload fails without touching the published snapshot.
  Write("a.conf", "threads = many\n");
  std::string error;
  EXPECT_EQ(Load(path, {}, &error), nullptr);
  EXPECT_TRUE(StartsWith(error, path + ":1: threads: "));
  EXPECT_EQ(second->threads, 5u);
}

// ---------------------------------------------------------------------------------------------
// ParseDuration

TEST(ParseDuration, Units) {
  struct Case {
    const char* text;
    Millis want;
  };
  const Case cases[] = {
      {"500ms", 500ms},
      {"10s", 10s},
      {"2m", 2min},
      {"1h", 1h},
      {"1d", 24h},
      {"7", 7s},
      {"0", 0ms},
      {"0ms", 0ms},
      {"10S", 10s},
      {"5MS", 5ms},
      {" 10s ", 10s},
      {"007s", 7s},
      {"1099511627s", Millis(1099511627000)},
  };
  for (const auto& c : cases) {
    Millis out{-1};
    EXPECT_TRUE(ParseDuration(c.text, &out)) << c.text;
    EXPECT_EQ(out, c.want) << c.text;
  }
}

TEST(ParseDuration, Rejects) {
  for (const char* text : {"", " ", "s", "ms", "-1", "-1s", "+1s", "1.5s", "10 s", "10sec", "1w",
                           "1y", "10x", "1ms5", "0x10", "abc",
                           "1099511628s",              // just above the 2^40 ms cap
                           "99999999999999999999",     // 20 digits
                           "9999999999999999999d"}) {  // would overflow uint64 when multiplied
    Millis out{1234};
    EXPECT_FALSE(ParseDuration(text, &out)) << "'" << text << "'";
    EXPECT_EQ(out, Millis{1234}) << "output touched for '" << text << "'";
  }
}

// ---------------------------------------------------------------------------------------------
// ParseSize

TEST(ParseSize, Units) {
  struct Case {
    const char* text;
    uint64_t want;
  };
  const Case cases[] = {
      {"512", 512},
      {"0", 0},
      {"64K", 64ull << 10},
      {"64k", 64ull << 10},
      {"64KB", 64ull << 10},
      {"64kib", 64ull << 10},
      {"256M", 256ull << 20},
      {"1MiB", 1ull << 20},
      {"2G", 2ull << 30},
      {"1T", 1ull << 40},
      {"7B", 7},
      {" 3M ", 3ull << 20},
      {"17179869183G", 17179869183ull << 30},  // largest that fits
      {"18446744073709551", 18446744073709551ull},
      {"18446744073709551615", 18446744073709551615ull},  // 2^64-1: 20 digits, the value counts
  };
  for (const auto& c : cases) {
    uint64_t out = 1;
    EXPECT_TRUE(ParseSize(c.text, &out)) << c.text;
    EXPECT_EQ(out, c.want) << c.text;
  }
}

TEST(ParseSize, Rejects) {
  for (const char* text :
       {"", "K", "-1", "-1K", "+5", "1.5M", "5 M", "5X", "5KK", "5P", "0x10", "ten",
        "17179869184G",          // 2^64: overflow
        "99999999999999999999",  // 20 digits
        "16777216T"}) {          // 2^64
    uint64_t out = 4321;
    EXPECT_FALSE(ParseSize(text, &out)) << "'" << text << "'";
    EXPECT_EQ(out, 4321u) << "output touched for '" << text << "'";
  }
}

// "i" only means something after a unit letter (KiB); on its own it is a typo, not bytes.
TEST(ParseSize, RejectsBinaryMarkerWithoutUnit) {
  uint64_t out = 0;
  EXPECT_FALSE(ParseSize("5i", &out)) << "parsed as " << out;
  EXPECT_FALSE(ParseSize("5iB", &out)) << "parsed as " << out;
}

// ---------------------------------------------------------------------------------------------
// ParseAddress

TEST(ParseAddress, Ipv4) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(ParseAddress("127.0.0.1:80", &a, &why)) << why;
  EXPECT_EQ(a.text, "127.0.0.1:80");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 80);
  EXPECT_EQ(PortInStorage(a), 80);
  EXPECT_EQ(Ipv4(a), INADDR_LOOPBACK);
  EXPECT_EQ(a.length, sizeof(sockaddr_in));
}

TEST_F(ConfTest, RepositoryStanzasInShellacsOwnFile) {
  const std::string a = Mkdir("a.git");
  const std::string b = Mkdir("b.git");
  const std::string file = Write("stanzas.conf", "section=Kernel\nrepo.url=pub/linux\nrepo.path=" + a +
                                                     "\nrepo.desc=the kernel\nrepo.owner=Linus\n"
                                                     "repo.url=tools\nrepo.path=" + b + "\nrepo.name=Tools\n");
  auto c = LoadOk(file);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->repositories.size(), 2u);
  EXPECT_EQ(c->repositories[0].url, "pub/linux");
  EXPECT_EQ(c->repositories[0].path, a);
  EXPECT_EQ(c->repositories[0].desc, "the kernel");
  EXPECT_EQ(c->repositories[0].owner, "Linus");
  EXPECT_EQ(c->repositories[0].section, "Kernel");
  EXPECT_EQ(c->repositories[1].name, "Tools");
  EXPECT_EQ(c->repositories[1].origin, file + ":6");
  const std::string orphan = Write("orphan.conf", "listen=127.0.0.1:0\nrepo.path=" + a + "\n");
  EXPECT_EQ(LoadError(orphan), orphan + ":2: repo.path: no repo.url= before it starts a repository");
  const std::string missing = Write("missing.conf", "repo.url=x\nrepo.path=/no/such/repo.git\n");
  EXPECT_EQ(LoadError(missing), missing + ":2: repo.path: no such repository '/no/such/repo.git'");
}

TEST_F(ConfTest, EsiKeys) {
  const std::string file = Write(
      "esi.conf",
      "esi = always\nesi-url = ^/a/\nesi-url = ^/b/\nesi-allow-host = .*\\.example\\.org\n"
      "esi-max-depth = 2\nesi-max-includes = 10\nesi-parallel = 4\nforce-store = ^/static/\n");
  auto c = LoadOk(file);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->esi, Config::EsiMode::kAlways);
  ASSERT_EQ(c->esi_urls.size(), 2u);
  EXPECT_EQ(c->esi_urls[1].text, "^/b/");
  EXPECT_EQ(c->esi_urls[1].origin, file + ":3");
  ASSERT_EQ(c->esi_allow_hosts.size(), 1u);
  EXPECT_EQ(c->esi_max_depth, 2u);
  EXPECT_EQ(c->esi_max_includes, 10u);
  EXPECT_EQ(c->esi_parallel, 4u);
  ASSERT_EQ(c->force_store.size(), 1u);
  auto off = LoadOk("", {{"esi", "OFF"}});
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(off->esi, Config::EsiMode::kOff);
  const std::string bad = Write("bad.conf", "\nesi=maybe\n");
  EXPECT_EQ(LoadError(bad), bad + ":2: esi: expected off, surrogate or always, got 'maybe'");
  EXPECT_EQ(LoadError("", {{"esi-max-depth", "33"}}),
            "command line: --esi-max-depth: expected a whole number from 0 to 32, got '33'");
  EXPECT_EQ(LoadError("", {{"esi-parallel", "0"}}),
            "command line: --esi-parallel: expected a whole number from 1 to 1024, got '0'");
  EXPECT_EQ(LoadError("", {{"esi-url", ""}}),
            "command line: --esi-url: expected a regular expression");
}

TEST(ParseAddress, Ipv6Brackets) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(ParseAddress("[::1]:80", &a, &why)) << why;
  EXPECT_EQ(a.text, "[::1]:80");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 80);
  ASSERT_EQ(a.storage.ss_family, AF_INET6);
  EXPECT_EQ(a.length, sizeof(sockaddr_in6));
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
  EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr));
  EXPECT_EQ(ntohs(in6->sin6_port), 80);
}

TEST(ParseAddress, HttpUrl) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(ParseAddress("http://127.0.0.1:3000/", &a, &why)) << why;
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 3000);
  EXPECT_EQ(PortInStorage(a), 3000);
  EXPECT_EQ(a.text, "http://127.0.0.1:3000/");
  ASSERT_TRUE(ParseAddress("http://127.0.0.1:3001", &a, &why)) << why;
  EXPECT_EQ(a.port, 3001);
  ASSERT_TRUE(ParseAddress("http://[::1]:3002/", &a, &why)) << why;
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 3002);
}

TEST(ParseAddress, HttpsUrlMarksTls) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(ParseAddress("https://localhost:8443/", &a, &why)) << why;
  EXPECT_TRUE(a.tls);
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 8443);
  ASSERT_TRUE(ParseAddress("http://127.0.0.1:80", &a, &why)) << why;
  EXPECT_FALSE(a.tls);
}

TEST(ParseAddress, HostName) {
  SocketAddress a;
  std::string why;
  ASSERT_TRUE(ParseAddress("localhost:80", &a, &why)) << why;
  EXPECT_EQ(a.host, "localhost");
  EXPECT_EQ(a.port, 80);
  EXPECT_EQ(PortInStorage(a), 80);
  EXPECT_TRUE(a.storage.ss_family == AF_INET || a.storage.ss_family == AF_INET6);
  EXPECT_GT(a.length, 0u);
}

TEST(ParseAddress, PortBounds) {
  SocketAddress a;
  std::string why;
  EXPECT_TRUE(ParseAddress("127.0.0.1:0", &a, &why)) << why;
  EXPECT_EQ(a.port, 0);
  EXPECT_TRUE(ParseAddress("127.0.0.1:65535", &a, &why)) << why;
  EXPECT_EQ(a.port, 65535);
  EXPECT_EQ(PortInStorage(a), 65535);
  why.clear();
  EXPECT_FALSE(ParseAddress("127.0.0.1:65536", &a, &why));
  EXPECT_NE(why.find("127.0.0.1:65536"), std::string::npos) << why;
}

TEST(ParseAddress, Rejects) {
  for (const char* text : {"", "127.0.0.1", "127.0.0.1:", ":80", "127.0.0.1:-1", "127.0.0.1:+80",
                           "127.0.0.1:8o", "127.0.0.1:99999999999999999999", "::1:80", "[::1]", "[::1]80",
                           "[::1:80", "[]:80", "https://127.0.0.1", "ftp://127.0.0.1:21",
                           "http://127.0.0.1:80/path", "http://127.0.0.1", "127.0.0.1:80 extra"}) {
    SocketAddress a;
    std::string why;
    EXPECT_FALSE(ParseAddress(text, &a, &why)) << "'" << text << "'";
    EXPECT_FALSE(why.empty()) << "no reason for '" << text << "'";
  }
}

// LoadFrom() with a MemoryEnvironment: the configuration's files, folders and repositories all in
// memory (what fuzz/config.cc parses through); nothing else is read.
TEST(MemoryEnvironment, IncludesCgitrcAndScanPathComeFromMemory) {
  const MemoryEnvironment env({
      {"/m/shellac.conf", "include=inc.conf\ncgitrc=/m/cgitrc\nscan-path=/m/r\n"},
      {"/m/inc.conf", "threads=3\n"},
      {"/m/cgitrc", "repo.url=one\nrepo.path=/m/one.git\nrepo.desc=first\n"},
      {"/m/one.git/HEAD", ""},
      {"/m/r/two.git/HEAD", ""},
      {"/m/r/two.git/objects/x", ""},
      {"/m/r/two.git/refs/x", ""},
      {"/m/r/two.git/description", "Two\nsecond line\n"},
      {"/m/r/nested/three/.git/HEAD", ""},
      {"/m/r/nested/three/.git/objects/x", ""},
      {"/m/r/nested/three/.git/refs/x", ""},
      {"/m/r/.hidden.git/HEAD", ""},
      {"/m/r/.hidden.git/objects/x", ""},
      {"/m/r/.hidden.git/refs/x", ""},
  });
  std::string error;
  auto c = LoadFrom(env, "/m/shellac.conf", {}, &error);
  ASSERT_NE(c, nullptr) << error;
  EXPECT_EQ(c->threads, 3u);
  EXPECT_EQ(c->sources, (std::vector<std::string>{"/m/shellac.conf", "/m/inc.conf", "/m/cgitrc"}));
  ASSERT_EQ(c->repositories.size(), 3u);
  EXPECT_EQ(c->repositories[0].url, "nested/three");
  EXPECT_EQ(c->repositories[0].path, "/m/r/nested/three/.git");
  EXPECT_EQ(c->repositories[1].url, "two.git");
  EXPECT_EQ(c->repositories[1].desc, "Two");
  EXPECT_EQ(c->repositories[2].url, "one");
  EXPECT_EQ(c->repositories[2].desc, "first");
}

TEST(MemoryEnvironment, NothingOutsideItIsReadAndNoNameIsLookedUp) {
  const MemoryEnvironment env({{"/m/a.conf", "include=/etc/hostname\n"},
                               {"/m/b.conf", "backend=localhost:80\n"},
                               {"/m/c.conf", "backend=127.0.0.1:80\nrepo=/etc\n"}});
  std::string error;
  EXPECT_EQ(LoadFrom(env, "/m/a.conf", {}, &error), nullptr);
  EXPECT_EQ(error, "/m/a.conf:1: include: cannot read '/etc/hostname': No such file or directory");
  EXPECT_EQ(LoadFrom(env, "/m/b.conf", {}, &error), nullptr);
  EXPECT_TRUE(error.starts_with("/m/b.conf:1: backend: cannot resolve 'localhost'")) << error;
  EXPECT_EQ(LoadFrom(env, "/m/c.conf", {}, &error), nullptr);
  EXPECT_EQ(error, "/m/c.conf:2: repo: no such repository '/etc'");
  EXPECT_EQ(LoadFrom(env, "/m", {}, &error), nullptr);
  EXPECT_EQ(error, "cannot read '/m': Is a directory");
}

// Fuzz finding: `repo=/` made a repository with an empty URL (and `repo=.` one called ".").
TEST(MemoryEnvironment, RepoWithoutAFolderNameIsRefused) {
  const MemoryEnvironment env({{"/m/a.conf", "repo=/\n"},
                               {"/m/b.conf", "repo=.\n"},
                               {"/r/x.git/HEAD", "ref: refs/heads/main\n"}});
  std::string error;
  EXPECT_EQ(LoadFrom(env, "/m/a.conf", {}, &error), nullptr);
  EXPECT_EQ(error,
            "/m/a.conf:1: repo: cannot name a repository after '/': give it repo.url= and "
            "repo.path=");
  EXPECT_EQ(LoadFrom(env, "/m/b.conf", {}, &error), nullptr);
  EXPECT_TRUE(error.starts_with("/m/b.conf:1: repo: ")) << error;
}

}  // namespace
}  // namespace shellac::conf
