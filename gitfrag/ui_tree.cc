// The tree page (a folder's listing, or a file's view around an include of the neutral blob
// part), the blob part itself (numbered lines or a hex dump, keyed by the blob's id alone), and
// the plain page (a file's bytes, or a folder's plain listing), as cgit 1.2.3 writes them.
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "gitfrag/render.h"

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

// The object at route.path in the commit's tree (the root tree for an empty path). Null with
// *error set when the commit or path does not resolve.
ObjectPtr ResolvePath(const PageContext& ctx, CommitPtr* commit, uint32_t* mode, git_oid* oid,
                      Page* error) {
  const Route& r = ctx.route;
  git_repository* repo = ctx.lease.repo();
  if (BadPath(r.path)) {
    *error = ErrorPage(404, "bad path: it climbs out of the tree or has an empty segment");
    return nullptr;
  }
  int status = 200;
  std::string reason;
  *commit = ResolveCommit(repo, r.id, r.head, &status, &reason);
  if (!*commit) {
    *error = ErrorPage(status, reason);
    return nullptr;
  }
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, commit->get()) != 0) {
    *error = ErrorPage(404, "the commit's tree cannot be read");
    return nullptr;
  }
  TreePtr root(raw_tree);
  *mode = 0040000;
  *oid = *git_tree_id(root.get());
  if (!r.path.empty()) {
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, root.get(), r.path.c_str()) != 0) {
      *error = ErrorPage(404, "no such path in this revision: " + r.path);
      return nullptr;
    }
    const base::Owned<git_tree_entry_free> entry(raw_entry);
    *mode = git_tree_entry_filemode(entry.get());
    *oid = *git_tree_entry_id(entry.get());
  }
  if ((*mode & 0170000) == 0160000) return nullptr;  // a submodule: no object here
  git_object* object = nullptr;
  if (git_object_lookup(&object, repo, oid, GIT_OBJECT_ANY) != 0) {
    *error = ErrorPage(404, "object missing from the repository: " + OidHex(*oid));
    return nullptr;
  }
  return ObjectPtr(object);
}

