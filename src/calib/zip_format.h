#pragma once
// The zip records' signatures (PKWARE APPNOTE 4.3), shared by the reader and the writer.
#include <cstdint>

namespace triattn::zip {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;

}  // namespace triattn::zip
