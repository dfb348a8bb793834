#pragma once
// What kind of file a --stats path names, from its first bytes, so that a model file or a
// text given by mistake is refused as "not a stats file (it is a GGUF model file)" instead of
// by whatever the safetensors parser trips over first ("header length ... larger than the
// file").
#include <cstdint>
#include <string>

namespace triattn {

enum class StatsFileKind {
  Safetensors,   // u64 header length that fits in the file, then '{'
  TruncatedSafetensors,  // looks like safetensors, but the header runs past the end
  TorchZip,      // "PK\3\4": a zip, as torch.save writes since torch 1.6 (any zip but an .npz)
  NumpyZip,      // a zip whose first entry is a .npy array: np.savez (the MLX statistics)
  Tria,          // u32 0x54524941 ("TRIA"): the TRIA v1 / v2 statistics (calib/tria_stats.h)
  TorchLegacy,   // a pickle (0x80 protocol byte): torch.save before 1.6, or _use_new_zipfile_serialization=False
  Gguf,          // "GGUF"
  Llama2cV2,     // "ak42": llama2.c's versioned export (the legacy .bin has no magic)
  Empty,
  Directory,
  NotRegular,    // FIFO, device, socket
  Missing,
  Other,
};

struct StatsFileSniff {
  StatsFileKind kind = StatsFileKind::Other;
  uint64_t size = 0;          // file size (regular files)
  uint64_t header_bytes = 0;  // safetensors header length as written (Safetensors, TruncatedSafetensors)
  std::string error;          // why it could not be read (Missing)
};

// Never throws: an unreadable file is Missing (the caller's open then names the error).
StatsFileSniff sniff_stats_file(const std::string& path);

// Throws Error "PATH: not a triattn stats file (it is a GGUF model file; ...)" for every kind
// but those a reader takes from there (Safetensors, TorchZip, NumpyZip, Tria).
void refuse_non_stats_file(const std::string& path, const StatsFileSniff& sniff);

}  // namespace triattn
