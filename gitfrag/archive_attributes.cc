#include "gitfrag/archive_attributes.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/archive_subst.h"

namespace shellac::gitfrag {

namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The attribute file outside any repository libgit2 reads at `level` (the system's gitattributes
// or the XDG attributes file): the first in the folders of its search path for that level, ""
// when there is none; false when the search path cannot be read.
bool OutsideFile(int level, std::string* found) {
  found->clear();
  const char* name = level == GIT_CONFIG_LEVEL_SYSTEM ? "/gitattributes" : "/attributes";
  git_buf paths = GIT_BUF_INIT;
  if (git_libgit2_opts(GIT_OPT_GET_SEARCH_PATH, level, &paths) != 0) return false;
  const std::string list(paths.ptr == nullptr ? "" : paths.ptr, paths.size);
  git_buf_dispose(&paths);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(GIT_PATH_LIST_SEPARATOR, start);
    if (end == std::string::npos) end = list.size();
    if (end > start && Exists(list.substr(start, end - start) + name)) {
      *found = list.substr(start, end - start) + name;
      return true;
    }
    start = end + 1;
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Lookup(git_repository* repo, git_attr_options* options, std::string_view path, size_t count,
            const char** names, const char** values, std::string* error) {
  const std::string p(path);
  if (git_attr_get_many_ext(values, repo, options, p.c_str(), count, names) == 0) return true;
  const git_error* e = git_error_last();
  *error = "cannot read the gitattributes of " + p +
           (e != nullptr ? std::string(": ") + e->message : "");
  return false;
}

// git's convert.c: what the text, eol and crlf attributes ask for (git_path_check_crlf).
enum class Action : uint8_t {
  kUndefined,
  kBinary,
  kText,
  kTextInput,
  kTextCrlf,
  kAuto,
  kAutoInput,
  kAutoCrlf
};

Action CrlfAttribute(const char* value) {
  if (GIT_ATTR_IS_TRUE(value)) return Action::kText;
  if (GIT_ATTR_IS_FALSE(value)) return Action::kBinary;
  if (GIT_ATTR_IS_UNSPECIFIED(value) || value == nullptr) return Action::kUndefined;
  if (std::strcmp(value, "input") == 0) return Action::kTextInput;
  if (std::strcmp(value, "auto") == 0) return Action::kAuto;
  return Action::kUndefined;
}

// "$Id$" and git's own "$Id: ... $" (no line break, no space before its last character) written
// as "$Id: BLOB-ID $" (git's ident_to_worktree): true with the result in *out, false when no such
// keyword is there.
bool ExpandIdent(std::string_view in, const git_oid& blob, std::string* out) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &blob);
  const std::string keyword = std::string("Id: ") + hex + " $";
  bool changed = false;
  std::string result;
  size_t at = 0, copied = 0;  // in[copied, ...) is not in `result` yet
  while (true) {
    const size_t dollar = in.find('$', at);
    if (dollar == std::string_view::npos) break;
    at = dollar + 1;
    const std::string_view rest = in.substr(at);
    if (rest.size() < 3 || !rest.starts_with("Id")) continue;
    size_t end;  // just past the keyword's closing '$'
    if (rest[2] == '$') {
      end = at + 3;
    } else if (rest[2] == ':') {
      const size_t close = in.find('$', at + 3);
      if (close == std::string_view::npos) break;  // no closing '$': nothing further
      const std::string_view inside = in.substr(at + 3, close - at - 3);
      if (inside.find('\n') != std::string_view::npos) continue;
      // A space before the last character past "Id: ": another system's keyword, kept.
      const size_t space = inside.empty() ? std::string_view::npos : inside.find(' ', 1);
      if (space != std::string_view::npos && space + 1 < inside.size()) continue;
      end = close + 1;
    } else {
      continue;
    }
    result.append(in.substr(copied, at - copied));
    result += keyword;
    copied = at = end;
    changed = true;
  }
  if (!changed) return false;
  result.append(in.substr(copied));
  *out = std::move(result);
  return true;
}

// `in` as a checkout writes it for `eol` (git's crlf_to_worktree): true with the converted bytes
// in *out, false when nothing changes.
bool ConvertEol(std::string_view in, ArchiveEol eol, std::string* out) {
  if (eol == ArchiveEol::kAsIs || in.empty()) return false;
  // git's gather_stats
  size_t lone_lf = 0, crlf = 0, lone_cr = 0, nul = 0, printable = 0, nonprintable = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == '\r') {
      if (i + 1 < in.size() && in[i + 1] == '\n') {
        ++crlf;
        ++i;
      } else {
        ++lone_cr;
      }
    } else if (c == '\n') {
      ++lone_lf;
    } else if (c == 127) {
      ++nonprintable;
    } else if (c < 32) {
      if (c == '\b' || c == '\t' || c == '\033' || c == '\014') {
        ++printable;
      } else {
        if (c == 0) ++nul;
        ++nonprintable;
      }
    } else {
      ++printable;
    }
  }
  if (in.back() == '\032') --nonprintable;  // a file ending in EOF: that one is not counted
  if (lone_lf == 0) return false;
  if (eol == ArchiveEol::kCrlfAuto &&
      (lone_cr > 0 || crlf > 0 || nul > 0 || (printable >> 7) < nonprintable))
    return false;
  out->clear();
  out->reserve(in.size() + lone_lf);
  char last = 0;
  for (const char c : in) {
    if (c == '\n' && last != '\r') out->push_back('\r');
    out->push_back(c);
    last = c;
  }
  return true;
}

}  // namespace

