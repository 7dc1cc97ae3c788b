#include "gitfrag/archive_subst.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <utility>

#include "gitfrag/abbrev.h"
#include "gitfrag/git.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// git's get_one_line: the line at `at` with its '\n', or up to the end.
size_t LineLength(std::string_view text, size_t at) {
  const size_t nl = text.find('\n', at);
  return nl == std::string_view::npos ? text.size() - at : nl + 1 - at;
}

// git's is_blank_line: the line's length without its trailing white space; 0 when blank.
size_t Trimmed(std::string_view text, size_t at, size_t len) {
  while (len > 0 && IsSpace(text[at + len - 1])) --len;
  return len;
}

size_t SkipBlankLines(std::string_view text, size_t at) {
  while (true) {
    const size_t len = LineLength(text, at);
    if (len == 0 || Trimmed(text, at, len) != 0) return at;
    at += len;
  }
}

// git's format_subject: the paragraph at `at`, its lines trimmed and joined by `separator` (into
// *out when not null); returns where it ends.
size_t Subject(std::string_view text, size_t at, const char* separator, std::string* out) {
  bool first = true;
  while (true) {
    const size_t len = LineLength(text, at);
    const size_t line = at;
    at += len;
    const size_t kept = len == 0 ? 0 : Trimmed(text, line, len);
    if (kept == 0) return at;
    if (out != nullptr) {
      if (!first) *out += separator;
      out->append(text.substr(line, kept));
    }
    first = false;
  }
}

bool IsTitleChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_';
}

// git's format_sanitized_subject (%f).
void Sanitized(std::string_view subject, std::string* out) {
  const size_t start = out->size();
  int space = 2;
  for (size_t i = 0; i < subject.size(); ++i) {
    if (IsTitleChar(subject[i])) {
      if (space == 1) out->push_back('-');
      space = 0;
      out->push_back(subject[i]);
      if (subject[i] == '.')
        while (i + 1 < subject.size() && subject[i + 1] == '.') ++i;
    } else {
      space |= 1;
    }
  }
  while (out->size() > start && (out->back() == '.' || out->back() == '-')) out->pop_back();
}

// git's split_ident_line on "NAME <MAIL> TIME TZ".
struct Ident {
  std::string_view name, mail, date, tz;  // date and tz empty when the line has none
};
bool SplitIdent(std::string_view line, Ident* out) {
  *out = {};
  const size_t lt = line.find('<');
  if (lt == std::string_view::npos) return false;
  size_t name_end = lt;
  while (name_end > 0 && IsSpace(line[name_end - 1])) --name_end;
  out->name = line.substr(0, name_end);
  const size_t gt = line.find('>', lt + 1);
  if (gt == std::string_view::npos) return false;
  out->mail = line.substr(lt + 1, gt - lt - 1);
  size_t at = line.rfind('>') + 1;
  while (at < line.size() && IsSpace(line[at])) ++at;
  size_t end = at;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == at) return true;
  const std::string_view date = line.substr(at, end - at);
  at = end;
  while (at < line.size() && IsSpace(line[at])) ++at;
  if (at >= line.size() || (line[at] != '+' && line[at] != '-')) return true;
  end = at + 1;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == at + 1) return true;
  out->date = date;
  out->tz = line.substr(at, end - at);
  return true;
}

enum class DateMode { kNormal, kRfc2822, kIso, kIsoStrict, kShort };

// git's show_ident_date and show_date for these modes (no "local", no human times).
std::string ShowDate(const Ident& ident, DateMode mode) {
  uint64_t time = std::strtoull(std::string(ident.date).c_str(), nullptr, 10);
  long tz = 0;
  if (time > static_cast<uint64_t>(INT64_MAX / 2)) {
    time = 0;  // git's date_overflows
  } else {
    tz = std::strtol(std::string(ident.tz).c_str(), nullptr, 10);
    if (tz >= INT32_MAX || tz <= INT32_MIN) tz = 0;
  }
  int64_t minutes = tz < 0 ? -tz : tz;
  minutes = (minutes / 100) * 60 + minutes % 100;
  if (tz < 0) minutes = -minutes;
  const int64_t shifted = static_cast<int64_t>(time) + minutes * 60;
  std::tm tm{};
  time_t t = static_cast<time_t>(shifted);
  if (shifted < 0 || gmtime_r(&t, &tm) == nullptr) {
    t = 0;
    gmtime_r(&t, &tm);
    tz = 0;
  }
  static const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[96];
  const int tzi = static_cast<int>(tz);
  switch (mode) {
    case DateMode::kShort:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                    tm.tm_mday);
      break;
    case DateMode::kIso:
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d %+05d", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tzi);
      break;
    case DateMode::kIsoStrict: {
      const int a = tzi < 0 ? -tzi : tzi;
      std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", tm.tm_year + 1900,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    tzi >= 0 ? '+' : '-', a / 100, a % 100);
      break;
    }
    case DateMode::kRfc2822:
      std::snprintf(buf, sizeof buf, "%s, %d %s %d %02d:%02d:%02d %+05d", kDays[tm.tm_wday],
                    tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                    tm.tm_sec, tzi);
      break;
    case DateMode::kNormal:
      std::snprintf(buf, sizeof buf, "%s %s %d %02d:%02d:%02d %d %+05d", kDays[tm.tm_wday],
                    kMonths[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    tm.tm_year + 1900, tzi);
      break;
  }
  return buf;
}

