// GPT-2's reversible byte <-> printable-character mapping used by byte-level BPE: every byte is
// shown as one Unicode character so that BPE vocabularies never contain raw control bytes.
#pragma once
#include <string>
#include <string_view>

namespace portllm::tok {

// Appends the byte-level form of `bytes` (each byte -> its 1- or 2-byte UTF-8 character).
void byte_level_encode(std::string_view bytes, std::string& out);

// Appends the bytes a byte-level token stands for. Returns false (and appends nothing) when the
// token holds a character outside the mapping (e.g. an added token such as "<｜tool▁sep｜>").
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace portllm::tok
