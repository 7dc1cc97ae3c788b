// FindAnyOf against the plain byte-by-byte search, for every byte value at every place of runs
// long and short, at every alignment; each run in a buffer of its own exact size, so that a read
// past either end is a heap overflow under ASan. And the escapes that scan for their special bytes
// against the same escapes written byte by byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gitfrag/byte_scan.h"
#include "gitfrag/render.h"
#include "gitfrag/writer.h"

namespace shellac::gitfrag {
namespace {

bool IsHtmlSpecial(char c) {
  return c == '&' || c == '<' || c == '>' || c == '\'' || c == '"';
}

const char* FindHtml(const char* p, const char* end) {
  return FindAnyOf<'&', '<', '>', '\'', '"'>(p, end);
}

TEST(ByteScan, FindsEveryByteOfTheSetAtEveryPlaceAndAlignment) {
  constexpr size_t kMaxLength = 47;  // two 16-byte blocks and the longest tail
  for (size_t length = 0; length <= kMaxLength; ++length) {
    for (size_t align = 0; align < 16; ++align) {
      // `align` bytes of slack before the run, so that the run starts at every offset mod 16;
      // nothing after it.
      const auto buffer = std::make_unique<char[]>(align + length);
      char* const run = buffer.get() + align;
      char* const end = run + length;
      for (char* p = buffer.get(); p != run; ++p) *p = '&';  // special bytes before the run: never found
      for (size_t i = 0; i < length; ++i) run[i] = static_cast<char>('a' + i % 26);
      for (size_t at = 0; at < length; ++at) {
        for (int value = 0; value < 256; ++value) {
          run[at] = static_cast<char>(value);
          const bool special = IsHtmlSpecial(run[at]);
          ASSERT_EQ(FindHtml(run, end), special ? run + at : end)
              << "length " << length << " align " << align << " at " << at << " byte " << value;
          // The first of two: a special byte at the end does not change the answer.
          if (at + 1 < length) {
            const char last = run[length - 1];
            run[length - 1] = '"';
            ASSERT_EQ(FindHtml(run, end), special ? run + at : end - 1)
                << "length " << length << " align " << align << " at " << at << " byte " << value;
            run[length - 1] = last;
          }
        }
        run[at] = static_cast<char>('a' + at % 26);
      }
      EXPECT_EQ(FindHtml(run, run), run);  // an empty run
    }
  }
}

TEST(ByteScan, OneByteSet) {
  const std::string s = std::string(40, 'x') + "\n" + std::string(3, 'y');
  EXPECT_EQ(FindAnyOf<'\n'>(s.data(), s.data() + s.size()), s.data() + 40);
  EXPECT_EQ(FindAnyOf<'\0'>(s.data(), s.data() + s.size()), s.data() + s.size());
}

std::string EscapeByteByByte(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

TEST(ByteScan, WriterTextEscapesAsByteByByte) {
  // Every byte value, then runs that put specials at both ends and across 16-byte blocks.
  std::string all;
  for (int value = 0; value < 256; ++value) all.push_back(static_cast<char>(value));
  std::vector<std::string> inputs = {"", "&", "plain", "<a href='x'>\"q\" & r</a>", all, all + all};
  for (size_t n = 1; n < 40; ++n)
    inputs.push_back("<" + std::string(n, 'b') + "&" + std::string(n, '\xc3') + ">");
  for (const std::string& input : inputs) {
    std::string sink;
    {
      Writer w(&sink);
      w.Text(input);
    }
    EXPECT_EQ(sink, EscapeByteByByte(input));
  }
  // A default string_view (null data) writes nothing, and gives memcpy no null pointer (UBSan).
  std::string sink;
  {
    Writer w(&sink);
    w.Raw(std::string_view()).Text(std::string_view()).UrlPart(std::string_view(), true);
  }
  EXPECT_EQ(sink, "");
}

// The URL escapes byte by byte, as they were written before they scanned for runs.
std::string UrlEncodeByteByByte(std::string_view s, bool keep_slash) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
        std::string_view("-_.~").find(c) != std::string_view::npos || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += "0123456789ABCDEF"[u >> 4];
      out += "0123456789ABCDEF"[u & 15];
    }
  }
  return out;
}

std::string UrlAttributeByteByByte(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f ||
        std::string_view("\"#%'<>\\^`{|}").find(c) != std::string_view::npos) {
      out += '%';
      out += "0123456789abcdef"[u >> 4];
      out += "0123456789abcdef"[u & 15];
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(ByteScan, UrlEscapesAsByteByByte) {
  std::string all;
  for (int value = 0; value < 256; ++value) all.push_back(static_cast<char>(value));
  const std::vector<std::string> inputs = {"", "src/a b/c.d", "/x?y=1&z=2#f", all,
                                           "\xff" + all + "a"};
  for (const std::string& input : inputs) {
    for (const bool keep_slash : {false, true}) {
      std::string appended;
      AppendUrlEncoded(&appended, input, keep_slash);
      EXPECT_EQ(appended, UrlEncodeByteByByte(input, keep_slash));
      std::string sink;
      {
        Writer w(&sink);
        w.UrlPart(input, keep_slash);
      }
      EXPECT_EQ(sink, UrlEncodeByteByByte(input, keep_slash));
    }
    std::string sink;
    {
      Writer w(&sink);
      WriteUrlAttribute(w, input);
    }
    EXPECT_EQ(sink, UrlAttributeByteByByte(input));
  }
}

}  // namespace
}  // namespace shellac::gitfrag