// git's show_date_relative (%ar): how long before now, in git's English words.
std::string Relative(const Ident& ident) {
  const uint64_t time = std::strtoull(std::string(ident.date).c_str(), nullptr, 10);
  const auto now = static_cast<uint64_t>(std::time(nullptr));
  if (now < time) return "in the future";
  const auto say = [](uint64_t n, const char* unit) {
    return std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
  };
  uint64_t diff = now - time;
  if (diff < 90) return say(diff, "second") + " ago";
  diff = (diff + 30) / 60;  // minutes
  if (diff < 90) return say(diff, "minute") + " ago";
  diff = (diff + 30) / 60;  // hours
  if (diff < 36) return say(diff, "hour") + " ago";
  diff = (diff + 12) / 24;  // days
  if (diff < 14) return say(diff, "day") + " ago";
  if (diff < 70) return say((diff + 3) / 7, "week") + " ago";
  if (diff < 365) return say((diff + 15) / 30, "month") + " ago";
  if (diff < 1825) {
    const uint64_t months = (diff * 12 * 2 + 365) / (365 * 2);
    if (months % 12 != 0)
      return say(months / 12, "year") + ", " + say(months % 12, "month") + " ago";
    return say(months / 12, "year") + " ago";
  }
  return say((diff + 183) / 365, "year") + " ago";
}

std::string_view Prettified(std::string_view name) {
  for (const std::string_view prefix : {"refs/heads/", "refs/tags/", "refs/remotes/"})
    if (name.starts_with(prefix)) return name.substr(prefix.size());
  return name;
}

}  // namespace

bool ExportSubst::Parse() {
  if (parsed_) return *parsed_;
  parsed_ = false;
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo_) != 0) return false;
  OdbPtr odb(raw_odb);
  git_odb_object* raw = nullptr;
  if (git_odb_read(&raw, odb.get(), &commit_) != 0) return false;
  OdbObjectPtr object(raw);
  if (git_odb_object_type(object.get()) != GIT_OBJECT_COMMIT) return false;
  const std::string_view text(static_cast<const char*>(git_odb_object_data(object.get())),
                              git_odb_object_size(object.get()));
  message_ = std::string(text.substr(0, text.find('\0')));  // git reads it as a C string
  const std::string_view msg = message_;
  // git's parse_commit_header: the header's lines up to the first empty one.
  size_t i = 0;
  for (; i < msg.size(); ++i) {
    size_t eol = msg.find('\n', i);
    if (eol == std::string_view::npos) eol = msg.size();
    if (eol == i) break;
    const std::string_view line = msg.substr(i, eol - i);
    if (line.starts_with("author ")) author_ = line.substr(7);
    if (line.starts_with("committer ")) committer_ = line.substr(10);
    if (line.starts_with("encoding ")) encoding_ = line.substr(9);
    if (line.starts_with("tree ")) git_oid_fromstrn(&tree_, line.data() + 5, line.size() - 5);
    if (line.starts_with("parent ")) {
      git_oid parent;
      if (git_oid_fromstrn(&parent, line.data() + 7, line.size() - 7) == 0)
        parents_.push_back(parent);
    }
    i = eol;
  }
  message_off_ = i;
  if (i >= msg.size()) return false;  // no message: git would read past it
  // A message in another encoding git would turn into UTF-8 first: not done here.
  if (!encoding_.empty()) {
    std::string e(encoding_);
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
    if (e != "utf-8" && e != "utf8") return false;
  }
  // git's parse_commit_message.
  subject_off_ = SkipBlankLines(msg, message_off_);
  body_off_ = SkipBlankLines(msg, Subject(msg, subject_off_, nullptr, nullptr));
  parsed_ = true;
  return true;
}

