#include "conf/config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

namespace shellac::conf {
namespace {

constexpr int kMaxIncludeDepth = 16;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A git directory has HEAD, objects/ and refs/ (what git itself checks before trusting a folder).
bool IsGitDir(const Environment& env, const std::string& path) {
  return env.Access(path + "/HEAD", F_OK) == 0 && env.IsDirectory(path + "/objects") &&
         env.IsDirectory(path + "/refs");
}

std::string StripSlashes(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return std::string(s);
}

// cgit-style URL of a repository found on disk: a work tree's folder name, or a bare repository's
// folder name as is ("linux.git").
std::string UrlForPath(const std::string& path) {
  std::string p = StripSlashes(path);
  if (p.ends_with("/.git")) p.resize(p.size() - 5);
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// First line of $GIT_DIR/description, unless it is git's template text.
std::string DescriptionFile(const Environment& env, const std::string& git_dir) {
  std::string text;
  int error_number = 0;
  if (!env.ReadFile(git_dir + "/description", &text, &error_number)) return "";
  std::string line = text.substr(0, text.find('\n'));
  if (line.starts_with("Unnamed repository")) return "";
  return line;
}

// Where a value came from, for messages: "FILE:LINE" or "command line".
struct Origin {
  std::string file;
  int line = 0;
  std::string Describe() const { return line > 0 ? file + ":" + std::to_string(line) : file; }
};

// A failed setting: carries the full one-line message.
struct Failure {
  std::string message;
};

class Builder {
 public:
  Builder(const Environment& env, Config* config) : env_(env), config_(config) {}

  // Applies one key=value. Throws Failure with "ORIGIN: key: why".
  void Set(const std::string& key, std::string_view value, const Origin& origin, bool from_cli) {
    // On the command line the key was given as the flag of the same name.
    auto fail = [&](const std::string& why) {
      throw Failure{origin.Describe() + ": " + (from_cli ? "--" + key : key) + ": " + why};
    };
    auto duration = [&](Millis* out) {
      if (!ParseDuration(value, out)) fail("bad duration '" + std::string(value) + "' (use e.g. 500ms, 10s, 2m)");
    };
    auto size = [&](uint64_t* out) {
      if (!ParseSize(value, out)) fail("bad size '" + std::string(value) + "' (use e.g. 512, 64K, 256M, 2G)");
    };
    auto count = [&](uint64_t min, uint64_t max) -> uint64_t {
      uint64_t v = 0;
      if (!ParseUnsigned(value, &v) || v < min || v > max)
        fail("expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
             ", got '" + std::string(value) + "'");
      return v;
    };
    auto address = [&]() {
      SocketAddress a;
      std::string why;
      if (!ParseAddress(value, &a, &why, env_.ResolvesNames())) fail(why);
      return a;
    };
    auto readable = [&](const std::string& path) {
      if (const int e = env_.Access(path, R_OK); e != 0) fail("cannot read '" + path + "': " + std::strerror(e));
    };
    // Not https:// : only the backend may be reached over TLS.
    auto plain_address = [&]() {
      SocketAddress a = address();
      if (a.tls) fail("https:// is for backend=; use listen-tls= for a TLS listener");
      return a;
    };
    // "cert=FILE key=FILE [ocsp=FILE]" after the first word of a TLS value.
    auto tls_certificate = [&](std::string_view parts, Config::TlsCertificate* out) {
      out->origin = origin.Describe();
      while (!(parts = Trim(parts)).empty()) {
        const auto end = parts.find_first_of(" \t");
        const std::string_view part = parts.substr(0, end);
        parts = end == std::string_view::npos ? std::string_view() : parts.substr(end);
        const auto eq = part.find('=');
        const std::string_view name = part.substr(0, eq);
        const std::string file(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
        std::string* target = name == "cert" ? &out->cert : name == "key" ? &out->key : name == "ocsp" ? &out->ocsp : nullptr;
        if (target == nullptr) fail("unknown part '" + std::string(part) + "' (expected cert=FILE, key=FILE, ocsp=FILE)");
        if (file.empty()) fail(std::string(name) + "= needs a file");
        *target = file;
      }
      if (out->cert.empty() || out->key.empty()) fail("needs cert=FILE and key=FILE");
    };
    auto first_word = [&]() {
      const std::string_view v = Trim(value);
      const auto end = v.find_first_of(" \t");
      return std::pair{v.substr(0, end), end == std::string_view::npos ? std::string_view() : v.substr(end)};
    };
    // A list key given on the command line replaces whatever the file said.
    auto replace_once = [&](auto& list) {
      if (from_cli && !cli_replaced_.count(key)) {
        list.clear();
        cli_replaced_.insert(key);
      }
    };

    if (key == "listen") {
      if (!listen_given_) config_->listen.clear();  // the first listen= replaces the built-in one
      listen_given_ = true;
      replace_once(config_->listen);
      config_->listen.push_back(plain_address());
    } else if (key == "admin-listen") {
      if (Lower(value) == "off") config_->admin_listen.reset();
      else config_->admin_listen = plain_address();
      admin_origin_ = origin;
    } else if (key == "backend") {
      if (Lower(value) == "none" || value.empty()) config_->backend.reset();
      else config_->backend = address();
    } else if (key == "threads") {
      config_->threads = static_cast<unsigned>(count(1, 256));
    } else if (key == "cache") {
      const std::string v = Lower(value);
      if (v != "on" && v != "off") fail("expected on or off, got '" + std::string(value) + "'");
      config_->cache = v == "on";
    } else if (key == "cache-key") {
      if (value.find("=>") == std::string_view::npos) fail("expected REGEX => TEMPLATE");
      config_->cache_keys.push_back(Config::Rule{std::string(value), origin.Describe()});
    } else if (key == "ttl") {
      const auto arrow = value.find("=>");
      Millis ignored{};
      if (arrow == std::string_view::npos || !ParseDuration(Trim(value.substr(arrow + 2)), &ignored)) {
        fail("expected REGEX => DURATION");
      }
      config_->ttl_rules.push_back(Config::Rule{std::string(value), origin.Describe()});
    } else if (key == "force-store") {
      if (value.empty()) fail("expected a regular expression");
      replace_once(config_->force_store);
      config_->force_store.push_back(Config::Rule{std::string(value), origin.Describe()});
    } else if (key == "default-ttl") {
      duration(&config_->default_ttl);
    } else if (key == "grace") {
      duration(&config_->grace);
    } else if (key == "fragment-ttl") {
      if (Lower(value) == "forever") {
        config_->fragment_ttl.reset();
      } else {
        Millis ttl{};
        duration(&ttl);
        config_->fragment_ttl = ttl;
      }
    } else if (key == "single-flight-timeout") {
      duration(&config_->single_flight_timeout);
    } else if (key == "cache-size") {
      size(&config_->cache_size);
      if (config_->cache_size < (1u << 20)) fail("must be at least 1M");
    } else if (key == "esi") {
      const std::string v = Lower(value);
      if (v == "off") config_->esi = Config::EsiMode::kOff;
      else if (v == "surrogate") config_->esi = Config::EsiMode::kSurrogate;
      else if (v == "always") config_->esi = Config::EsiMode::kAlways;
      else fail("expected off, surrogate or always, got '" + std::string(value) + "'");
    } else if (key == "esi-url") {
      if (value.empty()) fail("expected a regular expression");
      replace_once(config_->esi_urls);
      config_->esi_urls.push_back(Config::Rule{std::string(value), origin.Describe()});
    } else if (key == "esi-allow-host") {
      if (value.empty()) fail("expected a regular expression");
      replace_once(config_->esi_allow_hosts);
      config_->esi_allow_hosts.push_back(Config::Rule{std::string(value), origin.Describe()});
    } else if (key == "esi-max-depth") {
      config_->esi_max_depth = static_cast<unsigned>(count(0, 32));
    } else if (key == "esi-max-includes") {
      config_->esi_max_includes = static_cast<unsigned>(count(1, 100000));
    } else if (key == "esi-parallel") {
      config_->esi_parallel = static_cast<unsigned>(count(1, 1024));
    } else if (key == "repo") {
      replace_once(config_->repos);
      if (from_cli && !cli_replaced_.count("repositories")) {
        // --repo replaces the file's repo= list (as for every list key), not its scan-path finds.
        std::erase_if(config_->repositories, [&](const auto& r) { return repo_key_paths_.count(r.path); });
        cli_replaced_.insert("repositories");
      }
      std::string path(value);
      if (path.empty()) fail("empty path");
      if (env_.Access(path, F_OK) != 0) fail("no such repository '" + path + "'");
      config_->repos.push_back(path);
      // A work tree serves its .git folder.
      std::string git_dir = IsGitDir(env_, path + "/.git") ? path + "/.git" : path;
      const std::string url = UrlForPath(path);
      if (url.empty() || url == "." || url == "..") {
        // "/", ".", "..": no folder name to serve it under (found by fuzzing).
        fail("cannot name a repository after '" + path + "': give it repo.url= and repo.path=");
      }
      if (!from_cli) repo_key_paths_.insert(git_dir);
      AddRepository(url, git_dir, origin, DescriptionFile(env_, git_dir));
      cgit_open_stanza_ = false;
    } else if (key == "repo.url" || key == "repo.path" || key == "repo.name" || key == "repo.desc" ||
               key == "repo.owner" || key == "section") {
      // cgit's repository stanzas, written in shellac's own file: as in a cgitrc, but a key that
      // belongs to no stanza, or a path that does not exist, is an error here.
      const bool open = cgit_open_stanza_ && config_->repositories.size() > cgit_first_repo_;
      if (key != "repo.url" && key != "section" && !open) fail("no repo.url= before it starts a repository");
      if (key == "repo.path" && env_.Access(std::string(value), F_OK) != 0) {
        fail("no such repository '" + std::string(value) + "'");
      }
      SetCgitKey(key, value, origin);
    } else if (key == "scan-path") {
      std::string root(value);
      if (!env_.IsDirectory(root)) fail("no such folder '" + root + "'");
      ScanPath(root, origin);
    } else if (key == "virtual-root") {
      config_->virtual_root = "/" + StripSlashes(value) + "/";
      if (config_->virtual_root == "//") config_->virtual_root = "/";
      virtual_root_given_ = true;
    } else if (key == "max-open-repos") {
      config_->max_open_repos = static_cast<unsigned>(count(1, 100000));
    } else if (key == "render-threads") {
      config_->render_threads = static_cast<unsigned>(count(1, 256));
    } else if (key == "render-queue") {
      config_->render_queue = static_cast<unsigned>(count(1, 1000000));
    } else if (key == "render-queue-timeout") {
      duration(&config_->render_queue_timeout);
      if (config_->render_queue_timeout.count() == 0) fail("must be more than 0");
    } else if (key == "client-max-renders") {
      config_->client_max_renders = static_cast<unsigned>(count(0, 256));
    } else if (key == "client-prefix-v4") {
      config_->client_prefix_v4 = static_cast<unsigned>(count(8, 32));
    } else if (key == "client-prefix-v6") {
      config_->client_prefix_v6 = static_cast<unsigned>(count(16, 128));
    } else if (key == "trusted-proxy") {
      replace_once(config_->trusted_proxies);
      std::string_view rest = value;
      bool any = false;
      while (!(rest = Trim(rest)).empty()) {
        const auto end = rest.find_first_of(" \t,");
        const std::string_view word = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (word.empty()) continue;
        Config::Network net;
        if (!ParseNetwork(word, &net)) {
          fail("bad address '" + std::string(word) + "' (expected ADDR or ADDR/BITS, IPv4 or IPv6)");
        }
        config_->trusted_proxies.push_back(net);
        any = true;
      }
      if (!any) fail("expected one or more addresses");
    } else if (key == "cgitrc") {
      std::string path(value);
      readable(path);
      config_->cgitrc = path;
    } else if (key == "access-log") {
      if (value.empty()) fail("expected a file, 'stderr' or 'off'");
      config_->access_log = std::string(value);
    } else if (key == "client-header-timeout") {
      duration(&config_->client_header_timeout);
    } else if (key == "client-idle-timeout") {
      duration(&config_->client_idle_timeout);
    } else if (key == "client-body-timeout") {
      duration(&config_->client_body_timeout);
    } else if (key == "send-timeout") {
      duration(&config_->send_timeout);
    } else if (key == "max-request-line") {
      size(&config_->max_request_line);
      if (config_->max_request_line < 64) fail("must be at least 64");
    } else if (key == "max-header-count") {
      config_->max_header_count = count(1, 10000);
    } else if (key == "max-header-bytes") {
      size(&config_->max_header_bytes);
      if (config_->max_header_bytes < 256) fail("must be at least 256");
    } else if (key == "max-body-size") {
      size(&config_->max_body_size);
    } else if (key == "upstream-connect-timeout") {
      duration(&config_->upstream_connect_timeout);
    } else if (key == "upstream-first-byte-timeout") {
      duration(&config_->upstream_first_byte_timeout);
    } else if (key == "upstream-between-bytes-timeout") {
      duration(&config_->upstream_between_bytes_timeout);
    } else if (key == "upstream-idle-timeout") {
      duration(&config_->upstream_idle_timeout);
    } else if (key == "upstream-max-idle") {
      config_->upstream_max_idle = static_cast<unsigned>(count(0, 100000));
    } else if (key == "shutdown-timeout") {
      duration(&config_->shutdown_timeout);
    } else if (key == "listen-tls") {
      replace_once(config_->listen_tls);
      const auto [where, parts] = first_word();
      Config::TlsListener listener;
      SocketAddress a;
      std::string why;
      if (where.empty()) fail("expected ADDR:PORT cert=FILE key=FILE");
      if (!ParseAddress(where, &a, &why, env_.ResolvesNames())) fail(why);
      if (a.tls) fail("give the address without https://");
      for (const auto& other : config_->listen_tls) {
        if (other.address.text == a.text) fail(a.text + " is given twice (each address has one default certificate)");
      }
      listener.address = a;
      tls_certificate(parts, &listener.certificate);
      config_->listen_tls.push_back(std::move(listener));
    } else if (key == "tls-cert") {
      replace_once(config_->tls_certs);
      const auto [host, parts] = first_word();
      if (host.empty() || host.find('=') != std::string_view::npos) fail("expected HOSTNAME cert=FILE key=FILE");
      Config::TlsCertificate certificate;
      certificate.host = Lower(host);
      tls_certificate(parts, &certificate);
      config_->tls_certs.push_back(std::move(certificate));
    } else if (key == "tls-ocsp") {
      config_->tls_ocsp = Lower(value) == "off" ? std::string() : std::string(value);
    } else if (key == "tls-ciphers" || key == "tls-ciphersuites") {
      if (value.empty()) fail("expected an OpenSSL cipher list");
      (key == "tls-ciphers" ? config_->tls_ciphers : config_->tls_ciphersuites) = std::string(value);
    } else if (key == "tls-handshake-timeout") {
      duration(&config_->tls_handshake_timeout);
      if (config_->tls_handshake_timeout.count() == 0) fail("must be more than 0");
    } else if (key == "tls-session-cache") {
      config_->tls_session_cache = count(0, 10'000'000);
    } else if (key == "tls-ticket-rotation") {
      duration(&config_->tls_ticket_rotation);
    } else if (key == "hsts") {
      if (Lower(value) == "off") config_->hsts.clear();
      else if (!Lower(value).starts_with("max-age=")) fail("expected max-age=SECONDS[; includeSubDomains] or off");
      else config_->hsts = std::string(value);
    } else if (key == "backend-ca") {
      std::string path(value);
      if (Lower(path) == "system" || path.empty()) path.clear();
      else readable(path);
      config_->backend_ca = path;
    } else {
      fail("unknown key");
    }
  }

  // Reads one file (and its includes). Throws Failure.
  void ReadFile(const std::string& path, const Origin& included_from, int depth) {
    if (depth > kMaxIncludeDepth) {
      throw Failure{included_from.Describe() + ": include: nested more than " +
                    std::to_string(kMaxIncludeDepth) + " deep (include loop?)"};
    }
    std::string contents;
    int error_number = 0;
    if (!env_.ReadFile(path, &contents, &error_number)) {
      std::string why = "cannot read '" + path + "': " + std::strerror(error_number);
      if (included_from.line > 0) throw Failure{included_from.Describe() + ": include: " + why};
      throw Failure{why};
    }
    config_->sources.push_back(path);
    std::string_view rest = contents;
    int number = 0;
    while (!rest.empty()) {
      const size_t eol = rest.find('\n');
      const std::string_view line = rest.substr(0, eol);
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
      ++number;
      std::string_view text = Trim(line);
      if (text.empty() || text.front() == '#') continue;
      Origin origin{path, number};
      auto eq = text.find('=');
      if (eq == std::string_view::npos) {
        throw Failure{origin.Describe() + ": " + std::string(text.substr(0, 40)) +
                      ": expected key=value"};
      }
      std::string key(Trim(text.substr(0, eq)));
      std::string_view value = Trim(text.substr(eq + 1));
      if (key.empty()) throw Failure{origin.Describe() + ": expected key=value, the key is empty"};
      if (key == "include") {
        std::string target(value);
        if (target.empty()) throw Failure{origin.Describe() + ": include: empty file name"};
        if (target.front() != '/') target = DirName(path) + "/" + target;
        ReadFile(target, origin, depth + 1);
        continue;
      }
      if (cgit_mode_) {
        SetCgitKey(key, value, origin);
        continue;
      }
      Set(key, value, origin, /*from_cli=*/false);
    }
  }

  // One key of an imported cgitrc. cgit keys shellac has no use for are accepted and ignored, as
  // are values cgit itself would ignore (a repo.path without its repo.url).
  void SetCgitKey(const std::string& key, std::string_view value, const Origin& origin) {
    auto* repo = config_->repositories.size() > cgit_first_repo_ && cgit_open_stanza_
                     ? &config_->repositories.back()
                     : nullptr;
    if (key == "repo.url") {
      std::string url = StripSlashes(value);
      if (url.empty()) throw Failure{origin.Describe() + ": repo.url: empty"};
      Config::Repository r;
      r.url = url;
      r.name = url;
      r.section = section_;
      r.origin = origin.Describe();
      config_->repositories.push_back(std::move(r));
      cgit_open_stanza_ = true;
    } else if (key == "repo.path") {
      config_->repos.emplace_back(value);
      if (repo) repo->path = std::string(value);
    } else if (key == "repo.name") {
      if (repo) repo->name = std::string(value);
    } else if (key == "repo.desc") {
      if (repo) repo->desc = std::string(value);
    } else if (key == "repo.owner") {
      if (repo) repo->owner = std::string(value);
    } else if (key == "section") {
      section_ = std::string(value);
    } else if (key == "scan-path") {
      if (env_.IsDirectory(std::string(value))) ScanPath(std::string(value), origin);
      cgit_open_stanza_ = false;
    } else if (key == "virtual-root") {
      if (!virtual_root_given_) {
        config_->virtual_root = "/" + StripSlashes(value) + "/";
        if (config_->virtual_root == "//") config_->virtual_root = "/";
      }
    } else if (key == "css") {
      config_->css = std::string(value);
    } else if (key == "logo") {
      config_->logo = std::string(value);
    } else if (key == "root-title") {
      config_->root_title = std::string(value);
    } else if (key == "root-desc") {
      config_->root_desc = std::string(value);
    } else if (key == "max-blob-size") {
      uint64_t kib = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), kib);
      if (ec != std::errc() || end != value.data() + value.size())
        throw Failure{origin.Describe() + ": max-blob-size: not a number of KiB"};
      config_->max_blob_size = kib;
    } else if (key == "source-filter") {
      config_->source_filter = std::string(value);
    } else if (key == "repo.source-filter") {
      if (repo) repo->source_filter = std::string(value);
    }
  }

  void AddRepository(std::string url, std::string path, const Origin& origin, std::string desc) {
    Config::Repository r;
    r.name = url;
    r.url = std::move(url);
    r.path = std::move(path);
    r.desc = std::move(desc);
    r.section = section_;
    r.origin = origin.Describe();
    config_->repositories.push_back(std::move(r));
  }

  // Finds repositories below `root` once, at load time (cgit's scan-path): a folder that is a git
  // directory, or holds one as .git, is a repository and is not searched further. Hidden folders
  // are skipped. URLs are paths relative to `root`, so nested folders give slashes in URLs.
  void ScanPath(const std::string& root, const Origin& origin) {
    std::vector<std::pair<std::string, std::string>> found;  // url, git dir
    std::function<void(const std::string&, const std::string&, int)> walk =
        [&](const std::string& dir, const std::string& rel, int depth) {
          if (depth > 16) return;
          std::vector<std::string> names = env_.List(dir);
          std::erase_if(names, [](const std::string& n) { return n.empty() || n.front() == '.'; });
          std::sort(names.begin(), names.end());
          for (const auto& n : names) {
            const std::string path = dir + "/" + n;
            const std::string url = rel.empty() ? n : rel + "/" + n;
            if (!env_.IsDirectory(path)) continue;
            if (IsGitDir(env_, path)) found.emplace_back(url, path);
            else if (IsGitDir(env_, path + "/.git")) found.emplace_back(url, path + "/.git");
            else walk(path, url, depth + 1);
          }
        };
    std::string start = root;
    while (start.size() > 1 && start.back() == '/') start.pop_back();
    walk(start, "", 0);
    for (auto& [url, path] : found) AddRepository(url, path, origin, DescriptionFile(env_, path));
  }

  // Addresses need resolving, so their defaults are set here rather than in the struct.
  void SetDefaults() {
    std::string why;
    SocketAddress address;
    if (ParseAddress("127.0.0.1:8080", &address, &why)) config_->listen.push_back(address);
    if (ParseAddress("127.0.0.1:8081", &address, &why)) config_->admin_listen = address;
  }

  // Reads an existing cgit configuration as is: cgit's own keys are accepted and ignored, the
  // repositories it lists (repo.path) are taken.
  void ImportCgitrc(const std::string& path) {
    cgit_mode_ = true;
    cgit_first_repo_ = config_->repositories.size();
    section_.clear();
    ReadFile(path, Origin{}, 0);
    cgit_mode_ = false;
  }

  void Finish() {
    // cgit shows nothing for a stanza without a path; neither do we.
    std::erase_if(config_->repositories, [](const auto& r) { return r.path.empty(); });
    std::set<std::string> urls;
    for (const auto& r : config_->repositories) {
      if (!urls.insert(r.url).second) {
        throw Failure{r.origin + ": repository url '" + r.url + "' is already taken by another repository"};
      }
    }
    if (config_->render_threads == 0) {
      unsigned n = std::thread::hardware_concurrency();
      config_->render_threads = std::clamp(n == 0 ? 1u : n, 1u, 256u);
    }
    if (!config_->tls_certs.empty() && config_->listen_tls.empty()) {
      throw Failure{config_->tls_certs.front().origin + ": tls-cert: no listen-tls= listener to serve it on"};
    }
    if (config_->threads == 0) {
      unsigned n = std::thread::hardware_concurrency();
      config_->threads = std::clamp(n == 0 ? 1u : n, 1u, 256u);
    }
    if (config_->admin_listen) {
      for (const auto& l : config_->listen) {
        if (l.port != 0 && l.port == config_->admin_listen->port &&
            (l.host == config_->admin_listen->host || l.host == "0.0.0.0" || l.host == "::")) {
          throw Failure{admin_origin_.Describe() + ": admin-listen: " + config_->admin_listen->text +
                        " is also a public listen address; the admin interface must stay separate"};
        }
      }
    }
  }

 private:
  const Environment& env_;
  Config* config_;
  bool listen_given_ = false;
  bool cgit_mode_ = false;
  bool cgit_open_stanza_ = false;    // repo.* keys apply to the last repo.url
  size_t cgit_first_repo_ = 0;       // repositories before this index came from shellac.conf
  bool virtual_root_given_ = false;  // shellac.conf's virtual-root wins over the cgitrc's
  std::string section_;
  std::set<std::string> repo_key_paths_;  // git dirs added by repo= in a file
  Origin admin_origin_{"built-in default"};  // where admin-listen was last set
  std::set<std::string> cli_replaced_;
};

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) close(fd);
  }
};

