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
#include <cstdlib>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "base/owned.h"
#include "base/text.h"

namespace shellac::conf {
namespace {

constexpr int kMaxIncludeDepth = 16;

// A config line may end in CRLF: '\r' is whitespace here too.
std::string_view Trim(std::string_view s) { return base::Trim(s, " \t\r"); }
// base's helpers under the names this file uses. ParseUnsigned takes any value up to 2^64-1;
// every caller checks its own range (a port, a shift, a duration's cap) after it.
constexpr auto& Lower = base::ToLower;
constexpr auto& ParseUnsigned = base::ParseDecimal;

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

// cgit's snapshots= value as its bit mask (the bit of each format in cgit's table order: .tar
// .tar.gz .tar.bz2 .tar.lz .tar.xz .tar.zst .zip): "all", or suffixes with or without the leading
// dot; a value that starts with a non-zero number is cgit's legacy setting, tar only.
unsigned SnapshotsMask(std::string_view value) {
  if (std::atoi(std::string(value).c_str()) != 0) return 1;
  if (value == "all") return ~0u;
  static constexpr std::string_view kSuffixes[] = {".tar",    ".tar.gz",  ".tar.bz2", ".tar.lz",
                                                   ".tar.xz", ".tar.zst", ".zip"};
  unsigned mask = 0;
  while (!value.empty()) {
    const size_t space = value.find(' ');
    const std::string_view token = value.substr(0, space);
    value = space == std::string_view::npos ? std::string_view() : value.substr(space + 1);
    for (size_t i = 0; i < std::size(kSuffixes); ++i) {
      if (!token.empty() && (token == kSuffixes[i] || token == kSuffixes[i].substr(1))) {
        mask |= 1u << i;
        break;
      }
    }
  }
  return mask;
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

}  // namespace

// Applies key=value lines to a Config being built. Each key's parsing is its entry in the key
// table (Keys(), below); the helpers here give every entry the same checks and messages.
class Builder {
 public:
  Builder(const Environment& env, Config* config) : env_(env), config_(config) {
    // A list key's built-in value is replaced by the first value given for it.
    for (const Key& k : Keys()) {
      if (k.Repeatable() && k.initial.value != nullptr) defaulted_.emplace(k.name);
    }
  }

  // Applies one key=value through its table entry. Throws Failure with "ORIGIN: key: why".
  void Set(const std::string& key, std::string_view value, const Origin& origin, bool from_cli) {
    key_ = key;
    value_ = value;
    origin_ = origin;
    from_cli_ = from_cli;
    const Key* entry = FindKey(key);
    if (entry == nullptr) Fail("unknown key");
    entry->handler.set(*this, value);
  }

  // Every key's built-in default, in table order.
  void ApplyDefaults() {
    for (const Key& k : Keys()) {
      if (k.initial.value != nullptr) Set(std::string(k.name), k.initial.value, Origin{"built-in default"}, false);
    }
  }

  // --- What entries use to parse a value (the key and value being set are key_ and value_). ---

  Config& config() { return *config_; }
  std::string OriginText() const { return origin_.Describe(); }

  [[noreturn]] void Fail(const std::string& why) const {
    // On the command line the key was given as the flag of the same name.
    throw Failure{origin_.Describe() + ": " + (from_cli_ ? "--" + key_ : key_) + ": " + why};
  }
  Millis Duration() const {
    Millis out{};
    if (!ParseDuration(value_, &out)) Fail("bad duration '" + std::string(value_) + "' (use e.g. 500ms, 10s, 2m)");
    return out;
  }
  uint64_t Size() const {
    uint64_t out = 0;
    if (!ParseSize(value_, &out)) Fail("bad size '" + std::string(value_) + "' (use e.g. 512, 64K, 256M, 2G)");
    return out;
  }
  uint64_t Count(uint64_t min, uint64_t max) const {
    uint64_t v = 0;
    if (!ParseUnsigned(value_, &v) || v < min || v > max)
      Fail("expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) +
           ", got '" + std::string(value_) + "'");
    return v;
  }
  SocketAddress Address(std::string_view text) const {
    SocketAddress a;
    std::string why;
    if (!ParseAddress(text, &a, &why, env_.ResolvesNames())) Fail(why);
    return a;
  }
  // Not https:// : only the backend may be reached over TLS.
  SocketAddress PlainAddress() const {
    SocketAddress a = Address(value_);
    if (a.tls) Fail("https:// is for backend=; use listen-tls= for a TLS listener");
    return a;
  }
  void Readable(const std::string& path) const {
    if (const int e = env_.Access(path, R_OK); e != 0) Fail("cannot read '" + path + "': " + std::strerror(e));
  }
  // A list key's first value replaces its built-in default, and its first value from the command
  // line replaces what the file said.
  template <class List>
  void Starting(List& list) {
    if (defaulted_.erase(key_)) list.clear();
    if (from_cli_ && cli_replaced_.insert(key_).second) list.clear();
  }

  // --- Keys with structure: one function each. ---

  void Listen(std::string_view) {
    Starting(config_->listen);
    config_->listen.push_back(PlainAddress());
  }

  void SnapshotCacheSize(std::string_view) {
    config_->snapshot_cache_size = Size();
    snapshot_cache_origin_ = origin_;
    snapshot_cache_set_ = true;
  }

