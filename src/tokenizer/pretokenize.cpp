#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace triattn {

struct Pretokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() {
    if (code) pcre2_code_free(code);
  }
};

Pretokenizer::Pretokenizer(std::vector<std::string> regexes, const std::string& what)
    : regexes_(std::move(regexes)) {
  for (const auto& re : regexes_) {
    auto c = std::make_unique<Compiled>();
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // MATCH_INVALID_UTF: arbitrary bytes are legal input (they simply never match), and
    // it also spares the whole-subject UTF check on every call.
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_off,
                            nullptr);
    if (!c->code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      fail(what, ": pre-tokenizer regex /", re, "/ does not compile at offset ", err_off, ": ",
           reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter remains
    compiled_.push_back(std::move(c));
  }
}

Pretokenizer::~Pretokenizer() = default;

namespace {

// Length of the UTF-8 sequence starting with byte b (1 for stray bytes), to step past an
// empty match without landing inside a character.
size_t char_step(std::string_view s, size_t i) {
  const auto b = uint8_t(s[i]);
  size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
  return std::min(n, s.size() - i);
}

// Splits one piece with one regex: matches and the gaps between them, in order.
void split_piece(pcre2_code* code, pcre2_match_data* md, std::string_view piece,
                 std::vector<std::string_view>& out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t gap_start = 0, pos = 0;
  while (pos < piece.size()) {
    int rc = pcre2_match(code, subject, piece.size(), pos, 0, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Very long pieces can exhaust the JIT's small stack; the interpreter uses the heap.
      rc = pcre2_match(code, subject, piece.size(), pos, PCRE2_NO_JIT, md, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      fail("pre-tokenizer: regex match failed: ", reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t ms = ov[0], me = ov[1];
    if (me <= ms) {  // empty match: not a piece; look again one character later
      pos = ms + char_step(piece, ms);
      continue;
    }
    if (ms > gap_start) out.push_back(piece.substr(gap_start, ms - gap_start));
    out.push_back(piece.substr(ms, me - ms));
    gap_start = pos = me;
  }
  if (gap_start < piece.size()) out.push_back(piece.substr(gap_start));
}

}  // namespace

void Pretokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  std::vector<std::string_view> cur{text}, next;
  for (const auto& c : compiled_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(c->code, nullptr);
    if (!md) fail("pre-tokenizer: out of memory");
    next.clear();
    try {
      for (auto piece : cur) split_piece(c->code, md, piece, next);
    } catch (...) {
      pcre2_match_data_free(md);
      throw;
    }
    pcre2_match_data_free(md);
    cur.swap(next);
  }
  out.insert(out.end(), cur.begin(), cur.end());
}

}  // namespace triattn
