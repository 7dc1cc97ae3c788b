// The tree page (a folder's listing, or a file's view around an include of the neutral blob
// part), the blob part itself (numbered lines or a hex dump, keyed by the blob's id alone), and
// the plain page (a file's bytes, or a folder's plain listing), as cgit 1.2.3 writes them.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "gitfrag/blob_stream.h"
#include "gitfrag/filter.h"
#include "gitfrag/memo.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"
#include "gitfrag/raw_objects.h"

namespace shellac::gitfrag {

namespace {

// git's buffer_is_binary: a NUL among the first 8000 bytes.
bool IsBinary(std::string_view bytes) {
  return bytes.substr(0, 8000).find('\0') != std::string_view::npos;
}

std::string_view BlobBytes(git_blob* blob) {
  return {static_cast<const char*>(git_blob_rawcontent(blob)),
          static_cast<size_t>(git_blob_rawsize(blob))};
}

// cgit's file mode column: the type letter, then the permission bits git records.
std::string TreeMode(uint32_t mode) {
  std::string s(10, '-');
  switch (mode & 0170000) {
    case 0040000:
      s[0] = 'd';
      break;
    case 0120000:
      s[0] = 'l';
      break;
    case 0160000:
      s[0] = 'm';
      break;
    default:
      break;
  }
  static constexpr char kBits[] = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (mode & (0400u >> i)) s[1 + i] = kBits[i];
  return s;
}

// "f.c « dir - REPO - DESC": the path's segments, last first, before the repository's title.
std::string Title(const PageContext& ctx) {
  std::string title;
  std::string_view path = ctx.route.path;
  while (!path.empty()) {
    const size_t slash = path.rfind('/');
    if (!title.empty()) title += " \u00ab ";
    title += path.substr(slash == std::string_view::npos ? 0 : slash + 1);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
  }
  if (!title.empty()) title += " - ";
  return title + ctx.repo.name + " - " + (ctx.repo.desc.empty() ? "[no description]" : ctx.repo.desc);
}

// `dir` + "/" + `target` with "." and ".." resolved (a symlink's target as a tree path).
std::string JoinPath(std::string_view dir, std::string_view target) {
  std::vector<std::string_view> parts;
  auto add = [&](std::string_view s) {
    while (!s.empty()) {
      const size_t slash = s.find('/');
      const std::string_view part = s.substr(0, slash);
      s = slash == std::string_view::npos ? std::string_view() : s.substr(slash + 1);
      if (part.empty() || part == ".") continue;
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
        continue;
      }
      parts.push_back(part);
    }
  };
  if (!target.starts_with('/')) add(dir);
  add(target);
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

// What route.path names in the commit's tree (the root tree for an empty path).
struct Resolved {
  uint32_t mode = 0040000;
  git_oid oid{};
  git_object_t type = GIT_OBJECT_INVALID;  // a tree or a blob; GIT_OBJECT_INVALID: a submodule
  size_t size = 0;                         // a blob's, from its header (the blob is not read)
  TreePtr tree;                            // a folder's
};

// What a path names in a commit's tree, which the commit's id fixes: remembered (SharedMemo), so
// the same file or folder of the same commit asked for through another fork, branch or URL
// spelling costs no walk from the root tree (each step a tree read).
struct PathEntry {
  uint32_t mode = 0;
  git_oid oid{};
  git_object_t type = GIT_OBJECT_INVALID;
  size_t size = 0;
};
constexpr size_t kPathsGeneration = 50000;  // entries (~100 bytes each) per generation

SharedMemo<std::string, PathEntry>& PathMemo() {
  static SharedMemo<std::string, PathEntry> memo(kPathsGeneration);
  return memo;
}

// An object's size from its header, and the same for every repository: remembered (the listing
// reads one per entry, and the folders of neighbouring commits share most of their entries).
constexpr size_t kSizesGeneration = 200000;

size_t ObjectSize(git_odb* odb, const git_oid& oid) {
  static SharedMemo<git_oid, size_t, OidHash, OidEqual> memo(kSizesGeneration);
  if (const std::optional<size_t> known = memo.Find(oid)) return *known;
  size_t size = 0;
  git_object_t type;
  if (git_odb_read_header(&size, &type, odb, &oid) != 0) return 0;  // not remembered
  memo.Add(oid, size);
  return size;
}

// The commit the route names and its root tree: a full id's tree from the commit-graph
// (GraphTree), with no commit read; anything else resolved as a revision. False with *error when
// it does not resolve.
bool CommitAndTree(const PageContext& ctx, git_oid* commit, git_oid* tree, Page* error) {
  const Route& r = ctx.route;
  git_repository* repo = ctx.lease.repo();
  git_oid id;
  if (IsFullSha(r.id) && git_oid_fromstrn(&id, r.id.data(), r.id.size()) == 0) {
    if (const std::optional<git_oid> root = GraphTree(repo, id)) {
      *commit = id;
      *tree = *root;
      return true;
    }
  }
  int status = 200;
  std::string reason;
  const CommitPtr resolved = ResolveCommit(repo, r.id, r.head, &status, &reason);
  if (!resolved) {
    *error = ErrorPage(status, reason);
    return false;
  }
  *commit = *git_commit_id(resolved.get());
  *tree = *git_commit_tree_id(resolved.get());
  return true;
}

// False with *error set when the commit or path does not resolve.
bool ResolvePath(const PageContext& ctx, Resolved* out, Page* error) {
  const Route& r = ctx.route;
  git_repository* repo = ctx.lease.repo();
  if (BadPath(r.path)) {
    *error = ErrorPage(404, "bad path: it climbs out of the tree or has an empty segment");
    return false;
  }
  git_oid commit_id, root_id;
  if (!CommitAndTree(ctx, &commit_id, &root_id, error)) return false;
  std::string key(reinterpret_cast<const char*>(commit_id.id), GIT_OID_RAWSZ);
  key += r.path;
  // Remembered: the commit is in this repository (resolved above), so its tree and what the path
  // names are too.
  if (const std::optional<PathEntry> known = r.path.empty() ? std::nullopt : PathMemo().Find(key)) {
    out->mode = known->mode;
    out->oid = known->oid;
    out->type = known->type;
    out->size = known->size;
    if (out->type != GIT_OBJECT_TREE) return true;
    git_tree* raw_sub = nullptr;
    if (git_tree_lookup(&raw_sub, repo, &out->oid) != 0) {
      *error = ErrorPage(404, "object missing from the repository: " + OidHex(out->oid));
      return false;
    }
    out->tree.reset(raw_sub);
    return true;
  }
  auto remember = [&] { PathMemo().Add(key, PathEntry{out->mode, out->oid, out->type, out->size}); };
  // The path's entry from raw trees (the pack reader's, each tree's entry for a name remembered
  // by RawObjects): no tree parsed on the way. A tree it cannot read leaves the walk to libgit2,
  // which gives its own answer (and error).
  RawObjects objects(repo);
  const TreeEntry raw_entry = r.path.empty() ? TreeEntry{} : objects.PathEntry(root_id, r.path);
  if (!r.path.empty() && !objects.incomplete()) {
    if (!raw_entry.present) {
      *error = ErrorPage(404, "no such path in this revision: " + r.path);
      return false;
    }
    out->mode = CanonicalMode(raw_entry.mode);
    out->oid = raw_entry.id;
  } else {
    git_tree* raw_tree = nullptr;
    if (git_tree_lookup(&raw_tree, repo, &root_id) != 0) {
      *error = ErrorPage(404, "the commit's tree cannot be read");
      return false;
    }
    TreePtr root(raw_tree);
    out->mode = 0040000;
    out->oid = *git_tree_id(root.get());
    if (r.path.empty()) {
      out->type = GIT_OBJECT_TREE;
      out->tree = std::move(root);
      return true;
    }
    git_tree_entry* raw = nullptr;
    if (git_tree_entry_bypath(&raw, root.get(), r.path.c_str()) != 0) {
      *error = ErrorPage(404, "no such path in this revision: " + r.path);
      return false;
    }
    const base::Owned<git_tree_entry_free> entry(raw);
    out->mode = CanonicalMode(git_tree_entry_filemode_raw(entry.get()));
    out->oid = *git_tree_entry_id(entry.get());
  }
  if ((out->mode & 0170000) == 0160000) {  // a submodule: no object here
    remember();
    return true;
  }
  if ((out->mode & 0170000) == 0040000) {
    git_tree* raw_sub = nullptr;
    if (git_tree_lookup(&raw_sub, repo, &out->oid) != 0) {
      *error = ErrorPage(404, "object missing from the repository: " + OidHex(out->oid));
      return false;
    }
    out->type = GIT_OBJECT_TREE;
    out->tree.reset(raw_sub);
    remember();
    return true;
  }
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo) != 0) {
    *error = ErrorPage(500, "no object database");
    return false;
  }
  const OdbPtr odb(raw_odb);
  git_object_t type = GIT_OBJECT_INVALID;
  if (git_odb_read_header(&out->size, &type, odb.get(), &out->oid) != 0 ||
      type != GIT_OBJECT_BLOB) {
    *error = ErrorPage(404, "object missing from the repository: " + OidHex(out->oid));
    return false;
  }
  out->type = GIT_OBJECT_BLOB;
  remember();
  return true;
}