ArchiveSources::ArchiveSources(git_repository* repo) {
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo) == 0) {
    git_buf value = GIT_BUF_INIT;
    if (git_config_get_string_buf(&value, raw, "core.autocrlf") == 0) {
      int on = 0;
      if (std::strcmp(value.ptr, "input") == 0)
        auto_crlf = AutoCrlf::kInput;
      else if (git_config_parse_bool(&on, value.ptr) == 0 && on)
        auto_crlf = AutoCrlf::kTrue;
    }
    git_buf_dispose(&value);
    if (git_config_get_string_buf(&value, raw, "core.eol") == 0)
      eol_crlf = std::strcmp(value.ptr, "crlf") == 0;
    git_buf_dispose(&value);
    if (git_config_get_path(&value, raw, "core.attributesFile") == 0 ||
        git_config_get_string_buf(&value, raw, "core.attributesFile") == 0)  // ~ not expanded
      config_file.assign(value.ptr, value.size);
    git_buf_dispose(&value);
    // Every entry, not git_config_iterator_glob_new: libgit2's regex match data leaks there.
    git_config_foreach(
        raw,
        [](const git_config_entry* entry, void* payload) {
          const std::string_view key = entry->name;  // diff.NAME.binary, NAME as written
          int on = 0;
          if (key.size() > 12 && key.starts_with("diff.") && key.ends_with(".binary") &&
              git_config_parse_bool(&on, entry->value) == 0) {
            static_cast<std::vector<std::pair<std::string, bool>>*>(payload)->emplace_back(
                std::string(key.substr(5, key.size() - 12)), on != 0);
          }
          return 0;
        },
        &diff_binary);
    git_config_free(raw);
    text_crlf = auto_crlf == AutoCrlf::kTrue || (auto_crlf == AutoCrlf::kFalse && eol_crlf);
  }
  info = std::string(git_repository_commondir(repo)) + "info/attributes";
  if (!Exists(info)) info.clear();
  unknown = !OutsideFile(GIT_CONFIG_LEVEL_SYSTEM, &system) ||
            !OutsideFile(GIT_CONFIG_LEVEL_XDG, &xdg);
}

std::string ArchiveSources::Digest() const {
  if (auto_crlf == AutoCrlf::kFalse && !eol_crlf && info.empty() && config_file.empty() &&
      system.empty() && xdg.empty() && !unknown && diff_binary.empty())
    return "";
  // Each part as its length and bytes, so no two lists of parts read as one text.
  std::string text;
  const auto add = [&](std::string_view part) {
    text += std::to_string(part.size());
    text += ':';
    text += part;
  };
  add(auto_crlf == AutoCrlf::kTrue ? "autocrlf" : auto_crlf == AutoCrlf::kInput ? "input" : "-");
  add(eol_crlf ? "crlf" : "-");
  add(unknown ? "unknown" : "-");
  for (const std::string* file : {&info, &config_file, &system, &xdg}) {
    add(*file);
    add(file->empty() ? "" : ReadFile(*file));
  }
  for (const auto& [name, binary] : diff_binary) {
    add(name);
    add(binary ? "1" : "0");
  }
  git_oid digest;
  if (git_odb_hash(&digest, text.data(), text.size(), GIT_OBJECT_BLOB) != 0) return "?";
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &digest);
  return hex;
}

