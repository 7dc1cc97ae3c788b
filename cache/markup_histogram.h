// markup_histogram: how often each deflate symbol occurs in cgit pages as shellac renders them, the
// sample igzip's level-0 codes for pages made for one request are made from (cache/deflate.cc's
// FlushEncoder, FlushEncoder::Codes::kMarkup). Data only; included by deflate.cc alone.
//
// Made by bench/zip_compare.cc's `hist` mode (igzip's own level-0 matches, isal_update_histogram)
// over the identity bodies of 360 pages of the generated bench corpus (bench/corpus), URLs 121-160
// of bench/wrk/pages_urls.py's lists for tree folders, file views, plain files, about, atom, diff
// and commit pages, 121-140 for log, summary, tag and stats pages (the refs page left out: one is
// ~300 KB of one table's rows); bench/results/onezip-callgrind.md measures URLs 21-120. Counts
// scaled so the literal and length symbols sum to about 2^20; a symbol seen keeps at least 1.
// isal_create_hufftables gives every symbol a code, seen or not, so any bytes encode with them;
// the counts only decide how short.
#pragma once

#include <array>
#include <cstdint>

namespace shellac::cache {

// Literals 0-255, end of block 256, lengths 257-285.
inline constexpr std::array<uint32_t, 286> kMarkupLiteralLengths = {
    80, 74, 81, 82, 71, 56, 78, 74, 71, 2188, 8921, 75,
    79, 82, 62, 85, 84, 78, 78, 81, 78, 77, 68, 76,
    62, 75, 82, 72, 81, 91, 75, 78, 41702, 1604, 199, 697,
    130, 339, 1241, 18089, 3216, 2105, 1603, 1293, 3095, 7340, 8031, 10443,
    17280, 20557, 17734, 15672, 14111, 14002, 12816, 12511, 12224, 12408, 7319, 2427,
    7804, 5669, 19302, 1565, 1013, 2306, 607, 1410, 1384, 2824, 540, 1023,
    511, 1313, 350, 584, 1496, 1077, 1612, 1920, 1474, 326, 1328, 1185,
    2503, 679, 523, 576, 452, 703, 334, 272, 214, 220, 100, 6237,
    501, 34537, 15763, 24074, 23337, 48311, 18153, 9344, 10387, 23941, 354, 4714,
    17935, 10596, 21002, 24323, 10601, 1984, 25599, 23727, 30072, 12184, 5009, 4958,
    3009, 4594, 1103, 326, 562, 524, 113, 82, 144, 75, 91, 136,
    70, 134, 75, 80, 73, 63, 75, 81, 73, 78, 139, 83,
    80, 148, 71, 90, 134, 81, 77, 72, 59, 97, 67, 131,
    93, 91, 71, 80, 71, 91, 69, 74, 128, 69, 78, 83,
    61, 141, 134, 191, 74, 67, 67, 79, 128, 343, 62, 73,
    81, 83, 146, 71, 78, 64, 157, 69, 80, 56, 65, 80,
    75, 76, 159, 610, 78, 126, 79, 78, 74, 80, 61, 67,
    61, 61, 82, 85, 76, 65, 87, 86, 58, 82, 52, 77,
    77, 80, 70, 71, 73, 76, 82, 79, 66, 82, 143, 75,
    69, 201, 69, 126, 61, 145, 72, 69, 73, 64, 68, 73,
    75, 77, 73, 84, 66, 64, 72, 71, 98, 64, 82, 92,
    78, 65, 72, 64, 328, 0, 64848, 37135, 28768, 19866, 15973, 10063,
    7524, 18113, 13171, 11645, 5084, 6960, 6911, 5964, 2786, 7220, 6001, 2320,
    1459, 4382, 1400, 907, 412, 631, 11, 70, 20, 0,
};

// Distance codes 0-29.
inline constexpr std::array<uint32_t, 30> kMarkupDistances = {
    134, 51, 253, 157, 1070, 2994, 2549, 6052, 4736, 5816, 10858, 10126,
    13648, 10095, 12781, 9537, 24765, 10813, 26272, 18725, 22697, 14802, 17871, 20379,
    12033, 6776, 7076, 3244, 2528, 804,
};

}  // namespace shellac::cache