// The folders cgit folds into a folder's row: while a folder holds exactly one entry and that is
// a folder, its name, and so on down. The folder's id fixes them: remembered, so a listing reads
// no subfolder it listed before (in any fork).
constexpr size_t kFoldsGeneration = 100000;

std::vector<std::string> FoldedNames(git_repository* repo, git_oid folder) {
  static SharedMemo<git_oid, std::vector<std::string>, OidHash, OidEqual> memo(kFoldsGeneration);
  if (std::optional<std::vector<std::string>> known = memo.Find(folder)) return std::move(*known);
  const git_oid first = folder;
  std::vector<std::string> names;
  for (;;) {
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, repo, &folder) != 0) return names;  // unreadable: not remembered
    const TreePtr tree(raw);
    if (git_tree_entrycount(tree.get()) != 1) break;
    const git_tree_entry* only = git_tree_entry_byindex(tree.get(), 0);
    if ((CanonicalMode(git_tree_entry_filemode_raw(only)) & 0170000) != 0040000) break;
    names.emplace_back(git_tree_entry_name(only));
    folder = *git_tree_entry_id(only);
  }
  memo.Add(first, names);
  return names;
}

// A listing writes four or five links per entry that differ only in their page and path:
// RepoUrl's start (virtual root, repository) and its queries are made once a page, each entry's
// path escaped once (AppendUrlEncoded: what Writer::UrlPart writes, a URL-escaped path having
// nothing HTML would escape).
struct ListingLinks {
  std::string start;       // virtual root and repository, "/"
  std::string query;       // h= and id=
  std::string head_query;  // h= alone (stats)
};