  void AdminListen(std::string_view value) {
    if (Lower(value) == "off") config_->admin_listen.reset();
    else config_->admin_listen = PlainAddress();
    admin_origin_ = origin_;
  }

  void Backend(std::string_view value) {
    if (Lower(value) == "none" || value.empty()) config_->backend.reset();
    else config_->backend = Address(value);
  }

  void Repo(std::string_view value) {
    Starting(config_->repos);
    if (from_cli_ && !cli_replaced_.count("repositories")) {
      // --repo replaces the file's repo= list (as for every list key), not its scan-path finds.
      std::erase_if(config_->repositories, [&](const auto& r) { return repo_key_paths_.count(r.path); });
      cli_replaced_.insert("repositories");
    }
    std::string path(value);
    if (path.empty()) Fail("empty path");
    if (env_.Access(path, F_OK) != 0) Fail("no such repository '" + path + "'");
    config_->repos.push_back(path);
    // A work tree serves its .git folder.
    std::string git_dir = IsGitDir(env_, path + "/.git") ? path + "/.git" : path;
    const std::string url = UrlForPath(path);
    if (url.empty() || url == "." || url == "..") {
      // "/", ".", "..": no folder name to serve it under (found by fuzzing).
      Fail("cannot name a repository after '" + path + "': give it repo.url= and repo.path=");
    }
    if (!from_cli_) repo_key_paths_.insert(git_dir);
    AddRepository(url, git_dir, origin_, DescriptionFile(env_, git_dir));
    cgit_open_stanza_ = false;
  }

  // cgit's repository stanzas (repo.url, repo.path, repo.name, repo.desc, repo.owner, section),
  // written in shellac's own file: as in a cgitrc, but a key that belongs to no stanza, or a path
  // that does not exist, is an error here.
  void Stanza(std::string_view value) {
    const bool open = cgit_open_stanza_ && config_->repositories.size() > cgit_first_repo_;
    if (key_ != "repo.url" && key_ != "section" && !open) Fail("no repo.url= before it starts a repository");
    if (key_ == "repo.path" && env_.Access(std::string(value), F_OK) != 0) {
      Fail("no such repository '" + std::string(value) + "'");
    }
    SetCgitKey(key_, value, origin_);
  }

  void ScanPathKey(std::string_view value) {
    std::string root(value);
    if (!env_.IsDirectory(root)) Fail("no such folder '" + root + "'");
    ScanPath(root, origin_);
  }

  void VirtualRoot(std::string_view value) {
    config_->virtual_root = "/" + StripSlashes(value) + "/";
    if (config_->virtual_root == "//") config_->virtual_root = "/";
    virtual_root_given_ = true;
  }

  void TrustedProxy(std::string_view value) {
    Starting(config_->trusted_proxies);
    std::string_view rest = value;
    bool any = false;
    while (!(rest = Trim(rest)).empty()) {
      const auto end = rest.find_first_of(" \t,");
      const std::string_view word = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (word.empty()) continue;
      Config::Network net;
      if (!ParseNetwork(word, &net)) {
        Fail("bad address '" + std::string(word) + "' (expected ADDR or ADDR/BITS, IPv4 or IPv6)");
      }
      config_->trusted_proxies.push_back(net);
      any = true;
    }
    if (!any) Fail("expected one or more addresses");
  }

  void Cgitrc(std::string_view value) {
    std::string path(value);
    Readable(path);
    config_->cgitrc = path;
  }

  void ListenTls(std::string_view) {
    Starting(config_->listen_tls);
    const auto [where, parts] = FirstWord();
    Config::TlsListener listener;
    if (where.empty()) Fail("expected ADDR:PORT cert=FILE key=FILE");
    const SocketAddress a = Address(where);
    if (a.tls) Fail("give the address without https://");
    for (const auto& other : config_->listen_tls) {
      if (other.address.text == a.text) Fail(a.text + " is given twice (each address has one default certificate)");
    }
    listener.address = a;
    TlsCertificateParts(parts, &listener.certificate);
    config_->listen_tls.push_back(std::move(listener));
  }

  void TlsCert(std::string_view) {
    Starting(config_->tls_certs);
    const auto [host, parts] = FirstWord();
    if (host.empty() || host.find('=') != std::string_view::npos) Fail("expected HOSTNAME cert=FILE key=FILE");
    Config::TlsCertificate certificate;
    certificate.host = Lower(host);
    TlsCertificateParts(parts, &certificate);
    config_->tls_certs.push_back(std::move(certificate));
  }

  void BackendCa(std::string_view value) {
    std::string path(value);
    if (Lower(path) == "system" || path.empty()) path.clear();
    else Readable(path);
    config_->backend_ca = path;
  }

  // include= is read by ReadFile where it stands; it is no setting.
  void Include(std::string_view) { Fail("include= is read in a file, where it stands; it is no setting"); }

  // The first word of the value, and the rest ("ADDR:PORT cert=... key=...").
  std::pair<std::string_view, std::string_view> FirstWord() const {
    const std::string_view v = Trim(value_);
    const auto end = v.find_first_of(" \t");
    return {v.substr(0, end), end == std::string_view::npos ? std::string_view() : v.substr(end)};
  }

