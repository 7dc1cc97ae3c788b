// patch and rawdiff: plain text, repository-neutral (they depend only on the commit).
//
// patch is what `git format-patch --stdout PARENT..COMMIT` prints (cgit's patch page): one mail
// per non-merge, non-empty commit of the range, with git's --stat (80 columns) and --summary, and
// the diff without rename detection. rawdiff is the bare diff against the first parent.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "gitfrag/abbrev.h"
#include "gitfrag/history.h"
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
void WriteSummary(std::string* out, git_diff* diff) {
  char buf[64];
  for (size_t i = 0; i < git_diff_num_deltas(diff); ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff, i);
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

// The diff as `git diff` prints it. libgit2 keeps trailing blanks of the function name in a hunk
// header ("@@ -1,2 +1,2 @@ int f(a, "); git trims them, so headers are trimmed here. The ids on
// each "index" line are abbreviated as git does (abbrev.h): `abbrev` digits or more.
bool AppendDiffText(git_diff* diff, git_odb* odb, int abbrev, std::string* out) {
  // git writes the "---"/"+++" lines with a file's first hunk: a file without hunks (an empty
  // file added or deleted, a mode change) has none. libgit2 writes them with the header, so they
  // are taken back out when no hunk or binary notice follows. [labels_start, labels_end) is where
  // they are in *text.
  struct Output {
    std::string* text;
    git_odb* odb;
    int abbrev;
    size_t labels_start = std::string::npos, labels_end = 0;
    void DropUnusedLabels() {
      if (labels_start != std::string::npos && labels_end == text->size())
        text->erase(labels_start);
      labels_start = std::string::npos;
    }
  } output{out, odb, abbrev};
  auto line_cb = [](const git_diff_delta* delta, const git_diff_hunk*, const git_diff_line* line,
                    void* payload) -> int {
    auto* o = static_cast<Output*>(payload);
    std::string* text = o->text;
    std::string_view content(line->content, line->content_len);
    switch (line->origin) {
      case GIT_DIFF_LINE_CONTEXT:
      case GIT_DIFF_LINE_ADDITION:
      case GIT_DIFF_LINE_DELETION:
        text->push_back(line->origin);
        break;
      case GIT_DIFF_LINE_HUNK_HDR: {
        o->labels_start = std::string::npos;
        const bool newline = content.ends_with('\n');
        if (newline) content.remove_suffix(1);
        while (content.ends_with(' ') || content.ends_with('\t')) content.remove_suffix(1);
        text->append(content);
        if (newline) text->push_back('\n');
        return 0;
      }
      case GIT_DIFF_LINE_FILE_HDR: {
        o->DropUnusedLabels();
        // "index OLD..NEW[ MODE]": libgit2 cuts the ids to a fixed length.
        const size_t index = content.starts_with("index ") ? 0 : content.find("\nindex ");
        if (index != std::string_view::npos) {
          const size_t ids = index == 0 ? 6 : index + 7;
          const size_t end = content.find_first_of(" \n", ids);
          text->append(content.substr(0, ids));
          text->append(UniqueAbbrev(o->odb, delta->old_file.id, o->abbrev));
          text->append("..");
          text->append(UniqueAbbrev(o->odb, delta->new_file.id, o->abbrev));
          content.remove_prefix(end == std::string_view::npos ? content.size() : end);
        }
        const size_t labels =
            content.starts_with("--- ") ? 0 : content.find("\n--- ") + 1;  // npos + 1 == 0
        if (labels != 0 || content.starts_with("--- ")) {
          o->labels_start = text->size() + labels;
          o->labels_end = text->size() + content.size();
        }
        text->append(content);
        return 0;
      }
      case GIT_DIFF_LINE_BINARY:
        o->labels_start = std::string::npos;
        break;
      default:
        break;
    }
    text->append(content);
    return 0;
  };
  if (git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, line_cb, &output) != 0) return false;
  output.DropUnusedLabels();
  return true;
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

// As git's non_ascii(): bytes >= 0x80 and ESC.
bool IsAscii(std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80 || c == 0x1b) return false;
  }
  return true;
}