ListingLinks MakeListingLinks(const PageContext& ctx) {
  ListingLinks links;
  {
    Writer w(&links.start);
    w.Text(ctx.chrome.virtual_root).UrlPart(ctx.repo.url, /*keep_slash=*/true).Raw("/");
  }
  {
    Writer w(&links.query);
    QueryArgs(w, {{"h", ctx.route.head}, {"id", ctx.route.id}});
  }
  {
    Writer w(&links.head_query);
    QueryArgs(w, {{"h", ctx.route.head}});
  }
  return links;
}

// RepoUrl(ctx, page, path, query) of the parts made once; `escaped_path` as UrlPart writes it.
void WriteLink(Writer& out, const ListingLinks& links, std::string_view page,
               std::string_view escaped_path, std::string_view query) {
  out.Raw(links.start).Raw(page).Raw("/").Raw(escaped_path).Raw(query);
}

// After a folder's link: the folded folders, " / " and a link to each ("t4256 / 1"); the row's
// buttons stay the first folder's. `escaped_path` is the folder's, escaped.
void WriteFoldedFolders(const PageContext& ctx, const ListingLinks& links, git_oid folder,
                        std::string escaped_path) {
  for (const std::string& name : FoldedNames(ctx.lease.repo(), folder)) {
    escaped_path += '/';
    AppendUrlEncoded(&escaped_path, name, /*keep_slash=*/true);
    ctx.out.Raw(" / <a class='ls-dir' href='");
    WriteLink(ctx.out, links, "tree", escaped_path, links.query);
    ctx.out.Raw("'>").Text(name).Raw("</a>");
  }
}

