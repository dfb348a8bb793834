#pragma once
// Every statistics format triattn reads and writes, by name, with what each can hold, so that
// `triattn stats convert` moves statistics between any two (docs/design.md, Statistics formats):
//   triattn  ours, safetensors (calib/stats_file.h): everything, model identity included
//   pt       the official implementation's torch .pt (calib/pt_stats.h): query statistics only
//   tria-v1  the llama.cpp TurboQuant fork's .triattention (calib/tria_stats.h): queries,
//            KV heads, RoPE theta, model name
//   tria-v2  triattention-ggml's 64-byte-header layout (calib/tria_stats.h): queries, KV heads,
//            RoPE theta and attention scale (f32), per-layer budget scales
//   npz      the official MLX port's numpy .npz (calib/npz_stats.h): query statistics only
// The foreign formats hold "half"-paired bands over every coordinate: statistics of a model
// with partial RoPE (pass statistics) cannot be written to them.
#include <span>
#include <string>

#include "calib/stats_file.h"

namespace triattn {

struct StatsFormatInfo {
  StatsFormat format;
  const char* name;         // on the command line and in metadata 'source_format'
  const char* extension;    // what `stats convert` infers the format from
  const char* description;  // in messages and `stats info`
};

std::span<const StatsFormatInfo> stats_formats();
const StatsFormatInfo& stats_format_info(StatsFormat f);
const char* stats_format_name(StatsFormat f);
// Error listing the names when `name` is none of them.
StatsFormat parse_stats_format(const std::string& name);
// From the extension of an output path; Error naming the known extensions when none matches.
StatsFormat stats_format_for_path(const std::string& path);

// Writes the statistics in format `f` (atomically). Error, before anything is written, when the
// format cannot hold what it needs: partial-RoPE statistics in a foreign format, or a field the
// format requires that `info` does not know (KV heads, RoPE theta: naming the field).
// What the format silently cannot carry (key statistics, the weights fingerprint, ...) is
// listed in *dropped (if given), one item each, for the caller to show.
void write_stats_as(StatsFormat f, const std::string& path, const HeadStats& s, const StatsInfo& info,
                    std::vector<std::string>* dropped = nullptr);

// Error unless the statistics fit a format without pass statistics (every coordinate rotates).
void require_full_rope(const HeadStats& s, StatsFormat f, const std::string& path);

}  // namespace triattn