// One mail of the series. False when the commit has no changes (format-patch skips it).
bool AppendMail(git_repository* repo, git_odb* odb, int abbrev, git_commit* commit,
                std::string* out, std::string* reason) {
  DiffPtr diff = CommitDiff(repo, commit, nullptr, DiffOptions{}, DiffEngine::kGitDefaults,
                            reason);
  if (!diff) return false;
  const size_t n = git_diff_num_deltas(diff.get());
  if (n == 0) return false;
  std::vector<StatLine> stats;
  for (size_t i = 0; i < n; ++i) {
    git_patch* raw = nullptr;
    if (git_patch_from_diff(&raw, diff.get(), i) != 0) continue;
    PatchPtr patch(raw);
    const git_diff_delta* d = git_patch_get_delta(raw);
    StatLine s;
    s.name = d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path;
    s.binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
    if (s.binary) {
      s.deleted = git_oid_is_zero(&d->old_file.id) ? 0 : d->old_file.size;
      s.added = git_oid_is_zero(&d->new_file.id) ? 0 : d->new_file.size;
      for (auto [file, size] :
           {std::pair{&d->old_file, &s.deleted}, std::pair{&d->new_file, &s.added}}) {
        if (git_oid_is_zero(&file->id) || odb == nullptr) continue;
        size_t bytes = 0;
        git_object_t type;
        if (git_odb_read_header(&bytes, &type, odb, &file->id) == 0) *size = bytes;
      }
    } else {
      size_t context = 0, add = 0, del = 0;
      git_patch_line_stats(&context, &add, &del, raw);
      s.added = add;
      s.deleted = del;
    }
    stats.push_back(std::move(s));
  }

  const char* encoding = git_commit_message_encoding(commit);
  const git_signature* author = git_commit_author(commit);
  const std::string message = ToUtf8(git_commit_message_raw(commit), encoding);
  // The subject is the first paragraph, its lines joined by spaces.
  std::string_view rest = message;
  while (rest.starts_with('\n')) rest.remove_prefix(1);
  std::string subject;
  while (!rest.empty() && rest.front() != '\n') {
    const size_t eol = rest.find('\n');
    if (!subject.empty()) subject += ' ';
    subject += rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
  }
  while (rest.starts_with('\n')) rest.remove_prefix(1);
  const std::string name = ToUtf8(author->name, encoding);

  *out += "From " + OidHex(*git_commit_id(commit)) + " Mon Sep 17 00:00:00 2001\n";
  AppendFrom(out, name, ToUtf8(author->email, encoding));
  *out += "Date: " + FormatMailDate(author->when) + "\n";
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
  *out += rest;
  if (!rest.empty() && !rest.ends_with('\n')) *out += '\n';
  *out += "---\n";
  WriteStat(out, stats);
  WriteSummary(out, diff.get());
  *out += "\n";
  if (!AppendDiffText(diff.get(), odb, abbrev, out)) {
    *reason = "cannot format the diff";
    return false;
  }
  return true;
}

}  // namespace

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
  git_revwalk* raw_walk = nullptr;
  if (git_revwalk_new(&raw_walk, repo) != 0) return ErrorPage(500, "cannot walk history");
  RevwalkPtr walk(raw_walk);
  git_revwalk_push(raw_walk, git_commit_id(commit.get()));
  if (git_commit_parentcount(commit.get()) > 0) {
    const git_oid* parent = git_commit_parent_id(commit.get(), 0);
    git_revwalk_hide(raw_walk, parent);
    filename = OidHex(*parent) + ".." + filename;
  }
  page.headers.emplace_back("Content-Disposition", "inline; filename=\"" + filename + "\"");
  std::string text;
  git_oid oid;
  // The range's commits (libgit2's revwalk finds the set), then listed oldest first in git's
  // order: the reverse of the date-ordered walk.
  DateWalk::Set range;
  while (git_revwalk_next(&oid, raw_walk) == 0) range.insert(DateWalk::Key(oid));
  std::vector<CommitPtr> series;
  DateWalk order(repo, *git_commit_id(commit.get()), &range);
  while (CommitPtr c = order.Next()) {
    if (git_commit_parentcount(c.get()) <= 1) series.push_back(std::move(c));
  }
  // Each mail ends with a signature; mails are separated by a blank line (format-patch --stdout).
  size_t mails = 0;
  git_odb* raw_odb = nullptr;
  OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  const int abbrev = EffectiveDiffOptions(ctx).abbrev;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    std::string mail;
    if (!AppendMail(repo, odb.get(), abbrev, it->get(), &mail, &reason)) continue;
    if (mails++ > 0) text += '\n';
    text += mail;
    text += "-- \nshellac " SHELLAC_VERSION "\n\n";
  }
  if (mails == 0) text += "-- \nshellac " SHELLAC_VERSION "\n\n";
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
  DiffPtr diff = CommitDiff(repo, commit.get(), other.get(), DiffOptions{},
                            DiffEngine::kGitDefaults, &reason);
  if (!diff) return ErrorPage(500, reason);
  git_odb* raw_odb = nullptr;
  OdbPtr odb(git_repository_odb(&raw_odb, repo) == 0 ? raw_odb : nullptr);
  std::string text;
  if (!AppendDiffText(diff.get(), odb.get(), EffectiveDiffOptions(ctx).abbrev, &text))
    return ErrorPage(500, "cannot format the diff");
  ctx.out.Raw(text);
  Page page;
  page.content_type = "text/plain; charset=UTF-8";
  return page;
}

}  // namespace shellac::gitfrag