void WriteListing(const PageContext& ctx, git_tree* tree, git_odb* odb) {
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  const ListingLinks links = MakeListingLinks(ctx);
  std::string prefix;  // the folder's path, escaped, and "/"
  if (!r.path.empty()) {
    AppendUrlEncoded(&prefix, r.path, /*keep_slash=*/true);
    prefix += '/';
  }
  out.Raw(
      "<table summary='tree listing' class='list'>\n<tr class='nohover'><th class='left'>Mode</th>"
      "<th class='left'>Name</th><th class='right'>Size</th><th/></tr>\n");
  const size_t count = git_tree_entrycount(tree);
  std::string full;  // the entry's path, escaped
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    const std::string_view name = git_tree_entry_name(entry);
    const uint32_t mode = CanonicalMode(git_tree_entry_filemode_raw(entry));
    const git_oid& oid = *git_tree_entry_id(entry);
    full = prefix;
    AppendUrlEncoded(&full, name, /*keep_slash=*/true);
    out.Raw("<tr><td class='ls-mode'>").Raw(TreeMode(mode)).Raw("</td><td>");
    const uint32_t type = mode & 0170000;
    size_t size = 0;
    if (type == 0160000) {
      const std::string hex = OidHex(oid);
      out.Raw("<span class='ls-mod'>").Text(name).Raw("</span> @ ");
      out.Raw(std::string_view(hex).substr(0, 7));  // cgit: always 7 digits
    } else {
      size = ObjectSize(odb, oid);
      if (type == 0040000) {
        out.Raw("<a class='ls-dir' href='");
      } else {
        out.Raw("<a class='ls-blob");
        const size_t dot = name.rfind('.');
        if (dot != std::string_view::npos) out.Raw(" ").Text(name.substr(dot + 1));
        out.Raw("' href='");
      }
      WriteLink(out, links, "tree", full, links.query);
      out.Raw("'>").Text(name).Raw("</a>");
      if (type == 0040000) WriteFoldedFolders(ctx, links, oid, full);
      if (type == 0120000) {
        git_blob* raw_blob = nullptr;
        if (git_blob_lookup(&raw_blob, ctx.lease.repo(), &oid) == 0) {
          const BlobPtr blob(raw_blob);
          std::string_view target = BlobBytes(blob.get());
          target = target.substr(0, target.find('\0'));
          out.Raw(" -> <a class='ls-blob' href='");
          RepoUrl(ctx, "tree", JoinPath(r.path, target), {{"h", r.head}, {"id", r.id}});
          out.Raw("'>").Text(target).Raw("</a>");
        }
      }
    }
    out.Raw("</td><td class='ls-size'>").Number(size).Raw("</td><td><a class='button' href='");
    WriteLink(out, links, "log", full, links.query);
    out.Raw("'>log</a>");
    // max-stats: a stats button (the path's commits per author; no id, as cgit's).
    if (ctx.repo.max_stats > 0) {
      out.Raw("<a class='button' href='");
      WriteLink(out, links, "stats", full, links.head_query);
      out.Raw("'>stats</a>");
    }
    if (type != 0160000) {
      out.Raw("<a class='button' href='");
      WriteLink(out, links, "plain", full, links.query);
      out.Raw("'>plain</a>");
    }
    // enable-blame: a blame button for everything but folders (cgit's listing gives a symlink
    // and a submodule one too; their blame pages are 404s).
    if (ctx.repo.enable_blame && type != 0040000) {
      out.Raw("<a class='button' href='");
      WriteLink(out, links, "blame", full, links.query);
      out.Raw("'>blame</a>");
    }
    out.Raw("</td></tr>\n");
  }
  out.Raw("</table>\n");
}

// Whether a blob is text (no NUL in its first 8000 bytes), which its id fixes: remembered, so the
// file view's blame link costs no blob read when the file was shown before. False also when the
// blob cannot be read (no blame link, as before).
//
// A new blob is read here: the file view's part, rendered next, finds it in libgit2's cache, which
// keeps blobs up to 256 KiB (site.cc). A larger one would be read whole twice (or, over
// max-blob-size, with no part, read whole for this one link): only its first 8000 bytes are
// inflated, when it is stored whole (loose, or not a delta in a pack).
constexpr size_t kTextGeneration = 100000;
constexpr size_t kCachedBlobBytes = 256 << 10;

bool BlobIsText(git_repository* repo, const git_oid& oid, size_t size) {
  static SharedMemo<git_oid, bool, OidHash, OidEqual> memo(kTextGeneration);
  if (const std::optional<bool> known = memo.Find(oid)) return *known;
  if (size > kCachedBlobBytes) {
    std::string why;
    if (const std::unique_ptr<InflatingBlob> stream =
            OpenBlobStream(git_repository_path(repo), oid, size, &why)) {
      if (const std::optional<std::string_view> head = stream->Head(8000, &why)) {
        const bool text = !IsBinary(*head);
        memo.Add(oid, text);
        return text;
      }
    }
  }
  git_blob* raw_blob = nullptr;
  if (git_blob_lookup(&raw_blob, repo, &oid) != 0) return false;
  const BlobPtr blob(raw_blob);
  const bool text = !IsBinary(BlobBytes(blob.get()));
  memo.Add(oid, text);
  return text;
}

// The file name at the end of a tree path.
std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A blob's bytes, read whole once (libgit2 inflates an object whole) and sent kPieceBytes at a
// time: the page is neither copied into a body, nor compressed, nor stored.
class BlobStream : public BodyStream {
 public:
  explicit BlobStream(OdbObjectPtr object) : object_(std::move(object)) {}

  Result Next(std::string* out, std::string* /*error*/) override {
    const std::string_view bytes(static_cast<const char*>(git_odb_object_data(object_.get())),
                                 git_odb_object_size(object_.get()));
    const std::string_view piece = bytes.substr(offset_, kPieceBytes);
    out->append(piece);
    offset_ += piece.size();
    return offset_ == bytes.size() ? Result::kDone : Result::kMore;
  }
  std::optional<uint64_t> Length() const override { return git_odb_object_size(object_.get()); }