class System : public Environment {
 public:
  bool ReadFile(const std::string& path, std::string* text, int* error_number) const override {
    const FileDescriptor file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    const int fd = file.fd;
    if (fd < 0) {
      *error_number = errno;
      return false;
    }
    text->clear();
    char buffer[16 << 10];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n == 0) return true;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error_number = errno;  // EISDIR for a folder
        return false;
      }
      text->append(buffer, static_cast<size_t>(n));
    }
  }
  int Access(const std::string& path, int mode) const override {
    return access(path.c_str(), mode) == 0 ? 0 : errno;
  }
  bool IsDirectory(const std::string& path) const override {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  std::vector<std::string> List(const std::string& folder) const override {
    std::vector<std::string> names;
    std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(folder.c_str()), closedir);
    if (!d) return names;
    while (dirent* e = readdir(d.get())) {
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    return names;
  }
  bool ResolvesNames() const override { return true; }
};

}  // namespace

const Environment& SystemEnvironment() {
  static const System system;
  return system;
}

bool MemoryEnvironment::ReadFile(const std::string& path, std::string* text,
                                 int* error_number) const {
  const auto it = files_.find(path);
  if (it == files_.end()) {
    *error_number = IsDirectory(path) ? EISDIR : ENOENT;
    return false;
  }
  *text = it->second;
  return true;
}

