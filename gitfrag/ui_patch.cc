// patch and rawdiff: plain text, repository-neutral (they depend only on the commit).
//
// patch is what `git format-patch --stdout PARENT..COMMIT` prints (cgit's patch page): one mail
// per non-merge, non-empty commit of the range, with git's --stat (80 columns) and --summary, and
// the diff without rename detection. rawdiff is the bare diff against the first parent.
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gitfrag/abbrev.h"
#include "gitfrag/history.h"
#include "gitfrag/memo.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {
namespace {

struct StatLine {
  std::string name;
  bool binary = false;
  uint64_t added = 0, deleted = 0;  // lines, or bytes for a binary file
};

size_t DecimalWidth(uint64_t n) {
  size_t w = 1;
  while (n >= 10) {
    n /= 10;
    ++w;
  }
  return w;
}

// Display width of a path: UTF-8 continuation bytes take no column.
size_t Columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

uint64_t ScaleLinear(uint64_t it, uint64_t width, uint64_t max_change) {
  if (it == 0) return 0;
  return 1 + (it * (width - 1) / max_change);
}

// git's diffstat layout for a fixed 80-column width (cgit runs git's code without a terminal).
void WriteStat(std::string* out, const std::vector<StatLine>& files) {
  constexpr uint64_t kWidth = 80;
  uint64_t max_change = 0, max_len = 0, bin_width = 0, number_width = 0, adds = 0, dels = 0;
  for (const auto& f : files) {
    max_len = std::max<uint64_t>(max_len, Columns(f.name));
    if (f.binary) {
      bin_width =
          std::max<uint64_t>(bin_width, 14 + DecimalWidth(f.added) + DecimalWidth(f.deleted));
      number_width = 3;  // change counts align with "Bin"
      continue;
    }
    max_change = std::max(max_change, f.added + f.deleted);
    adds += f.added;
    dels += f.deleted;
  }
  number_width = std::max<uint64_t>(number_width, DecimalWidth(max_change));
  uint64_t graph_width = max_change + 4 > bin_width ? max_change : bin_width - 4;
  uint64_t name_width = max_len;
  if (name_width + number_width + 6 + graph_width > kWidth) {
    const int64_t limit =
        static_cast<int64_t>(kWidth * 3 / 8) - static_cast<int64_t>(number_width) - 6;
    if (static_cast<int64_t>(graph_width) > limit)
      graph_width = static_cast<uint64_t>(std::max<int64_t>(limit, 6));
    if (name_width > kWidth - number_width - 6 - graph_width)
      name_width = kWidth - number_width - 6 - graph_width;
    else
      graph_width = kWidth - number_width - 6 - name_width;
  }
  char buf[64];
  for (const auto& f : files) {
    std::string name = f.name;
    const size_t cols = Columns(name);
    if (cols > name_width) {
      // Too long: keep the tail, prefixed with "...".
      size_t skip = cols - (name_width - 3), i = 0;
      while (skip > 0 && i < name.size()) {
        ++i;
        while (i < name.size() && (static_cast<unsigned char>(name[i]) & 0xC0) == 0x80) ++i;
        --skip;
      }
      name = "..." + name.substr(i);
    }
    *out += ' ';
    *out += name;
    out->append(name_width > Columns(name) ? name_width - Columns(name) : 0, ' ');
    *out += " |";
    if (f.binary) {
      std::snprintf(buf, sizeof buf, " %*s", static_cast<int>(number_width), "Bin");
      *out += buf;
      if (f.added == 0 && f.deleted == 0) {
        *out += '\n';
        continue;
      }
      *out += " " + std::to_string(f.deleted) + " -> " + std::to_string(f.added) + " bytes\n";
      continue;
    }
    uint64_t add = f.added, del = f.deleted;
    if (graph_width <= max_change) {
      uint64_t total = ScaleLinear(add + del, graph_width, max_change);
      if (total < 2 && add && del) total = 2;
      if (add < del) {
        add = ScaleLinear(add, graph_width, max_change);
        del = total - add;
      } else {
        del = ScaleLinear(del, graph_width, max_change);
        add = total - del;
      }
    }
    std::snprintf(buf, sizeof buf, " %*llu", static_cast<int>(number_width),
                  static_cast<unsigned long long>(f.added + f.deleted));
    *out += buf;
    if (f.added + f.deleted) *out += ' ';
    out->append(add, '+');
    out->append(del, '-');
    *out += '\n';
  }
  const size_t n = files.size();
  *out += " " + std::to_string(n) + (n == 1 ? " file changed" : " files changed");
  if (n == 0) {
    *out += '\n';
    return;
  }
  if (adds || dels == 0)
    *out += ", " + std::to_string(adds) + (adds == 1 ? " insertion(+)" : " insertions(+)");
  if (dels || adds == 0)
    *out += ", " + std::to_string(dels) + (dels == 1 ? " deletion(-)" : " deletions(-)");
  *out += '\n';
}

// git's --summary lines: created, deleted and mode-changed files.
void WriteSummary(std::string* out, const std::vector<FileDiff>& files) {
  char buf[64];
  for (const FileDiff& f : files) {
    const git_diff_delta* d = &f.delta;
    if (d->status == GIT_DELTA_ADDED) {
      std::snprintf(buf, sizeof buf, " create mode %06o ", d->new_file.mode);
      *out += buf + std::string(d->new_file.path) + "\n";
    } else if (d->status == GIT_DELTA_DELETED) {
      std::snprintf(buf, sizeof buf, " delete mode %06o ", d->old_file.mode);
      *out += buf + std::string(d->old_file.path) + "\n";
    } else if (d->old_file.mode != d->new_file.mode) {
      std::snprintf(buf, sizeof buf, " mode change %06o => %06o ", d->old_file.mode,
                    d->new_file.mode);
      *out += buf + std::string(d->new_file.path) + "\n";
    }
  }
}

// How many leading bytes of `s` are valid UTF-8 (git's utf8.c rules: no overlong forms, no
// surrogates, no U+FFFE/U+FFFF, nothing past U+10FFFF).
size_t ValidUtf8Prefix(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t k) { return (p[i + k] & 0xc0) == 0x80; };
  while (i < n) {
    const unsigned char c = p[i];
    size_t len;
    if (c < 0x80) {
      len = 1;
    } else if ((c & 0xe0) == 0xc0) {
      if (n - i < 2 || !cont(1) || (c & 0xfe) == 0xc0) break;
      len = 2;
    } else if ((c & 0xf0) == 0xe0) {
      if (n - i < 3 || !cont(1) || !cont(2) || (c == 0xe0 && (p[i + 1] & 0xe0) == 0x80) ||
          (c == 0xed && (p[i + 1] & 0xe0) == 0xa0) ||
          (c == 0xef && p[i + 1] == 0xbf && (p[i + 2] & 0xfe) == 0xbe))
        break;
      len = 3;
    } else if ((c & 0xf8) == 0xf0) {
      if (n - i < 4 || !cont(1) || !cont(2) || !cont(3) ||
          (c == 0xf0 && (p[i + 1] & 0xf0) == 0x80) || (c == 0xf4 && p[i + 1] > 0x8f) || c > 0xf4)
        break;
      len = 4;
    } else {
      break;
    }
    i += len;
  }
  return i;
}