 private:
  OdbObjectPtr object_;  // independent of the repository: it may close while the body is sent
  size_t offset_ = 0;
};

// plain sends a blob larger than this as a BodyStream.
constexpr size_t kStreamAbove = 4 * BodyStream::kPieceBytes;

// The proxy's store of parts (SetPartStore), and how the plain pages found their files.
std::mutex part_store_mu;
std::shared_ptr<PartStore> part_store;  // under part_store_mu
std::atomic<uint64_t> plain_parts_found{0}, plain_parts_read{0};

std::shared_ptr<PartStore> Parts() {
  const std::lock_guard<std::mutex> lock(part_store_mu);
  return part_store;
}

// The lines' cell of a file view through the repository's source-filter, as cgit runs it: the
// file's name its argument, the whole blob its input, its output the cell's HTML as written.
// A filter that fails leaves what it wrote, then says why below the table; such a part is not
// stored.
void FilteredLines(const PageContext& ctx, std::string_view bytes, Page* page) {
  Writer& out = ctx.out;
  const std::vector<std::string> env = {
      "CGIT_REPO_URL=" + ctx.repo.url,     "CGIT_REPO_NAME=" + ctx.repo.name,
      "CGIT_REPO_PATH=" + ctx.repo.path,   "CGIT_REPO_OWNER=" + ctx.repo.owner,
      "CGIT_REPO_DEFBRANCH=" + ctx.lease.refs().head_branch(),
      "CGIT_REPO_SECTION=" + ctx.repo.section, "CGIT_REPO_CLONE_URL=" + ctx.repo.clone_url,
  };
  FilterLimits limits = ctx.site.filter_limits();
  limits.max_output = std::max(limits.max_output, 8 * bytes.size());  // highlighting's markup
  const FilterResult result = RunFilter(ctx.repo.source_filter, ctx.route.path, bytes, limits, env);
  out.Raw("<td class='lines'><pre><code>").Raw(result.output);
  out.Raw("</code></pre></td></tr></table>\n");
  if (!result.ok || !result.error.empty()) page->no_store = true;
  if (!result.ok) out.Raw("<div class='error'>source-filter: ").Text(result.error).Raw("</div>\n");
}

// The start of a file view's lines table, up to its first line number.
constexpr std::string_view kBlobTableStart =
    "<table summary='blob content' class='blob'>\n<tr><td class='linenumbers'><pre>";

// A file view's line anchors, "<a id='nN' href='#nN'>N</a>\n", N counted up from a given line. The
// number is kept in decimal and counted up in place, and each anchor is made in one buffer. The
// number's digits end at digits_[kDigits] with as many bytes of slack after them, so that each of
// its three copies into the anchor is a copy of a fixed kDigits bytes (a few stores, not a call to
// memcpy) of which the anchor keeps the number's length.
class LineAnchors {
 public:
  // The first Next() is line `before` + 1.
  explicit LineAnchors(uint64_t before) {
    start_ = kDigits;
    do {
      digits_[--start_] = static_cast<char>('0' + before % 10);
      before /= 10;
    } while (before != 0);
  }

  std::string_view Next() {
    size_t i = kDigits - 1;
    while (digits_[i] == '9') {
      digits_[i] = '0';
      if (i == start_) digits_[--start_] = '0';
      --i;
    }
    ++digits_[i];
    const size_t length = kDigits - start_;
    char* at = anchor_;
    const auto put = [&at](std::string_view literal) {
      std::memcpy(at, literal.data(), literal.size());
      at += literal.size();
    };
    const auto put_number = [&] {
      std::memcpy(at, digits_ + start_, kDigits);
      at += length;
    };
    put("<a id='n");
    put_number();
    put("' href='#n");
    put_number();
    put("'>");
    put_number();
    put("</a>\n");
    return {anchor_, static_cast<size_t>(at - anchor_)};
  }

 private:
  static constexpr size_t kDigits = 20;  // 2^64 has 20 digits
  char digits_[2 * kDigits] = {};
  size_t start_;
  char anchor_[128];
};

// The bytes of the anchors of lines 1..lines (25 and the number three times each).
uint64_t NumberColumnBytes(uint64_t lines) {
  uint64_t bytes = 0;
  for (uint64_t low = 1, digits = 1; low <= lines; low *= 10, ++digits)
    bytes += (std::min(lines, low * 10 - 1) - low + 1) * (25 + 3 * digits);
  return bytes;
}

