// libFuzzer target: the configuration parser (conf/config.h), cgitrc syntax, includes, an imported
// cgitrc and scan-path, read through a MemoryEnvironment so that nothing outside the input is ever
// read (include=/etc/passwd finds no such file) and no name is looked up.
//
// Input: the main file /fuzz/shellac.conf, then more files, each after a line "@@ NAME" (a relative
// NAME is below /fuzz/; folders exist when a file lies below them, so "@@ r/a.git/HEAD",
// "@@ r/a.git/objects/x", "@@ r/a.git/refs/x" make a repository for scan-path=/fuzz/r).
// Checked on every input:
// - no crash, hang or undefined behaviour, however deep or looped the includes;
// - loading twice gives the same answer;
// - an error is one line that says where: a file of the input with its line, "command line",
//   "built-in default", or "cannot read" for the main file;
// - a snapshot keeps its promises: sources are files of the input, the main file first;
//   virtual-root starts and ends with '/'; repositories have paths and distinct URLs that neither
//   start nor end with '/';
// - the main file's lines given as command-line overrides load (or fail) without crashing.
#include <map>
#include <string>
#include <string_view>

#include "conf/config.h"
#include "fuzz/check.h"

namespace {

using namespace shellac::conf;

constexpr std::string_view kMain = "/fuzz/shellac.conf";

bool SameSnapshot(const Config& a, const Config& b) {
  if (a.sources != b.sources || a.repositories.size() != b.repositories.size() ||
      a.virtual_root != b.virtual_root || a.listen.size() != b.listen.size()) {
    return false;
  }
  for (size_t i = 0; i < a.repositories.size(); ++i) {
    if (a.repositories[i].url != b.repositories[i].url ||
        a.repositories[i].path != b.repositories[i].path)
      return false;
  }
  return true;
}

void CheckError(const std::string& error, const std::map<std::string, std::string>& files) {
  FUZZ_CHECK(!error.empty());
  FUZZ_CHECK(error.find('\n') == std::string::npos);
  if (error.starts_with("cannot read '") || error.starts_with("command line: ") ||
      error.starts_with("built-in default: ")) {
    return;
  }
  for (const auto& [path, text] : files) {
    if (error.starts_with(path + ":")) return;
  }
  std::fprintf(stderr, "error names no origin: %s\n", error.c_str());
  FUZZ_CHECK(false);
}

void CheckSnapshot(const Config& c, const std::map<std::string, std::string>& files) {
  for (const auto& source : c.sources) FUZZ_CHECK(files.count(source));
  FUZZ_CHECK(c.virtual_root.starts_with('/') && c.virtual_root.ends_with('/'));
  std::map<std::string, int> urls;
  for (const auto& r : c.repositories) {
    FUZZ_CHECK(!r.path.empty());
    FUZZ_CHECK(!r.url.empty() && !r.url.starts_with('/') && !r.url.ends_with('/'));
    FUZZ_CHECK(++urls[r.url] == 1);
  }
  FUZZ_CHECK(c.threads >= 1 && c.render_threads >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> files;
  std::string name(kMain);
  std::string* text = &files[name];
  Overrides overrides;
  for (std::string_view rest = input; !rest.empty();) {
    const size_t eol = rest.find('\n');
    const std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (line.starts_with("@@ ")) {
      std::string file(line.substr(3));
      if (file.empty()) continue;
      if (file.front() != '/') file = "/fuzz/" + file;
      text = &files[file];
      continue;
    }
    text->append(line);
    text->push_back('\n');
    if (text == &files[std::string(kMain)] && overrides.size() < 16) {
      const size_t eq = line.find('=');
      if (eq != std::string_view::npos)
        overrides.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
  }
  const MemoryEnvironment environment(files);

  std::string error;
  const auto config = LoadFrom(environment, std::string(kMain), {}, &error);
  std::string error_again;
  const auto again = LoadFrom(environment, std::string(kMain), {}, &error_again);
  FUZZ_CHECK(error == error_again);
  FUZZ_CHECK((config == nullptr) == (again == nullptr));
  if (config) {
    FUZZ_CHECK(error.empty());
    FUZZ_CHECK(!config->sources.empty() && config->sources.front() == kMain);
    CheckSnapshot(*config, files);
    FUZZ_CHECK(SameSnapshot(*config, *again));
  } else {
    CheckError(error, files);
  }

  std::string cli_error;
  const auto from_cli = LoadFrom(environment, "", overrides, &cli_error);
  if (from_cli) {
    CheckSnapshot(*from_cli, files);
  } else {
    CheckError(cli_error, files);
  }
  return 0;
}