// "PREFIX + path" as a diff header names a file: in double quotes, with C escapes, when the path
// has a '"', a '\', a control byte or a byte over '~' (git's and libgit2's quoting).
void AppendQuotedPath(std::string* out, std::string_view prefix, std::string_view path) {
  bool quote = false;
  for (unsigned char c : path) quote |= c == '"' || c == '\\' || c < 0x20 || c >= 0x7f;
  if (!quote) {
    out->append(prefix).append(path);
    return;
  }
  *out += '"';
  out->append(prefix);
  char buf[8];
  for (unsigned char c : path) {
    if (c >= '\a' && c <= '\r') {
      *out += '\\';
      *out += "abtnvfr"[c - '\a'];
    } else if (c == '"' || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      *out += buf;
    } else {
      *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

// One file of the diff as `git diff` prints it (the layout libgit2's patch printer shares):
// "diff --git", mode lines, "index OLD..NEW[ MODE]" with ids abbreviated as git does (abbrev.h:
// `abbrev` digits or more), "---"/"+++" only when a hunk follows (a tab after a name with a
// space), a binary file's one-line notice, then the hunks with git's hunk headers (HunkHeaders, up
// to their first byte that is not UTF-8). A file with neither a mode change nor a hunk writes
// nothing.
void AppendFileText(git_repository* repo, git_odb* odb, int abbrev, const FileDiff& f,
                    std::string* out) {
  const git_diff_delta& d = f.delta;
  // The own line diff's patch (FileDiff::own), or libgit2's read the same way.
  FilePatch libgit2;
  if (!f.own.made) libgit2 = PatchLinesOf(f.patch.get());
  const FilePatch& patch = f.own.made ? f.own : libgit2;
  const bool binary = (d.flags & GIT_DIFF_FLAG_BINARY) != 0 || patch.binary;
  const size_t hunks = patch.hunks.size();
  const bool old_side = !git_oid_is_zero(&d.old_file.id);
  const bool new_side = !git_oid_is_zero(&d.new_file.id);
  if (d.old_file.mode == d.new_file.mode && !binary && hunks == 0) return;
  const bool unchanged = (!old_side && !new_side) ||
                         (d.old_file.mode != GIT_FILEMODE_COMMIT &&
                          d.new_file.mode != GIT_FILEMODE_COMMIT &&
                          git_oid_equal(&d.old_file.id, &d.new_file.id));
  std::string old_name, new_name;
  AppendQuotedPath(&old_name, "a/", d.old_file.path ? d.old_file.path : d.new_file.path);
  AppendQuotedPath(&new_name, "b/", d.new_file.path ? d.new_file.path : d.old_file.path);
  char buf[64];
  *out += "diff --git " + old_name + " " + new_name + "\n";
  // A side without a file has mode 0.
  const bool one_sided = d.old_file.mode == 0 || d.new_file.mode == 0;
  if (d.old_file.mode != d.new_file.mode && (unchanged || !one_sided)) {
    std::snprintf(buf, sizeof buf, "old mode %o\nnew mode %o\n", d.old_file.mode,
                  d.new_file.mode);
    *out += buf;
  }
  if (!unchanged) {
    if (d.old_file.mode != d.new_file.mode && one_sided) {
      std::snprintf(buf, sizeof buf, "%s file mode %o\n", d.old_file.mode == 0 ? "new" : "deleted",
                    d.old_file.mode == 0 ? d.new_file.mode : d.old_file.mode);
      *out += buf;
    }
    *out += "index " + UniqueAbbrev(repo, odb, d.old_file.id, abbrev) + ".." +
            UniqueAbbrev(repo, odb, d.new_file.id, abbrev);
    if (d.old_file.mode == d.new_file.mode) {
      std::snprintf(buf, sizeof buf, " %o", d.old_file.mode);
      *out += buf;
    }
    *out += '\n';
    if (!binary && hunks > 0) {
      // git ends a label holding a space with a tab (libgit2 does not).
      for (const auto& [marker, label] : {std::pair{"--- ", old_side ? old_name : "/dev/null"},
                                          std::pair{"+++ ", new_side ? new_name : "/dev/null"}}) {
        *out += marker + label;
        if (label.find(' ') != std::string::npos) *out += '\t';
        *out += '\n';
      }
    }
  }
  if (binary) {
    if (!unchanged) {
      *out += "Binary files " + (old_side ? old_name : std::string("/dev/null")) + " and " +
              (new_side ? new_name : std::string("/dev/null")) + " differ\n";
    }
    return;
  }
  HunkHeaders headers(repo, d, f.OldText());
  for (const PatchHunk& hunk : patch.hunks) {
    // git's diff output (not cgit's own xdiff call) ends a hunk header before its first byte that
    // is not valid UTF-8: a function name cut inside a character, or Latin-1 text.
    const std::string& header = headers.Next(hunk.hunk);
    out->append(header, 0, ValidUtf8Prefix(header));
    *out += '\n';
    for (size_t l = hunk.first; l < hunk.first + hunk.count; ++l) {
      const PatchLine& line = patch.lines[l];
      // The origin of a line of text, and nothing before "\ No newline at end of file" (its
      // content starts with the '\n' the line above lacks).
      if (line.origin == GIT_DIFF_LINE_CONTEXT || line.origin == GIT_DIFF_LINE_ADDITION ||
          line.origin == GIT_DIFF_LINE_DELETION)
        *out += line.origin;
      out->append(line.content);
    }
  }
}

// A mail header value wrapped as git wraps a patch's Subject: words fill lines of at most 78
// columns (the first line counts the header name), continuation lines start with one space.
void AppendWrapped(std::string* out, std::string_view header, std::string_view text) {
  constexpr size_t kWidth = 78;
  *out += header;
  size_t column = Columns(header);
  bool first = true;
  while (!text.empty()) {
    const size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    const size_t width = Columns(word);
    if (first) {
      column += width;
    } else if (column + 1 + width <= kWidth) {
      *out += ' ';
      column += 1 + width;
    } else {
      *out += "\n ";
      column = 1 + width;
    }
    *out += word;
    first = false;
  }
  *out += '\n';
}

// "From: NAME <EMAIL>" as cgit 1.2.3 writes it: a name with mail-special characters is quoted, a
// non-ASCII one is written as it is (not RFC 2047 encoded), and the address moves to a
// continuation line when the whole would pass 78 bytes.
void AppendFrom(std::string* out, std::string_view name, std::string_view email) {
  std::string line = "From: ";
  const size_t limit = 78;
  if (name.find_first_of("()<>[]:;@\\,.\"") != std::string_view::npos) {
    line += '"';
    for (char c : name) {
      if (c == '"' || c == '\\') line += '\\';
      line += c;
    }
    line += '"';
  } else {
    line += name;
  }
  const size_t last_line =
      line.size() - (line.rfind('\n') == std::string::npos ? 0 : line.rfind('\n') + 1);
  if (last_line + 2 + email.size() + 1 > limit) line += '\n';
  line += " <";
  line += email;
  line += ">\n";
  *out += line;
}

// One changed file's text; a kind change as git writes it, a deletion and then an addition (its
// stat and summary keep it one file with a mode change).
void AppendChangeText(git_repository* repo, git_odb* odb, int abbrev, uint64_t attributes,
                      const FileDiff& f, std::string* out) {
  if (f.delta.status != GIT_DELTA_TYPECHANGE) {
    AppendFileText(repo, odb, abbrev, f, out);
    return;
  }
  FileDiff deletion, addition;
  std::deque<std::string> texts;
  if (!SplitKindChange(repo, attributes, f, &deletion, &addition, &texts)) return;
  AppendFileText(repo, odb, abbrev, deletion, out);
  AppendFileText(repo, odb, abbrev, addition, out);
}

// As git's non_ascii(): bytes >= 0x80 and ESC.
bool IsAscii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80 || c == 0x1b) return false;
  }
  return true;
}

