#include "calib/stats_file_kind.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace triattn {

StatsFileSniff sniff_stats_file(const std::string& path) {
  namespace fs = std::filesystem;
  StatsFileSniff s;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  auto kind = [&s](StatsFileKind k, std::string error = "") {
    s.kind = k;
    s.error = std::move(error);
    return s;
  };
  if (ec) return kind(StatsFileKind::Missing, ec.message());
  if (!fs::exists(st)) return kind(StatsFileKind::Missing, std::strerror(ENOENT));
  if (fs::is_directory(st)) return kind(StatsFileKind::Directory);
  if (!fs::is_regular_file(st)) return kind(StatsFileKind::NotRegular);
  s.size = fs::file_size(path, ec);
  if (ec) return kind(StatsFileKind::Missing, ec.message());
  if (s.size == 0) return kind(StatsFileKind::Empty);

  // Enough for a zip's first local header and a short entry name (an .npz tells itself from
  // a torch zip by that name).
  unsigned char b[30 + 256] = {};
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return kind(StatsFileKind::Missing, errno ? std::strerror(errno) : "cannot read");
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const auto got = static_cast<size_t>(in.gcount());
  auto first_zip_entry = [&]() -> std::string {
    const size_t n = b[26] | b[27] << 8;
    return got >= 30 + n ? std::string(reinterpret_cast<const char*>(b) + 30, n) : std::string();
  };
  s.kind = StatsFileKind::Other;
  if (got >= 4 && std::memcmp(b, "GGUF", 4) == 0) {
    s.kind = StatsFileKind::Gguf;
  } else if (got >= 4 && std::memcmp(b, "PK\x03\x04", 4) == 0) {
    s.kind = first_zip_entry().ends_with(".npy") ? StatsFileKind::NumpyZip : StatsFileKind::TorchZip;
  } else if (got >= 4 && std::memcmp(b, "AIRT", 4) == 0) {  // 0x54524941 little-endian
    s.kind = StatsFileKind::Tria;
  } else if (got >= 4 && std::memcmp(b, "ak42", 4) == 0) {
    s.kind = StatsFileKind::Llama2cV2;
  } else if (got >= 9 && b[8] == '{') {  // before the pickle test: a header length may start with 0x80
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | b[i];  // little-endian u64
    s.header_bytes = n;
    s.kind = n <= s.size - 8 ? StatsFileKind::Safetensors : StatsFileKind::TruncatedSafetensors;
  } else if (got >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) {  // PROTO opcode, protocol 2..5
    s.kind = StatsFileKind::TorchLegacy;
  }
  return s;
}

void refuse_non_stats_file(const std::string& path, const StatsFileSniff& s) {
  static const char* kFrom =
      "stats files come from `triattn calibrate`, the official TriAttention .pt or MLX .npz, or a TRIA .triattention/.bin";
  switch (s.kind) {
    case StatsFileKind::Safetensors:
    case StatsFileKind::TorchZip:
    case StatsFileKind::NumpyZip:
    case StatsFileKind::Tria:
      return;
    case StatsFileKind::Missing:
      fail(path, ": cannot open stats file: ", s.error);
    case StatsFileKind::Directory:
      fail(path, ": not a triattn stats file (it is a directory, a model directory perhaps; ", kFrom, ")");
    case StatsFileKind::NotRegular:
      fail(path, ": not a triattn stats file (it is not a regular file; ", kFrom, ")");
    case StatsFileKind::Empty:
      fail(path, ": not a triattn stats file (the file is empty; ", kFrom, ")");
    case StatsFileKind::Gguf:
      fail(path, ": not a triattn stats file (it is a GGUF model file; ", kFrom, ")");
    case StatsFileKind::Llama2cV2:
      fail(path, ": not a triattn stats file (it is a llama2.c model checkpoint; ", kFrom, ")");
    case StatsFileKind::TorchLegacy:
      fail(path, ": not a readable stats file (it is a torch.save pickle in the legacy, pre-1.6 format; ",
           "re-save it in python with torch.save(torch.load(f), f2) to get the zip format)");
    case StatsFileKind::TruncatedSafetensors:
      fail(path, ": truncated stats file (its safetensors header says ", s.header_bytes, " bytes, the file has only ",
           s.size - 8, " after the length; copy it again or recalibrate with `triattn calibrate`)");
    case StatsFileKind::Other:
      break;
  }
  fail(path, ": not a triattn stats file (it is neither a safetensors file nor a torch .pt or numpy .npz zip, nor a TRIA file; ", kFrom, ")");
}

}  // namespace triattn