int MemoryEnvironment::Access(const std::string& path, int) const {
  return files_.count(path) || IsDirectory(path) ? 0 : ENOENT;
}

bool MemoryEnvironment::IsDirectory(const std::string& path) const {
  if (path.empty()) return false;
  const std::string prefix = path.back() == '/' ? path : path + "/";
  const auto it = files_.lower_bound(prefix);
  return it != files_.end() && it->first.starts_with(prefix);
}

std::vector<std::string> MemoryEnvironment::List(const std::string& folder) const {
  std::set<std::string> names;
  if (folder.empty()) return {};
  const std::string prefix = folder.back() == '/' ? folder : folder + "/";
  for (auto it = files_.lower_bound(prefix); it != files_.end() && it->first.starts_with(prefix);
       ++it) {
    const std::string_view below = std::string_view(it->first).substr(prefix.size());
    if (const auto name = below.substr(0, below.find('/')); !name.empty()) names.emplace(name);
  }
  return {names.begin(), names.end()};
}

bool ParseDuration(std::string_view text, Millis* out) {
  text = Trim(text);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t n = 0;
  if (digits == 0 || !ParseUnsigned(text.substr(0, digits), &n)) return false;
  std::string unit = Lower(text.substr(digits));
  uint64_t ms_per_unit;
  if (unit.empty() || unit == "s") ms_per_unit = 1000;
  else if (unit == "ms") ms_per_unit = 1;
  else if (unit == "m") ms_per_unit = 60'000;
  else if (unit == "h") ms_per_unit = 3'600'000;
  else if (unit == "d") ms_per_unit = 86'400'000;
  else return false;
  if (n > (uint64_t{1} << 40) / ms_per_unit) return false;
  *out = Millis(n * ms_per_unit);
  return true;
}