// What patch and rawdiff print of a commit's diff against its first parent (git's defaults): the
// files' text, and the patch's --stat rows and --summary lines of the same files. Both pages of a
// commit make the same per-file diffs, so it is made once and kept (CommitDiffTextOf).
struct CommitDiffText {
  std::vector<StatLine> stats;  // empty: no file with a patch (format-patch skips the commit)
  std::string summary;
  std::string text;
};

struct CommitDiffTextWeight {
  size_t operator()(const std::shared_ptr<const CommitDiffText>& t) const {
    size_t bytes = sizeof(CommitDiffText) + t->summary.size() + t->text.size();
    for (const StatLine& s : t->stats) bytes += sizeof(StatLine) + s.name.size();
    return bytes;
  }
};

// The memo holds at most two generations of this many bytes; a commit whose text weighs more
// than a sixteenth of that is made again each time rather than kept (a huge diff would otherwise
// push out everything else).
constexpr size_t kDiffTextGenerationBytes = size_t{8} << 20;

// `path`: only the files under it (a path-limited patch), "" all.
std::shared_ptr<const CommitDiffText> MakeCommitDiffText(git_repository* repo, git_odb* odb,
                                                         int abbrev, uint64_t attributes,
                                                         git_commit* commit, std::string_view path,
                                                         std::string* reason) {
  CommitFiles files;
  files.own_patches = true;
  files.attributes = attributes;
  if (!CommitFileDiffs(repo, commit, nullptr, DiffOptions{}, path, &files, reason,
                       FileDiffPath::kOwnRaw, nullptr, DiffEngine::kGitDefaults))
    return nullptr;
  // A file whose patch could not be made is left out, as the commit page leaves it out.
  std::erase_if(files.files, [](const FileDiff& f) { return !f.patch && !f.own.made; });
  auto out = std::make_shared<CommitDiffText>();
  for (const FileDiff& f : files.files) {
    const git_diff_delta* d = &f.delta;
    StatLine s;
    s.name = d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path;
    s.binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0 ||
               (f.own.made ? f.own.binary
                           : (git_patch_get_delta(f.patch.get())->flags & GIT_DIFF_FLAG_BINARY) != 0);
    if (s.binary) {
      for (auto [file, size] :
           {std::pair{&d->old_file, &s.deleted}, std::pair{&d->new_file, &s.added}}) {
        if (git_oid_is_zero(&file->id) || odb == nullptr) continue;
        size_t bytes = 0;
        git_object_t type;
        if (git_odb_read_header(&bytes, &type, odb, &file->id) == 0) *size = bytes;
      }
    } else if (f.own.made) {
      s.added = f.own.added;
      s.deleted = f.own.removed;
    } else {
      size_t context = 0, add = 0, del = 0;
      git_patch_line_stats(&context, &add, &del, f.patch.get());
      s.added = add;
      s.deleted = del;
    }
    out->stats.push_back(std::move(s));
  }
  WriteSummary(&out->summary, files.files);
  for (const FileDiff& f : files.files)
    AppendChangeText(repo, odb, abbrev, attributes, f, &out->text);
  return out;
}