// The lines a file view numbers: a last newline starts no line of its own.
uint64_t CountLines(std::string_view bytes) {
  if (bytes.empty()) return 0;
  uint64_t lines = 1;
  const char* const last = bytes.data() + bytes.size() - 1;
  for (const char* p = bytes.data();
       (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(last - p)))) !=
       nullptr;
       ++p)
    ++lines;
  return lines;
}

// The line numbers column in runs of kNumberRunLines lines (run k: lines k * kNumberRunLines + 1
// on), made once per process and kept for files of up to kNumberRuns runs (~3 MB of text for the
// 65,536 lines): every file view of that many lines writes the same bytes, and a file of 1,500
// lines spent about half of its part's compression on them (bench/results/gitblob-callgrind.md).
constexpr uint64_t kNumberRunLines = 256;
constexpr uint64_t kNumberRuns = 256;

const std::string& NumberRun(uint64_t run) {
  static std::mutex mu;
  static std::deque<std::string> made;  // a deque: what it holds stays where it is as it grows
  const std::lock_guard<std::mutex> lock(mu);
  while (made.size() <= run) {
    std::string& text = made.emplace_back();
    LineAnchors anchors((made.size() - 1) * kNumberRunLines);
    for (uint64_t i = 0; i < kNumberRunLines; ++i) text += anchors.Next();
  }
  return made[run];
}

}  // namespace

Page RenderTree(const PageContext& page_ctx) {
  // The commit, the trees on the path and the listed folder come from the own pack reader
  // (libdeflate, its base cache) rather than libgit2's zlib reads.
  const PackedReadsScope packed_reads;
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  Resolved found;
  Page error;
  if (!ResolvePath(ctx, &found, &error)) return error;
  const bool submodule = found.type == GIT_OBJECT_INVALID;
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  Page page;
  // cgit names the path in the title only when it found an object there.
  PageStart(ctx, submodule ? Title(ctx).substr(Title(ctx).find(" - ") + 3) : Title(ctx), "tree",
            r.id);
  if (submodule) {
    // What cgit says when asked for a submodule's path: its commit is not in this repository.
    out.Raw("<div class='error'>Bad object name: ").Raw(OidHex(found.oid)).Raw("</div>\n");
  } else if (found.type == GIT_OBJECT_TREE) {
    OdbPtr odb;
    git_odb* raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, ctx.lease.repo()) != 0) return ErrorPage(500, "no object database");
    odb.reset(raw_odb);
    WriteListing(ctx, found.tree.get(), odb.get());
  } else {
    const std::string hex = OidHex(found.oid);
    out.Raw("blob: ").Raw(hex).Raw(" (<a href='");
    RepoUrl(ctx, "plain", r.path, {{"h", r.head}, {"id", r.id}});
    out.Raw("'>plain</a>");
    // enable-blame: a blame link, unless the file is binary (cgit reads the blob to know).
    if (ctx.repo.enable_blame && BlobIsText(ctx.lease.repo(), found.oid, found.size)) {
      out.Raw(") (<a href='");
      RepoUrl(ctx, "blame", r.path, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>blame</a>");
    }
    out.Raw(")\n");
    const uint64_t limit = ctx.site.max_blob_size();
    if (limit != 0 && found.size / 1024 > limit) {
      out.Raw("<div class='error'>blob size (").Number(found.size / 1024);
      out.Raw("KB) exceeds display size limit (").Number(limit).Raw("KB).</div>");
    } else {
      // The lines depend on the blob alone (and, with a source-filter, on the filter and the
      // file's name, which the include then names): one stored copy serves every path, revision
      // and fork that shows it. Resolving the path here checked the blob is in this repository.
      out.Include(ctx.site.BlobUrl(r.repo, hex, BaseName(r.path)));
      page.esi = true;
    }
  }
  PageEnd(out);
  return page;
}

