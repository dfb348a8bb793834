#pragma once
// The chat page served at GET /: one self-contained HTML file (no external assets: the
// server may run where nothing else can be reached). It streams replies from
// /v1/chat/completions, shows a reasoning model's <think> part apart from the answer, and
// the KV figures of each reply from its usage.
#include <string_view>

namespace triattn::server {

std::string_view chat_page_html();

}  // namespace triattn::server