// `commit`'s diff text against its first parent with ids abbreviated to `abbrev` digits or more,
// from the memo or made; null with *reason when the trees cannot be read or diffed. Keyed by the
// commit, `abbrev` and the repository's attribute sources (Registry::Lease::attributes), as the
// stored patch and rawdiff parts are (site.cc's cache keys): the text is the same in every fork
// without gitattributes (0), and a fork's own while its attribute files stay as they are. A
// path-limited one (`path` not empty) is made each time.
std::shared_ptr<const CommitDiffText> CommitDiffTextOf(git_repository* repo, git_odb* odb,
                                                       int abbrev, uint64_t attributes,
                                                       git_commit* commit, std::string_view path,
                                                       std::string* reason) {
  if (!path.empty()) return MakeCommitDiffText(repo, odb, abbrev, attributes, commit, path, reason);
  struct Key {
    git_oid id;
    int abbrev;
    uint64_t attributes;
    bool operator==(const Key& o) const {
      return OidEqual()(id, o.id) && abbrev == o.abbrev && attributes == o.attributes;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return OidHash()(k.id) ^ static_cast<size_t>(k.abbrev) ^ static_cast<size_t>(k.attributes);
    }
  };
  static SharedMemo<Key, std::shared_ptr<const CommitDiffText>, KeyHash, std::equal_to<Key>,
                    CommitDiffTextWeight>
      memo(kDiffTextGenerationBytes);
  const Key key{*git_commit_id(commit), abbrev, attributes};
  if (std::optional<std::shared_ptr<const CommitDiffText>> known = memo.Find(key)) return *known;
  std::shared_ptr<const CommitDiffText> made =
      MakeCommitDiffText(repo, odb, abbrev, attributes, commit, "", reason);
  if (made != nullptr && CommitDiffTextWeight()(made) <= kDiffTextGenerationBytes / 16)
    memo.Add(key, made);
  return made;
}

