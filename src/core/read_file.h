#pragma once
// Whole-file reads for every text input (prompts, calibration text, chat templates,
// tokenizer files, config.json): one place that refuses what is not a regular file. A
// directory read as a stream looks like empty text and a FIFO blocks forever, so both
// used to pass silently (`calibrate --input DIR` wrote stats from one token).
#include <optional>
#include <string>

namespace triattn {

// Throws Error naming the path unless it is a regular file (or a link to one). Never opens
// the path, so a FIFO cannot block here.
void require_regular_file(const std::string& path);
// The whole file as bytes; Error naming the path when it is missing, not a regular file, or
// cannot be read.
std::string read_file(const std::string& path);
// std::nullopt when nothing exists at path; other failures still throw.
std::optional<std::string> read_file_if_exists(const std::string& path);

}  // namespace triattn