  // "cert=FILE key=FILE [ocsp=FILE]" after the first word of a TLS value.
  void TlsCertificateParts(std::string_view parts, Config::TlsCertificate* out) const {
    out->origin = origin_.Describe();
    while (!(parts = Trim(parts)).empty()) {
      const auto end = parts.find_first_of(" \t");
      const std::string_view part = parts.substr(0, end);
      parts = end == std::string_view::npos ? std::string_view() : parts.substr(end);
      const auto eq = part.find('=');
      const std::string_view name = part.substr(0, eq);
      const std::string file(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
      std::string* target = name == "cert" ? &out->cert : name == "key" ? &out->key : name == "ocsp" ? &out->ocsp : nullptr;
      if (target == nullptr) Fail("unknown part '" + std::string(part) + "' (expected cert=FILE, key=FILE, ocsp=FILE)");
      if (file.empty()) Fail(std::string(name) + "= needs a file");
      *target = file;
    }
    if (out->cert.empty() || out->key.empty()) Fail("needs cert=FILE and key=FILE");
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
      Inherit(&r);
      repo_readme_set_ = false;
      config_->repositories.push_back(std::move(r));
      cgit_open_stanza_ = true;
    } else if (key == "repo.path") {
      config_->repos.emplace_back(value);
      if (repo) repo->path = std::string(value);
    } else if (key == "repo.name") {
      if (repo) repo->name = std::string(value);
    } else if (key == "repo.hide") {
      if (repo) repo->hide = CgitFlag(value);
    } else if (key == "repo.ignore") {
      if (repo) repo->ignore = CgitFlag(value);
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
    } else if (key == "robots") {
      config_->robots = std::string(value);
    } else if (key == "favicon") {
      config_->favicon = std::string(value);
    } else if (key == "max-repo-count") {
      config_->max_repo_count = std::atoi(std::string(value).c_str());  // as cgit reads it
    } else if (key == "enable-index-links") {
      config_->enable_index_links = CgitFlag(value);
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
    } else if (key == "enable-filter-overrides") {
      filter_overrides_ = CgitFlag(value);
    } else if (key == "repo.source-filter") {
      // cgit reads a stanza's own filters only after enable-filter-overrides=1.
      if (repo && filter_overrides_) repo->source_filter = std::string(value);
    } else if (key == "enable-html-serving") {
      config_->enable_html_serving = CgitFlag(value);
    } else if (key == "repo.enable-html-serving") {
      if (repo) repo->enable_html_serving = CgitFlag(value);
    } else if (key.starts_with("mimetype.")) {
      config_->mimetypes[key.substr(9)] = std::string(value);
    } else if (key == "mimetype-file") {
      config_->mimetype_file = std::string(value);
    } else if (key == "max-commit-count") {
      // cgit reads it with atoi: a value that is not a number gives 0, and its log lists nothing.
      unsigned count = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), count);
      if (ec != std::errc() || end != value.data() + value.size() || count > 100000)
        throw Failure{origin.Describe() + ": max-commit-count: not a number of commits (0-100000)"};
      config_->max_commit_count = count;
    } else if (key == "renamelimit") {
      // cgit reads it with atoi; shellac refuses what is not a whole number.
      int limit = 0;
      const char* begin = value.data() + (value.starts_with('+') ? 1 : 0);
      auto [end, ec] = std::from_chars(begin, value.data() + value.size(), limit);
      if (ec != std::errc() || end != value.data() + value.size() || begin == end)
        throw Failure{origin.Describe() + ": renamelimit: not a whole number"};
      config_->rename_limit = limit;
    } else if (key == "noplainemail") {
      config_->noplainemail = CgitFlag(value);
    } else if (key == "enable-http-clone") {
      config_->enable_http_clone = CgitFlag(value);
    } else if (key == "enable-log-filecount") {
      config_->enable_log_filecount = CgitFlag(value);
    } else if (key == "enable-log-linecount") {
      config_->enable_log_linecount = CgitFlag(value);
    } else if (key == "enable-blame") {
      config_->enable_blame = CgitFlag(value);
    } else if (key == "repo.enable-blame") {
      if (repo) repo->enable_blame = CgitFlag(value);
    } else if (key == "repo.enable-log-filecount") {
      if (repo) repo->enable_log_filecount = CgitFlag(value);
    } else if (key == "repo.enable-log-linecount") {
      if (repo) repo->enable_log_linecount = CgitFlag(value);
    } else if (key == "enable-commit-graph") {
      config_->enable_commit_graph = CgitFlag(value);
    } else if (key == "repo.enable-commit-graph") {
      if (repo) repo->enable_commit_graph = CgitFlag(value);
    } else if (key == "enable-follow-links") {
      config_->enable_follow_links = CgitFlag(value);
    } else if (key == "repo.enable-follow-links") {
      if (repo) repo->enable_follow_links = CgitFlag(value);
    } else if (key == "commit-sort" || key == "repo.commit-sort") {
      // cgit: "date" 1, "topo" 2; any other value leaves the setting as it was
      int* sort = key == "commit-sort" ? &config_->commit_sort : repo ? &repo->commit_sort : nullptr;
      if (sort && value == "date") *sort = 1;
      if (sort && value == "topo") *sort = 2;
    } else if (key == "branch-sort" || key == "repo.branch-sort") {
      // cgit: "age" or "name"; any other value leaves the setting as it was
      bool* age = key == "branch-sort" ? &config_->branch_sort_age
                  : repo              ? &repo->branch_sort_age
                                      : nullptr;
      if (age && value == "age") *age = true;
      if (age && value == "name") *age = false;
    } else if (key == "summary-branches" || key == "summary-tags" || key == "summary-log" ||
               key == "max-atom-items") {
      unsigned n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size())
        throw Failure{origin.Describe() + ": " + key + ": not a number"};
      (key == "summary-branches" ? config_->summary_branches
       : key == "summary-tags"   ? config_->summary_tags
       : key == "summary-log"    ? config_->summary_log
                                 : config_->max_atom_items) = n;
    } else if (key == "clone-prefix") {
      config_->clone_prefix = std::string(value);
    } else if (key == "clone-url") {
      clone_url_ = std::string(value);
    } else if (key == "repo.clone-url") {
      if (repo) repo->clone_url = std::string(value);
    } else if (key == "about-filter") {
      about_filter_ = std::string(value);
    } else if (key == "repo.about-filter") {
      if (repo && filter_overrides_) repo->about_filter = std::string(value);
    } else if (key == "readme") {
      // cgit: each readme= adds an entry for the repositories that follow.
      readme_.emplace_back(value);
    } else if (key == "repo.readme") {
      // The first repo.readme of a stanza replaces the inherited list; more add to it.
      if (repo) {
        if (!repo_readme_set_) repo->readme.clear();
        repo_readme_set_ = true;
        repo->readme.emplace_back(value);
      }
    } else if (key == "snapshots") {
      config_->snapshots = SnapshotsMask(value);
    } else if (key == "repo.snapshots") {
      if (repo) repo->snapshots = config_->snapshots & SnapshotsMask(value);
    } else if (key == "repo.snapshot-prefix") {
      if (repo) repo->snapshot_prefix = std::string(value);
    } else if (key == "max-stats") {
      config_->max_stats = StatsPeriods(value);
    } else if (key == "repo.max-stats") {
      if (repo) repo->max_stats = StatsPeriods(value);
    } else if (key == "repo.homepage") {
      if (repo) repo->homepage = std::string(value);
    }
  }

  // cgit's max-stats value: a period's letter or name (week, month, quarter, year) as the number
  // of periods it enables (1-4); anything else is 0, no stats, as cgit reads it.
  static unsigned StatsPeriods(std::string_view value) {
    static constexpr std::pair<char, std::string_view> kPeriods[] = {
        {'w', "week"}, {'m', "month"}, {'q', "quarter"}, {'y', "year"}};
    for (unsigned i = 0; i < std::size(kPeriods); ++i) {
      if ((value.size() == 1 && value[0] == kPeriods[i].first) || value == kPeriods[i].second)
        return i + 1;
    }
    return 0;
  }

  // cgit's flags are atoi(value): "1" (or any non-zero number) is on.
  static bool CgitFlag(std::string_view value) {
    int v = 0;
    std::from_chars(value.data(), value.data() + value.size(), v);
    return v != 0;
  }

  // What a repository takes from the cgitrc's global keys read before it (cgit copies them when
  // a repo.url or a scanned repository begins).
  void Inherit(Config::Repository* r) const {
    r->enable_log_filecount = config_->enable_log_filecount;
    r->enable_log_linecount = config_->enable_log_linecount;
    r->enable_blame = config_->enable_blame;
    r->enable_commit_graph = config_->enable_commit_graph;
    r->enable_follow_links = config_->enable_follow_links;
    r->commit_sort = config_->commit_sort;
    r->branch_sort_age = config_->branch_sort_age;
    r->clone_url = clone_url_;
    r->readme = readme_;
    r->about_filter = about_filter_;
    r->source_filter = config_->source_filter;
    r->enable_html_serving = config_->enable_html_serving;
    r->snapshots = config_->snapshots;
    r->max_stats = config_->max_stats;
  }

  void AddRepository(std::string url, std::string path, const Origin& origin, std::string desc) {
    Config::Repository r;
    Inherit(&r);
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
    // cgit shows nothing for a stanza without a path or with repo.ignore=1; neither do we.
    std::erase_if(config_->repositories, [](const auto& r) { return r.path.empty() || r.ignore; });
    std::set<std::string> urls;
    for (const auto& r : config_->repositories) {
      if (!urls.insert(r.url).second) {
        throw Failure{r.origin + ": repository url '" + r.url + "' is already taken by another repository"};
      }
    }
    if (!snapshot_cache_set_) config_->snapshot_cache_size = config_->cache_size / 8;
    if (config_->snapshot_cache_size > config_->cache_size / 2) {
      throw Failure{snapshot_cache_origin_.Describe() + ": snapshot-cache-size: " +
                    std::to_string(config_->snapshot_cache_size) +
                    " bytes is more than half of cache-size (" +
                    std::to_string(config_->cache_size) + " bytes), which it is taken from"};
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
  // The key being set, its value, where it was given.
  std::string key_;
  std::string_view value_;
  Origin origin_;
  bool from_cli_ = false;
  std::set<std::string, std::less<>> defaulted_;  // list keys still holding their built-in value
  bool cgit_mode_ = false;
  bool cgit_open_stanza_ = false;    // repo.* keys apply to the last repo.url
  size_t cgit_first_repo_ = 0;       // repositories before this index came from shellac.conf
  bool virtual_root_given_ = false;  // shellac.conf's virtual-root wins over the cgitrc's
  std::string section_;
  std::string clone_url_;            // the cgitrc's clone-url=, copied into each later stanza
  std::vector<std::string> readme_;  // the cgitrc's readme= entries, likewise
  bool repo_readme_set_ = false;     // the open stanza has its own repo.readme
  std::string about_filter_;         // the cgitrc's about-filter=, likewise
  bool filter_overrides_ = false;    // the cgitrc's enable-filter-overrides= so far
  std::set<std::string> repo_key_paths_;  // git dirs added by repo= in a file
  Origin admin_origin_{"built-in default"};  // where admin-listen was last set
  Origin snapshot_cache_origin_{"built-in default"};  // where snapshot-cache-size was last set
  bool snapshot_cache_set_ = false;  // otherwise an eighth of cache-size
  std::set<std::string> cli_replaced_;  // list keys the command line has started to replace
};

namespace {

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
    const base::Owned<closedir> d(opendir(folder.c_str()));
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

// ---------------------------------------------------------------------------------------------
// The key table

namespace {

constexpr Key::Apply kReload = Key::Apply::kOnReload;
constexpr Key::Apply kRestart = Key::Apply::kOnRestart;
constexpr Key::Repeat kOne = Key::Repeat::kOne;
constexpr Key::Repeat kList = Key::Repeat::kList;

// A default that is no value to parse: the key starts unset (or is resolved by Load()).
Key::Default Note(const char* text) { return {nullptr, text}; }

template <class T>
std::function<bool(const Config&, const Config&)> SameField(T Config::*field) {
  return [field](const Config& a, const Config& b) { return a.*field == b.*field; };
}

// A key that is a Builder function (keys with structure).
Key::Handler Method(void (Builder::*set)(std::string_view),
                    std::function<bool(const Config&, const Config&)> same = {}) {
  return {[set](Builder& b, std::string_view v) { (b.*set)(v); }, std::move(same)};
}

Key::Handler Duration(Millis Config::*field) {
  return {[field](Builder& b, std::string_view) { b.config().*field = b.Duration(); }, SameField(field)};
}

// A duration that must be more than 0.
Key::Handler PositiveDuration(Millis Config::*field) {
  return {[field](Builder& b, std::string_view) {
            b.config().*field = b.Duration();
            if ((b.config().*field).count() == 0) b.Fail("must be more than 0");
          },
          SameField(field)};
}

// A duration, or `word` for none.
Key::Handler DurationOr(const char* word, std::optional<Millis> Config::*field) {
  return {[word, field](Builder& b, std::string_view v) {
            if (Lower(v) == word) (b.config().*field).reset();
            else b.config().*field = b.Duration();
          },
          SameField(field)};
}

// A size of at least `min` (written `min_text` in the message).
Key::Handler Size(uint64_t Config::*field, uint64_t min = 0, const char* min_text = "0") {
  return {[=](Builder& b, std::string_view) {
            b.config().*field = b.Size();
            if (b.config().*field < min) b.Fail(std::string("must be at least ") + min_text);
          },
          SameField(field)};
}

template <class T>
Key::Handler Count(T Config::*field, uint64_t min, uint64_t max) {
  return {[=](Builder& b, std::string_view) { b.config().*field = static_cast<T>(b.Count(min, max)); },
          SameField(field)};
}

// One of a few words (case-insensitive).
template <class T>
Key::Handler Choice(T Config::*field, std::vector<std::pair<std::string, T>> words) {
  return {[=](Builder& b, std::string_view v) {
            const std::string lower = Lower(v);
            std::string expected;
            for (size_t i = 0; i < words.size(); ++i) {
              if (lower == words[i].first) {
                b.config().*field = words[i].second;
                return;
              }
              expected += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i].first;
            }
            b.Fail("expected " + expected + ", got '" + std::string(v) + "'");
          },
          SameField(field)};
}

// Text that must not be empty (`expected` says what it should be).
Key::Handler Text(std::string Config::*field, const char* expected) {
  return {[=](Builder& b, std::string_view v) {
            if (v.empty()) b.Fail(expected);
            b.config().*field = std::string(v);
          },
          SameField(field)};
}

// l2=memcached://HOST:PORT[,HOST:PORT...] or off: the shared tier's servers.
Key::Handler L2Servers() {
  return {[](Builder& b, std::string_view v) {
            auto& servers = b.config().l2_servers;
            servers.clear();
            if (Lower(v) == "off") return;
            constexpr std::string_view kScheme = "memcached://";
            if (!v.starts_with(kScheme)) b.Fail("expected memcached://HOST:PORT[,HOST:PORT...] or off");
            v.remove_prefix(kScheme.size());
            while (true) {
              const size_t comma = v.find(',');
              const std::string_view server = v.substr(0, comma);
              const size_t colon = server.rfind(':');
              uint64_t port = 0;
              if (colon == std::string_view::npos || colon == 0 ||
                  !base::ParseDecimal(server.substr(colon + 1), &port) || port == 0 || port > 65535) {
                b.Fail("expected HOST:PORT, got '" + std::string(server) + "'");
              }
              servers.emplace_back(server);
              if (comma == std::string_view::npos) break;
              v.remove_prefix(comma + 1);
            }
          },
          SameField(&Config::l2_servers)};
}

// Text, or "off" for none.
Key::Handler TextOrOff(std::string Config::*field) {
  return {[=](Builder& b, std::string_view v) {
            b.config().*field = Lower(v) == "off" ? std::string() : std::string(v);
          },
          SameField(field)};
}

// A list of rules (REGEX, or REGEX => something); `valid` checks one, `expected` says what it
// should be.
Key::Handler Rules(std::vector<Config::Rule> Config::*field, bool (*valid)(std::string_view),
                   const char* expected) {
  return {[=](Builder& b, std::string_view v) {
            if (!valid(v)) b.Fail(expected);
            b.Starting(b.config().*field);
            (b.config().*field).push_back(Config::Rule{std::string(v), b.OriginText()});
          },
          [field](const Config& a, const Config& c) {
            const auto texts = [field](const Config& x) {
              std::vector<std::string> t;
              for (const auto& r : x.*field) t.push_back(r.text);
              return t;
            };
            return texts(a) == texts(c);
          }};
}
bool AnyRegex(std::string_view v) { return !v.empty(); }
bool RegexToTemplate(std::string_view v) { return v.find("=>") != std::string_view::npos; }
bool RegexToDuration(std::string_view v) {
  const auto arrow = v.find("=>");
  Millis ignored{};
  return arrow != std::string_view::npos && ParseDuration(Trim(v.substr(arrow + 2)), &ignored);
}

Key::Handler Hsts() {
  return {[](Builder& b, std::string_view v) {
            if (Lower(v) == "off") b.config().hsts.clear();
            else if (!Lower(v).starts_with("max-age=")) b.Fail("expected max-age=SECONDS[; includeSubDomains] or off");
            else b.config().hsts = std::string(v);
          },
          SameField(&Config::hsts)};
}

template <class List>
std::vector<std::string> AddressTexts(const List& list) {
  std::vector<std::string> texts;
  for (const auto& a : list) {
    if constexpr (requires { a.address.text; }) texts.push_back(a.address.text);
    else texts.push_back(a.text);
  }
  return texts;
}
bool SameListen(const Config& a, const Config& b) { return AddressTexts(a.listen) == AddressTexts(b.listen); }
bool SameListenTls(const Config& a, const Config& b) {
  return AddressTexts(a.listen_tls) == AddressTexts(b.listen_tls);  // certificate files do reload
}
bool SameAdminListen(const Config& a, const Config& b) {
  const auto text = [](const Config& c) { return c.admin_listen ? c.admin_listen->text : "off"; };
  return text(a) == text(b);
}

}  // namespace

const std::vector<Key>& Keys() {
  // name, built-in default (text a file could give), when a change applies, one value or a list,
  // how the value is parsed, the line --help shows. shellac.conf(5) describes each key in full.
  static const std::vector<Key> keys = {
      // Listeners and backend
      {"listen", "127.0.0.1:8080", kRestart, kList, Method(&Builder::Listen, SameListen),
       "public listener ADDR:PORT"},
      {"admin-listen", "127.0.0.1:8081", kRestart, kOne, Method(&Builder::AdminListen, SameAdminListen),
       "admin listener (/health, /metrics, purge), or off"},
      {"backend", "none", kReload, kOne, Method(&Builder::Backend),
       "the forge: HOST:PORT, http:// or https:// URL, or none"},
      {"threads", Note("number of cores"), kRestart, kOne, Count(&Config::threads, 1, 256),
       "worker threads (1 to 256)"},
      // Cache
      {"cache", "on", kReload, kOne, Choice(&Config::cache, {{"on", true}, {"off", false}}),
       "store GET and HEAD responses by HTTP rules: on or off"},
      {"cache-size", "256M", kRestart, kOne, Size(&Config::cache_size, 1 << 20, "1M"),
       "the store's memory budget (K, M, G; at least 1M)"},
      {"snapshot-cache-size", Note("cache-size / 8"), kRestart, kOne,
       Method(&Builder::SnapshotCacheSize, SameField(&Config::snapshot_cache_size)),
       "of cache-size, kept for whole snapshot archives (0: none kept)"},
      {"snapshot-max-stored", "8M", kRestart, kOne, Size(&Config::snapshot_max_stored),
       "the largest snapshot archive kept; larger ones are only streamed"},
      {"page-memo-size", "32M", kRestart, kOne, Size(&Config::page_memo_size),
       "memory for rendered pages kept whole and answered again without a render (0: none)"},
      {"cache-key", Note("none (host + path + sorted query)"), kReload, kList,
       Rules(&Config::cache_keys, RegexToTemplate, "expected REGEX => TEMPLATE"),
       "REGEX => TEMPLATE: many URLs to one object; first match wins"},
      {"ttl", Note("none"), kReload, kList, Rules(&Config::ttl_rules, RegexToDuration, "expected REGEX => DURATION"),
       "REGEX => DURATION: freshness by target; first match wins"},
      {"force-store", Note("none"), kReload, kList,
       Rules(&Config::force_store, AnyRegex, "expected a regular expression"),
       "REGEX: stored despite no-store, private or Set-Cookie"},
      {"default-ttl", "120s", kReload, kOne, Duration(&Config::default_ttl),
       "freshness of a response that names none"},
      {"grace", "10s", kReload, kOne, Duration(&Config::grace),
       "how long a stale object may stand in when the backend fails"},
      {"fragment-ttl", "forever", kReload, kOne, DurationOr("forever", &Config::fragment_ttl),
       "freshness of resident fragments, patches and rawdiffs"},
      {"single-flight-timeout", "30s", kReload, kOne, Duration(&Config::single_flight_timeout),
       "a request waiting for another's fetch gives up (503) after this"},
      // Edge Side Includes
      {"esi", "surrogate", kReload, kOne,
       Choice(&Config::esi, {{"off", Config::EsiMode::kOff},
                             {"surrogate", Config::EsiMode::kSurrogate},
                             {"always", Config::EsiMode::kAlways}}),
       "which responses are processed as ESI: off, surrogate or always"},
      {"esi-url", Note("none"), kReload, kList, Rules(&Config::esi_urls, AnyRegex, "expected a regular expression"),
       "REGEX: targets whose responses are always processed as ESI"},
      {"esi-allow-host", Note("none"), kReload, kList,
       Rules(&Config::esi_allow_hosts, AnyRegex, "expected a regular expression"),
       "REGEX: other hosts an include may name"},
      {"esi-max-depth", "5", kReload, kOne, Count(&Config::esi_max_depth, 0, 32),
       "nesting of included ESI fragments (0 to 32)"},
      {"esi-max-includes", "256", kReload, kOne, Count(&Config::esi_max_includes, 1, 100000),
       "includes per page, nested ones counted"},
      {"esi-parallel", "32", kReload, kOne, Count(&Config::esi_parallel, 1, 1024),
       "include fetches in flight per page"},
      // Repositories
      {"repo", Note("none"), kReload, kList, Method(&Builder::Repo), "a repository to render (PATH)"},
      {"cgitrc", Note("none"), kReload, kOne, Method(&Builder::Cgitrc),
       "import a cgit configuration's repositories, scan-path and virtual-root"},
      {"scan-path", Note("none"), kReload, kList, Method(&Builder::ScanPathKey),
       "a folder searched once for repositories"},
      {"repo.url", Note("none"), kReload, kList, Method(&Builder::Stanza),
       "starts a repository stanza (its URL below virtual-root)"},
      {"repo.path", Note("-"), kReload, kOne, Method(&Builder::Stanza), "the stanza's git directory"},
      {"repo.name", Note("the repo.url"), kReload, kOne, Method(&Builder::Stanza), "the stanza's title"},
      {"repo.desc", Note("none"), kReload, kOne, Method(&Builder::Stanza), "the stanza's description"},
      {"repo.owner", Note("none"), kReload, kOne, Method(&Builder::Stanza), "the stanza's owner"},
      {"section", Note("none"), kReload, kOne, Method(&Builder::Stanza),
       "groups the repositories that follow on the index page"},
      {"virtual-root", "/", kReload, kOne, Method(&Builder::VirtualRoot, SameField(&Config::virtual_root)),
       "URL prefix of every rendered page"},
      {"max-open-repos", "1024", kReload, kOne, Count(&Config::max_open_repos, 1, 100000),
       "repositories kept open at once"},
      {"render-threads", Note("number of cores"), kRestart, kOne, Count(&Config::render_threads, 1, 256),
       "threads rendering pages (1 to 256)"},
      {"render-reserve-threads", "1", kRestart, kOne,
       Count(&Config::render_reserve_threads, 0, 64),
       "render threads more, only for clients with no render running"},
      // Render queue
      {"render-queue", "1024", kRestart, kOne, Count(&Config::render_queue, 1, 1000000),
       "renders that may wait for a thread"},
      {"render-queue-timeout", "30s", kReload, kOne, PositiveDuration(&Config::render_queue_timeout),
       "a render still waiting after this is refused (503)"},
      {"blame-timeout", "20s", kReload, kOne, PositiveDuration(&Config::blame_timeout),
       "a blame page still being worked out after this stops (503)"},
      {"history-index-memory", "64M", kReload, kOne, Size(&Config::history_index_memory),
       "memory for history indexes of repositories without a commit-graph (0: none)"},
      {"refs-check-interval", "1s", kReload, kOne, PositiveDuration(&Config::refs_check_interval),
       "a repository's refs are looked at again once this has passed (a push shows after it)"},
      {"pack-cache-size", "32M", kReload, kOne, Size(&Config::pack_cache_size),
       "each render thread's cache of packed delta bases (0: packs read by libgit2 only)"},
      {"filter-timeout", "10s", kReload, kOne, PositiveDuration(&Config::filter_timeout),
       "an about-filter or source-filter still running after this is killed"},
      {"client-max-renders", "0", kRestart, kOne, Count(&Config::client_max_renders, 0, 256),
       "renders one client may have running at once (0: no cap)"},
      {"client-prefix-v4", "32", kReload, kOne, Count(&Config::client_prefix_v4, 8, 32),
       "a client is its IPv4 address masked to this many bits"},
      {"client-prefix-v6", "128", kReload, kOne, Count(&Config::client_prefix_v6, 16, 128),
       "a client is its IPv6 address masked to this many bits"},
      {"trusted-proxy", Note("none"), kReload, kList, Method(&Builder::TrustedProxy),
       "ADDR[/BITS]: peers whose X-Forwarded-For names the client"},
      // Logging
      {"access-log", "stderr", kReload, kOne, Text(&Config::access_log, "expected a file, 'stderr' or 'off'"),
       "a file, stderr or off"},
      // More than one machine
      {"store-snapshot", "off", kRestart, kOne, TextOrOff(&Config::store_snapshot),
       "FILE the store is written to at stop and read from at start, or off"},
      {"l2", "off", kRestart, kOne, L2Servers(),
       "shared tier for repository-neutral objects: memcached://HOST:PORT[,...] or off"},
      {"l2-trace", "off", kRestart, kOne, TextOrOff(&Config::l2_trace),
       "FILE getting a line per shared-tier lookup and write (checks, benchmarks), or off"},
      // Timeouts and limits
      {"client-header-timeout", "10s", kReload, kOne, Duration(&Config::client_header_timeout),
       "from a request's first byte to the end of its head"},
      {"client-idle-timeout", "60s", kReload, kOne, Duration(&Config::client_idle_timeout),
       "keep-alive wait between requests"},
      {"client-body-timeout", "60s", kReload, kOne, Duration(&Config::client_body_timeout),
       "between two reads of a request body"},
      {"send-timeout", "60s", kReload, kOne, Duration(&Config::send_timeout),
       "between two writes to a slow client"},
      {"max-request-line", "8K", kReload, kOne, Size(&Config::max_request_line, 64, "64"),
       "longer request lines are answered 414"},
      {"max-header-count", "100", kReload, kOne, Count(&Config::max_header_count, 1, 10000),
       "more header fields are answered 431"},
      {"max-header-bytes", "32K", kReload, kOne, Size(&Config::max_header_bytes, 256, "256"),
       "a larger request head is answered 431"},
      {"max-body-size", "16M", kReload, kOne, Size(&Config::max_body_size),
       "a larger request body is answered 413 (0: no limit)"},
      {"upstream-connect-timeout", "5s", kReload, kOne, Duration(&Config::upstream_connect_timeout),
       "connecting to the backend"},
      {"upstream-first-byte-timeout", "60s", kReload, kOne, Duration(&Config::upstream_first_byte_timeout),
       "from the request sent to the backend's first byte"},
      {"upstream-between-bytes-timeout", "60s", kReload, kOne,
       Duration(&Config::upstream_between_bytes_timeout), "between two reads from the backend"},
      {"upstream-idle-timeout", "30s", kReload, kOne, Duration(&Config::upstream_idle_timeout),
       "an idle kept-alive backend connection is closed after this"},
      {"upstream-max-idle", "256", kReload, kOne, Count(&Config::upstream_max_idle, 0, 100000),
       "idle backend connections kept per worker thread"},
      {"shutdown-timeout", "30s", kReload, kOne, Duration(&Config::shutdown_timeout),
       "SIGTERM: how long in-flight requests get to finish"},
      // TLS
      {"listen-tls", Note("none (ADDR:PORT cert=FILE key=FILE [ocsp=FILE])"), kRestart, kList,
       Method(&Builder::ListenTls, SameListenTls),
       "TLS listener with its default certificate (a reload re-reads the files)"},
      {"tls-cert", Note("none (HOSTNAME cert=FILE key=FILE [ocsp=FILE])"), kReload, kList,
       Method(&Builder::TlsCert), "a certificate served by SNI"},
      {"tls-ocsp", "off", kReload, kOne, TextOrOff(&Config::tls_ocsp),
       "OCSP response (DER) stapled for listen-tls certificates naming none"},
      {"tls-ciphers",
       "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
       "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305",
       kReload, kOne, Text(&Config::tls_ciphers, "expected an OpenSSL cipher list"),
       "OpenSSL cipher list for TLS 1.2"},
      {"tls-ciphersuites", "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
       kReload, kOne, Text(&Config::tls_ciphersuites, "expected an OpenSSL cipher list"),
       "OpenSSL cipher suites for TLS 1.3"},
      {"tls-handshake-timeout", "10s", kReload, kOne, PositiveDuration(&Config::tls_handshake_timeout),
       "from accept to a finished handshake"},
      {"tls-session-cache", "20000", kReload, kOne, Count(&Config::tls_session_cache, 0, 10'000'000),
       "sessions kept for resumption (0: off)"},
      {"tls-ticket-rotation", "1h", kReload, kOne, Duration(&Config::tls_ticket_rotation),
       "a new session-ticket key this often (0: no tickets)"},
      {"hsts", "off", kReload, kOne, Hsts(), "Strict-Transport-Security on TLS responses, or off"},
      {"backend-ca", "system", kReload, kOne, Method(&Builder::BackendCa, SameField(&Config::backend_ca)),
       "CA file for an https:// backend, or system"},
      // Files
      {"include", Note("-"), kReload, kList, Method(&Builder::Include),
       "read another file here (relative to this one)"},
  };
  return keys;
}

const Key* FindKey(std::string_view name) {
  for (const Key& k : Keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string HelpText() {
  std::string text;
  for (const Key& k : Keys()) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-32s %.*s\n", std::string(k.name).c_str(),
                  static_cast<int>(k.DefaultText().size()), k.DefaultText().data());
    text += line;
    text += "      ";
    text += k.doc;
    if (k.Repeatable()) text += "; repeatable";
    if (k.NeedsRestart()) text += "; a change needs a restart";
    text += '\n';
  }
  return text;
}

std::vector<std::string> RestartKeysChanged(const Config& before, const Config& after) {
  std::vector<std::string> changed;
  for (const Key& k : Keys()) {
    if (k.NeedsRestart() && !k.handler.same(before, after)) changed.emplace_back(k.name);
  }
  return changed;
}

Config::Config() {
  static const MemoryEnvironment nothing({});
  try {
    Builder(nothing, this).ApplyDefaults();
  } catch (const Failure& f) {
    // A default in the table that its own parser refuses: a defect the tests catch.
    std::fprintf(stderr, "shellac: bad built-in default: %s\n", f.message.c_str());
    std::abort();
  }
}

}  // namespace shellac::conf