// C's isspace(), which git's is_blank_line() trims.
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string_view TrimRight(std::string_view line) {
  while (!line.empty() && IsSpace(line.back())) line.remove_suffix(1);
  return line;
}

// The next line of *rest with its '\n' (the last one may have none), taken off *rest.
std::string_view TakeLine(std::string_view* rest) {
  const size_t eol = rest->find('\n');
  const std::string_view line = rest->substr(0, eol == std::string_view::npos ? eol : eol + 1);
  rest->remove_prefix(line.size());
  return line;
}

// Takes the lines that hold nothing but whitespace off the front of *rest.
void SkipBlankLines(std::string_view* rest) {
  for (std::string_view after = *rest; !after.empty() && TrimRight(TakeLine(&after)).empty();)
    *rest = after;
}

// A commit message as git's pretty-printer splits it (pretty.c): blank lines (nothing but
// whitespace) before the subject are skipped; the subject is the lines up to the next blank one,
// each without its trailing whitespace, joined by spaces; the body starts after the blank lines
// that follow.
void SplitMail(std::string_view message, std::string* subject, std::string_view* body) {
  SkipBlankLines(&message);
  subject->clear();
  for (std::string_view line; !(line = TrimRight(TakeLine(&message))).empty();) {
    if (!subject->empty()) *subject += ' ';
    *subject += line;
  }
  SkipBlankLines(&message);
  *body = message;
}