bool ParseSize(std::string_view text, uint64_t* out) {
  text = Trim(text);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t n = 0;
  if (digits == 0 || !ParseUnsigned(text.substr(0, digits), &n)) return false;
  std::string unit = Lower(text.substr(digits));
  // "", "B", then K/M/G/T each optionally followed by "B" or "iB" (all binary multiples).
  if (unit == "b") unit.clear();
  if (unit.size() == 3 && unit.ends_with("ib")) unit.resize(1);
  if (unit.size() == 2 && unit.back() == 'b') unit.resize(1);
  unsigned shift;
  if (unit.empty()) shift = 0;
  else if (unit == "k") shift = 10;
  else if (unit == "m") shift = 20;
  else if (unit == "g") shift = 30;
  else if (unit == "t") shift = 40;
  else return false;
  if (shift && n > (UINT64_MAX >> shift)) return false;
  *out = n << shift;
  return true;
}

bool ParseAddress(std::string_view text, SocketAddress* out, std::string* why, bool resolve_names) {
  std::string_view rest = Trim(text);
  const std::string shown(rest);
  bool tls = false;
  if (rest.starts_with("http://") || rest.starts_with("https://")) {
    tls = rest.starts_with("https://");
    rest.remove_prefix(tls ? 8 : 7);
    if (rest.ends_with("/")) rest.remove_suffix(1);
  } else if (rest.find("://") != std::string_view::npos) {
    *why = "unsupported scheme in '" + shown + "' (only http:// and https://)";
    return false;
  }
  std::string host;
  std::string_view port_text;
  if (rest.starts_with("[")) {
    auto close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      *why = "bad address '" + shown + "' (expected [IPV6]:PORT)";
      return false;
    }
    host = std::string(rest.substr(1, close - 1));
    port_text = rest.substr(close + 2);
  } else {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos || rest.find(':') != colon) {
      *why = "bad address '" + shown + "' (expected HOST:PORT)";
      return false;
    }
    host = std::string(rest.substr(0, colon));
    port_text = rest.substr(colon + 1);
  }
  uint64_t port = 0;
  if (host.empty() || !ParseUnsigned(port_text, &port) || port > 65535) {
    *why = "bad address '" + shown + "' (expected HOST:PORT with a port from 0 to 65535)";
    return false;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const int numeric_host = resolve_names ? 0 : AI_NUMERICHOST;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG | numeric_host;
  addrinfo* found = nullptr;
  const std::string port_string = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_string.c_str(), &hints, &found);
  if (rc == EAI_ADDRFAMILY || rc == EAI_NONAME) {
    hints.ai_flags = AI_NUMERICSERV | numeric_host;  // loopback-only machines report no configured address family
    rc = getaddrinfo(host.c_str(), port_string.c_str(), &hints, &found);
  }
  if (rc != 0 || found == nullptr) {
    *why = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&out->storage, found->ai_addr, found->ai_addrlen);
  out->length = found->ai_addrlen;
  freeaddrinfo(found);
  out->text = shown;
  out->host = host;
  out->port = static_cast<uint16_t>(port);
  out->tls = tls;
  return true;
}