Page RenderBlob(const PageContext& ctx) {
  git_oid oid;
  if (!IsFullSha(ctx.route.id) || git_oid_fromstr(&oid, ctx.route.id.c_str()) != 0)
    return ErrorPage(404, "the blob part takes a full object id");
  const PackedReadsScope packed_reads;  // as the tree page's reads
  git_blob* raw_blob = nullptr;
  if (git_blob_lookup(&raw_blob, ctx.lease.repo(), &oid) != 0)
    return ErrorPage(404, "no such blob: " + ctx.route.id);
  const BlobPtr blob(raw_blob);
  const std::string_view bytes = BlobBytes(blob.get());
  Writer& out = ctx.out;
  Page page;
  if (IsBinary(bytes)) {
    // 32 bytes a row: offset, hex (an extra gap after 16) and the printable ones.
    static constexpr char kHex[] = "0123456789abcdef";
    out.Raw(
        "<table summary='blob content' class='bin-blob'>\n"
        "<tr><th>ofs</th><th>hex dump</th><th>ascii</th></tr>");
    char offset[32];
    for (size_t ofs = 0; ofs < bytes.size(); ofs += 32) {
      const std::string_view row = bytes.substr(ofs, 32);
      std::snprintf(offset, sizeof offset, "%04zx", ofs);
      out.Raw("<tr><td class='right'>").Raw(offset).Raw("</td><td class='hex'>");
      for (size_t i = 0; i < row.size(); ++i) {
        const auto c = static_cast<unsigned char>(row[i]);
        const char cell[] = {kHex[c >> 4], kHex[c & 15]};
        out.Raw(i == 16 ? "    " : " ").Raw(std::string_view(cell, 2));
      }
      out.Raw(" </td><td class='hex'>");
      std::string ascii(row);
      for (char& c : ascii)
        if (!std::isgraph(static_cast<unsigned char>(c))) c = '.';
      out.Text(ascii).Raw("</td></tr>\n");
    }
    out.Raw("</table>\n");
    return page;
  }
  // One number per line; a last newline starts no line of its own. The column's whole runs come
  // made (NumberRun) and are marked shared, each with the table's start before the first: the
  // same bytes in every file view of as many lines, which the proxy compresses once.
  const uint64_t lines = CountLines(bytes);
  const uint64_t runs = std::min(lines / kNumberRunLines, kNumberRuns);
  out.Reserve(kBlobTableStart.size() + NumberColumnBytes(lines) + bytes.size() +
              bytes.size() / 4 + 128);
  const uint64_t table = out.size();
  out.Raw(kBlobTableStart);
  for (uint64_t run = 0; run < runs; ++run) {
    const uint64_t begin = run == 0 ? table : out.size();
    out.Raw(NumberRun(run));
    page.shared.emplace_back(begin, out.size());
  }
  LineAnchors anchors(runs * kNumberRunLines);
  for (uint64_t line = runs * kNumberRunLines; line < lines; ++line) out.Raw(anchors.Next());
  out.Raw("</pre></td>\n");
  if (!ctx.repo.source_filter.empty()) {
    FilteredLines(ctx, bytes, &page);
    return page;
  }
  // cgit writes the text as a C string: a NUL past the first 8000 bytes ends it.
  out.Raw("<td class='lines'><pre><code>")
      .Text(bytes.substr(0, bytes.find('\0')))
      .Raw("</code></pre></td></tr></table>\n");
  return page;
}