ArchiveAttributes::ArchiveAttributes(git_repository* repo, const git_oid& commit,
                                     const std::vector<File>& files, const ArchiveSources& sources)
    : repo_(repo), sources_(sources) {
  const bool tree_has_attributes = !files.empty();
  options_.flags = GIT_ATTR_CHECK_INDEX_ONLY;
  // Without a system attributes file, libgit2 need not look for it at every path.
  if (sources_.system.empty() && !sources_.unknown) options_.flags |= GIT_ATTR_CHECK_NO_SYSTEM;
  ask_all_ = !sources_.config_file.empty() || !sources_.system.empty() ||
             !sources_.xdg.empty() || sources_.unknown ||
             sources_.auto_crlf != ArchiveSources::AutoCrlf::kFalse || sources_.text_crlf;
  active_ = ask_all_ || tree_has_attributes || !sources_.info.empty();
  if (!active_) return;
  if (!ask_all_) {
    if (!sources_.info.empty()) AddRules("", ReadFile(sources_.info));
    for (const File& f : files) {
      git_blob* blob = nullptr;
      if (git_blob_lookup(&blob, repo, &f.blob) != 0) {
        ask_all_ = true;
        break;
      }
      AddRules(f.folder, std::string_view(static_cast<const char*>(git_blob_rawcontent(blob)),
                                          static_cast<size_t>(git_blob_rawsize(blob))));
      git_blob_free(blob);
    }
    if (!ask_all_ && rules_.empty()) {
      active_ = false;  // no line can change a path
      return;
    }
  }
  if (!tree_has_attributes) return;
  // The commit's .gitattributes files, as git archive reads them: from an index of its tree.
  // (libgit2 reads a commit's own attribute files again for every path it is asked about, ~13
  // us a path on git/git; from an index it keeps them by blob id.) `repo` is the archive's own
  // handle: its in-memory index is never written.
  git_commit* raw_commit = nullptr;
  git_tree* raw_tree = nullptr;
  git_index* index = nullptr;
  if (git_commit_lookup(&raw_commit, repo, &commit) != 0 ||
      git_commit_tree(&raw_tree, raw_commit) != 0 || git_repository_index(&index, repo) != 0 ||
      git_index_read_tree(index, raw_tree) != 0) {
    options_.flags |= GIT_ATTR_CHECK_INCLUDE_COMMIT;
    options_.attr_commit_id = commit;
  }
  git_index_free(index);
  git_tree_free(raw_tree);
  git_commit_free(raw_commit);
}

void ArchiveAttributes::AddRules(const std::string& folder, std::string_view text) {
  // Macros first ([attr]NAME, honoured by git in the root's files only; a superset here): a
  // macro that sets a trigger is one.
  std::vector<std::vector<std::string>> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::istringstream line{std::string(text.substr(at, end - at))};
    std::vector<std::string> tokens;
    for (std::string t; line >> t;) tokens.push_back(t);
    if (!tokens.empty() && tokens[0][0] != '#') lines.push_back(std::move(tokens));
    at = end + 1;
  }
  std::set<std::string> triggers = {"export-ignore", "export-subst", "binary", "ident"};
  for (const auto& [name, binary] : sources_.diff_binary) triggers.insert("diff=" + name);
  auto trigger = [&](std::string token) {
    if (token == "eol=crlf" || token == "-diff") return true;
    if (!token.empty() && (token[0] == '-' || token[0] == '!')) token.erase(0, 1);
    return triggers.count(token) > 0;
  };
  for (bool grew = true; grew;) {  // a macro may name another
    grew = false;
    for (const auto& tokens : lines) {
      if (!tokens[0].starts_with("[attr]") || triggers.count(tokens[0].substr(6))) continue;
      for (size_t i = 1; i < tokens.size(); ++i) {
        if (trigger(tokens[i])) {
          triggers.insert(tokens[0].substr(6));
          grew = true;
          break;
        }
      }
    }
  }
  for (const auto& tokens : lines) {
    if (tokens[0].starts_with("[attr]")) continue;
    bool any = false;
    for (size_t i = 1; i < tokens.size() && !any; ++i) any = trigger(tokens[i]);
    if (!any) continue;
    std::string pattern = tokens[0];
    if (pattern[0] == '"') {  // a quoted pattern: anything below the folder
      rules_.push_back({folder, false, ""});
      continue;
    }
    if (pattern.size() > 1 && pattern.back() == '/') pattern.pop_back();  // folders only
    if (pattern.find('/') == std::string::npos) {
      rules_.push_back({folder, true, pattern});
      continue;
    }
    if (pattern[0] == '/') pattern.erase(0, 1);
    rules_.push_back({folder, false, pattern.substr(0, pattern.find_first_of("*?[\\"))});
  }
}

