#pragma once
// GPT-2's reversible byte <-> Unicode mapping. Byte-level BPE vocabularies store every token
// as printable characters: bytes that are visible Latin-1 characters map to themselves, the
// rest (controls, space, 0x7F-0xA0, 0xAD) are shifted to U+0100.. in byte order, so 'Ġ' is
// a space and 'Ċ' a newline. Vocabulary files and merges are written in this alphabet.
#include <cstdint>
#include <string>
#include <string_view>

namespace triattn {

// The code point standing for byte b.
uint32_t bpe_byte_to_codepoint(uint8_t b);
// The byte a code point stands for, or -1 when it is not part of the alphabet.
int bpe_codepoint_to_byte(uint32_t cp);

// Raw bytes -> stored form (UTF-8 of the mapped code points).
std::string bpe_bytes_to_text(std::string_view bytes);
// Stored form -> raw bytes. Characters outside the alphabet (never produced by the mapping,
// but present in a few hand-edited vocabularies) are kept as their own UTF-8 bytes;
// *all_mapped (when given) tells whether that happened.
std::string bpe_text_to_bytes(std::string_view text, bool* all_mapped = nullptr);

// Appends the UTF-8 encoding of cp.
void bpe_utf8_append(std::string& out, uint32_t cp);
// Decodes one UTF-8 sequence at s[i]; returns its length (1 for an invalid byte, with
// *cp = 0xFFFFFFFF) so callers can always make progress.
size_t bpe_utf8_decode(std::string_view s, size_t i, uint32_t* cp);

}  // namespace triattn