Page RenderPlain(const PageContext& page_ctx) {
  const PackedReadsScope packed_reads;  // as the tree page's reads
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  Resolved found;
  Page error;
  if (!ResolvePath(ctx, &found, &error)) return error;
  if (found.type == GIT_OBJECT_INVALID) return ErrorPage(404, "a submodule has no plain view");
  const Route& r = ctx.route;
  Page page;
  page.headers.emplace_back("ETag", "\"" + OidHex(found.oid) + "\"");
  if (found.type == GIT_OBJECT_TREE) {
    // cgit's plain listing of a folder: a parent link, then one link per entry.
    Writer& out = ctx.out;
    const std::string folder = "/" + r.path + (r.path.empty() ? "" : "/");
    out.Raw("<html><head><title>").Text(folder).Raw("</title></head>\n<body>\n<h2>");
    out.Text(folder).Raw("</h2>\n<ul>\n");
    if (!r.path.empty()) {
      const size_t slash = r.path.rfind('/');
      const std::string parent = slash == std::string::npos ? "" : r.path.substr(0, slash) + "/";
      out.Raw("<li><a href='");
      RepoUrl(ctx, "plain", parent, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>../</a></li>\n");
    }
    const git_tree* tree = found.tree.get();
    const std::string prefix = r.path.empty() ? "" : r.path + "/";
    for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const std::string_view name = git_tree_entry_name(entry);
      const bool dir = git_tree_entry_type(entry) == GIT_OBJECT_TREE;
      if (CanonicalMode(git_tree_entry_filemode_raw(entry)) == GIT_FILEMODE_COMMIT) {
        const std::string hex = OidHex(*git_tree_entry_id(entry));
        out.Raw("  <li><span>").Text(name).Raw("</span> @ ");
        out.Raw(std::string_view(hex).substr(0, 7));  // cgit: always 7 digits
        out.Raw("</li>\n");
        continue;
      }
      std::string target = prefix;
      target += name;
      if (dir) target += '/';
      out.Raw("  <li><a href='");
      RepoUrl(ctx, "plain", target, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>").Text(name).Raw("</a></li>\n");
    }
    out.Raw(" </ul>\n</body></html>\n");
    return page;
  }
  // A file: its bytes. A large one is streamed: inflated a piece at a time from its loose file
  // or pack entry (blob_stream.h), or, stored as a delta, read whole once and sent in pieces; a
  // small one is the page's body.
  std::unique_ptr<InflatingBlob> inflating;
  OdbObjectPtr large;
  BlobPtr small;
  ObjectBytes packed;
  std::string_view bytes;
  // A file up to kStreamAbove is a part kept once per blob id (the store's bound is larger): a
  // page of a blob kept before reads nothing of it, and learns whether it is binary from the
  // part's meta text.
  std::optional<bool> binary;
  const std::shared_ptr<PartStore> parts = found.size <= kStreamAbove ? Parts() : nullptr;
  if (parts) {
    page.part_key = "gitfrag/plain/" + OidHex(found.oid);
    std::string meta;
    if ((page.part = parts->Find(page.part_key, &meta)) != nullptr) {
      plain_parts_found.fetch_add(1, std::memory_order_relaxed);
      binary = meta == "binary";
    }
  }
  if (found.size > kStreamAbove) {
    std::string why;
    inflating = OpenBlobStream(git_repository_path(ctx.lease.repo()), found.oid, found.size, &why);
  }
  if (page.part) {
    // Served from the kept part: nothing of the blob is read.
  } else if (inflating) {
    // The first bytes decide the content type (binary or text).
    std::string why;
    const std::optional<std::string_view> head = inflating->Head(8000, &why);
    if (!head) return ErrorPage(500, "cannot read the object " + OidHex(found.oid) + ": " + why);
    bytes = *head;
  } else if (found.size > kStreamAbove) {
    git_odb* raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, ctx.lease.repo()) != 0) return ErrorPage(500, "no object database");
    const OdbPtr odb(raw_odb);
    git_odb_object* raw = nullptr;
    if (git_odb_read(&raw, odb.get(), &found.oid) != 0)
      return ErrorPage(500, "cannot read the object " + OidHex(found.oid));
    large.reset(raw);
    bytes = {static_cast<const char*>(git_odb_object_data(raw)), git_odb_object_size(raw)};
  } else {
    // From the render thread's pack reader when it has the blob (its bytes as the reader made
    // them, not copied into libgit2's buffer); anything else (a loose blob) through libgit2.
    if ((packed = ReadPacked(ctx.lease.repo(), found.oid, GIT_OBJECT_BLOB))) {
      bytes = packed.view();
    } else {
      git_blob* raw = nullptr;
      if (git_blob_lookup(&raw, ctx.lease.repo(), &found.oid) != 0)
        return ErrorPage(500, "cannot read the object " + OidHex(found.oid));
      small.reset(raw);
      bytes = BlobBytes(raw);
    }
    if (parts) {
      plain_parts_read.fetch_add(1, std::memory_order_relaxed);
      page.part_meta = IsBinary(bytes) ? "binary" : "text";
    }
  }
  // cgit's content type: the cgitrc's for the file's extension; with enable-html-serving off, a
  // text/ or application/ one (but PDF) is dropped and the browser told to sniff and run nothing.
  // No type: binary or text/plain. The charset is named but for the binary default, as cgit.
  const std::string_view name = BaseName(r.path);
  std::string type = ctx.site.MimeType(name);
  if (!ctx.repo.enable_html_serving) {
    page.headers.emplace_back("X-Content-Type-Options", "nosniff");
    page.headers.emplace_back("Content-Security-Policy", "default-src 'none'");
    if ((type.starts_with("text/") || type.starts_with("application/")) && type != "application/pdf")
      type.clear();
  }
  if (type.empty())
    page.content_type = (binary ? *binary : IsBinary(bytes)) ? "application/octet-stream"
                                                         : "text/plain; charset=UTF-8";
  else
    page.content_type = type + "; charset=UTF-8";
  page.headers.emplace_back("Content-Disposition",
                            "inline; filename=\"" + QuotedFilename(name) + "\"");
  if (inflating)
    page.stream = std::move(inflating);
  else if (large)
    page.stream = std::make_shared<BlobStream>(std::move(large));
  else if (!page.part)
    ctx.out.Raw(bytes);
  return page;
}

void SetPartStore(std::shared_ptr<PartStore> store) {
  const std::lock_guard<std::mutex> lock(part_store_mu);
  part_store = std::move(store);
}

PlainPartStats PlainPartMetrics() {
  return {plain_parts_found.load(std::memory_order_relaxed),
          plain_parts_read.load(std::memory_order_relaxed)};
}

}  // namespace shellac::gitfrag