// The body as git's mail format prints it: each line without its trailing whitespace, the blank
// lines at the end left out.
void AppendMailBody(std::string* out, std::string_view body) {
  size_t kept = out->size();  // where the last line that is not blank ends
  while (!body.empty()) {
    const std::string_view line = TrimRight(TakeLine(&body));
    out->append(line).push_back('\n');
    if (!line.empty()) kept = out->size();
  }
  out->resize(kept);
}

// One mail of the series. False when the commit has no changes (format-patch skips it).
// `plain_email` false (cgit's noplainemail): cgit asks git for a format of its own instead of
// --format=email, "From %H Mon Sep 17 00:00:00 2001%nFrom: %an%nDate: %aD%n%w(78,0,1)Subject:
// %s%n%n%w(0)%b": the author's name alone, no MIME headers, the body as it is. `path`: the
// files under it only, and after the stat cgit's "(limited to 'PATH')" line.
bool AppendMail(git_repository* repo, git_odb* odb, int abbrev, uint64_t attributes,
                git_commit* commit, bool plain_email, std::string_view path, std::string* out,
                std::string* reason) {
  const std::shared_ptr<const CommitDiffText> diff =
      CommitDiffTextOf(repo, odb, abbrev, attributes, commit, path, reason);
  if (diff == nullptr || diff->stats.empty()) return false;

  const char* encoding = git_commit_message_encoding(commit);
  const git_signature* author = git_commit_author(commit);
  const std::string message = ToUtf8(git_commit_message_raw(commit), encoding);
  std::string subject;
  std::string_view body;
  SplitMail(message, &subject, &body);
  const std::string name = ToUtf8(author->name, encoding);

  *out += "From " + OidHex(*git_commit_id(commit)) + " Mon Sep 17 00:00:00 2001\n";
  if (plain_email) {
    AppendFrom(out, name, ToUtf8(author->email, encoding));
  } else {
    *out += "From: " + name + "\n";
  }
  *out += "Date: " + FormatMailDate(author->when) + "\n";
  if (!plain_email) {
    AppendWrapped(out, "Subject: ", subject);  // "Subject: " even when the subject is empty
    *out += "\n";
    *out += body;
  } else {
    if (subject.empty())
      *out += "Subject:\n";  // git writes no blank after the colon of an empty subject
    else
      AppendWrapped(out, "Subject: ", subject);
    // git marks the mail 8-bit when the message (not the author's name) has a byte git counts as
    // non-ASCII.
    if (!IsAscii(message)) {
      *out +=
          "MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: "
          "8bit\n";
    }
    *out += "\n";
    AppendMailBody(out, body);
  }
  *out += "---\n";
  WriteStat(out, diff->stats);
  *out += diff->summary;
  *out += "\n";
  if (!path.empty()) {
    *out += "(limited to '";
    *out += path;
    *out += "')\n\n";
  }
  *out += diff->text;
  return true;
}

}  // namespace

bool AppendDiffText(git_repository* repo, git_commit* commit, git_commit* other, int abbrev,
                    std::string* out, std::string* reason, FileDiffPath how,
                    uint64_t attributes) {
  CommitFiles files;
  files.own_patches = how != FileDiffPath::kLibgit2;
  files.attributes = attributes;
  if (!CommitFileDiffs(repo, commit, other, DiffOptions{}, "", &files, reason, how, nullptr,
                       DiffEngine::kGitDefaults))
    return false;
  git_odb* raw_odb = nullptr;
  OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  for (const FileDiff& f : files.files) {
    if (f.patch || f.own.made) AppendChangeText(repo, odb.get(), abbrev, attributes, f, out);
  }
  return true;
}