bool ArchiveAttributes::Might(std::string_view path) const {
  if (ask_all_) return true;
  std::string_view name = path;
  if (name.ends_with('/')) name.remove_suffix(1);
  name = name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  const std::string last(name);
  for (const Rule& r : rules_) {
    if (!path.starts_with(r.folder)) continue;
    if (r.by_name ? fnmatch(r.pattern.c_str(), last.c_str(), 0) == 0
                  : path.substr(r.folder.size()).starts_with(r.pattern))
      return true;
  }
  return false;
}

bool ArchiveAttributes::Of(std::string_view path, bool folder, Path* out,
                           std::string* error) const {
  *out = Path{};
  if (!active_ || !Might(path)) return true;
  const char* names[] = {"export-ignore", "text", "crlf", "eol", "diff", "ident", "export-subst"};
  const char* values[7] = {};
  if (!Lookup(repo_, &options_, path, folder ? 1 : 7, names, values, error)) return false;
  out->ignored = GIT_ATTR_IS_TRUE(values[0]);
  if (folder || out->ignored) return true;
  out->convert.ident = GIT_ATTR_IS_TRUE(values[5]);
  out->convert.subst = GIT_ATTR_IS_TRUE(values[6]);
  // git's convert_attrs: text, else the legacy crlf; then eol; then core.eol and core.autocrlf.
  Action action = CrlfAttribute(values[1]);
  if (action == Action::kUndefined) action = CrlfAttribute(values[2]);
  const char* eol = values[3];
  if (action != Action::kBinary && GIT_ATTR_HAS_VALUE(eol)) {
    const bool lf = std::strcmp(eol, "lf") == 0, crlf = std::strcmp(eol, "crlf") == 0;
    if (action == Action::kAuto && lf)
      action = Action::kAutoInput;
    else if (action == Action::kAuto && crlf)
      action = Action::kAutoCrlf;
    else if (lf)
      action = Action::kTextInput;
    else if (crlf)
      action = Action::kTextCrlf;
  }
  if (action == Action::kText) action = sources_.text_crlf ? Action::kTextCrlf : Action::kTextInput;
  if (action == Action::kUndefined) {
    action = sources_.auto_crlf == ArchiveSources::AutoCrlf::kTrue ? Action::kAutoCrlf
             : sources_.auto_crlf == ArchiveSources::AutoCrlf::kInput ? Action::kAutoInput
                                              : Action::kBinary;
  }
  if (action == Action::kTextCrlf)
    out->convert.eol = ArchiveEol::kCrlf;
  else if (action == Action::kAutoCrlf || (action == Action::kAuto && sources_.text_crlf))
    out->convert.eol = ArchiveEol::kCrlfAuto;
  // git's userdiff_find_by_path: -diff is binary, a driver with diff.NAME.binary says.
  const char* diff = values[4];
  if (GIT_ATTR_IS_FALSE(diff)) {
    out->binary = 1;
  } else if (GIT_ATTR_HAS_VALUE(diff)) {
    for (const auto& [name, binary] : sources_.diff_binary)
      if (name == diff) out->binary = binary ? 1 : 0;
  }
  return true;
}


bool ConvertForCheckout(std::string_view in, const git_oid& blob, const ArchiveConversion& convert,
                        std::string* out) {
  std::string expanded, ends;
  bool changed = convert.ident && ExpandIdent(in, blob, &expanded);
  if (changed) in = expanded;
  if (ConvertEol(in, convert.eol, &ends)) {
    in = ends;
    changed = true;
  }
  if (convert.subst && convert.formats != nullptr && convert.formats->Expand(in, out)) return true;
  if (!changed) return false;
  *out = std::string(in);
  return true;
}

}  // namespace shellac::gitfrag