void WriteListing(const PageContext& ctx, git_tree* tree, git_odb* odb) {
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  const std::string prefix = r.path.empty() ? std::string() : r.path + "/";
  out.Raw(
      "<table summary='tree listing' class='list'>\n<tr class='nohover'><th class='left'>Mode</th>"
      "<th class='left'>Name</th><th class='right'>Size</th><th/></tr>\n");
  const size_t count = git_tree_entrycount(tree);
  std::string full;
  for (size_t i = 0; i < count; ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    const std::string_view name = git_tree_entry_name(entry);
    const uint32_t mode = git_tree_entry_filemode(entry);
    const git_oid& oid = *git_tree_entry_id(entry);
    full = prefix;
    full += name;
    out.Raw("<tr><td class='ls-mode'>").Raw(TreeMode(mode)).Raw("</td><td>");
    const uint32_t type = mode & 0170000;
    size_t size = 0;
    if (type == 0160000) {
      const std::string hex = OidHex(oid);
      out.Raw("<span class='ls-mod'>").Text(name).Raw("</span> @ ");
      out.Raw(std::string_view(hex).substr(0, 7));  // cgit: always 7 digits
    } else {
      git_object_t object_type;
      if (git_odb_read_header(&size, &object_type, odb, &oid) != 0) size = 0;
      if (type == 0040000) {
        out.Raw("<a class='ls-dir' href='");
      } else {
        out.Raw("<a class='ls-blob");
        const size_t dot = name.rfind('.');
        if (dot != std::string_view::npos) out.Raw(" ").Text(name.substr(dot + 1));
        out.Raw("' href='");
      }
      RepoUrl(ctx, "tree", full, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>").Text(name).Raw("</a>");
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
    RepoUrl(ctx, "log", full, {{"h", r.head}, {"id", r.id}});
    out.Raw("'>log</a>");
    if (type != 0160000) {
      out.Raw("<a class='button' href='");
      RepoUrl(ctx, "plain", full, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>plain</a>");
    }
    // enable-blame: a blame button for everything but folders (cgit's listing gives a symlink
    // and a submodule one too; their blame pages are 404s).
    if (ctx.repo.enable_blame && type != 0040000) {
      out.Raw("<a class='button' href='");
      RepoUrl(ctx, "blame", full, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>blame</a>");
    }
    out.Raw("</td></tr>\n");
  }
  out.Raw("</table>\n");
}

}  // namespace

Page RenderTree(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  CommitPtr commit;
  uint32_t mode = 0;
  git_oid oid;
  Page error;
  ObjectPtr object = ResolvePath(ctx, &commit, &mode, &oid, &error);
  const bool submodule = (mode & 0170000) == 0160000;
  if (!object && !submodule) return error;
  Writer& out = ctx.out;
  const Route& r = ctx.route;
  Page page;
  // cgit names the path in the title only when it found an object there.
  PageStart(ctx, submodule ? Title(ctx).substr(Title(ctx).find(" - ") + 3) : Title(ctx), "tree",
            r.id);
  if (submodule) {
    // What cgit says when asked for a submodule's path: its commit is not in this repository.
    out.Raw("<div class='error'>Bad object name: ").Raw(OidHex(oid)).Raw("</div>\n");
  } else if (git_object_type(object.get()) == GIT_OBJECT_TREE) {
    OdbPtr odb;
    git_odb* raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, ctx.lease.repo()) != 0) return ErrorPage(500, "no object database");
    odb.reset(raw_odb);
    WriteListing(ctx, reinterpret_cast<git_tree*>(object.get()), odb.get());
  } else {
    const std::string hex = OidHex(oid);
    out.Raw("blob: ").Raw(hex).Raw(" (<a href='");
    RepoUrl(ctx, "plain", r.path, {{"h", r.head}, {"id", r.id}});
    out.Raw("'>plain</a>");
    // enable-blame: a blame link, unless the file is binary (cgit reads the blob to know).
    if (ctx.repo.enable_blame &&
        !IsBinary(BlobBytes(reinterpret_cast<git_blob*>(object.get())))) {
      out.Raw(") (<a href='");
      RepoUrl(ctx, "blame", r.path, {{"h", r.head}, {"id", r.id}});
      out.Raw("'>blame</a>");
    }
    out.Raw(")\n");
    const uint64_t size = git_blob_rawsize(reinterpret_cast<git_blob*>(object.get()));
    const uint64_t limit = ctx.site.max_blob_size();
    if (limit != 0 && size / 1024 > limit) {
      out.Raw("<div class='error'>blob size (").Number(size / 1024);
      out.Raw("KB) exceeds display size limit (").Number(limit).Raw("KB).</div>");
    } else {
      // The lines depend on the blob alone: one stored copy serves every path, revision and
      // fork that shows it. Resolving the path here checked the blob is in this repository.
      out.Raw("<esi:include src=\"").Raw(ctx.site.BlobUrl(r.repo, hex)).Raw("\"/>");
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
  git_blob* raw_blob = nullptr;
  if (git_blob_lookup(&raw_blob, ctx.lease.repo(), &oid) != 0)
    return ErrorPage(404, "no such blob: " + ctx.route.id);
  const BlobPtr blob(raw_blob);
  const std::string_view bytes = BlobBytes(blob.get());
  Writer& out = ctx.out;
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
  } else {
    out.Raw("<table summary='blob content' class='blob'>\n<tr><td class='linenumbers'><pre>");
    // One number per line; a last newline starts no line of its own.
    if (!bytes.empty()) {
      uint64_t line = 0;
      auto number = [&] {
        ++line;
        out.Raw("<a id='n").Number(line).Raw("' href='#n").Number(line).Raw("'>");
        out.Number(line).Raw("</a>\n");
      };
      number();
      for (size_t i = 0; i + 1 < bytes.size(); ++i)
        if (bytes[i] == '\n') number();
    }
    // cgit writes the text as a C string: a NUL past the first 8000 bytes ends it.
    out.Raw("</pre></td>\n<td class='lines'><pre><code>")
        .Text(bytes.substr(0, bytes.find('\0')))
        .Raw("</code></pre></td></tr></table>\n");
  }
  return Page{};
}

Page RenderPlain(const PageContext& page_ctx) {
  const Route link_route = LinkRoute(page_ctx);
  const PageContext ctx{page_ctx.site, page_ctx.chrome, link_route, page_ctx.repo, page_ctx.lease,
                        page_ctx.out};
  CommitPtr commit;
  uint32_t mode = 0;
  git_oid oid;
  Page error;
  ObjectPtr object = ResolvePath(ctx, &commit, &mode, &oid, &error);
  if (!object) {
    if ((mode & 0170000) == 0160000) return ErrorPage(404, "a submodule has no plain view");
    return error;
  }
  const Route& r = ctx.route;
  Page page;
  page.headers.emplace_back("ETag", "\"" + OidHex(oid) + "\"");
  if (git_object_type(object.get()) == GIT_OBJECT_TREE) {
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
    const auto* tree = reinterpret_cast<git_tree*>(object.get());
    const std::string prefix = r.path.empty() ? "" : r.path + "/";
    for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const std::string_view name = git_tree_entry_name(entry);
      const bool dir = git_tree_entry_type(entry) == GIT_OBJECT_TREE;
      if (git_tree_entry_filemode(entry) == GIT_FILEMODE_COMMIT) {
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
  // A file: its bytes, never interpreted by the browser (cgit's enable-html-serving is off).
  const std::string_view bytes = BlobBytes(reinterpret_cast<git_blob*>(object.get()));
  page.content_type = IsBinary(bytes) ? "application/octet-stream" : "text/plain; charset=UTF-8";
  page.headers.emplace_back("X-Content-Type-Options", "nosniff");
  page.headers.emplace_back("Content-Security-Policy", "default-src 'none'");
  const size_t slash = r.path.rfind('/');
  const std::string filename =
      QuotedFilename(std::string_view(r.path).substr(slash == std::string::npos ? 0 : slash + 1));
  page.headers.emplace_back("Content-Disposition", "inline; filename=\"" + filename + "\"");
  ctx.out.Raw(bytes);
  return page;
}

}  // namespace shellac::gitfrag