Page RenderPatch(const PageContext& ctx) {
  int status = 200;
  std::string reason;
  git_repository* repo = ctx.lease.repo();
  CommitPtr commit = ResolveCommit(repo, ctx.route.id, ctx.route.head, &status, &reason);
  if (!commit) return ErrorPage(status, reason);
  const std::string hex = OidHex(*git_commit_id(commit.get()));
  Page page;
  page.content_type = "text/plain; charset=UTF-8";
  std::string filename = hex + ".patch";

  // The range PARENT..COMMIT, oldest first, merges left out (a merge's patch is the series of
  // commits it brings in).
  if (git_commit_parentcount(commit.get()) > 0)
    filename = OidHex(*git_commit_parent_id(commit.get(), 0)) + ".." + filename;
  page.headers.emplace_back("Content-Disposition", "inline; filename=\"" + filename + "\"");
  std::string text;
  std::vector<CommitPtr> series;
  const std::string& path = ctx.route.path;
  if (path.empty() && git_commit_parentcount(commit.get()) <= 1) {
    // A commit with one parent or none is the whole range: nothing else is reachable from it
    // but from its parent. No walk, no commit read again.
    series.push_back(std::move(commit));
  } else {
    // The range's commits (libgit2's revwalk finds the set; a root commit's is itself), then
    // listed oldest first in git's order: the reverse of the date-ordered walk. Limited to a path
    // (git log PARENT..COMMIT -- PATH), those that change it, with git's history simplification.
    DateWalk::Set range;
    if (git_commit_parentcount(commit.get()) > 0) {
      git_revwalk* raw_walk = nullptr;
      if (git_revwalk_new(&raw_walk, repo) != 0) return ErrorPage(500, "cannot walk history");
      RevwalkPtr walk(raw_walk);
      git_revwalk_push(raw_walk, git_commit_id(commit.get()));
      git_revwalk_hide(raw_walk, git_commit_parent_id(commit.get(), 0));
      git_oid oid;
      while (git_revwalk_next(&oid, raw_walk) == 0) range.insert(DateWalk::Key(oid));
    } else {
      range.insert(DateWalk::Key(*git_commit_id(commit.get())));
    }
    DateWalk order(repo, {*git_commit_id(commit.get())}, &range, path);
    while (CommitPtr c = order.Next()) {
      if (git_commit_parentcount(c.get()) <= 1) series.push_back(std::move(c));
    }
  }
  // Each mail ends with a signature; mails are separated by a blank line (format-patch --stdout).
  size_t mails = 0;
  git_odb* raw_odb = nullptr;
  OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  const int abbrev = EffectiveDiffOptions(ctx).abbrev;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    std::string mail;
    if (!AppendMail(repo, odb.get(), abbrev, ctx.lease.attributes(), it->get(),
                    ctx.site.plain_email(), path, &mail, &reason))
      continue;
    if (mails++ > 0) text += '\n';
    text += mail;
    text += "-- \nshellac " SHELLAC_VERSION "\n\n";
  }
  // (A path-limited series without a commit that changes the path is nothing at all, as cgit's.)
  if (mails == 0 && path.empty()) text += "-- \nshellac " SHELLAC_VERSION "\n\n";
  ctx.out.Raw(text);
  return page;
}

Page RenderRawDiff(const PageContext& ctx) {
  git_repository* repo = ctx.lease.repo();
  CommitPtr commit, other;
  if (Page error; !ResolveCommits(repo, ctx.route, &commit, &other, &error)) return error;
  std::string reason;
  // git's defaults, as cgit's rawdiff: the page's diff options do not apply (and are not part of
  // its cache key).
  const int abbrev = EffectiveDiffOptions(ctx).abbrev;
  if (other == nullptr) {
    // Against the first parent: the text the commit's patch prints after its stat (memoised).
    git_odb* raw_odb = nullptr;
    const OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
    const std::shared_ptr<const CommitDiffText> diff = CommitDiffTextOf(
        repo, odb.get(), abbrev, ctx.lease.attributes(), commit.get(), "", &reason);
    if (diff == nullptr) return ErrorPage(500, reason);
    ctx.out.Raw(diff->text);
  } else {
    std::string text;
    if (!AppendDiffText(repo, commit.get(), other.get(), abbrev, &text, &reason,
                        FileDiffPath::kOwnRaw, ctx.lease.attributes()))
      return ErrorPage(500, reason);
    ctx.out.Raw(text);
  }
  Page page;
  page.content_type = "text/plain; charset=UTF-8";
  return page;
}

}  // namespace shellac::gitfrag