bool ParseNetwork(std::string_view text, Config::Network* out) {
  text = Trim(text);
  const auto slash = text.find('/');
  const std::string host(text.substr(0, slash));
  Config::Network net;
  net.text = std::string(text);
  unsigned max_bits;
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    net.address[10] = net.address[11] = 0xff;
    std::memcpy(&net.address[12], &v4, 4);
    max_bits = 32;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    std::memcpy(net.address.data(), &v6, 16);
    max_bits = 128;
  } else {
    return false;
  }
  uint64_t bits = max_bits;
  if (slash != std::string_view::npos && (!ParseUnsigned(text.substr(slash + 1), &bits) || bits > max_bits)) {
    return false;
  }
  net.prefix = static_cast<unsigned>(bits) + (128 - max_bits);
  *out = net;
  return true;
}

bool InNetwork(const Config::Network& net, std::string_view ip) {
  Config::Network addr;
  if (ip.find('/') != std::string_view::npos || !ParseNetwork(ip, &addr)) return false;
  for (unsigned bit = 0; bit < net.prefix; bit += 8) {
    const unsigned n = std::min(8u, net.prefix - bit);
    const uint8_t mask = static_cast<uint8_t>(0xff00u >> n);
    if ((addr.address[bit / 8] & mask) != (net.address[bit / 8] & mask)) return false;
  }
  return true;
}