std::string ExportSubst::Abbrev(const git_oid& id) {
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo_) != 0) return OidHex(id).substr(0, abbrev_);
  OdbPtr odb(raw_odb);
  return UniqueAbbrev(repo_, odb.get(), id, abbrev_);
}

void ExportSubst::Decorations(const char* prefix, const char* separator, const char* suffix,
                              std::string* out) {
  enum Type { kNone, kHead, kLocal, kTag };
  struct Name {
    Type type;
    std::string name;
  };
  if (!decorations_) {
    // git's load_ref_decorations: every ref under refs/ in name order, then HEAD; a tag names
    // what it peels to as "tag: NAME" at each step. Each new name goes first in the commit's list.
    std::vector<std::pair<std::string, git_oid>> refs;
    git_reference_iterator* raw_it = nullptr;
    if (git_reference_iterator_new(&raw_it, repo_) == 0) {
      git_reference* ref = nullptr;
      while (git_reference_next(&ref, raw_it) == 0) {
        git_reference* resolved = nullptr;
        if (git_reference_resolve(&resolved, ref) == 0) {
          refs.emplace_back(git_reference_name(ref), *git_reference_target(resolved));
          git_reference_free(resolved);
        }
        git_reference_free(ref);
      }
      git_reference_iterator_free(raw_it);
    }
    std::sort(refs.begin(), refs.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    git_oid head;
    if (git_reference_name_to_id(&head, repo_, "HEAD") == 0) refs.emplace_back("HEAD", head);
    std::vector<Name> names;  // in the order they were added
    for (const auto& [name, target] : refs) {
      if (name.starts_with("refs/replace/")) continue;
      Type type = name == "HEAD"                    ? kHead
                  : name.starts_with("refs/heads/") ? kLocal
                  : name.starts_with("refs/tags/")  ? kTag
                                                    : kNone;
      git_oid id = target;
      for (int depth = 0; depth < 64; ++depth) {
        if (git_oid_equal(&id, &commit_)) names.push_back({type, name});
        git_tag* tag = nullptr;
        if (git_tag_lookup(&tag, repo_, &id) != 0) break;
        id = *git_tag_target_id(tag);
        git_tag_free(tag);
        type = kTag;
      }
    }
    std::reverse(names.begin(), names.end());
    // git's current_pointed_by_HEAD: HEAD, when the branch it names is in the list, is written
    // "HEAD -> BRANCH" and the branch left out.
    const Name* current = nullptr;
    if (std::any_of(names.begin(), names.end(), [](const Name& n) { return n.type == kHead; })) {
      git_reference* raw_head = nullptr;
      if (git_reference_lookup(&raw_head, repo_, "HEAD") == 0) {
        if (git_reference_type(raw_head) == GIT_REFERENCE_SYMBOLIC) {
          const std::string branch = git_reference_symbolic_target(raw_head);
          for (const Name& n : names)
            if (n.type == kLocal && n.name == branch && branch.starts_with("refs/")) {
              current = &n;
              break;
            }
        }
        git_reference_free(raw_head);
      }
    }
    decorations_.emplace();
    for (const Name& n : names) {
      if (&n == current) continue;
      std::string shown = n.type == kTag ? "tag: " : "";
      shown += Prettified(n.name);
      if (current != nullptr && n.type == kHead)
        shown += " -> " + std::string(Prettified(current->name));
      decorations_->push_back(std::move(shown));
    }
  }
  if (decorations_->empty()) return;
  *out += prefix;
  for (size_t i = 0; i < decorations_->size(); ++i) {
    if (i > 0) *out += separator;
    *out += (*decorations_)[i];
  }
  *out += suffix;
}

size_t ExportSubst::Person(char part, std::string_view ident_line, std::string* out) {
  Ident ident;
  const bool split = SplitIdent(ident_line, &ident);
  if (part == 'h') return kUnsupported;
  std::string mapped_name, mapped_mail;
  if (split && (part == 'N' || part == 'E' || part == 'L')) {
    // git's mailmap_name: HEAD:.mailmap in a bare repository, mailmap.file, mailmap.blob.
    if (!mailmap_) {
      git_mailmap* raw = nullptr;
      if (git_mailmap_from_repository(&raw, repo_) != 0) return kUnsupported;
      mailmap_.reset(raw);
    }
    // The answers point into the mailmap or, when it maps nothing, into the strings asked about.
    const std::string asked_name(ident.name), asked_mail(ident.mail);
    const char* name = nullptr;
    const char* mail = nullptr;
    if (git_mailmap_resolve(&name, &mail, mailmap_.get(), asked_name.c_str(), asked_mail.c_str()) !=
        0)
      return kUnsupported;
    mapped_name = name;
    mapped_mail = mail;
    ident.name = mapped_name;
    ident.mail = mapped_mail;
    part = static_cast<char>(std::tolower(static_cast<unsigned char>(part)));
  }
  if (split) {
    if (part == 'n') return out->append(ident.name), 2;
    if (part == 'e') return out->append(ident.mail), 2;
    if (part == 'l') {
      const size_t at = ident.mail.find('@');
      out->append(ident.mail.substr(0, at));
      return 2;
    }
    if (!ident.date.empty()) {
      switch (part) {
        case 't':
          out->append(ident.date);
          return 2;
        case 'd':
          *out += ShowDate(ident, DateMode::kNormal);
          return 2;
        case 'D':
          *out += ShowDate(ident, DateMode::kRfc2822);
          return 2;
        case 'r':
          *out += Relative(ident);
          return 2;
        case 'i':
          *out += ShowDate(ident, DateMode::kIso);
          return 2;
        case 'I':
          *out += ShowDate(ident, DateMode::kIsoStrict);
          return 2;
        case 's':
          *out += ShowDate(ident, DateMode::kShort);
          return 2;
        default:
          break;
      }
    }
  }
  // git's "skip": these take their two bytes and write nothing.
  if (part == 'n' || part == 'e' || part == 't' || part == 'd' || part == 'D' || part == 'r' ||
      part == 'i')
    return 2;
  return 0;
}

size_t ExportSubst::Describe(std::string_view p) {
  if (described_) return 0;  // git's max_invocations: one an archive
  described_ = true;
  std::string_view arg = p.substr(9);  // past "(describe"
  // git's parse_describe_args: tags[=BOOL], abbrev=N, exclude=PATTERN, match=PATTERN, separated
  // by ',' up to the ')'; a value git refuses leaves the placeholder as it stands.
  const auto integer = [](std::string_view v) {
    const std::string text(v);
    char* end = nullptr;
    std::strtol(text.c_str(), &end, 10);
    return !text.empty() && end == text.c_str() + text.size();
  };
  const auto boolean = [&](std::string_view v) {  // git_parse_maybe_bool
    std::string lower(v);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    return lower.empty() || lower == "true" || lower == "yes" || lower == "on" ||
           lower == "false" || lower == "no" || lower == "off" || integer(lower);
  };
  if (arg.starts_with(':')) {
    std::string_view options = arg.substr(1);
    for (bool found = true; found;) {
      found = false;
      for (const std::string_view name : {"tags", "abbrev", "exclude", "match"}) {
        if (!options.starts_with(name)) continue;
        std::string_view rest = options.substr(name.size());
        std::optional<std::string_view> value;
        if (rest.starts_with('=')) {
          const size_t len = std::min(rest.find_first_of(",)"), rest.size());
          value = rest.substr(1, len - 1);
          rest.remove_prefix(len);
        }
        if (!rest.starts_with(',') && !rest.starts_with(')')) continue;
        if (name == "tags") {
          if (value && !boolean(*value)) continue;
        } else if (!value || value->empty() || (name == "abbrev" && !integer(*value))) {
          return 0;
        }
        options = rest.starts_with(',') ? rest.substr(1) : rest;
        found = true;
        break;
      }
    }
    arg = options;
  }
  if (!arg.starts_with(')')) return 0;
  // cgit 1.2.3 as Debian builds it runs `git describe` from a folder that does not exist: that
  // fails ("cannot run describe") and the placeholder becomes nothing. So it does here: an
  // archive's bytes stay cgit's, which downstream checksums rely on.
  return p.size() - arg.size() + 1;
}

size_t ExportSubst::One(std::string_view p, std::string* out) {
  if (p.empty()) return 0;
  // git's strbuf_expand_literal_cb
  if (p[0] == 'n') return out->push_back('\n'), 1;
  if (p[0] == 'x') {
    const auto hex = [](char c) {
      return c >= '0' && c <= '9'   ? c - '0'
             : c >= 'a' && c <= 'f' ? c - 'a' + 10
             : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                    : -1;
    };
    if (p.size() >= 3 && hex(p[1]) >= 0 && hex(p[2]) >= 0) {
      out->push_back(static_cast<char>(hex(p[1]) * 16 + hex(p[2])));
      return 3;
    }
    return 0;
  }
  if (p[0] == 'C') {
    // git's colours, off in an archive: taken, nothing written (parse_color).
    if (p.starts_with("C(")) {
      const size_t end = p.find(')');
      if (end == std::string_view::npos) return 0;
      if (p.substr(2).starts_with("always,")) return kUnsupported;  // colour codes written
      return end + 1;
    }
    for (const std::string_view name : {"red", "green", "blue", "reset"})
      if (p.substr(1).starts_with(name)) return 1 + name.size();
    return 0;
  }
  if (p[0] == 'w' || p[0] == '<' || p[0] == '>' || p[0] == 'G' || p.starts_with("(trailers"))
    return kUnsupported;
  if (p.starts_with("(describe")) return Describe(p);
  if (!Parse()) return kUnsupported;
  switch (p[0]) {
    case 'H':
      return *out += OidHex(commit_), 1;
    case 'h':
      return *out += Abbrev(commit_), 1;
    case 'T':
      return *out += OidHex(tree_), 1;
    case 't':
      return *out += Abbrev(tree_), 1;
    case 'P':
    case 'p':
      for (size_t i = 0; i < parents_.size(); ++i) {
        if (i > 0) out->push_back(' ');
        *out += p[0] == 'P' ? OidHex(parents_[i]) : Abbrev(parents_[i]);
      }
      return 1;
    case 'm':
      return *out += ">", 1;  // git's get_revision_mark without a walk
    case 'd':
      return Decorations(" (", ", ", ")", out), 1;
    case 'D':
      return Decorations("", ", ", "", out), 1;
    case 'S':
      return 0;  // no --source
    case 'g':
      if (p.size() > 1 && std::strchr("dDsnNeE", p[1]) != nullptr && p[1] != '\0') return 2;
      return 0;
    case 'N':
      return 0;  // no notes asked for
    case 'a':
      return p.size() > 1 ? Person(p[1], author_, out) : 0;
    case 'c':
      return p.size() > 1 ? Person(p[1], committer_, out) : 0;
    case 'e':
      return out->append(encoding_), 1;
    case 'B':
      return out->append(std::string_view(message_).substr(message_off_ + 1)), 1;
    case 's':
      return Subject(message_, subject_off_, " ", out), 1;
    case 'f': {
      const std::string_view msg = message_;
      const size_t eol = std::min(msg.find('\n', subject_off_), msg.size());
      Sanitized(msg.substr(subject_off_, eol - subject_off_), out);
      return 1;
    }
    case 'b':
      return out->append(std::string_view(message_).substr(body_off_)), 1;
    default:
      return 0;
  }
}

bool ExportSubst::Format(std::string_view format, std::string* out) {
  format = format.substr(0, format.find('\0'));  // git's format is a C string
  std::string result;
  // git's strbuf_expand with format_commit_item (its %+x, %-x and % x forms).
  for (size_t at = 0;;) {
    const size_t percent = format.find('%', at);
    result.append(format.substr(at, percent == std::string_view::npos ? percent : percent - at));
    if (percent == std::string_view::npos) break;
    at = percent + 1;
    if (at < format.size() && format[at] == '%') {
      result.push_back('%');
      ++at;
      continue;
    }
    std::string_view p = format.substr(at);
    const char magic = !p.empty() && (p[0] == '+' || p[0] == '-' || p[0] == ' ') ? p[0] : 0;
    if (magic != 0) p.remove_prefix(1);
    const size_t before = result.size();
    size_t used = One(p, &result);
    if (used == kUnsupported) return false;
    if (magic != 0) {
      if (result.size() == before && magic == '-') {
        while (!result.empty() && result.back() == '\n') result.pop_back();
      } else if (result.size() != before) {
        if (magic == '+') result.insert(before, "\n");
        if (magic == ' ') result.insert(before, " ");
      }
      used += 1;
    }
    if (used == 0) {
      result.push_back('%');
    } else {
      at += used;
    }
  }
  *out += result;
  return true;
}

bool ExportSubst::Expand(std::string_view in, std::string* out) {
  std::string result;
  bool changed = false;
  size_t at = 0;
  while (true) {
    const size_t start = in.find("$Format:", at);
    if (start == std::string_view::npos) break;
    const size_t end = in.find('$', start + 8);
    if (end == std::string_view::npos) break;
    result.append(in.substr(at, start - at));
    if (Format(in.substr(start + 8, end - start - 8), &result)) {
      changed = true;
    } else {
      result.append(in.substr(start, end + 1 - start));  // left as stored
    }
    at = end + 1;
  }
  if (!changed) return false;
  result.append(in.substr(at));
  *out = std::move(result);
  return true;
}

}  // namespace shellac::gitfrag
