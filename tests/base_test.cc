// The shared helpers in base/: ASCII text, decimal numbers, XML entities, owned C handles and the
// per-second time text.
#include <ctime>
#include <string>

#include <gtest/gtest.h>

#include "base/clock_text.h"
#include "base/entities.h"
#include "base/owned.h"
#include "base/text.h"

namespace shellac::base {
namespace {

TEST(EqualsIgnoreCase, FoldsAsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("Content-Length", "Content-Lengt"));
  EXPECT_FALSE(EqualsIgnoreCase("", "a"));
  EXPECT_FALSE(EqualsIgnoreCase("a", "b"));
  // Pairs 0x20 apart that are not letters must not match: '[' / '{', '@' / '`', '^' / '~'.
  EXPECT_FALSE(EqualsIgnoreCase("[", "{"));
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));
  EXPECT_FALSE(EqualsIgnoreCase("^", "~"));
  EXPECT_TRUE(EqualsIgnoreCase("x-1_2.3", "X-1_2.3"));
  // Bytes >= 0x80 compare as themselves (no locale folding): UTF-8 "É" vs "é".
  EXPECT_FALSE(EqualsIgnoreCase("\xc3\x89", "\xc3\xa9"));
  EXPECT_TRUE(EqualsIgnoreCase("\xc3\x89", "\xc3\x89"));
  // Embedded NULs count.
  EXPECT_FALSE(EqualsIgnoreCase(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

TEST(EqualsIgnoreCase, StartsWith) {
  EXPECT_TRUE(StartsWithIgnoreCase("HTTP://x", "http://"));
  EXPECT_TRUE(StartsWithIgnoreCase("abc", ""));
  EXPECT_FALSE(StartsWithIgnoreCase("htt", "http"));
  EXPECT_FALSE(StartsWithIgnoreCase("", "h"));
}

TEST(Lower, AsciiLettersOnly) {
  EXPECT_EQ(ToLower(""), "");
  EXPECT_EQ(ToLower("Accept-Encoding: GZIP"), "accept-encoding: gzip");
  EXPECT_EQ(ToLower("[@]^\xc3\x89Z"), "[@]^\xc3\x89z");
  std::string out = "Keep";
  AppendLower(&out, "ME");
  EXPECT_EQ(out, "Keepme");  // what was there is left as it was
  EXPECT_EQ(AsciiLower('A'), 'a');
  EXPECT_EQ(AsciiLower('Z'), 'z');
  EXPECT_EQ(AsciiLower('@'), '@');  // 'A' - 1
  EXPECT_EQ(AsciiLower('['), '[');  // 'Z' + 1
}

TEST(Trim, OptionalWhitespace) {
  EXPECT_EQ(TrimOws(""), "");
  EXPECT_EQ(TrimOws(" \t \t"), "");
  EXPECT_EQ(TrimOws(" a b\t"), "a b");
  EXPECT_EQ(TrimOws("x"), "x");
  EXPECT_EQ(TrimOws("\ta"), "a");
  // Only SP and HTAB are optional whitespace: CR, LF, VT stay.
  EXPECT_EQ(TrimOws("\r a \n"), "\r a \n");
  EXPECT_EQ(TrimOws("\va"), "\va");
}

TEST(Trim, GivenSet) {
  EXPECT_EQ(Trim("", " \t\r"), "");
  EXPECT_EQ(Trim("\r\r", " \t\r"), "");
  EXPECT_EQ(Trim(" key = v\r", " \t\r"), "key = v");
  EXPECT_EQ(Trim("abc", ""), "abc");
}

TEST(ParseDecimal, Accepts) {
  struct Case {
    const char* text;
    uint64_t want;
  };
  for (const Case& c : {Case{"0", 0}, Case{"7", 7}, Case{"007", 7}, Case{"1000000000000000000", 1000000000000000000ull},
                        Case{"18446744073709551614", 18446744073709551614ull},
                        Case{"18446744073709551615", 18446744073709551615ull},  // 2^64-1
                        Case{"000000000000000000000018446744073709551615", 18446744073709551615ull}}) {
    uint64_t out = 1;
    EXPECT_TRUE(ParseDecimal(c.text, &out)) << c.text;
    EXPECT_EQ(out, c.want) << c.text;
  }
}

TEST(ParseDecimal, Rejects) {
  for (const char* text : {"", " ", " 1", "1 ", "+1", "-1", "1.0", "0x10", "1e3", "a", "1a",
                           "18446744073709551616",   // 2^64
                           "18446744073709551620",   // overflows in the last digit's addition
                           "99999999999999999999",   // 20 nines
                           "184467440737095516150",  // 2^64-1 times ten
                           "340282366920938463463374607431768211456"}) {  // 2^128
    uint64_t out = 4321;
    EXPECT_FALSE(ParseDecimal(text, &out)) << "'" << text << "'";
    EXPECT_EQ(out, 4321u) << "output touched for '" << text << "'";
  }
  uint64_t out = 5;
  EXPECT_FALSE(ParseDecimal(std::string_view("1\0", 2), &out));
}

TEST(XmlEntities, TheFivePredefined) {
  EXPECT_EQ(XmlDecoded(""), "");
  EXPECT_EQ(XmlDecoded("a&amp;b"), "a&b");
  EXPECT_EQ(XmlDecoded("&lt;&gt;&quot;&apos;&amp;"), "<>\"'&");
  EXPECT_EQ(XmlDecoded("/x?a=1&amp;b=2"), "/x?a=1&b=2");
}

TEST(XmlEntities, OthersLeftAsWritten) {
  EXPECT_EQ(XmlDecoded("&#38;&#x26;"), "&#38;&#x26;");  // numeric references
  EXPECT_EQ(XmlDecoded("&nbsp;&copy;&unknown;"), "&nbsp;&copy;&unknown;");
  EXPECT_EQ(XmlDecoded("&AMP;&Lt;"), "&AMP;&Lt;");  // names are case-sensitive
  EXPECT_EQ(XmlDecoded("&amp"), "&amp");             // no ';'
  EXPECT_EQ(XmlDecoded("&"), "&");
  EXPECT_EQ(XmlDecoded("a&&lt;"), "a&<");
  EXPECT_EQ(XmlDecoded("x&"), "x&");
}

TEST(XmlEntities, OnePass) {
  EXPECT_EQ(XmlDecoded("&amp;lt;"), "&lt;");
  EXPECT_EQ(XmlDecoded("&amp;amp;"), "&amp;");
  std::string out = "<kept>";
  AppendXmlDecoded("&gt;", &out);
  EXPECT_EQ(out, "<kept>>");
}

int frees = 0;
struct Handle {
  int id;
};
void FreeHandle(Handle* h) {
  ++frees;
  delete h;
}
int FreeReturningInt(Handle* h) {  // OpenSSL's BIO_free shape
  frees += 10;
  delete h;
  return 1;
}

TEST(Owned, FreesOnceWithTheNamedFunction) {
  frees = 0;
  {
    Owned<FreeHandle> a(new Handle{1});
    static_assert(std::is_same_v<Owned<FreeHandle>::element_type, Handle>);
    static_assert(sizeof(Owned<FreeHandle>) == sizeof(Handle*));
    Owned<FreeHandle> b = std::move(a);
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(b->id, 1);
    EXPECT_EQ(frees, 0);
  }
  EXPECT_EQ(frees, 1);
  {
    Owned<FreeReturningInt> c(new Handle{2});
    Owned<FreeHandle> empty;  // a null handle is never passed to the free function
  }
  EXPECT_EQ(frees, 11);
  Owned<FreeHandle> released(new Handle{3});
  Handle* raw = released.release();
  released.reset();
  EXPECT_EQ(frees, 11);
  FreeHandle(raw);
}

TEST(SecondText, HttpDate) {
  SecondText date(kHttpDateFormat);
  EXPECT_EQ(date.At(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(date.At(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");  // RFC 9110's example
}

TEST(SecondText, ChangesAtTheSecondBoundaryOnly) {
  SecondText date(kHttpDateFormat);
  const time_t t = 1798761599;  // 2026-12-31 23:59:59
  const std::string& first = date.At(t);
  EXPECT_EQ(first, "Thu, 31 Dec 2026 23:59:59 GMT");
  const std::string* where = &date.At(t);
  EXPECT_EQ(where, &first);  // the same text, not made again
  EXPECT_EQ(date.At(t + 1), "Fri, 01 Jan 2027 00:00:00 GMT");
  EXPECT_EQ(date.At(t), "Thu, 31 Dec 2026 23:59:59 GMT");  // back in time: made again, not kept
}

TEST(SecondText, OtherFormat) {
  SecondText stamp("[%d/%b/%Y:%H:%M:%S +0000]");
  EXPECT_EQ(stamp.At(1798761599), "[31/Dec/2026:23:59:59 +0000]");
}

}  // namespace
}  // namespace shellac::base