std::shared_ptr<const Config> Load(const std::string& config_file, const Overrides& overrides,
                                   std::string* error) {
  return LoadFrom(SystemEnvironment(), config_file, overrides, error);
}

std::shared_ptr<const Config> LoadFrom(const Environment& environment,
                                       const std::string& config_file, const Overrides& overrides,
                                       std::string* error) {
  auto config = std::make_shared<Config>();
  config->config_file = config_file;
  Builder builder(environment, config.get());
  try {
    // Built-in defaults that are addresses (they need resolving, so they are not in the struct).
    builder.SetDefaults();
    if (!config_file.empty()) builder.ReadFile(config_file, Origin{}, 0);
    for (const auto& [key, value] : overrides) {
      builder.Set(key, value, Origin{"command line"}, /*from_cli=*/true);
    }
    if (!config->cgitrc.empty()) builder.ImportCgitrc(config->cgitrc);
    builder.Finish();
  } catch (const Failure& f) {
    *error = f.message;
    return nullptr;
  }
  error->clear();
  return config;
}

const std::vector<std::pair<std::string, std::string>>& KnownKeys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"listen", "127.0.0.1:8080"},
      {"admin-listen", "127.0.0.1:8081"},
      {"backend", "none"},
      {"threads", "number of cores"},
      {"cache", "on"},
      {"cache-size", "256M"},
      {"cache-key", "none (host + path + sorted query)"},
      {"ttl", "none"},
      {"force-store", "none"},
      {"default-ttl", "120s"},
      {"grace", "10s"},
      {"fragment-ttl", "forever"},
      {"single-flight-timeout", "30s"},
      {"esi", "surrogate"},
      {"esi-url", "none"},
      {"esi-allow-host", "none"},
      {"esi-max-depth", "5"},
      {"esi-max-includes", "256"},
      {"esi-parallel", "32"},
      {"repo", "none"},
      {"cgitrc", "none"},
      {"scan-path", "none"},
      {"repo.url", "none"},
      {"repo.path", "-"},
      {"repo.name", "the repo.url"},
      {"repo.desc", "none"},
      {"repo.owner", "none"},
      {"section", "none"},
      {"virtual-root", "/"},
      {"max-open-repos", "64"},
      {"render-threads", "number of cores"},
      {"render-queue", "1024"},
      {"render-queue-timeout", "30s"},
      {"client-max-renders", "0"},
      {"client-prefix-v4", "32"},
      {"client-prefix-v6", "128"},
      {"trusted-proxy", "none"},
      {"access-log", "stderr"},
      {"client-header-timeout", "10s"},
      {"client-idle-timeout", "60s"},
      {"client-body-timeout", "60s"},
      {"send-timeout", "60s"},
      {"max-request-line", "8K"},
      {"max-header-count", "100"},
      {"max-header-bytes", "32K"},
      {"max-body-size", "16M"},
      {"upstream-connect-timeout", "5s"},
      {"upstream-first-byte-timeout", "60s"},
      {"upstream-between-bytes-timeout", "60s"},
      {"upstream-idle-timeout", "30s"},
      {"upstream-max-idle", "256"},
      {"shutdown-timeout", "30s"},
      {"listen-tls", "none (ADDR:PORT cert=FILE key=FILE [ocsp=FILE])"},
      {"tls-cert", "none (HOSTNAME cert=FILE key=FILE [ocsp=FILE])"},
      {"tls-ocsp", "off"},
      {"tls-ciphers", Config{}.tls_ciphers},
      {"tls-ciphersuites", Config{}.tls_ciphersuites},
      {"tls-handshake-timeout", "10s"},
      {"tls-session-cache", "20000"},
      {"tls-ticket-rotation", "1h"},
      {"hsts", "off"},
      {"backend-ca", "system"},
      {"include", "-"},
  };
  return keys;
}

}  // namespace shellac::conf
